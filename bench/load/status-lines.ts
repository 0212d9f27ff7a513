/**
 * What /status's plan lines cost under many open plans, computed afresh
 * against read through PlanLineCache (src/runtime/plan-line-cache.ts), in
 * one run: PLANS plans (default 1,000) of 13 nodes each, four fifths of
 * their events folded (so they are under way), and ten plans changing
 * between two requests. Prints the medians of 15 requests and their ratio.
 *
 * `node --import tsx bench/load/status-lines.ts` (PLANS=100 for fewer).
 */
import { generatePlan } from '../common/gen-plan.js'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { PlanLineCache } from '../../src/runtime/plan-line-cache.js'
import { planLines } from '../../src/runtime/plan-lines.js'
import type { PlanLineSource } from '../../src/runtime/plan-lines.js'
import type { PlanEvent } from '../../src/core/events.js'
import { median, r3 } from '../common/util.js'

const PLANS = Number(process.env.PLANS ?? 1000)
const REQUESTS = 15

const f = new Fold()
const later: PlanEvent[] = []
for (let i = 0; i < PLANS; i++) {
  const g = await generatePlan({ fanout: 3, depth: 2, renewals: 1, startMs: i * 10 })
  const cut = Math.floor(g.events.length * 0.8)
  for (const e of g.events.slice(0, cut)) f.add(e, NO_CLOCK)
  later.push(...g.events.slice(cut, cut + 1))
}
const source: PlanLineSource = {
  plans: () => f.plans(),
  tree: p => f.tree(p),
  summary: p => f.summary(p),
  treeHash: p => f.treeHash(p),
  facts: p => f.facts(p),
  heldReason: () => null
}
const offers = [new Set(['browser'])]
const cache = new PlanLineCache()
const time = (fn: () => unknown): number => {
  const t = performance.now()
  fn()
  return performance.now() - t
}
planLines(source, offers, 'all', 0, cache)
planLines(source, offers, 'all', 0, null)
const fresh: number[] = []
const kept: number[] = []
let k = 0
for (let r = 0; r < REQUESTS; r++) {
  for (let j = 0; j < 10 && k < later.length; j++) f.add(later[k++] as PlanEvent, NO_CLOCK)
  // The trees derived before timing: the roles read them after every event anyway.
  for (const p of f.plans()) f.tree(p)
  fresh.push(time(() => planLines(source, offers, 'all', 0, null)))
  kept.push(time(() => planLines(source, offers, 'all', 0, cache)))
}
console.log(
  JSON.stringify({
    plans: PLANS,
    freshMs: r3(median(fresh)),
    keptMs: r3(median(kept)),
    ratio: r3(median(kept) / median(fresh))
  })
)
