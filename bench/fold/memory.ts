import '../../src/polyfill.js'
import { pathToFileURL } from 'node:url'
import { generatePlan } from '../common/gen-plan.js'
import { Fold } from '../../src/core/fold.js'
import { IdSet } from '../../src/core/id-set.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { signEvent } from '../../src/wire/sign.js'
import { openEventStore } from '../../src/store/event-store.js'
import { nativeSha256HexOfText } from '../../src/sync/native-hash.js'
import { machine, median } from '../common/util.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'
import type { EventStore } from '../../src/store/event-store.js'

/** One generated plan as the store keeps it: wire bytes. */
interface StoredPlan {
  readonly plan: PlanId
  readonly wire: readonly Uint8Array[]
}

function decodeAll(wire: readonly Uint8Array[]): PlanEvent[] {
  return wire.map(b => {
    const d = decodeEvent(b, { swarm: 'test', verify: false })
    if (d.kind !== 'event') throw new Error(`decode failed: ${JSON.stringify(d)}`)
    return d.event
  })
}

/** Heap in use after a full collection (or RSS, without --expose-gc), in bytes. */
function memoryNow(): number {
  if (globalThis.gc === undefined) return process.memoryUsage().rss
  globalThis.gc()
  globalThis.gc()
  return process.memoryUsage().heapUsed
}

/**
 * Fold every plan as the replica takes a sync round (decoded from its bytes,
 * so the decoded events belong to the fold alone) and, with `evict`, take
 * each out of memory once folded, as the replica does once it is finished
 * and quiet.
 */
function foldPlans(plans: readonly StoredPlan[], store: EventStore, evict: boolean): Fold {
  const fold = new Fold({
    hashText: nativeSha256HexOfText,
    loadPlan: plan => {
      const wire: Uint8Array[] = []
      store.loadPlan(plan, row => {
        wire.push(row.bytes)
      })
      return decodeAll(wire)
    }
  })
  for (const p of plans) {
    fold.addBatch(decodeAll(p.wire), Number.MAX_SAFE_INTEGER)
    if (fold.tree(p.plan)?.status !== 'completed') throw new Error('generated plan did not complete')
    if (evict && !fold.evict(p.plan)) throw new Error(`could not evict plan ${p.plan}`)
  }
  return fold
}

/*
 * Each measure runs in its own call and returns only numbers: what it built
 * is unreachable once it returns (a value left in a caller's frame would
 * still count towards the next measure's baseline).
 */

/** Bytes the fold holds after folding every plan, and its swarmHash. */
function foldMemory(plans: readonly StoredPlan[], store: EventStore, evict: boolean): { bytes: number; hash: string } {
  const before = memoryNow()
  const fold = foldPlans(plans, store, evict)
  const hash = fold.swarmHash()
  return { bytes: memoryNow() - before, hash }
}

/** Bytes the sync id set holds for every event, id strings included: what stays in the replica for evicted plans. */
function idSetMemory(plans: readonly StoredPlan[], events: number): number {
  const before = memoryNow()
  const set = new IdSet()
  for (const p of plans) for (const e of decodeAll(p.wire)) set.add(e.id)
  set.snapshot()
  const bytes = memoryNow() - before
  if (set.size !== events) throw new Error('id set lost ids')
  return bytes
}

/** Ms to bring one evicted plan back and derive its tree, for up to 50 plans. */
function reloadTimes(plans: readonly StoredPlan[], store: EventStore): number[] {
  const fold = foldPlans(plans, store, true)
  const out: number[] = []
  for (const p of plans.slice(0, 50)) {
    const t0 = performance.now()
    fold.reload(p.plan)
    fold.tree(p.plan)
    out.push(performance.now() - t0)
    fold.evict(p.plan)
  }
  return out
}

/**
 * Part of `npm run bench -- fold` (and runnable alone: `node --import tsx
 * --expose-gc bench/fold/memory.ts`): the memory the fold holds after N
 * finished plans, without and with eviction (ADR-0012: finished
 * plans leave memory), what the sync id set still holds for them, and what
 * bringing one plan back costs (an indexed read of an in-memory SQLite
 * store, decoding, folding, deriving and hashing its tree).
 */
export async function benchFoldMemory(): Promise<Record<string, unknown>> {
  const n = Number(process.env.BENCH_MEMORY_PLANS ?? 100)
  const runs = Number(process.env.BENCH_MEMORY_RUNS ?? 3)
  const store = openEventStore({ memory: true })
  const plans: StoredPlan[] = []
  console.error(`fold memory: generating and signing ${n} plans...`)
  for (let i = 0; i < n; i++) {
    const { events, peers, builder } = await generatePlan({ fanout: 3, depth: 2, renewals: 4 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wire: Uint8Array[] = []
    for (const e of events) wire.push((await signEvent(e.env, keys.get(e.env.author) as never)).bytes)
    store.putMany(events.map((e, k) => ({ id: e.id, plan: builder.plan, bytes: wire[k] as Uint8Array, receivedMs: 0 })))
    plans.push({ plan: builder.plan, wire })
  }
  const events = plans.reduce((s, p) => s + p.wire.length, 0)

  const kept: number[] = []
  const evicted: number[] = []
  const ids: number[] = []
  const hashes = new Set<string>()
  for (let r = 0; r < runs; r++) {
    const a = foldMemory(plans, store, false)
    const b = foldMemory(plans, store, true)
    kept.push(a.bytes)
    evicted.push(b.bytes)
    hashes.add(a.hash).add(b.hash)
    ids.push(idSetMemory(plans, events))
  }
  if (hashes.size !== 1) throw new Error('swarmHash differs with eviction')
  // Bringing a plan back: the whole cost a read of an evicted plan pays.
  const reloadMs = reloadTimes(plans, store)
  store.close()
  const mb = (x: number): number => Math.round((x / 2 ** 20) * 10) / 10
  return {
    plans: n,
    events,
    eventsPerPlan: Math.round(events / n),
    measure: globalThis.gc === undefined ? 'rss' : 'heapUsed after gc',
    keptMb: mb(median(kept)),
    evictedKb: Math.round(median(evicted) / 1024),
    keptBytesPerEvent: Math.round(median(kept) / events),
    evictedBytesPerPlan: Math.round(median(evicted) / n),
    idSetMb: mb(median(ids)),
    idSetBytesPerEvent: Math.round(median(ids) / events),
    reloadMsPerPlan: Math.round(median(reloadMs) * 100) / 100,
    runs,
    machine: machine()
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchFoldMemory()))
}
