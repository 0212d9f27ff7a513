/**
 * `node --import tsx bench/load/sync-batch-delay.ts [RUNS]`: how long one sync batch holds a node's event loop. A
 * replica ingests the events of a generated plan (about a 1 MiB EVENTS frame's worth) as one `ingestMany`, in one go
 * and in slices of the loop (LoopSlices, src/ports/loop-slices.ts), alternately; meanwhile a 5 ms interval timer
 * records how late it fires (what a /status request arriving then would wait, at least). Prints the median over the
 * runs of the batch's wall time and of the timer's largest lateness, and their ratios.
 */
import { generatePlan } from '../common/gen-plan.js'
import { openEventStore } from '../../src/store/event-store.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { LoopSlices } from '../../src/ports/loop-slices.js'
import { realScheduler } from '../../src/ports/scheduler.js'
import { signEventSync } from '../../src/wire/sign.js'
import { median } from '../common/util.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString } from '../../src/core/events.js'

async function once(wires: Uint8Array[], me: { id: PeerIdString; key: PrivateKey }, sliced: boolean) {
  const r = new Replica({
    swarm: 'test',
    key: me.key,
    peerId: me.id,
    store: openEventStore({ memory: true }),
    metrics: new NodeMetrics(),
    ...(sliced ? { slices: new LoopSlices(realScheduler()) } : {})
  })
  let late = 0
  let last = performance.now()
  const t = setInterval(() => {
    const now = performance.now()
    late = Math.max(late, now - last - 5)
    last = now
  }, 5)
  const t0 = performance.now()
  const results = await r.ingestMany(wires, 'sync')
  const ms = performance.now() - t0
  clearInterval(t)
  await r.verifyPool.close()
  if (results.filter(x => x.verdict === 'accept').length !== wires.length) throw new Error('not every event folded')
  return { ms, late }
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 5)
  const { events, peers } = await generatePlan({ fanout: 7, depth: 3, renewals: 2 })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  const wires = events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes)
  const bytes = wires.reduce((s, w) => s + w.length, 0)
  const me = peers[0] as { id: PeerIdString; key: PrivateKey }
  const got: Record<'whole' | 'sliced', Array<{ ms: number; late: number }>> = { whole: [], sliced: [] }
  for (let i = 0; i < runs; i++)
    for (const sliced of i % 2 === 0 ? [false, true] : [true, false])
      got[sliced ? 'sliced' : 'whole'].push(await once(wires, me, sliced))
  const m = (k: 'whole' | 'sliced', f: 'ms' | 'late'): number => Math.round(median(got[k].map(x => x[f])))
  console.log(
    JSON.stringify({
      events: wires.length,
      kib: Math.round(bytes / 1024),
      runs,
      wholeMs: m('whole', 'ms'),
      slicedMs: m('sliced', 'ms'),
      timeRatio: Math.round((100 * m('sliced', 'ms')) / m('whole', 'ms')) / 100,
      wholeTimerLateMaxMs: m('whole', 'late'),
      slicedTimerLateMaxMs: m('sliced', 'late')
    })
  )
}

await main()
