/**
 * The retention rule (src/core/retention.ts) keeps the fold's contract.
 *
 * Over generated plans (test/helpers/plan-gen.ts), each cut at a random point
 * of its history:
 * 1. Order-independent: any permutation of the same events folds to the same
 *    record (treeHash, status, last stamp, retainDays), so every node holding
 *    the set computes the same expiry moment.
 * 2. Monotonic: in any causal delivery, the last stamp never goes back, and a
 *    plan's expiry moment, once it has one, never moves earlier; a plan that
 *    is finished in a subset is finished, with an expiry at least as late, in
 *    the whole set.
 * 3. The property can fail: a last stamp taken from the event folded last,
 *    rather than the largest, is caught.
 * Replay with GEN_SEED=<seed>.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { expiresAtMs } from '../../src/core/retention.js'
import { Corpus, Rng, causalOrder, loadActors, runSeed } from '../helpers/plan-gen.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'

const RUNS = Math.max(60, Number(process.env.FC_RUNS ?? 100))
const CORPUS = 10
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/retention.test.ts`

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(await loadActors(), {}, SEED, CORPUS)
})

const arbCase = fc.record({
  plan: fc.nat({ max: CORPUS - 1 }),
  // A third of the cases keep the whole plan: most generated plans finish.
  cut: fc.oneof(fc.constant(1), fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
  order: fc.noBias(fc.integer())
})

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i)
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

function cutOf(c: { plan: number; cut: number }): { plan: PlanId; events: PlanEvent[] } {
  const all = corpus.plan(c.plan).events
  const events = all.slice(0, Math.max(1, Math.round(all.length * c.cut)))
  return { plan: all[0]?.id as string as PlanId, events }
}

describe('the retention rule', () => {
  it('gives every order of the same events the same record and expiry', () => {
    let finished = 0
    fc.assert(
      fc.property(arbCase, c => {
        const { plan, events } = cutOf(c)
        const reference = foldAll(events).record(plan)
        const fold = new Fold()
        for (const e of shuffled(events, new Rng(c.order))) fold.add(e, NO_CLOCK)
        const record = fold.record(plan)
        expect(record, REPLAY).toStrictEqual(reference)
        if (record !== undefined && expiresAtMs(record) !== null) finished++
      }),
      { numRuns: RUNS, seed: SEED }
    )
    // The property is about something: some cuts are finished plans.
    expect(finished).toBeGreaterThan(RUNS / 10)
  })

  it('never moves a plan back in time as its events arrive', () => {
    fc.assert(
      fc.property(arbCase, c => {
        const { plan, events } = cutOf(c)
        const whole = foldAll(corpus.plan(c.plan).events).record(plan)
        const fold = new Fold()
        let last = 0
        let expiry: number | null = null
        for (const e of causalOrder(events, new Rng(c.order))) {
          fold.add(e, NO_CLOCK)
          const r = fold.record(plan)
          if (r === undefined) continue
          expect(r.lastStampMs, REPLAY).toBeGreaterThanOrEqual(last)
          last = r.lastStampMs
          const at = expiresAtMs(r)
          if (expiry !== null && at !== null) expect(at, REPLAY).toBeGreaterThanOrEqual(expiry)
          if (at !== null) expiry = at
          if (at !== null && whole !== undefined) expect(expiresAtMs(whole), REPLAY).toBeGreaterThanOrEqual(at)
        }
      }),
      { numRuns: RUNS, seed: SEED }
    )
  })

  it('can fail: the stamp of the event folded last is not the latest stamp', () => {
    let differs = 0
    fc.assert(
      fc.property(arbCase, c => {
        const { plan, events } = cutOf(c)
        const order = shuffled(events, new Rng(c.order))
        const fold = foldAll(order)
        const folded = [...(fold.events.plan(plan)?.events.values() ?? [])]
        const lastFolded = folded.at(-1)?.env.hlc.ms
        if (lastFolded !== fold.record(plan)?.lastStampMs) differs++
      }),
      { numRuns: RUNS, seed: SEED }
    )
    expect(differs).toBeGreaterThan(0)
  })
})
