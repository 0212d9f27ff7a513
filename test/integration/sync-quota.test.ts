/**
 * Sync pulls from one peer within a quota (src/sync/pull-quota.ts): a peer
 * that offers more valid events than its quota has the rest wait for later
 * sessions, which take them as the quota refills; the session still ends
 * OK, and what was left is counted. Real libp2p nodes on 127.0.0.1.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { SyncPeer } from '../helpers/sync-nodes.js'
import { connect, createSyncPeer, fakeEvent, stopPeers } from '../helpers/sync-nodes.js'
import { waitUntil } from '../helpers/wait.js'

let peers: SyncPeer[] = []
afterEach(async () => {
  await stopPeers(peers)
  peers = []
})

async function pair(
  offered: number,
  size: number,
  quota: { pullEventsPerMinute?: number; pullBytesPerMinute?: number }
): Promise<{ flooder: SyncPeer; puller: SyncPeer }> {
  const flooder = await createSyncPeer({ syncOnConnect: false })
  for (let i = 0; i < offered; i++) flooder.replica.add(fakeEvent(size))
  const puller = await createSyncPeer({ syncOnConnect: false, pullQuota: quota })
  peers.push(flooder, puller)
  await connect(puller.node, flooder.node)
  return { flooder, puller }
}

describe('the pull quota per peer', () => {
  it('takes at most its events a minute from a peer, leaves the rest for later sessions, and counts it', async () => {
    const { flooder, puller } = await pair(300, 300, { pullEventsPerMinute: 100 })
    const first = await puller.sync.syncWith(flooder.node.peerId)
    expect(first.ok).toBe(true)
    expect(first.eventsReceived).toBe(100)
    expect(first.quotaLeft).toBe(200)
    expect(puller.sync.stats().quotaLeft).toBe(200)
    // At once again: the bucket has barely refilled (100 a minute).
    const second = await puller.sync.syncWith(flooder.node.peerId)
    expect(second.ok).toBe(true)
    expect(second.eventsReceived).toBeLessThan(20)
    expect(puller.replica.ids.size).toBeLessThan(120)
    // The flooder pulls from the puller without a quota of its own: nothing to pull, nothing left.
    const back = await flooder.sync.syncWith(puller.node.peerId)
    expect(back.quotaLeft).toBeUndefined()
  })

  it('takes at most about its bytes a minute from a peer', async () => {
    const { flooder, puller } = await pair(100, 4_096, { pullBytesPerMinute: 40 * 1024 })
    const first = await puller.sync.syncWith(flooder.node.peerId)
    expect(first.ok).toBe(true)
    // 10 events' worth, give or take one frame while the quota learns the peer's event size.
    expect(first.eventsReceived).toBeGreaterThanOrEqual(5)
    expect(first.eventsReceived).toBeLessThan(30)
    expect(first.quotaLeft).toBe(100 - first.eventsReceived)
  })

  it('lets everything through in later sessions as the quota refills', async () => {
    // 240 at once, then 4 a second: the last 10 take a few seconds of sessions.
    const { flooder, puller } = await pair(250, 300, { pullEventsPerMinute: 240 })
    await waitUntil(
      'every event to arrive, session after session',
      async () => {
        await puller.sync.syncWith(flooder.node.peerId)
        return puller.replica.ids.size === 250
      },
      20_000,
      200
    )
    expect(puller.sync.stats().quotaLeft).toBeGreaterThan(0)
  })
})
