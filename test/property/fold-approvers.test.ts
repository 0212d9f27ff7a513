/**
 * People and approvers (protocol 2) keep the fold's contract.
 *
 * Over generated plans whose committee has a person who is also an approver
 * (test/helpers/plan-gen.ts, `people`: slow ballots that score only the
 * chosen proposal, "none" with notes, rejects with notes, sometimes silence
 * until the author amends the person out; some results from outside):
 * 1. Any permutation of a set, with any duplicates, in shuffled, reverse
 *    causal or the generator's own delayed delivery order, folds to the
 *    treeHash of the set in creation order.
 * 2. What the hash leaves out is order-free too: whom each node and task
 *    waits for (`awaiting`), and the acceptance outcomes.
 * 3. Monotonic (honest roles, no amendments): as events are added in a
 *    causal order, an accepted split keeps its proposal and children, a
 *    decided attempt (won or closed by "none") stays decided, and a done
 *    task stays done.
 * 4. The property can fail: a fold in which an approver's ballot counts only
 *    if it arrives after another ballot of its attempt is caught.
 * The run reports its hard cases and fails if a required one never occurred.
 * Replay with GEN_SEED=<seed>; FC_RUNS and GEN_CORPUS raise the counts.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { derivePlan } from '../../src/core/derive.js'
import { isType } from '../../src/core/events.js'
import { CaseCounter, Corpus, Rng, arrangeEvents, causalOrder, loadActors, runSeed } from '../helpers/plan-gen.js'
import type { NodeId, PlanEvent, PlanId, TaskId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { ArrivalMode, GeneratedPlan } from '../helpers/plan-gen.js'

const RUNS = Math.max(500, Number(process.env.FC_RUNS ?? 600))
const CORPUS = Math.max(50, Number(process.env.GEN_CORPUS ?? 120))
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/fold-approvers.test.ts`

/** Hard cases the generated sets must contain at least once over a run. */
const REQUIRED = [
  'approver decided',
  'approver chose none',
  'approver rejected result',
  'approver accepted result',
  'outside result',
  'amendment',
  'failed attempt',
  'competing proposals',
  'status completed',
  'parked events'
]

let corpus: Corpus
let honest: Corpus
beforeAll(async () => {
  const actors = await loadActors()
  corpus = new Corpus(actors, { people: true }, SEED, CORPUS)
  honest = new Corpus(
    actors,
    { people: true, equivocation: false, amendments: false, authorActions: false },
    SEED ^ 0x5a5a,
    CORPUS
  )
})

type Mode = ArrivalMode
const arbCase = fc.record({
  plan: fc.nat({ max: CORPUS - 1 }),
  order: fc.noBias(fc.integer()),
  dup: fc.constantFrom(0, 0.1, 0.4),
  mode: fc.constantFrom<Mode>('shuffle', 'reverse-causal', 'network delivery')
})
type Case = typeof arbCase extends fc.Arbitrary<infer T> ? T : never

const arrange = (p: GeneratedPlan, c: Case): PlanEvent[] => arrangeEvents(p, c)

type FoldFn = (
  arrival: readonly PlanEvent[],
  plan: PlanId
) => { hash: string; tree: PlanTree | undefined; parked: number }

const realFold: FoldFn = (arrival, plan) => {
  const f = new Fold()
  let parked = 0
  for (const e of arrival) {
    const out = f.add(e, NO_CLOCK)
    if (out.status === 'rejected') throw new Error(`valid event ${e.id} rejected: ${out.reason} ${out.detail}`)
    if (out.status === 'parked') parked++
  }
  expect(f.events.parkedCount, 'every event folds once its deps arrive').toBe(0)
  return { hash: f.treeHash(plan) as string, tree: f.tree(plan), parked }
}

/** Canary: a split approver's ballot that arrives before every other ballot of its attempt is dropped. */
const approverFirstDropped: FoldFn = (arrival, plan) => {
  const goal = arrival.find(e => isType(e, 'goal-submitted'))
  const approvers = new Set<string>(
    goal === undefined ? [] : ((goal as PlanEvent<'goal-submitted'>).env.body.params.approvers?.ids ?? [])
  )
  const seen = new Set<string>()
  const f = new Fold()
  for (const e of arrival) {
    if (isType(e, 'ballot-cast')) {
      const key = `${e.env.body.node}#${e.env.body.attempt}`
      const first = !seen.has(key)
      seen.add(key)
      if (first && approvers.has(e.env.author)) continue
    }
    f.add(e, NO_CLOCK)
  }
  return { hash: f.treeHash(plan) ?? 'no goal', tree: f.tree(plan), parked: 0 }
}

/** Whom each node and task waits for: not in the hash, so compared on its own. */
function awaiting(tree: PlanTree | undefined): unknown {
  return tree === undefined
    ? null
    : { nodes: tree.nodes.map(n => [n.id, n.awaiting]), tasks: tree.tasks.map(t => [t.id, t.awaiting]) }
}

function outcomes(tree: PlanTree | undefined): unknown {
  if (tree === undefined) return null
  return {
    status: tree.status,
    nodes: tree.nodes.map(n => ({
      id: n.id,
      kind: n.kind,
      accepted: n.accepted,
      attempts: n.attempts.map(a => [a.outcome, a.winner, a.decidedBy])
    })),
    tasks: tree.tasks.map(t => ({
      id: t.id,
      status: t.status,
      accepted: t.accepted,
      reviews: t.results.map(r => r.review)
    }))
  }
}

function sameSetProperty(foldFn: FoldFn, counter?: CaseCounter): fc.IPropertyWithHooks<[Case]> {
  const refs = new Map<number, ReturnType<FoldFn>>()
  return fc.property(arbCase, c => {
    const p = corpus.plan(c.plan)
    let ref = refs.get(c.plan)
    if (ref === undefined) {
      ref = foldFn(p.events, p.plan)
      refs.set(c.plan, ref)
    }
    const got = foldFn(arrange(p, c), p.plan)
    counter?.add([...corpus.reference(c.plan).cases, `order: ${c.mode}`, ...(got.parked > 0 ? ['parked events'] : [])])
    const label = `plan seed ${p.seed}, ${c.mode} order ${c.order}`
    expect(got.hash, label).toBe(ref.hash)
    expect(awaiting(got.tree), `${label}: awaiting`).toStrictEqual(awaiting(ref.tree))
    expect(outcomes(got.tree), `${label}: outcomes`).toStrictEqual(outcomes(ref.tree))
  })
}

function reporter<T>(out: fc.RunDetails<T>): void {
  if (out.failed)
    throw new Error(
      `${fc.defaultReportMessage(out) ?? 'property failed'}\n${String((out.errorInstance as Error | null)?.message ?? '')}\n${REPLAY}`
    )
}

describe('fold with people and approvers: the tree is a function of the set', () => {
  it('generated plans are protocol 2 and every event folds', () => {
    for (let i = 0; i < Math.min(CORPUS, 40); i++) {
      const p = corpus.plan(i)
      expect(p.goal.env.v).toBe(2)
      expect(corpus.reference(i).tree.events).toBe(p.events.length)
    }
  })

  it('any permutation, duplication or delay folds to the same treeHash, awaiting and outcomes', () => {
    const counter = new CaseCounter()
    const t0 = performance.now()
    fc.assert(sameSetProperty(realFold, counter), { numRuns: RUNS, seed: SEED, reporter })
    console.log(
      `${counter.table('approver cases per case')}\n  ${((performance.now() - t0) / 1000).toFixed(1)} s, seed ${SEED}`
    )
    expect(counter.missing(REQUIRED), `hard cases that never occurred (${REPLAY})`).toEqual([])
  })

  it("canary: an approver's ballot that counts only when it does not arrive first is caught", () => {
    const out = fc.check(sameSetProperty(approverFirstDropped), { numRuns: RUNS, seed: SEED, endOnFailure: true })
    console.log(`canary approver-first: ${out.failed ? `caught after ${out.numRuns} cases` : 'NOT caught'}`)
    expect(out.failed, `the permutation property did not catch the canary (${REPLAY})`).toBe(true)
  })
})

describe('fold with people and approvers: monotonic in the set (honest roles, no amendments)', () => {
  it('accepted splits, decided attempts and done tasks stay as they were as events are added in causal order', () => {
    const counter = new CaseCounter()
    const arb = fc.record({
      plan: fc.nat({ max: CORPUS - 1 }),
      order: fc.noBias(fc.integer()),
      checkpoints: fc.integer({ min: 5, max: 12 })
    })
    fc.assert(
      fc.property(arb, c => {
        const p = honest.plan(c.plan)
        const rng = new Rng(c.order)
        const order = causalOrder(p.events, rng)
        const at = new Set(Array.from({ length: c.checkpoints }, () => rng.int(0, order.length - 1)))
        at.add(order.length - 1)
        const splits = new Map<NodeId, string>()
        const attempts = new Map<string, string>()
        const done = new Set<TaskId>()
        const seen = new Set<string>()
        const approvers = new Set<string>(p.goal.env.body.params.approvers?.ids ?? [])
        const f = new Fold()
        order.forEach((e, i) => {
          expect(f.add(e, NO_CLOCK).status, 'a causal order never parks').toBe('folded')
          if (!at.has(i)) return
          const index = f.events.plan(p.plan)
          if (index?.goal === undefined) return
          const tree = derivePlan(index)
          const label = `plan seed ${p.seed}, causal order ${c.order}, after event ${i + 1} of ${order.length} (${e.env.type} ${e.id})`
          for (const [node, was] of splits) {
            const n = tree.nodes.find(x => x.id === node)
            expect(
              n === undefined ? 'gone' : `${n.accepted ?? ''}|${n.children.join(',')}`,
              `${label}: node ${node}'s accepted split`
            ).toBe(was)
          }
          for (const [key, was] of attempts) {
            const [node, k] = key.split('#') as [NodeId, string]
            const a = tree.nodes.find(x => x.id === node)?.attempts[Number(k) - 1]
            expect(a === undefined ? 'gone' : `${a.outcome}|${a.winner ?? ''}`, `${label}: attempt ${key}`).toBe(was)
          }
          // Done stays done; which result is accepted may still move to an earlier one that arrives late (the earliest counts).
          for (const task of done)
            expect(tree.tasks.find(x => x.id === task)?.status, `${label}: task ${task}`).toBe('done')
          for (const n of tree.nodes) {
            if (n.kind === 'composite' && n.accepted !== null && !splits.has(n.id))
              splits.set(n.id, `${n.accepted}|${n.children.join(',')}`)
            n.attempts.forEach((a, j) => {
              if (a.outcome !== 'open' && !attempts.has(`${n.id}#${j + 1}`))
                attempts.set(`${n.id}#${j + 1}`, `${a.outcome}|${a.winner ?? ''}`)
            })
            if (n.awaiting.length > 0 && n.awaiting.every(x => approvers.has(x)))
              seen.add('waited for the approver alone')
          }
          for (const t of tree.tasks) if (t.status === 'done') done.add(t.id)
        })
        counter.add([...honest.reference(c.plan).cases, ...seen])
      }),
      { numRuns: RUNS, seed: SEED, reporter }
    )
    console.log(`${counter.table('approver monotonicity cases')}\n  seed ${SEED}`)
    expect(
      counter.missing([
        'approver decided',
        'approver chose none',
        'approver rejected result',
        'waited for the approver alone',
        'status completed'
      ])
    ).toEqual([])
  })
})

describe('fold with people and approvers: a rebuild equals the incremental fold', () => {
  it('the final tree of any arrival equals foldAll of the set, awaiting included', () => {
    fc.assert(
      fc.property(arbCase, c => {
        const p = corpus.plan(c.plan)
        const f = new Fold()
        for (const e of arrange(p, c)) f.add(e, NO_CLOCK)
        expect(f.tree(p.plan), `plan seed ${p.seed}`).toStrictEqual(foldAll(p.events).tree(p.plan))
      }),
      { numRuns: Math.min(RUNS, 300), seed: SEED, reporter }
    )
  })
})
