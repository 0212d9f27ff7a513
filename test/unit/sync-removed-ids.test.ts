/**
 * Ids removed from a node's set while a sync session is running (a plan that
 * expires mid-session). The session reconciles the snapshot it started with,
 * so it still tells the peer about those ids and the peer may WANT them: the
 * serving side answers each as missing (settled with no event) and both
 * sessions end well. Real sessions over createMemoryStreamPair, on virtual time.
 */
import { describe, expect, it } from 'vitest'
import { seededRandom } from '../../src/ports/scheduler.js'
import { NodeClock, VirtualTime } from '../../src/sim/virtual-time.js'
import { IdSet } from '../../src/core/id-set.js'
import { DEFAULT_SYNC_LIMITS, InflightIds, createMemoryStreamPair, runSyncSession } from '../../src/sync/index.js'
import type { Scheduler } from '../../src/ports/scheduler.js'
import type { SessionHost, SyncLimits, SyncStats } from '../../src/sync/index.js'
import { SIGNATURE_BYTES, eventIdOfWire } from '../../src/wire/codec.js'

function fakeEvent(random: () => number, size: number): { id: string; bytes: Uint8Array } {
  const bytes = new Uint8Array(size)
  for (let i = 0; i < size - SIGNATURE_BYTES; i++) bytes[i] = Math.floor(random() * 256)
  return { id: eventIdOfWire(bytes) as string, bytes }
}

/** A node as a session sees it; `expire` takes ids out of both the set and the bytes it serves, as expiry does. */
class FakeNode {
  readonly ids = new IdSet()
  readonly bytes = new Map<string, Uint8Array>()
  readonly inflight = new InflightIds()
  readonly asked: string[] = []

  /** Virtual ms each ingested event takes (so that a removal can come while events are still arriving). */
  constructor(private readonly ingestMs = 0) {}

  add(e: { id: string; bytes: Uint8Array }): void {
    this.bytes.set(e.id, e.bytes)
    this.ids.add(e.id)
  }

  expire(ids: readonly string[]): number {
    for (const id of ids) this.bytes.delete(id)
    return this.ids.removeMany(ids)
  }

  host(scheduler: Scheduler, limits: SyncLimits = DEFAULT_SYNC_LIMITS): SessionHost {
    return {
      ids: this.ids,
      has: id => this.ids.has(id),
      getBytes: id => {
        this.asked.push(id)
        return this.bytes.get(id)
      },
      ingest: async bytes => {
        if (this.ingestMs > 0) await new Promise(resolve => scheduler.after(this.ingestMs, () => resolve(null)))
        const id = eventIdOfWire(bytes)
        if (id === null) throw new Error('bad bytes')
        this.add({ id, bytes })
      },
      inflight: this.inflight,
      limits,
      log: Object.assign(() => {}, { error: () => {} })
    }
  }
}

async function sync(
  a: FakeNode,
  b: FakeNode,
  seed: number,
  during: (scheduler: Scheduler) => void
): Promise<[SyncStats, SyncStats]> {
  const time = new VirtualTime()
  const scheduler = new NodeClock(time, 0, seed).scheduler
  const pair = createMemoryStreamPair(scheduler, { delayMs: 5 })
  const results: SyncStats[] = []
  void Promise.all([
    runSyncSession(a.host(scheduler), pair.a, 'b', 'outbound', scheduler),
    runSyncSession(b.host(scheduler), pair.b, 'a', 'inbound', scheduler)
  ]).then(stats => {
    results.push(...stats)
  })
  during(scheduler)
  expect(await time.run(3_600_000, () => results.length === 2)).toBe('done')
  return results as [SyncStats, SyncStats]
}

describe('sync sessions while ids are removed', () => {
  it('a newcomer asks for ids the server removed after its snapshot: answered as missing, both sessions ok', async () => {
    const random = seededRandom(3)
    const newcomer = new FakeNode()
    const server = new FakeNode()
    const events = Array.from({ length: 300 }, () => fakeEvent(random, 200))
    for (const e of events) server.add(e)
    const expired = events.filter((_, i) => i % 7 === 0).map(e => e.id)

    // Both sessions have taken their snapshots; the plan expires before the first message arrives.
    const [sn, ss] = await sync(newcomer, server, 1, () => {
      expect(server.expire(expired)).toBe(expired.length)
    })

    expect(sn.ok, sn.error).toBe(true)
    expect(ss.ok, ss.error).toBe(true)
    expect(sn.wanted).toBe(300) // the snapshot still listed the expired ids
    expect(sn.eventsReceived).toBe(300 - expired.length)
    for (const id of expired) {
      expect(server.asked).toContain(id)
      expect(newcomer.ids.has(id)).toBe(false)
    }
    expect(newcomer.ids.size).toBe(300 - expired.length)
    expect(newcomer.ids.fingerprint('', null)).toEqual(server.ids.fingerprint('', null))
    expect(newcomer.inflight.size + server.inflight.size).toBe(0)
  })

  it('ids removed while events are flowing, on both sides, end in equal sets and no failure', async () => {
    const random = seededRandom(4)
    const a = new FakeNode(1)
    const b = new FakeNode(1)
    const events = Array.from({ length: 3_000 }, () => fakeEvent(random, 700))
    events.forEach((e, i) => {
      if (i % 3 !== 0) a.add(e)
      if (i % 3 !== 1) b.add(e)
    })
    const gone = events.filter((_, i) => i % 5 === 0).map(e => e.id)

    // Once both sides have taken in some of the other's events, both expire the same ids.
    let heldThen: number[] = []
    const [sa, sb] = await sync(a, b, 2, scheduler => {
      const stop = scheduler.every(1, () => {
        if (a.ids.size === 2_000 || b.ids.size === 2_000) return
        heldThen = [a.ids.size, b.ids.size]
        a.expire(gone)
        b.expire(gone)
        stop()
      })
    })

    expect(sa.ok, sa.error).toBe(true)
    expect(sb.ok, sb.error).toBe(true)
    expect(heldThen[0]).toBeLessThan(3_000) // the removal came while events were still flowing
    expect(heldThen[1]).toBeLessThan(3_000)
    // Ids both kept, or that arrived before the removal and were removed with it: each side ends with the rest.
    const kept = events.map(e => e.id).filter(id => !gone.includes(id))
    for (const id of kept) expect(a.ids.has(id) && b.ids.has(id), id).toBe(true)
  })
})
