/**
 * The open-plan limit per author (src/core/admission.ts) keeps the fold's
 * contract, like every rule that decides from events.
 *
 * Over sets of generated plans of one author (test/helpers/plan-gen.ts),
 * each cut at a random point of its own history (so some are finished, some
 * under way, some not started), under a random limit:
 * 1. Order-independent: any permutation of the union, folded event by event
 *    with the incremental AuthorLimit asked in between, ends with the held
 *    plans of the union folded in creation order, which are the rule's
 *    from scratch.
 * 2. Monotonic where it matters: in any causal delivery, a plan once
 *    started is never held again, whatever arrives later (an earlier goal
 *    of the same author included).
 * 3. The property can fail: a rule that puts plans in line by arrival
 *    instead of by the goal's hlc is caught.
 * Plus the incremental structure against the rule from scratch on random
 * standings of several authors. Replay with GEN_SEED=<seed>.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { AuthorLimit, heldPlans, planStanding } from '../../src/core/admission.js'
import { planOf } from '../../src/core/event-set.js'
import { Corpus, Rng, causalOrder, loadActors, runSeed } from '../helpers/plan-gen.js'
import type { PlanStanding } from '../../src/core/admission.js'
import type { PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'

const RUNS = Math.max(60, Number(process.env.FC_RUNS ?? 100))
const CORPUS = 12
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/admission.test.ts`

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(await loadActors(), {}, SEED, CORPUS)
})

/** A few plans of the corpus, each cut after a random share of its events (the goal always kept). */
const arbSet = fc.record({
  plans: fc.uniqueArray(fc.nat({ max: CORPUS - 1 }), { minLength: 3, maxLength: 7 }),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 7, maxLength: 7 }),
  limit: fc.integer({ min: 1, max: 4 }),
  order: fc.noBias(fc.integer())
})

function eventsOf(c: { plans: number[]; cuts: number[] }): PlanEvent[] {
  return c.plans.flatMap((i, k) => {
    const all = corpus.plan(i).events
    const cut = c.cuts[k] as number
    // A third of the plans keep only their goal: not started.
    const n = cut < 0.33 ? 1 : Math.max(1, Math.round(all.length * cut))
    return all.slice(0, n)
  })
}

function heldOf(fold: Fold, limit: number): PlanId[] {
  const standings = fold
    .plans()
    .map(p => planStanding(fold, p))
    .filter((s): s is PlanStanding => s !== undefined)
  return [...heldPlans(standings, limit).keys()].sort()
}

/** What adding one event folded (it and the parked events it let go). */
function foldedBy(fold: Fold, e: PlanEvent): readonly PlanEvent[] {
  const r = fold.add(e, NO_CLOCK)
  return r.status === 'folded' ? r.folded : []
}

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i)
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

describe('the open-plan limit per author', () => {
  it('holds the same plans whatever order the events arrive in', () => {
    let someHeld = 0
    fc.assert(
      fc.property(arbSet, c => {
        const events = eventsOf(c)
        const reference = heldOf(foldAll(events), c.limit)
        if (reference.length > 0) someHeld++
        const rng = new Rng(c.order)
        const fold = new Fold()
        const limit = new AuthorLimit(c.limit, p => planStanding(fold, p))
        for (const e of shuffled(events, rng)) {
          for (const f of foldedBy(fold, e)) limit.touch(planOf(f))
          if (rng.chance(0.2)) limit.held()
        }
        expect(limit.held().sort(), REPLAY).toEqual(reference)
        expect(heldOf(fold, c.limit), REPLAY).toEqual(reference)
      }),
      { numRuns: RUNS, seed: SEED }
    )
    // The property is about something: some cases hold plans back.
    expect(someHeld).toBeGreaterThan(RUNS / 10)
  })

  it('never holds a plan that was started, whatever arrives after', () => {
    fc.assert(
      fc.property(arbSet, c => {
        const fold = new Fold()
        const limit = new AuthorLimit(c.limit, p => planStanding(fold, p))
        const started = new Set<PlanId>()
        for (const e of causalOrder(eventsOf(c), new Rng(c.order))) {
          for (const f of foldedBy(fold, e)) limit.touch(planOf(f))
          const held = new Set(limit.held())
          for (const p of started) expect(held.has(p), `${p} held after it started; ${REPLAY}`).toBe(false)
          for (const p of fold.plans()) if (planStanding(fold, p)?.started === true) started.add(p)
        }
      }),
      { numRuns: RUNS, seed: SEED }
    )
  })

  it('can fail: a line by arrival instead of by the goal hlc is caught', () => {
    let caught = false
    fc.assert(
      fc.property(arbSet, c => {
        const events = eventsOf(c)
        const reference = heldOf(foldAll(events), c.limit)
        const arrival = new Map<PlanId, number>()
        const fold = new Fold()
        for (const e of shuffled(events, new Rng(c.order))) {
          for (const f of foldedBy(fold, e)) if (!arrival.has(planOf(f))) arrival.set(planOf(f), arrival.size)
        }
        const standings = fold.plans().map(p => {
          const s = planStanding(fold, p) as PlanStanding
          return { ...s, submittedAt: { ms: arrival.get(p) as number, c: 0 } }
        })
        if (JSON.stringify([...heldPlans(standings, c.limit).keys()].sort()) !== JSON.stringify(reference))
          caught = true
      }),
      { numRuns: RUNS, seed: SEED }
    )
    expect(caught, REPLAY).toBe(true)
  })

  it('kept up to date, answers as the rule from scratch', () => {
    const arbStanding = fc.record({
      plan: fc.integer({ min: 0, max: 30 }).map(n => `p${n}` as PlanId),
      author: fc.constantFrom('a', 'b', 'c').map(a => a as PeerIdString),
      ms: fc.integer({ min: 0, max: 20 }),
      open: fc.boolean(),
      started: fc.boolean()
    })
    fc.assert(
      fc.property(fc.array(arbStanding, { maxLength: 80 }), fc.integer({ min: 1, max: 5 }), (updates, lim) => {
        const now = new Map<PlanId, PlanStanding>()
        const limit = new AuthorLimit(lim, p => now.get(p))
        updates.forEach((u, i) => {
          // A plan keeps its author and goal: only whether it is open and started changes.
          const was = now.get(u.plan)
          now.set(u.plan, {
            plan: u.plan,
            author: was?.author ?? u.author,
            submittedAt: was?.submittedAt ?? { ms: u.ms, c: 0 },
            open: u.open,
            started: (was?.started ?? false) || u.started
          })
          limit.touch(u.plan)
          if (i % 3 === 0) limit.held()
        })
        const reference = heldPlans(now.values(), lim)
        expect(limit.held().sort()).toEqual([...reference.keys()].sort())
        for (const [p, ahead] of reference) expect(limit.ahead(p)).toBe(ahead)
      }),
      { numRuns: 300 }
    )
  })
})
