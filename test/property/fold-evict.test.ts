/**
 * Evicting plans from memory changes nothing anyone can compare.
 *
 * Property, over generated valid event sets (test/helpers/plan-gen.ts), one
 * to three plans interleaved, delivered in random order with duplicates,
 * sometimes in batches: a fold that evicts plans at random points (finished
 * or not: which plans to evict is the runtime's policy, and any must be
 * sound) and brings them back from "the store" (every event it folded, as
 * the replica writes them) when one of their events arrives or a reader asks
 * ends with the plans(), per-plan treeHash and swarmHash of foldAll of the
 * same events; and every eviction leaves plans(), the plan's treeHash and
 * swarmHash exactly as they were, takes its events out of memory, and every
 * return gives back the treeHash it left with. Summaries too, whether the
 * fold keeps them in memory or reads them where the runtime keeps each
 * evicted plan's record (`loadSummary`), and when that record was never
 * written or is an older eviction's: the plan then folds again to give it.
 *
 * It can fail: a store that loses one event of a plan, and a fold that
 * forgets an evicted plan's treeHash, are caught (canaries).
 *
 * Replay a failure with GEN_SEED=<seed>; FC_RUNS and GEN_CORPUS raise the
 * number of cases and of distinct plans.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { planOf } from '../../src/core/event-set.js'
import { isFinished } from '../../src/core/view.js'
import {
  CaseCounter,
  Corpus,
  Rng,
  arrivalOrder,
  causalOrder,
  loadActors,
  runSeed,
  withDuplicates
} from '../helpers/plan-gen.js'
import type { AddOutcome } from '../../src/core/event-set.js'
import type { FoldOptions, PlanRecord, PlanSummary } from '../../src/core/fold.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'

const RUNS = Math.max(100, Number(process.env.FC_RUNS ?? 200))
const CORPUS = Math.max(40, Number(process.env.GEN_CORPUS ?? 60))
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/fold-evict.test.ts`

/** Cases every run must contain at least once. */
const REQUIRED = [
  'evicted finished',
  'evicted unfinished',
  'refused: parked',
  'reloaded by an event',
  'reloaded by a batch',
  'reloaded on read',
  'evicted at the end',
  'two plans or more',
  'new event folded into an evicted plan',
  'summary from the records',
  'summary by folding again'
]

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(await loadActors(), {}, SEED, CORPUS)
})

const arbCase = fc.record({
  plans: fc.uniqueArray(fc.nat({ max: CORPUS - 1 }), { minLength: 1, maxLength: 3 }),
  order: fc.noBias(fc.integer()),
  dup: fc.constantFrom(0, 0.15),
  // Shuffled arrivals park a lot (evictions are refused until the end); causal ones park nothing, so plans leave mid-way.
  causal: fc.boolean(),
  evictRate: fc.constantFrom(0.01, 0.05, 0.2),
  batches: fc.boolean(),
  // Where an evicted plan's summary lives: in the fold; in records the runtime writes; in records whose writes fail half the time.
  summaries: fc.constantFrom('in memory', 'records', 'lossy records')
})
type Case = typeof arbCase extends fc.Arbitrary<infer T> ? T : never

/** A fold under test: `evict` is the one to exercise (a canary overrides it). */
type MakeFold = (opts: FoldOptions) => Fold

/** Loses the newest event of every plan it gives back: a store that dropped a row. */
type Store = (stored: ReadonlyMap<PlanId, readonly PlanEvent[]>, plan: PlanId) => PlanEvent[]
const wholeStore: Store = (stored, plan) => [...(stored.get(plan) ?? [])]

function evictProperty(makeFold: MakeFold, store: Store, counter?: CaseCounter): fc.IPropertyWithHooks<[Case]> {
  return fc.property(arbCase, c => {
    const picked = c.plans.map(i => corpus.plan(i))
    const plans = picked.map(p => p.plan)
    const all = picked.flatMap(p => p.events)
    const rng = new Rng(c.order)
    const arrival = c.causal ? withDuplicates(causalOrder(all, rng), rng, c.dup) : arrivalOrder(all, rng, c.dup)
    const label = `plan seeds ${picked.map(p => p.seed).join(' + ')}, order ${c.order}`
    const labels = new Set<string>(plans.length > 1 ? ['two plans or more'] : [])

    // The store: every event the fold folded, by plan, as the replica writes its rows.
    const stored = new Map<PlanId, PlanEvent[]>()
    const keep = (o: AddOutcome): void => {
      if (o.status !== 'folded') return
      for (const e of o.folded) {
        const list = stored.get(planOf(e)) ?? []
        list.push(e)
        stored.set(planOf(e), list)
      }
    }
    // The records of evicted plans, as the replica keeps them in its store (written after each eviction).
    const records = new Map<PlanId, PlanRecord>()
    let reading = false
    let inBatch = false
    let summarizing = false
    const f = makeFold({
      loadPlan: plan => store(stored, plan),
      onReloaded: (plan, info) => {
        labels.add(
          summarizing
            ? 'summary by folding again'
            : reading
              ? 'reloaded on read'
              : inBatch
                ? 'reloaded by a batch'
                : 'reloaded by an event'
        )
        expect(info.sameHash, `${label}: plan ${plan} came back with another treeHash`).toBe(true)
      },
      ...(c.summaries === 'in memory'
        ? {}
        : {
            loadSummary: (plan: PlanId, hash: string) => {
              const r = records.get(plan)
              if (r?.hash !== hash) return undefined
              labels.add('summary from the records')
              return r.summary
            }
          })
    })
    const summaryOf = (plan: PlanId): PlanSummary | undefined => {
      summarizing = true
      try {
        return f.summary(plan)
      } finally {
        summarizing = false
      }
    }

    const tryEvict = (plan: PlanId): void => {
      const before = {
        plans: f.plans(),
        swarm: f.swarmHash(),
        hash: f.treeHash(plan),
        summary: summaryOf(plan),
        facts: f.facts(plan)
      }
      const wasIn = f.tree(plan) !== undefined
      const parked = f.events.hasParked(plan)
      const memory = f.events.size
      const own = f.events.plan(plan)?.size ?? 0
      const record = f.record(plan)
      const ok = f.evict(plan)
      if (ok && record !== undefined && !(c.summaries === 'lossy records' && rng.chance(0.5))) records.set(plan, record)
      if (!ok) {
        if (wasIn && parked) labels.add('refused: parked')
        expect(wasIn && !parked, `${label}: evict refused a plan in memory with nothing parked`).toBe(false)
        return
      }
      expect(wasIn && !parked).toBe(true)
      labels.add(before.summary !== undefined && isFinished(before.summary) ? 'evicted finished' : 'evicted unfinished')
      expect(f.isEvicted(plan)).toBe(true)
      expect(f.tree(plan)).toBeUndefined()
      expect(f.events.plan(plan)).toBeUndefined()
      expect(f.events.size, `${label}: events left memory`).toBe(memory - own)
      expect(f.plans(), label).toStrictEqual(before.plans)
      expect(f.treeHash(plan), label).toBe(before.hash)
      expect(f.facts(plan), label).toStrictEqual(before.facts)
      expect(summaryOf(plan), label).toStrictEqual(before.summary)
      expect(f.swarmHash(), label).toBe(before.swarm)
    }

    let at = 0
    while (at < arrival.length) {
      const size = c.batches && rng.chance(0.5) ? rng.int(2, 12) : 1
      const chunk = arrival.slice(at, at + size)
      at += chunk.length
      if (chunk.length === 1) {
        const e = chunk[0] as PlanEvent
        const away = f.isEvicted(planOf(e))
        const o = f.add(e, NO_CLOCK)
        if (away && o.status === 'folded') labels.add('new event folded into an evicted plan')
        keep(o)
      } else {
        inBatch = true
        for (const { outcome } of f.addBatch(chunk, NO_CLOCK)) keep(outcome)
        inBatch = false
      }
      if (rng.chance(c.evictRate)) tryEvict(plans[rng.int(0, plans.length - 1)] as PlanId)
      if (rng.chance(c.evictRate / 3)) {
        // A reader that needs one plan's whole tree brings it back (GET /plans/<id>).
        const p = plans[rng.int(0, plans.length - 1)] as PlanId
        if (f.isEvicted(p)) {
          const hash = f.treeHash(p)
          reading = true
          expect(f.reload(p)).toBe(true)
          reading = false
          expect(f.treeHash(p), label).toBe(hash)
          expect(f.tree(p)).toBeDefined()
        }
      }
    }
    // At the end, as a quiet node would: the finished plans leave (and sometimes all of them).
    const all2 = rng.chance(0.3)
    for (const p of plans) {
      const t = f.tree(p)
      if (t !== undefined && (all2 || isFinished(t))) {
        tryEvict(p)
        if (f.isEvicted(p)) labels.add('evicted at the end')
      }
    }

    const ref = foldAll(all)
    expect(f.plans(), label).toStrictEqual(ref.plans())
    for (const p of plans) expect(f.treeHash(p), `${label}: plan ${p}`).toBe(ref.treeHash(p))
    expect(f.swarmHash(), label).toBe(ref.swarmHash())
    for (const p of plans) {
      expect(f.facts(p), `${label}: plan ${p}`).toStrictEqual(ref.facts(p))
      expect(summaryOf(p), `${label}: plan ${p}`).toStrictEqual(ref.summary(p))
    }
    expect(f.events.parkedCount, label).toBe(0)
    // In memory: exactly the events of the plans in memory.
    const live = plans.filter(p => !f.isEvicted(p))
    expect(f.events.size, label).toBe(live.reduce((n, p) => n + (ref.events.plan(p)?.size ?? 0), 0))
    // And every plan comes back whole.
    for (const p of plans) {
      f.reload(p)
      expect(f.tree(p), `${label}: plan ${p} after its return`).toStrictEqual(ref.tree(p))
    }
    counter?.add(labels)
  })
}

describe('fold: evicting plans from memory', () => {
  it('evicting at random points and reloading on demand ends with the plans, treeHashes and swarmHash of foldAll', () => {
    const counter = new CaseCounter()
    const t0 = performance.now()
    fc.assert(
      evictProperty(opts => new Fold(opts), wholeStore, counter),
      {
        numRuns: RUNS,
        seed: SEED,
        reporter: out => {
          if (out.failed)
            throw new Error(
              `${fc.defaultReportMessage(out) ?? 'property failed'}\n` +
                `${String((out.errorInstance as Error | null)?.message ?? '')}\n${REPLAY}`
            )
        }
      }
    )
    console.log(`${counter.table('eviction cases')}\n  ${((performance.now() - t0) / 1000).toFixed(1)} s, seed ${SEED}`)
    expect(counter.missing(REQUIRED), `cases that never occurred (${REPLAY})`).toEqual([])
  })

  it('refuses to evict without a way to load the plan back', () => {
    const p = corpus.plan(0)
    const f = foldAll(p.events)
    expect(f.evict(p.plan)).toBe(false)
    expect(f.tree(p.plan)).toBeDefined()
  })

  describe('canaries: a lossy eviction must be caught', () => {
    const canaries: Array<[string, MakeFold, Store]> = [
      [
        'the store lost one event of the plan',
        opts => new Fold(opts),
        (stored, plan) => (stored.get(plan) ?? []).slice(0, -1)
      ],
      ['an evicted plan keeps no treeHash', opts => new ForgetfulFold(opts), wholeStore]
    ]
    for (const [name, makeFold, store] of canaries) {
      it(name, () => {
        const out = fc.check(evictProperty(makeFold, store), { numRuns: RUNS, seed: SEED, endOnFailure: true })
        console.log(`canary "${name}": ${out.failed ? `caught after ${out.numRuns} cases` : 'NOT caught'}`)
        expect(out.failed, `the eviction property did not catch the canary "${name}" (${REPLAY})`).toBe(true)
        // Caught by an assertion, not by the canary crashing.
        expect(String((out.errorInstance as Error | null)?.name)).toBe('AssertionError')
      })
    }
  })
})

/** Answers treeHash only from memory, as if evicting forgot it. */
class ForgetfulFold extends Fold {
  override treeHash(plan: PlanId): string | undefined {
    return this.isEvicted(plan) ? undefined : super.treeHash(plan)
  }
}
