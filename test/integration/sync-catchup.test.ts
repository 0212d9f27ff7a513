/**
 * The sync protocol between real libp2p nodes (tcp on 127.0.0.1, noise,
 * yamux) in one process: late joiner, cost in proportion to the difference,
 * both directions, the `has` filter, pulling from two peers at once, and
 * periodic repair.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { SyncPeer } from '../helpers/sync-nodes.js'
import { FakeReplica, connect, createSyncPeer, fakeEvent, randomId, stopPeers } from '../helpers/sync-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const peers: SyncPeer[] = []

async function peer(options: Parameters<typeof createSyncPeer>[0] = {}, replica?: FakeReplica): Promise<SyncPeer> {
  const p = await createSyncPeer(options, replica)
  peers.push(p)
  return p
}

afterEach(async () => {
  await stopPeers(peers.splice(0))
})

describe('sync: catch-up between real nodes', () => {
  it('a late joiner gets all 10k events in one session', async () => {
    const a = await peer()
    const b = await peer()
    for (let i = 0; i < 10_000; i++) a.replica.add(fakeEvent(300))
    const started = performance.now()
    await connect(b.node, a.node)
    await waitUntil('B to hold 10k events', () => b.replica.ids.size === 10_000, 20_000, 10)
    const ms = performance.now() - started
    await waitUntil('both ends of the session to finish', () => a.sessions.length + b.sessions.length === 2, 5_000)
    // One session (the smaller peer id opened it), seen from both ends, both OK.
    expect(a.sessions.every(s => s.ok)).toBe(true)
    expect(b.sessions.every(s => s.ok)).toBe(true)
    expect(a.sessions.length + b.sessions.length).toBe(2)
    expect(b.replica.received.length).toBe(10_000) // each event once
    const bSide = b.sessions[0]
    console.log(
      `[sync] late joiner: 10k events (300 B) held ${ms.toFixed(0)} ms after dial; ` +
        `session ${bSide?.ms} ms, ${bSide?.rounds} reconcile messages, B received ${bSide?.bytesReceived} B ` +
        `(${bSide?.eventBytesReceived} B event bodies), sent ${bSide?.bytesSent} B`
    )
  })

  it('costs bytes in proportion to the difference: 100k common ids + 5 unique each', async () => {
    const a = await peer({ syncOnConnect: false })
    const b = await peer({ syncOnConnect: false })
    for (let i = 0; i < 100_000; i++) {
      const id = randomId()
      a.replica.addIdOnly(id)
      b.replica.addIdOnly(id)
    }
    const onlyA = Array.from({ length: 5 }, () => fakeEvent(300))
    const onlyB = Array.from({ length: 5 }, () => fakeEvent(300))
    for (const e of onlyA) a.replica.add(e)
    for (const e of onlyB) b.replica.add(e)
    // Warm the snapshots so the timing below is the exchange, not the first sort.
    a.replica.ids.snapshot()
    b.replica.ids.snapshot()
    await connect(a.node, b.node)

    const diff = await a.sync.syncWith(b.node.peerId)
    expect(diff.ok).toBe(true)
    for (const e of [...onlyA, ...onlyB]) {
      expect(a.replica.ids.has(e.id)).toBe(true)
      expect(b.replica.ids.has(e.id)).toBe(true)
    }
    expect(a.replica.ids.size).toBe(100_010)
    expect(b.replica.ids.size).toBe(100_010)
    expect(diff.eventsReceived).toBe(5)
    expect(diff.eventsSent).toBe(5)
    const total = diff.bytesSent + diff.bytesReceived
    const bodies = diff.eventBytesSent + diff.eventBytesReceived
    expect(total - bodies).toBeLessThan(30_000)
    expect(total).toBeLessThan(30_000)

    const same = await a.sync.syncWith(b.node.peerId)
    expect(same.ok).toBe(true)
    expect(same.eventsReceived + same.eventsSent).toBe(0)
    const sameTotal = same.bytesSent + same.bytesReceived
    console.log(
      `[sync] 100k+5 vs 100k+5: ${total} B both directions including the 10 event bodies ` +
        `(${total - bodies} B without their ${bodies} B), ${diff.rounds} reconcile messages, ${diff.ms} ms; ` +
        `identical 100k sets: ${sameTotal} B, ${same.rounds} reconcile messages, ${same.ms} ms`
    )
    expect(sameTotal).toBeLessThan(2_000)
  })

  it('both directions pull: each side ends with the union', async () => {
    const a = await peer({ syncOnConnect: false })
    const b = await peer({ syncOnConnect: false })
    const common = Array.from({ length: 200 }, () => fakeEvent(250))
    for (const e of common) {
      a.replica.add(e)
      b.replica.add(e)
    }
    for (let i = 0; i < 300; i++) a.replica.add(fakeEvent(280))
    for (let i = 0; i < 400; i++) b.replica.add(fakeEvent(320))
    await connect(a.node, b.node)
    const stats = await a.sync.syncWith(b.node.peerId)
    expect(stats.ok).toBe(true)
    expect(stats.eventsReceived).toBe(400)
    expect(stats.eventsSent).toBe(300)
    expect(a.replica.received.length).toBe(400)
    await waitUntil('the inbound side to finish', () => b.sessions.length === 1, 5_000)
    expect(b.replica.received.length).toBe(300)
    expect(a.replica.ids.size).toBe(900)
    expect(b.replica.ids.size).toBe(900)
    expect(b.sessions[0]?.ok).toBe(true)
  })

  it('never requests ids the receiver holds as parked', async () => {
    const a = await peer({ syncOnConnect: false })
    const b = await peer({ syncOnConnect: false })
    const events = Array.from({ length: 100 }, () => fakeEvent(300))
    for (const e of events) a.replica.add(e)
    const parked = events.slice(0, 10).map(e => e.id)
    for (const id of parked) b.replica.parked.add(id)
    await connect(a.node, b.node)
    const stats = await b.sync.syncWith(a.node.peerId)
    expect(stats.ok).toBe(true)
    expect(stats.wanted).toBe(90)
    expect(stats.eventsReceived).toBe(90)
    expect(b.replica.received.length).toBe(90)
    for (const id of parked) expect(b.replica.received.includes(id)).toBe(false)
    await waitUntil('the serving side to finish', () => a.sessions.length === 1, 5_000)
    expect(a.sessions[0]?.eventsSent).toBe(90)
  })

  it('pulls each event once when syncing with two peers at once, and joins a running session', async () => {
    const a1 = await peer({ syncOnConnect: false })
    const a2 = await peer({ syncOnConnect: false })
    const b = await peer({ syncOnConnect: false })
    for (let i = 0; i < 10_000; i++) {
      const e = fakeEvent(300)
      a1.replica.add(e)
      a2.replica.add(e)
    }
    await connect(b.node, a1.node)
    await connect(b.node, a2.node)
    const first = b.sync.syncWith(a1.node.peerId)
    const joined = b.sync.syncWith(a1.node.peerId.toString())
    expect(joined).toBe(first)
    const [s1, s2] = await Promise.all([first, b.sync.syncWith(a2.node.peerId)])
    expect(s1.ok).toBe(true)
    expect(s2.ok).toBe(true)
    expect(b.replica.ids.size).toBe(10_000)
    expect(b.replica.received.length).toBe(10_000)
    console.log(
      `[sync] two sources at once: ${s1.eventsReceived} + ${s2.eventsReceived} events, 0 duplicates, ` +
        `${Math.max(s1.ms, s2.ms)} ms`
    )
  })

  it('a session ends only once the peer has ingested what it pulled', async () => {
    const held = new FakeReplica()
    const ingest = held.ingest
    const a = await peer({ syncOnConnect: false })
    const b = await peer(
      {
        syncOnConnect: false,
        ingest: async (bytes, from) => {
          await new Promise(resolve => setTimeout(resolve, 200))
          return await ingest(bytes, from)
        }
      },
      held
    )
    const event = fakeEvent(300)
    a.replica.add(event)
    await connect(a.node, b.node)
    const stats = await a.sync.syncWith(b.node.peerId)
    expect(stats.ok).toBe(true)
    // Before, B said DONE as soon as the EVENTS frame arrived, while still ingesting it.
    expect(b.replica.ids.has(event.id)).toBe(true)
  })

  it('a fresh sync does not join a session that reconciled before the caller stored an event', async () => {
    // What `submit` relies on: its event reached a peer before the client exits.
    // A's session stays open while A ingests what it pulled from B.
    const own = new FakeReplica()
    const ingest = own.ingest
    const gate = Promise.withResolvers<void>()
    let calls = 0
    const a = await peer(
      {
        syncOnConnect: false,
        ingest: async (bytes, from) => {
          if (calls++ === 0) await gate.promise
          return await ingest(bytes, from)
        }
      },
      own
    )
    const b = await peer({ syncOnConnect: false })
    a.replica.add(fakeEvent(300))
    b.replica.add(fakeEvent(300))
    await connect(a.node, b.node)
    const running = a.sync.syncWith(b.node.peerId)
    // A is ingesting the one event it lacked: the reconciliation is over.
    await waitUntil('the first session to have reconciled', () => calls > 0 && b.replica.ids.size === 2, 5_000)
    const goal = fakeEvent(300)
    a.replica.add(goal)
    const fresh = a.sync.syncWith(b.node.peerId, { fresh: true })
    gate.resolve()
    const first = await running
    expect(first.ok).toBe(true)
    expect(b.replica.ids.has(goal.id)).toBe(false) // the session running at the call did not carry it
    const stats = await fresh
    expect(stats.error).toBeUndefined()
    expect(stats.ok).toBe(true)
    expect(b.replica.ids.has(goal.id)).toBe(true)
  })

  it('a hung ingest ends the session by the idle timeout instead of wedging it', async () => {
    const a = await peer({ syncOnConnect: false })
    const b = await peer({
      syncOnConnect: false,
      ingest: async () => await new Promise(() => {}),
      limits: { idleTimeoutMs: 500 }
    })
    for (let i = 0; i < 20; i++) a.replica.add(fakeEvent(300))
    await connect(b.node, a.node)
    const started = Date.now()
    const stats = await b.sync.syncWith(a.node.peerId)
    expect(stats.ok).toBe(false)
    expect(stats.error).toMatch(/no progress/)
    expect(Date.now() - started).toBeLessThan(3_000)
    expect(b.sync.stats().active).toBe(0)
  })

  it('periodic sync repairs a node that missed events', async () => {
    const a = await peer({ intervalMs: 300 })
    const b = await peer({ intervalMs: 300 })
    for (let i = 0; i < 50; i++) a.replica.add(fakeEvent(300))
    await connect(a.node, b.node)
    await waitUntil('the on-connect sync', () => b.replica.ids.size === 50, 5_000)
    const late = Array.from({ length: 20 }, () => fakeEvent(300))
    for (const e of late) a.replica.add(e) // as if B missed their gossip
    await waitUntil('the periodic sync to repair B', () => late.every(e => b.replica.ids.has(e.id)), 5_000)
    expect(b.replica.ids.size).toBe(70)
    expect(a.sync.stats().failures + b.sync.stats().failures).toBe(0)
  })
})
