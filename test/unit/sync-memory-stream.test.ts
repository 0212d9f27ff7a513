/**
 * Real sync sessions over createMemoryStreamPair on a virtual clock: no
 * libp2p, no wall clock, so link delay, jitter, backpressure, a cut link and
 * the session's own timeouts all play out in virtual milliseconds.
 */
import { describe, expect, it } from 'vitest'
import type { Scheduler } from '../../src/ports/scheduler.js'
import { seededRandom } from '../../src/ports/scheduler.js'
import { NodeClock, VirtualTime } from '../../src/sim/virtual-time.js'
import { IdSet } from '../../src/core/id-set.js'
import { DEFAULT_SYNC_LIMITS, InflightIds, createMemoryStreamPair, runSyncSession } from '../../src/sync/index.js'
import type { MemoryDirection, SessionHost, SyncLimits, SyncStats, SyncStreamListener } from '../../src/sync/index.js'
import { SIGNATURE_BYTES, eventIdOfWire } from '../../src/wire/codec.js'

/** The simulator's virtual time (src/sim/virtual-time.ts) with one node's clock on it. */
class VirtualClock {
  private readonly time = new VirtualTime()
  readonly scheduler: Scheduler

  constructor(seed: number) {
    this.scheduler = new NodeClock(this.time, 0, seed).scheduler
  }

  get now(): number {
    return this.time.elapsed
  }

  /** Fires timers until `done()` holds; 'idle' if nothing is left to fire first (a hang), 'deadline' past `untilMs`. */
  async run(done: () => boolean, untilMs = 3_600_000): Promise<'done' | 'idle' | 'deadline'> {
    return await this.time.run(untilMs, done)
  }
}

/** A fake event of `size` wire bytes from a seeded stream: envelope bytes + a zero "signature"; its id is eventIdOfWire. */
function fakeEvent(random: () => number, size: number): { id: string; bytes: Uint8Array } {
  const bytes = new Uint8Array(size)
  for (let i = 0; i < size - SIGNATURE_BYTES; i++) bytes[i] = Math.floor(random() * 256)
  return { id: eventIdOfWire(bytes) as string, bytes }
}

/** A node as a session sees it: an IdSet, the bytes it serves, an ingest that stores (after `ingestMs` of virtual work). */
class FakeNode {
  readonly ids = new IdSet()
  readonly bytes = new Map<string, Uint8Array>()
  readonly inflight = new InflightIds()
  received = 0

  constructor(
    private readonly clock: VirtualClock,
    private readonly ingestMs = 0
  ) {}

  add(e: { id: string; bytes: Uint8Array }): void {
    this.bytes.set(e.id, e.bytes)
    this.ids.add(e.id)
  }

  host(limits: SyncLimits = DEFAULT_SYNC_LIMITS): SessionHost {
    const log = Object.assign(() => {}, { error: () => {} })
    return {
      ids: this.ids,
      has: id => this.ids.has(id),
      getBytes: id => this.bytes.get(id),
      ingest: async bytes => {
        if (this.ingestMs > 0)
          await new Promise<void>(resolve => {
            this.clock.scheduler.after(this.ingestMs, resolve)
          })
        const id = eventIdOfWire(bytes)
        if (id === null) throw new Error('bad bytes')
        this.received++
        this.add({ id, bytes })
      },
      inflight: this.inflight,
      limits,
      log
    }
  }
}

function sortedIds(set: IdSet): readonly string[] {
  return set.snapshot().slice()
}

describe('sync sessions over a memory stream pair on virtual time', () => {
  it('two sessions reconcile both ways over a jittery link, and both sets end equal', async () => {
    const clock = new VirtualClock(7)
    const random = seededRandom(11)
    const a = new FakeNode(clock)
    const b = new FakeNode(clock)
    for (let i = 0; i < 300; i++) {
      const e = fakeEvent(random, 120 + Math.floor(random() * 400))
      if (i < 200) a.add(e)
      if (i >= 150) b.add(e)
    }
    const bytes: Record<MemoryDirection, number> = { 'a-to-b': 0, 'b-to-a': 0 }
    const jitter = seededRandom(3)
    const pair = createMemoryStreamPair(clock.scheduler, {
      delayMs: () => 5 + jitter() * 40,
      onBytes: (n, direction) => {
        bytes[direction] += n
      }
    })
    const results: SyncStats[] = []
    void Promise.all([
      runSyncSession(a.host(), pair.a, 'b', 'outbound', clock.scheduler),
      runSyncSession(b.host(), pair.b, 'a', 'inbound', clock.scheduler)
    ]).then(stats => {
      results.push(...stats)
    })

    expect(await clock.run(() => results.length === 2)).toBe('done')
    const [sa, sb] = results as [SyncStats, SyncStats]
    expect(sa.ok, sa.error).toBe(true)
    expect(sb.ok, sb.error).toBe(true)
    expect(a.ids.size).toBe(300)
    expect(sortedIds(a.ids)).toEqual(sortedIds(b.ids))
    expect([a.received, b.received]).toEqual([100, 150])
    expect([sa.eventsReceived, sb.eventsReceived]).toEqual([100, 150])
    expect(sa.bytesSent).toBe(bytes['a-to-b'])
    expect(sb.bytesSent).toBe(bytes['b-to-a'])
    expect(sa.bytesReceived).toBe(bytes['b-to-a'])
    expect(sa.ms).toBe(Math.round(clock.now)) // durations are virtual: both ran from time 0 to the end
    expect(clock.now).toBeGreaterThan(0)
    expect(a.inflight.size + b.inflight.size).toBe(0)
  })

  it('a slow ingest and a small window: the reader pauses, the sender waits for drain, and everything arrives', async () => {
    const clock = new VirtualClock(1)
    const random = seededRandom(2)
    const a = new FakeNode(clock, 1) // 1 virtual ms per event
    const b = new FakeNode(clock)
    for (let i = 0; i < 1500; i++) b.add(fakeEvent(random, 600))
    const limits = { ...DEFAULT_SYNC_LIMITS, maxFrameBytes: 64 * 1024, eventsBatchBytes: 16 * 1024 }
    const sent = { 'a-to-b': 0, 'b-to-a': 0 }
    const pair = createMemoryStreamPair(clock.scheduler, {
      delayMs: 2,
      windowBytes: 32 * 1024,
      onBytes: (n, d) => {
        sent[d] += n
      }
    })
    const counts = { pauses: 0, waits: 0 }
    const pause = pair.a.pause.bind(pair.a)
    pair.a.pause = () => {
      counts.pauses++
      pause()
    }
    const send = pair.b.send.bind(pair.b)
    pair.b.send = bytes => {
      const ok = send(bytes)
      if (!ok) counts.waits++
      return ok
    }
    const results: SyncStats[] = []
    void Promise.all([
      runSyncSession(a.host(limits), pair.a, 'b', 'outbound', clock.scheduler),
      runSyncSession(b.host(limits), pair.b, 'a', 'inbound', clock.scheduler)
    ]).then(stats => {
      results.push(...stats)
    })

    expect(await clock.run(() => results.length === 2)).toBe('done')
    expect(results.map(s => s.error)).toEqual([undefined, undefined])
    expect(a.received).toBe(1500)
    expect(sortedIds(a.ids)).toEqual(sortedIds(b.ids))
    expect(clock.now).toBeGreaterThanOrEqual(1500) // the ingest work, in virtual time
    expect(sent['b-to-a']).toBeGreaterThan(1500 * 600)
    expect(counts.pauses).toBeGreaterThan(0)
    expect(counts.waits).toBeGreaterThan(0)
  })

  it('a cut pair ends both sessions with ok=false and no hang', async () => {
    const clock = new VirtualClock(5)
    const random = seededRandom(6)
    const a = new FakeNode(clock, 2)
    const b = new FakeNode(clock, 2)
    for (let i = 0; i < 400; i++) (i % 2 === 0 ? a : b).add(fakeEvent(random, 300))
    const pair = createMemoryStreamPair(clock.scheduler, { delayMs: 10 })
    const results: SyncStats[] = []
    void Promise.all([
      runSyncSession(a.host(), pair.a, 'b', 'outbound', clock.scheduler),
      runSyncSession(b.host(), pair.b, 'a', 'inbound', clock.scheduler)
    ]).then(stats => {
      results.push(...stats)
    })
    clock.scheduler.after(100, () => {
      pair.cut('partition')
    })

    expect(await clock.run(() => results.length === 2)).toBe('done')
    for (const s of results) {
      expect(s.ok).toBe(false)
      expect(s.error).toMatch(/StreamCutError: partition/)
    }
    expect(clock.now).toBeLessThan(DEFAULT_SYNC_LIMITS.idleTimeoutMs) // ended by the cut, not a timeout
    expect(a.received).toBeGreaterThan(0)
    expect(a.received).toBeLessThan(200)
    expect(a.inflight.size + b.inflight.size).toBe(0)
    // The pair stays cut: no more sending.
    expect(() => pair.a.send(new Uint8Array(1))).toThrow(/partition/)
  })

  it('a peer that never answers: the session ends by its idle timeout, in virtual time', async () => {
    const clock = new VirtualClock(9)
    const a = new FakeNode(clock)
    a.add(fakeEvent(seededRandom(1), 200))
    const pair = createMemoryStreamPair(clock.scheduler, { delayMs: 1 })
    pair.b.listen({ onData: () => {}, onEnd: () => {}, onClose: () => {} })
    const limits = { ...DEFAULT_SYNC_LIMITS, idleTimeoutMs: 5_000 }
    let stats: SyncStats | undefined
    void runSyncSession(a.host(limits), pair.a, 'b', 'outbound', clock.scheduler).then(s => {
      stats = s
    })

    expect(await clock.run(() => stats !== undefined)).toBe('done')
    expect(stats?.ok).toBe(false)
    expect(stats?.error).toMatch(/SyncTimeoutError: no progress/)
    expect(clock.now).toBeGreaterThanOrEqual(5_000)
    expect(clock.now).toBeLessThan(7_000)
    expect(await clock.run(() => pair.b.status !== 'open')).toBe('done')
    expect(pair.b.status).toBe('reset') // the abort reached the other end, a link delay later
  })
})

describe('createMemoryStreamPair', () => {
  it('keeps chunks in order under jitter, delivers the half-close after the data, and closes both ends cleanly', async () => {
    const clock = new VirtualClock(4)
    const jitter = seededRandom(8)
    const pair = createMemoryStreamPair(clock.scheduler, { delayMs: () => jitter() * 100 })
    const got: number[] = []
    const events: string[] = []
    const listener = (name: string): SyncStreamListener => ({
      onData: bytes => {
        got.push(bytes[0] as number)
      },
      onEnd: () => {
        events.push(`${name} end`)
      },
      onClose: err => {
        events.push(`${name} close ${err?.message ?? 'clean'}`)
      }
    })
    pair.a.listen(listener('a'))
    pair.b.listen(listener('b'))
    for (let i = 0; i < 100; i++) pair.a.send(new Uint8Array([i]))
    let closed = 0
    void pair.a.close().then(() => {
      closed++
    })
    void pair.b.close().then(() => {
      closed++
    })

    expect(await clock.run(() => closed === 2 && events.length === 4)).toBe('done')
    expect(got).toEqual(Array.from({ length: 100 }, (_, i) => i))
    expect(events.sort()).toEqual(['a close clean', 'a end', 'b close clean', 'b end'])
    expect([pair.a.status, pair.b.status]).toEqual(['closed', 'closed'])
  })

  it('holds bytes while paused and delivers them, in order, on resume', async () => {
    const clock = new VirtualClock(4)
    const pair = createMemoryStreamPair(clock.scheduler, { delayMs: 1, windowBytes: 10 })
    const got: number[] = []
    pair.b.listen({
      onData: bytes => {
        got.push(...bytes)
      },
      onEnd: () => {},
      onClose: () => {}
    })
    pair.b.pause()
    expect(pair.a.send(new Uint8Array([1, 2, 3, 4, 5]))).toBe(true)
    expect(pair.a.send(new Uint8Array([6, 7, 8, 9, 10]))).toBe(false) // window full: wait for drain
    let drained = false
    void pair.a.onDrain().then(() => {
      drained = true
    })
    expect(await clock.run(() => pair.b.readBufferLength === 10)).toBe('done')
    expect(got).toEqual([])
    expect(drained).toBe(false)
    pair.b.resume()
    await new Promise(resolve => setImmediate(resolve))
    expect(got).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(drained).toBe(true)
  })
})
