/**
 * `--history open` over real libp2p nodes: a scoped sync service
 * (scope 'open', src/sync/session.ts) beside a holder of a long history
 * pulls the holder's plans under way and nothing else, in sessions that
 * stay small; the holder sees it is scoped and pulls what the scoped node
 * published; a `fresh` sync from the scoped node counts only once the holder
 * holds its plans under way; and a holder of the release before (no
 * open-ids protocol) ends every session with it cleanly, giving nothing.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { connect, createSyncPeer, fakeEvent, stopPeers } from '../helpers/sync-nodes.js'
import type { SyncPeer } from '../helpers/sync-nodes.js'
import { waitUntil } from '../helpers/wait.js'
import { PLAN_SUMMARY_PROTOCOL } from '../../src/sync/plan-summary.js'

const peers: SyncPeer[] = []
afterEach(async () => {
  await stopPeers(peers.splice(0))
})

const HISTORY = 5_000
const OPEN = 120

/**
 * A holder of HISTORY events, the first OPEN of them in its plans under way, as is everything it receives
 * (a replica's plans under way take in what arrives); `serves` false: it does not speak open-ids.
 */
async function holder(serves = true, intervalMs = 0): Promise<{ peer: SyncPeer; open: string[] }> {
  const events = Array.from({ length: HISTORY }, () => fakeEvent(200))
  const open = events.slice(0, OPEN).map(e => e.id)
  let received: readonly string[] = []
  const openIds = (max: number): string[] => [...open, ...received].slice(0, max)
  const peer = await createSyncPeer(serves ? { openIds, intervalMs } : { intervalMs })
  received = peer.replica.received
  for (const e of events) peer.replica.add(e)
  peers.push(peer)
  return { peer, open }
}

/** A scoped node whose own plans under way are the events in `own`. */
async function scoped(own: string[] = []): Promise<SyncPeer> {
  const peer = await createSyncPeer({ scope: 'open', openIds: max => own.slice(0, max) })
  peers.push(peer)
  return peer
}

describe('--history open: sync scoped to the plans under way', () => {
  it('pulls the holder plans under way and nothing of its history, in small sessions', async () => {
    const { peer: h, open } = await holder()
    const s = await scoped()
    await connect(s.node, h.node)
    await waitUntil('the scoped node to hold the plans under way', () => s.replica.ids.size >= OPEN, 30_000, 20)
    // A few more sessions, on demand, each started after the last: with nothing new under way, each is a few frames.
    for (let i = 0; i < 3; i++) expect((await s.sync.syncWith(h.node.peerId, { fresh: true })).ok).toBe(true)
    await waitUntil('the holder sessions to end', () => h.sessions.length > 0, 10_000, 20)
    expect(new Set(s.replica.received)).toEqual(new Set(open))
    expect(s.replica.ids.size).toBe(OPEN)
    expect(s.sessions.every(x => x.ok)).toBe(true)
    expect(h.sessions.every(x => x.ok && x.peerScoped === true && x.eventsReceived === 0)).toBe(true)
    const quiet = s.sessions.filter(x => x.eventsReceived === 0)
    expect(quiet.length).toBeGreaterThanOrEqual(2)
    for (const x of quiet) expect(x.bytesReceived + x.bytesSent).toBeLessThan(200)
    // The whole history, listed, would be 32 bytes an id: the scoped node never saw it.
    const total = s.sessions.reduce((n, x) => n + x.bytesReceived, 0)
    expect(total).toBeLessThan(OPEN * 260 + 4_096)
  }, 60_000)

  it('the holder pulls what the scoped node published, and a fresh sync counts only once it holds it', async () => {
    const { peer: h } = await holder(true, 300)
    const mine = Array.from({ length: 25 }, () => fakeEvent(200))
    const own = mine.map(e => e.id)
    const s = await scoped(own)
    for (const e of mine) s.replica.add(e)
    await connect(s.node, h.node)
    // The holder sees a scoped peer in its first session with it, asks for its plans under way, and pulls them.
    await waitUntil('the holder to hold the scoped node events', () => mine.every(e => h.replica.ids.has(e.id)), 30_000)
    expect(h.sessions.some(x => x.peerScoped === true)).toBe(true)
    expect(h.replica.ids.size).toBe(HISTORY + mine.length)
    expect((await s.sync.syncWith(h.node.peerId, { fresh: true })).ok).toBe(true)

    // One more event the holder has not seen: a fresh sync says so until the holder pulled it.
    const late = fakeEvent(200)
    own.push(late.id)
    s.replica.add(late)
    const first = await s.sync.syncWith(h.node.peerId, { fresh: true })
    if (!first.ok) expect(first.error).toMatch(/does not hold 1 events of the plans under way/)
    await waitUntil(
      'a fresh sync to confirm the late event',
      async () => ((await s.sync.syncWith(h.node.peerId, { fresh: true })).ok ? true : undefined),
      30_000,
      200
    )
    expect(h.replica.ids.has(late.id)).toBe(true)
  }, 60_000)

  it('a peer describes a plan it holds on request; one that does not, or speaks nonsense, gives nothing', async () => {
    const plan = 'ab'.repeat(32)
    const summary = { plan, goal: 'a picnic', status: 'completed', treeHash: 'cd'.repeat(32), nodes: 3, done: 3 }
    const described = await createSyncPeer({
      summaryOf: p => (p === plan ? { ...summary, deliverable: 'x' } : undefined)
    })
    peers.push(described)
    const s = await scoped()
    await connect(s.node, described.node)
    expect(await s.sync.askSummary(plan)).toEqual({
      from: described.node.peerId.toString(),
      summary: { ...summary, deliverable: 'x' }
    })
    expect(await s.sync.askSummary('ef'.repeat(32))).toBeNull()
    // A peer that answers with something else, and one without the protocol: nothing, no throw.
    await described.node.unhandle(PLAN_SUMMARY_PROTOCOL)
    await described.node.handle(PLAN_SUMMARY_PROTOCOL, stream => {
      stream.send(new TextEncoder().encode('{"plan": "another"}'))
      stream.close().catch(() => {})
    })
    expect(await s.sync.askSummary(plan)).toBeNull()
    await described.node.unhandle(PLAN_SUMMARY_PROTOCOL)
    expect(await s.sync.askSummary(plan)).toBeNull()
  }, 60_000)

  it('a holder that does not speak open-ids (the release before 0.3) ends every session cleanly, giving nothing', async () => {
    const { peer: h } = await holder(false)
    const s = await scoped()
    await connect(s.node, h.node)
    for (let i = 0; i < 2; i++) expect((await s.sync.syncWith(h.node.peerId)).ok).toBe(true)
    await waitUntil('the holder session to end', () => h.sessions.length > 0, 10_000, 20)
    expect(s.replica.ids.size).toBe(0)
    expect(h.sessions.every(x => x.ok)).toBe(true)
  }, 60_000)
})
