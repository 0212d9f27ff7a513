/**
 * tree = fold(set of events), whatever the order.
 *
 * Properties, over generated valid event sets (test/helpers/plan-gen.ts):
 * 1. Any permutation of a set, with any duplicates, folds to the same
 *    treeHash as the set in creation order (and nothing stays parked).
 * 2. Claim and acceptance outcomes (who owns each task, how each chain
 *    ended, which result counts; which proposal won each node and by which
 *    ballot) do not depend on arrival order, even adversarial orders that
 *    deliver one kind of event (claims, renewals, ballots, results) in
 *    reverse stamp order, first or last.
 * 3. Incremental equals rebuild: a replica folding one event at a time (in
 *    any order, with duplicates, two plans interleaved) and reading its
 *    trees in between (which fills the per-plan cache) reads exactly what a
 *    rebuild (foldAll) of the events it has folded gives, and ends with the
 *    trees, treeHashes and swarmHash of foldAll of the whole set; a plan's
 *    tree does not depend on another plan's events.
 * 4. The properties can fail: deliberately order-dependent folds (canaries)
 *    are caught by property 1's code.
 * The generator reports how often it made the hard cases, and the suite
 * fails if one never occurred. All properties share one corpus of generated
 * plans (generating costs more than folding), drawn from by fast-check.
 *
 * Replay a failure with GEN_SEED=<seed> (printed in the failure); FC_RUNS and
 * GEN_CORPUS raise the number of cases and of distinct plans.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { treeHash } from '../../src/core/tree-hash.js'
import { compareEvents, sortEvents } from '../../src/core/order.js'
import { validateEnvelope } from '../../src/wire/index.js'
import {
  ARRIVAL_MODES,
  CaseCounter,
  Corpus,
  Rng,
  arrangeEvents,
  arrivalOrder,
  loadActors,
  runSeed
} from '../helpers/plan-gen.js'
import type { EventId, PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { GeneratedPlan } from '../helpers/plan-gen.js'

const RUNS = Math.max(1000, Number(process.env.FC_RUNS ?? 1000))
const CORPUS = Math.max(50, Number(process.env.GEN_CORPUS ?? 160))
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/fold-order.test.ts`

/** Hard cases the generated sets must contain at least once over a run. */
const REQUIRED = [
  'competing proposals',
  'split ballots',
  'failed attempt',
  'racing claims',
  'takeover',
  'late renewal',
  'moot takeover',
  'duplicate execution',
  'equivocation (proposal)',
  'equivocation (ballot)',
  'equivocation (renewal)',
  'amendment',
  'review accepted',
  'rejected result',
  'task-failed',
  'status completed',
  'parked events',
  'parked chain (3+)'
]

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(await loadActors(), {}, SEED, CORPUS)
})

// ------------------------------------------------------------------ arrival orders

const MODES = ARRIVAL_MODES

const arbCase = fc.record({
  plan: fc.nat({ max: CORPUS - 1 }),
  order: fc.noBias(fc.integer()),
  dup: fc.constantFrom(0, 0.1, 0.4),
  mode: fc.constantFrom(...MODES)
})
type Case = typeof arbCase extends fc.Arbitrary<infer T> ? T : never

const arrange = (p: GeneratedPlan, c: Case): PlanEvent[] => arrangeEvents(p, c)

// ------------------------------------------------------------------ folds under test

interface FoldStats {
  parked: number
  longestWait: number
}
type FoldFn = (arrival: readonly PlanEvent[], plan: PlanId, stats?: FoldStats) => string

/** The real fold: add one at a time, as a replica receives them. */
const realFold: FoldFn = (arrival, plan, stats) => {
  const f = new Fold()
  for (const e of arrival) {
    const out = f.add(e, NO_CLOCK)
    if (out.status === 'rejected') throw new Error(`valid event ${e.id} rejected: ${out.reason} ${out.detail}`)
    if (out.status === 'parked' && stats !== undefined) stats.parked++
    if (out.status === 'folded' && stats !== undefined)
      stats.longestWait = Math.max(stats.longestWait, out.folded.length)
  }
  expect(f.events.parkedCount, 'every event folds once its deps arrive').toBe(0)
  return f.treeHash(plan) as string
}

/** Canary: the first claim to arrive wins its task (the reference system's mistake, for claims). */
const firstArrivedClaimOwns: FoldFn = (arrival, plan) => {
  const f = new Fold()
  const first = new Map<string, PlanEvent<'task-claimed'>>()
  for (const e of arrival) {
    f.add(e, NO_CLOCK)
    if (e.env.type === 'task-claimed') {
      const task = (e as PlanEvent<'task-claimed'>).env.body.task
      if (!first.has(task)) first.set(task, e as PlanEvent<'task-claimed'>)
    }
  }
  const tree = f.tree(plan) as PlanTree
  const tasks = tree.tasks.map(t => {
    const c = first.get(t.id)
    const [head, ...rest] = t.chains
    return c === undefined || head === undefined
      ? t
      : { ...t, chains: [{ ...head, claim: c.id, owner: c.env.author }, ...rest] }
  })
  return treeHash({ ...tree, tasks })
}

/** Canary: an event whose deps have not arrived is dropped instead of parked. */
const dropInsteadOfPark: FoldFn = (arrival, plan) => {
  const f = new Fold()
  for (const e of arrival) if (e.env.deps.every(d => f.events.isFolded(d))) f.add(e, NO_CLOCK)
  return f.treeHash(plan) ?? 'no goal'
}

/** Canary: a renewal that arrives after a later-stamped claim on its task is refused (arrival decides moot takeovers). */
const lateRenewalRefused: FoldFn = (arrival, plan) => {
  const f = new Fold()
  const latestClaim = new Map<string, PlanEvent>()
  for (const e of arrival) {
    if (e.env.type === 'claim-renewed') {
      const c = latestClaim.get((e as PlanEvent<'claim-renewed'>).env.body.task)
      if (c !== undefined && compareEvents(c, e) > 0) continue
    }
    if (e.env.type === 'task-claimed') {
      const task = (e as PlanEvent<'task-claimed'>).env.body.task
      const c = latestClaim.get(task)
      if (c === undefined || compareEvents(e, c) > 0) latestClaim.set(task, e)
    }
    f.add(e, NO_CLOCK)
  }
  return f.treeHash(plan) ?? 'no goal'
}

/** Canary: the deciding ballot is the one whose arrival completed the quorum (arrival order, not stamp order). */
const arrivalDecidesQuorum: FoldFn = (arrival, plan) => {
  const f = new Fold()
  const seen: Array<PlanEvent<'ballot-cast'>> = []
  const ids = new Set<EventId>()
  for (const e of arrival) {
    f.add(e, NO_CLOCK)
    if (e.env.type === 'ballot-cast' && !ids.has(e.id)) {
      ids.add(e.id)
      seen.push(e as PlanEvent<'ballot-cast'>)
    }
  }
  const tree = f.tree(plan) as PlanTree
  const quorum = new Map(tree.committees.map(c => [c.event as string, c.quorum]))
  const nodes = tree.nodes.map(n => ({
    ...n,
    attempts: n.attempts.map(a => {
      if (a.outcome !== 'won' || a.decidedBy === null) return a
      const decidedBy = a.ballots.find(b => b.id === a.decidedBy)
      if (decidedBy === undefined) return a
      const votes = seen.filter(
        b =>
          b.env.body.node === n.id &&
          b.env.body.attempt === a.attempt &&
          b.env.body.choice === a.winner &&
          b.env.body.committee === decidedBy.committee
      )
      const q = quorum.get(decidedBy.committee) ?? 0
      return { ...a, decidedBy: votes[q - 1]?.id ?? a.decidedBy }
    })
  }))
  return treeHash({ ...tree, nodes })
}

// ------------------------------------------------------------------ the properties

/** Property 1 for a given fold: every arrival folds to the hash of the set in creation order. */
function sameHashProperty(foldFn: FoldFn, counter?: CaseCounter): fc.IPropertyWithHooks<[Case]> {
  const refs = new Map<number, string>()
  return fc.property(arbCase, c => {
    const p = corpus.plan(c.plan)
    let ref = refs.get(c.plan)
    if (ref === undefined) {
      ref = foldFn(p.events, p.plan)
      refs.set(c.plan, ref)
    }
    const stats: FoldStats = { parked: 0, longestWait: 0 }
    const got = foldFn(arrange(p, c), p.plan, stats)
    if (counter !== undefined) {
      counter.add([
        ...corpus.reference(c.plan).cases,
        `order: ${c.mode}`,
        ...(c.dup > 0 ? ['duplicates delivered'] : []),
        ...(stats.parked > 0 ? ['parked events'] : []),
        ...(stats.longestWait >= 3 ? ['parked chain (3+)'] : [])
      ])
    }
    expect(got, `plan seed ${p.seed}, ${c.mode} order ${c.order}`).toBe(ref)
  })
}

describe('fold: the tree is a function of the set', () => {
  it('generated sets are valid: every envelope has the wire shape and every event folds', () => {
    for (let i = 0; i < Math.min(CORPUS, 60); i++) {
      const p = corpus.plan(i)
      for (const e of p.events) expect(validateEnvelope(e.env), `plan seed ${p.seed} event ${e.env.type}`).toBeNull()
      const ref = corpus.reference(i)
      expect(ref.tree.events).toBe(p.events.length)
    }
  })

  it('any permutation and duplication of a set folds to the same treeHash', () => {
    const counter = new CaseCounter()
    const t0 = performance.now()
    fc.assert(sameHashProperty(realFold, counter), {
      numRuns: RUNS,
      seed: SEED,
      endOnFailure: false,
      reporter: reportWith(REPLAY)
    })
    const census = corpus.census()
    console.log(
      `${counter.table('hard cases per case')}\n${census.table('hard cases per distinct plan')}\n ` +
        ` ${((performance.now() - t0) / 1000).toFixed(1)} s, seed ${SEED}`
    )
    expect(counter.missing(REQUIRED), `hard cases that never occurred (${REPLAY})`).toEqual([])
  })

  it('claim and acceptance outcomes do not depend on arrival order, even adversarial orders', () => {
    const kinds = [
      'task-claimed',
      'claim-renewed',
      'ballot-cast',
      'result-reported',
      'task-released',
      'task-failed',
      'split-proposed'
    ] as const
    const arb = fc.record({
      plan: fc.nat({ max: CORPUS - 1 }),
      order: fc.noBias(fc.integer()),
      kind: fc.constantFrom(...kinds),
      first: fc.boolean()
    })
    const seen = new CaseCounter()
    fc.assert(
      fc.property(arb, c => {
        const p = corpus.plan(c.plan)
        const rng = new Rng(c.order)
        // One kind of event in reverse stamp order, all first (parked) or all last (after everything they could affect).
        const picked = sortEvents(p.events.filter(e => e.env.type === c.kind)).reverse()
        const rest = rng.shuffle(p.events.filter(e => e.env.type !== c.kind))
        const arrival = c.first ? [...picked, ...rest] : [...rest, ...picked]
        const f = new Fold()
        for (const e of arrival) f.add(e, NO_CLOCK)
        const tree = f.tree(p.plan) as PlanTree
        seen.add(picked.length > 1 ? [`${c.kind} ${c.first ? 'first' : 'last'}`] : [])
        expect(outcomes(tree), `plan seed ${p.seed}, ${c.kind} ${c.first ? 'first' : 'last'}`).toStrictEqual(
          outcomes(corpus.reference(c.plan).tree)
        )
      }),
      { numRuns: RUNS, seed: SEED, reporter: reportWith(REPLAY) }
    )
    // Claims, renewals and ballots come in numbers in nearly every plan: each adversarial order must have been tried.
    for (const k of ['task-claimed', 'claim-renewed', 'ballot-cast'])
      expect(seen.missing([`${k} first`, `${k} last`])).toEqual([])
  })

  describe('canaries: an order-dependent fold must be caught', () => {
    const canaries: Array<[string, FoldFn]> = [
      ['the first claim to arrive owns the task', firstArrivedClaimOwns],
      ['events that arrive before their deps are dropped, not parked', dropInsteadOfPark],
      ['the ballot that arrives to complete a quorum decides it', arrivalDecidesQuorum],
      ['a renewal that arrives after a later claim on its task is refused', lateRenewalRefused]
    ]
    for (const [name, foldFn] of canaries) {
      it(name, () => {
        const out = fc.check(sameHashProperty(foldFn), { numRuns: RUNS, seed: SEED, endOnFailure: true })
        console.log(`canary "${name}": ${out.failed ? `caught after ${out.numRuns} cases` : 'NOT caught'}`)
        expect(out.failed, `the permutation property did not catch the canary "${name}" (${REPLAY})`).toBe(true)
        // Caught by a hash mismatch, not by the canary crashing.
        expect(String((out.errorInstance as Error | null)?.message)).toMatch(/expected '([0-9a-f]{8}|no goal)/)
      })
    }
  })
})

describe('fold: incremental equals rebuild', () => {
  it(
    'reading trees while folding one event at a time gives what a rebuild of the folded events ' +
      'gives, and the final trees equal foldAll',
    () => {
      const arb = fc.record({
        a: fc.nat({ max: CORPUS - 1 }),
        b: fc.option(fc.nat({ max: CORPUS - 1 }), { nil: undefined, freq: 2 }),
        order: fc.noBias(fc.integer()),
        dup: fc.constantFrom(0, 0.15),
        reads: fc.integer({ min: 1, max: 3 })
      })
      const counter = new CaseCounter()
      const t0 = performance.now()
      fc.assert(
        fc.property(arb, c => {
          const pa = corpus.plan(c.a)
          const pb = c.b === undefined || c.b === c.a ? undefined : corpus.plan(c.b)
          const plans: PlanId[] = pb === undefined ? [pa.plan] : [pa.plan, pb.plan]
          const all: PlanEvent[] = [...pa.events, ...(pb?.events ?? [])]
          const rng = new Rng(c.order)
          const arrival = arrivalOrder(all, rng, c.dup)
          const readAt = new Set(Array.from({ length: c.reads }, () => rng.int(0, arrival.length - 1)))
          const f = new Fold()
          let parked = 0
          let cacheHits = 0
          const label = `plan seeds ${pa.seed}${pb === undefined ? '' : ` + ${pb.seed}`}, order ${c.order}`
          arrival.forEach((e, i) => {
            if (f.add(e, NO_CLOCK).status === 'parked') parked++
            if (!readAt.has(i)) return
            for (const plan of plans) {
              const index = f.events.plan(plan)
              const tree = f.tree(plan)
              if (index?.goal === undefined) {
                expect(tree).toBeUndefined()
                continue
              }
              // Read twice: the second read comes from the cache and must be the same object.
              const again = f.tree(plan)
              if (again === tree) cacheHits++
              // Rebuild from exactly the events this plan has folded, in another order (the hash covers the whole tree).
              const rebuilt = foldAll(rng.shuffle([...index.events.values()]))
              expect(f.treeHash(plan), `${label}, read after ${i + 1} arrivals`).toBe(rebuilt.treeHash(plan))
            }
          })
          const ref = foldAll(all)
          for (const plan of plans) {
            expect(f.treeHash(plan), label).toBe(ref.treeHash(plan))
            expect(f.tree(plan), label).toStrictEqual(ref.tree(plan))
          }
          expect(f.treeHash(pa.plan), `${label}: another plan's events changed this plan's tree`).toBe(
            corpus.reference(c.a).hash
          )
          expect(f.swarmHash(), label).toBe(ref.swarmHash())
          expect(f.events.parkedCount, label).toBe(0)
          counter.add([
            pb === undefined ? 'one plan' : 'two plans interleaved',
            ...(parked > 0 ? ['parked events'] : []),
            ...(cacheHits > 0 ? ['cached tree re-read'] : []),
            ...(c.dup > 0 ? ['duplicates delivered'] : [])
          ])
        }),
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
      console.log(
        `${counter.table('incremental cases')}\n  ${((performance.now() - t0) / 1000).toFixed(1)} s, seed ${SEED}`
      )
      expect(
        counter.missing([
          'one plan',
          'two plans interleaved',
          'parked events',
          'cached tree re-read',
          'duplicates delivered'
        ])
      ).toEqual([])
    }
  )
})

describe('fold: batches equal single adds', () => {
  it('arrivals cut into random batches (addBatch sorts each by stamp), mixed with single adds, fold to the reference tree', () => {
    const arb = fc.record({
      plan: fc.nat({ max: CORPUS - 1 }),
      order: fc.noBias(fc.integer()),
      cuts: fc.array(fc.nat({ max: 60 }), { minLength: 1, maxLength: 8 })
    })
    fc.assert(
      fc.property(arb, c => {
        const p = corpus.plan(c.plan)
        const rng = new Rng(c.order)
        const arrival = arrivalOrder(p.events, rng)
        const f = new Fold()
        let at = 0
        for (const [i, size] of c.cuts.entries()) {
          const chunk = arrival.slice(at, at + size)
          at += size
          // Every other chunk one at a time, so batches meet a set that already has parked events.
          if (i % 2 === 0) {
            const out = f.addBatch(chunk, NO_CLOCK)
            expect(out.map(o => o.event).sort(compareEvents)).toStrictEqual([...chunk].sort(compareEvents))
          } else {
            for (const e of chunk) f.add(e, NO_CLOCK)
          }
        }
        f.addBatch(arrival.slice(at), NO_CLOCK)
        expect(f.treeHash(p.plan), `plan seed ${p.seed}, order ${c.order}`).toBe(corpus.reference(c.plan).hash)
        expect(f.events.parkedCount).toBe(0)
      }),
      { numRuns: RUNS, seed: SEED, reporter: reportWith(REPLAY) }
    )
  })
})

/** What claims and acceptance decided, per node and per task. */
function outcomes(tree: PlanTree): unknown {
  return {
    status: tree.status,
    nodes: tree.nodes.map(n => ({
      id: n.id,
      kind: n.kind,
      accepted: n.accepted,
      attempts: n.attempts.map(a => ({
        attempt: a.attempt,
        outcome: a.outcome,
        winner: a.winner,
        decidedBy: a.decidedBy
      }))
    })),
    tasks: tree.tasks.map(t => ({
      id: t.id,
      status: t.status,
      owner: t.owner,
      chains: t.chains.map(c => ({
        claim: c.claim,
        owner: c.owner,
        renewals: c.renewals,
        lapseMs: c.lapseMs,
        end: c.end
      })),
      accepted: t.accepted,
      duplicates: t.duplicates,
      ignoredClaims: t.ignoredClaims
    })),
    equivocations: tree.equivocations
  }
}

/** fast-check's default report, plus how to replay the whole run. */
function reportWith<T>(replay: string): (out: fc.RunDetails<T>) => void {
  return out => {
    if (out.failed)
      throw new Error(
        `${fc.defaultReportMessage(out) ?? 'property failed'}\n${String((out.errorInstance as Error | null)?.message ?? '')}\n${replay}`
      )
  }
}
