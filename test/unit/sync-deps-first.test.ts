/**
 * A catch-up asks for the deps of events that arrived without them before
 * the rest of what it reconciled. Ids are hashes, so the reconciled order is
 * random with respect to plans: pulled in that order, most of a long history
 * parks until the end. Here a newcomer takes 60,000 events (12,000 chains of
 * 5, each event depending on the one before; 15 windows of outstanding wants) from a holder over real
 * sessions on virtual time; its host parks an event whose dep it lacks and
 * reports the dep as missing, as the replica does. Asking for those first
 * must keep far fewer events parked than a host that reports nothing (the
 * reconciled order), and must not ask for any id twice.
 */
import { describe, expect, it } from 'vitest'
import { seededRandom } from '../../src/ports/scheduler.js'
import { NodeClock, VirtualTime } from '../../src/sim/virtual-time.js'
import { IdSet } from '../../src/core/id-set.js'
import { DEFAULT_SYNC_LIMITS, InflightIds, createMemoryStreamPair, runSyncSession } from '../../src/sync/index.js'
import type { SessionHost, SyncStats } from '../../src/sync/index.js'
import { SIGNATURE_BYTES, eventIdOfWire } from '../../src/wire/codec.js'

interface Fake {
  readonly id: string
  readonly bytes: Uint8Array
  /** The id this event depends on, or null (a chain's first). */
  readonly dep: string | null
}

function chains(count: number, length: number, seed: number): Fake[] {
  const random = seededRandom(seed)
  const out: Fake[] = []
  for (let c = 0; c < count; c++) {
    let dep: string | null = null
    for (let i = 0; i < length; i++) {
      const bytes = new Uint8Array(96)
      for (let b = 0; b < bytes.length - SIGNATURE_BYTES; b++) bytes[b] = Math.floor(random() * 256)
      const id = eventIdOfWire(bytes) as string
      out.push({ id, bytes, dep })
      dep = id
    }
  }
  return out
}

/** A node as a session sees it: it holds an event once its dep is held, and parks it until then. */
class ChainNode {
  readonly ids = new IdSet()
  readonly bytes = new Map<string, Uint8Array>()
  readonly inflight = new InflightIds()
  /** Parked events by the dep they wait for. */
  private readonly waiting = new Map<string, Fake[]>()
  private readonly parked = new Set<string>()
  maxParked = 0
  readonly received = new Map<string, number>()

  constructor(
    private readonly depOf: Map<string, string | null>,
    private readonly reports: boolean
  ) {}

  hold(e: Fake): void {
    this.bytes.set(e.id, e.bytes)
    this.ids.add(e.id)
    const next = this.waiting.get(e.id)
    if (next === undefined) return
    this.waiting.delete(e.id)
    for (const w of next) {
      this.parked.delete(w.id)
      this.hold(w)
    }
  }

  ingest(bytes: Uint8Array): { missing?: string[] } {
    const id = eventIdOfWire(bytes) as string
    this.received.set(id, (this.received.get(id) ?? 0) + 1)
    const dep = this.depOf.get(id) ?? null
    const e = { id, bytes, dep }
    if (dep === null || this.ids.has(dep)) {
      this.hold(e)
      return {}
    }
    const list = this.waiting.get(dep) ?? []
    list.push(e)
    this.waiting.set(dep, list)
    this.parked.add(id)
    this.maxParked = Math.max(this.maxParked, this.parked.size)
    return this.reports ? { missing: [dep] } : {}
  }

  host(): SessionHost {
    return {
      ids: this.ids,
      // Held or parked, as the replica's: such ids are never asked for.
      has: id => this.ids.has(id) || this.parked.has(id),
      getBytes: id => this.bytes.get(id),
      ingest: async bytes => await Promise.resolve(this.ingest(bytes)),
      ingestMany: async batch => await Promise.resolve(batch.map(b => this.ingest(b))),
      inflight: this.inflight,
      limits: DEFAULT_SYNC_LIMITS,
      log: Object.assign(() => {}, { error: () => {} })
    }
  }
}

async function catchUp(reports: boolean): Promise<{ newcomer: ChainNode; stats: SyncStats[]; total: number }> {
  const events = chains(12_000, 5, 7)
  const depOf = new Map(events.map(e => [e.id, e.dep]))
  const holder = new ChainNode(depOf, false)
  for (const e of events) holder.hold(e)
  const newcomer = new ChainNode(depOf, reports)
  const time = new VirtualTime()
  const scheduler = new NodeClock(time, 0, 1).scheduler
  const pair = createMemoryStreamPair(scheduler, { delayMs: 5 })
  const stats: SyncStats[] = []
  void Promise.all([
    runSyncSession(newcomer.host(), pair.a, 'holder', 'outbound', scheduler),
    runSyncSession(holder.host(), pair.b, 'newcomer', 'inbound', scheduler)
  ]).then(s => {
    stats.push(...s)
  })
  expect(await time.run(3_600_000, () => stats.length === 2)).toBe('done')
  return { newcomer, stats, total: events.length }
}

describe('a catch-up asks for missing deps first', () => {
  it('parks far fewer events than the reconciled order, and asks for no id twice', async () => {
    const plain = await catchUp(false)
    const first = await catchUp(true)
    for (const run of [plain, first]) {
      for (const s of run.stats) expect(s.ok, s.error).toBe(true)
      expect(run.newcomer.ids.size).toBe(run.total)
      expect(Math.max(...run.newcomer.received.values())).toBe(1)
      expect(run.stats[0]?.wanted).toBe(run.total)
    }
    // In the reconciled order most of the history waits for a dep at some point.
    expect(plain.newcomer.maxParked).toBeGreaterThan(plain.total / 4)
    expect(first.newcomer.maxParked).toBeLessThan(plain.newcomer.maxParked / 2)
  })
})
