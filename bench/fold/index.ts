import { generatePlan } from '../common/gen-plan.js'
import { benchFoldMemory } from './memory.js'
import { Fold, foldAll } from '../../src/core/fold.js'
import { signEvent } from '../../src/wire/sign.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { createNativeVerifier } from '../../src/runtime/verify.js'
import { nativeSha256HexOfText } from '../../src/sync/native-hash.js'
import { shuffle } from '../../test/helpers/random.js'
import { machine, median, report } from '../common/util.js'
import type { PlanEvent } from '../../src/core/events.js'

/** The node's own signature check (src/runtime/replica.ts): native, keeping each author's key object. */
const verifier = createNativeVerifier()

/**
 * `npm run bench -- fold`: how fast the pure fold takes decoded, verified
 * events in shuffled order, how long a full rebuild takes, and (separately)
 * what decoding and signature checks cost per event; `memory`: what finished
 * plans hold with and without eviction (bench/fold/memory.ts).
 */
export async function benchFold(
  choice: { readonly runs?: number; readonly memory?: boolean } = {}
): Promise<Record<string, unknown>> {
  const runs = choice.runs ?? Number(process.env.BENCH_RUNS ?? 5)
  const { events, peers } = await generatePlan({ fanout: 5, depth: 5, renewals: 28 })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  console.error(`fold: generated ${events.length} events; signing them...`)
  const wire: Uint8Array[] = []
  for (const e of events) wire.push((await signEvent(e.env, keys.get(e.env.author) as never)).bytes)

  const decodeMs: number[] = []
  let decoded: PlanEvent[] = []
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now()
    decoded = wire.map(b => {
      const d = decodeEvent(b, { swarm: 'test', verify: false })
      if (d.kind !== 'event') throw new Error(`decode failed: ${JSON.stringify(d)}`)
      return d.event
    })
    decodeMs.push(performance.now() - t0)
  }
  const sample = wire.slice(0, 10_000)
  const verifyMs: number[] = []
  for (let r = 0; r < Math.min(runs, 3); r++) {
    const t0 = performance.now()
    for (const b of sample) {
      if (decodeEvent(b, { swarm: 'test', verify: true, verifier }).kind !== 'event') throw new Error('verify failed')
    }
    verifyMs.push(performance.now() - t0)
  }

  // The product's fold: tree hashes with Node's native SHA-256 (src/runtime/replica.ts).
  const opts = { maxParked: 200_000, hashText: nativeSha256HexOfText }
  const foldMs: number[] = []
  const batchMs: number[] = []
  const batchCpuMs: number[] = []
  const rebuildMs: number[] = []
  // CPU time too: on a shared machine, wall time also counts other processes.
  const foldCpuMs: number[] = []
  const rebuildCpuMs: number[] = []
  const cpuMs = (): number => {
    const u = process.cpuUsage()
    return (u.user + u.system) / 1000
  }
  let hash = ''
  let heapMb = 0
  for (let r = 0; r < runs; r++) {
    const shuffled = shuffle(decoded, 1 + r)
    globalThis.gc?.()
    const now = Date.now() + 1e12
    const c0 = cpuMs()
    const t0 = performance.now()
    const f = new Fold(opts)
    for (const e of shuffled) f.add(e, now)
    const h = f.swarmHash()
    foldMs.push(performance.now() - t0)
    foldCpuMs.push(cpuMs() - c0)
    heapMb = Math.max(heapMb, process.memoryUsage().heapUsed / 2 ** 20)
    if (hash !== '' && h !== hash) throw new Error('fold is order-dependent: hashes differ between shuffles')
    hash = h
    globalThis.gc?.()
    const c1 = cpuMs()
    const t1 = performance.now()
    const g = foldAll(decoded, opts)
    if (g.swarmHash() !== hash) throw new Error('rebuild differs from incremental fold')
    rebuildMs.push(performance.now() - t1)
    rebuildCpuMs.push(cpuMs() - c1)
    // The same shuffled events as one batch (how the replica takes a sync round or its store).
    globalThis.gc?.()
    const c2 = cpuMs()
    const t2 = performance.now()
    const b = new Fold(opts)
    b.addBatch(shuffled, now)
    if (b.swarmHash() !== hash) throw new Error('batch fold differs from incremental fold')
    batchMs.push(performance.now() - t2)
    batchCpuMs.push(cpuMs() - c2)
  }
  const n = events.length
  const memory = choice.memory === false ? null : await benchFoldMemory()
  return report('fold', {
    events: n,
    eventsPerSec: Math.round(n / (median(foldMs) / 1000)),
    foldMs: Math.round(median(foldMs)),
    batchEventsPerSec: Math.round(n / (median(batchMs) / 1000)),
    batchMs: Math.round(median(batchMs)),
    batchCpuMs: Math.round(median(batchCpuMs)),
    rebuildMs: Math.round(median(rebuildMs)),
    foldCpuMs: Math.round(median(foldCpuMs)),
    rebuildCpuMs: Math.round(median(rebuildCpuMs)),
    decodePerSec: Math.round(n / (median(decodeMs) / 1000)),
    verifyPerSec: Math.round(sample.length / (median(verifyMs) / 1000)),
    heapUsedMb: Math.round(heapMb),
    memory,
    runs,
    machine: machine()
  })
}
