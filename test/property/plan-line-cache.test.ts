/**
 * PlanLineCache (src/runtime/plan-line-cache.ts) stands in front of the
 * fold's answer for /status, GET /plans, the dashboard and MCP: a plan's
 * summary and waiting lines, kept per tree object and per executors' offers.
 *
 * Property: fold several generated plans (tools, equivocation, a lying
 * executor, duplicates, events before their deps) event by event into one
 * Fold; after every event, with the executors' offers and the held reasons
 * drawn afresh, the lines read through one cache kept all along equal the
 * lines computed afresh, for both scopes. A cache that answered for a plan
 * that changed, or for other offers, gives an old line and fails.
 *
 * Replay a failure with GEN_SEED=<seed> (printed in the failure).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { planOf } from '../../src/core/event-set.js'
import { PlanLineCache } from '../../src/runtime/plan-line-cache.js'
import { planLines } from '../../src/runtime/plan-lines.js'
import type { PlanLineSource } from '../../src/runtime/plan-lines.js'
import type { PlanId } from '../../src/core/events.js'
import type { PlanScope } from '../../src/ports/node-view.js'
import { ARRIVAL_MODES, Corpus, Rng, arrangeEvents, loadActors, runSeed } from '../helpers/plan-gen.js'

const RUNS = Math.max(40, Number(process.env.FC_RUNS ?? 40))
const CORPUS = 40
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/plan-line-cache.test.ts`

/** Offer sets an executor may announce: none, some of the generator's needs, all of them, one it never asks for. */
const OFFERS: ReadonlyArray<ReadonlyArray<readonly string[]>> = [
  [],
  [[]],
  [['browser']],
  [['notes', 'notes/read_note'], ['browser']],
  [['browser', 'notes', 'notes/read_note', 'gpu']],
  [['gpu']]
]

let corpora: Corpus[]
beforeAll(async () => {
  const actors = await loadActors()
  corpora = [
    new Corpus(actors, { tools: true }, SEED, CORPUS),
    new Corpus(actors, { tools: true, liar: true, equivocation: true }, SEED + 1, CORPUS)
  ]
})

function sourceOf(f: Fold, held: (plan: PlanId) => string | null): PlanLineSource {
  return {
    plans: () => f.plans(),
    tree: plan => f.tree(plan),
    summary: plan => f.summary(plan),
    treeHash: plan => f.treeHash(plan),
    facts: plan => f.facts(plan),
    heldReason: plan => held(plan)
  }
}

describe('the /status line cache', () => {
  it('gives, after every event, the lines computed afresh', () => {
    const arb = fc.record({
      corpus: fc.nat({ max: 1 }),
      plans: fc.uniqueArray(fc.nat({ max: CORPUS - 1 }), { minLength: 1, maxLength: 3 }),
      order: fc.noBias(fc.integer()),
      mode: fc.constantFrom(...ARRIVAL_MODES),
      draws: fc.noBias(fc.integer())
    })
    fc.assert(
      fc.property(arb, c => {
        const corpus = corpora[c.corpus] as Corpus
        const events = c.plans.flatMap((i, k) =>
          arrangeEvents(corpus.plan(i), { order: c.order + k, dup: 0.1, mode: c.mode })
        )
        // The plans' events interleaved, as a node taking several plans at once sees them.
        const rng = new Rng(c.draws)
        const order = events.map(e => ({ e, at: rng.next() })).sort((a, b) => a.at - b.at)
        const f = new Fold()
        const cache = new PlanLineCache()
        let step = 0
        for (const { e } of order) {
          f.add(e, NO_CLOCK)
          step++
          const offers = (OFFERS[rng.int(0, OFFERS.length - 1)] as ReadonlyArray<readonly string[]>).map(
            o => new Set(o)
          )
          const heldPlan = rng.chance(0.3) ? planOf(e) : null
          const source = sourceOf(f, plan => (plan === heldPlan ? 'waits for its author' : null))
          for (const scope of ['all', 'recent'] as PlanScope[]) {
            const kept = planLines(source, offers, scope, 0, cache)
            const fresh = planLines(source, offers, scope, 0, null)
            if (JSON.stringify(kept) !== JSON.stringify(fresh))
              expect(kept, `${REPLAY}; step ${step} of ${order.length}, scope ${scope}`).toEqual(fresh)
          }
        }
      }),
      { numRuns: RUNS, seed: SEED }
    )
  })
})
