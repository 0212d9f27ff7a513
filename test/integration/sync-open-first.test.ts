/**
 * Plans under way first (src/sync/open-ids.ts), over real libp2p nodes: a
 * newcomer asks a holder of 20,000 events for the ids of its plans under
 * way and pulls those 300 first, however they fall in the id order; a
 * holder of the release before (no open-ids protocol) still serves the
 * whole history, in reconciled order; and an answer that is not a list of
 * ids is dropped without harm.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createSyncPeer, connect, fakeEvent, stopPeers } from '../helpers/sync-nodes.js'
import type { SyncPeer } from '../helpers/sync-nodes.js'
import { waitUntil } from '../helpers/wait.js'
import { decodeOpenIds, encodeOpenIds, MAX_OPEN_IDS, OPEN_IDS_PROTOCOL } from '../../src/sync/open-ids.js'

const peers: SyncPeer[] = []
afterEach(async () => {
  await stopPeers(peers.splice(0))
})

/** A holder of `n` events, of which the ids in `open` are of its plans under way; `serves` false: an older release. */
async function holder(n: number, openCount: number, serves: boolean): Promise<{ peer: SyncPeer; open: string[] }> {
  const events = Array.from({ length: n }, () => fakeEvent(200))
  const open = events.slice(0, openCount).map(e => e.id)
  const peer = await createSyncPeer(serves ? { openIds: max => open.slice(0, max) } : {})
  for (const e of events) peer.replica.add(e)
  peers.push(peer)
  return { peer, open }
}

async function newcomer(): Promise<SyncPeer> {
  const peer = await createSyncPeer({ wantsOpenIds: () => true })
  peers.push(peer)
  return peer
}

describe('plans under way first', () => {
  it('a newcomer pulls the ids of the holder plans under way before the rest of the history', async () => {
    const { peer: h, open } = await holder(20_000, 300, true)
    const n = await newcomer()
    await connect(n.node, h.node)
    await waitUntil('the newcomer to hold everything', () => n.replica.ids.size === 20_000, 60_000, 20)
    // In id order the 300 would be spread over the whole catch-up; asked for first, they are among the first taken.
    const firstTaken = new Set(n.replica.received.slice(0, 2_000))
    expect(open.filter(id => !firstTaken.has(id))).toEqual([])
    expect(n.replica.received.length).toBe(20_000)
  }, 90_000)

  it('a holder of the release before serves the whole history in reconciled order', async () => {
    const { peer: h, open } = await holder(5_000, 300, false)
    const n = await newcomer()
    await connect(n.node, h.node)
    await waitUntil('the newcomer to hold everything', () => n.replica.ids.size === 5_000, 60_000, 20)
    expect(n.replica.received.length).toBe(5_000)
    // Without the answer nothing jumps the queue: the open ids lie all over the order of arrival.
    const at = open.map(id => n.replica.received.indexOf(id))
    expect(Math.max(...at)).toBeGreaterThan(2_500)
  }, 90_000)

  it('an answer that is not a list of ids is dropped, and the history still arrives', async () => {
    const h = await createSyncPeer()
    peers.push(h)
    for (let i = 0; i < 500; i++) h.replica.add(fakeEvent(200))
    await h.node.handle(OPEN_IDS_PROTOCOL, stream => {
      stream.send(new Uint8Array(33))
      stream.close().catch(() => {})
    })
    const n = await newcomer()
    await connect(n.node, h.node)
    await waitUntil('the newcomer to hold everything', () => n.replica.ids.size === 500, 30_000, 20)
    expect(n.sessions.every(s => s.ok)).toBe(true)
  }, 60_000)

  it('the answer: whole ids, at most MAX_OPEN_IDS of them', () => {
    const ids = Array.from({ length: 3 }, () => fakeEvent(100).id)
    expect(decodeOpenIds(encodeOpenIds(ids))).toEqual(ids)
    expect(encodeOpenIds(Array.from({ length: MAX_OPEN_IDS + 5 }, () => ids[0] as string)).length).toBe(
      MAX_OPEN_IDS * 32
    )
    expect(() => decodeOpenIds(new Uint8Array(33))).toThrow(/not a list of ids/)
    expect(() => decodeOpenIds(new Uint8Array((MAX_OPEN_IDS + 1) * 32))).toThrow(/at most/)
  })
})
