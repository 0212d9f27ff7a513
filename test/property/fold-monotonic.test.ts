/**
 * Monotonicity: what is decided stays decided as events are added.
 *
 * Property: fold the prefixes of a random causal order of a generated set
 * (every event after its deps, as a replica that is never missing anything
 * would see them) and, at checkpoints, check that
 * - a node whose split was accepted keeps that split (same proposal, same
 *   children), and
 * - a task that is done stays done.
 * Review and amendments are left out (the design lets a rejected result
 * reopen a task, and an amendment bring in an earlier deciding ballot), and
 * so are equivocation (the second event in a slot voids the first, by design)
 * and the author's retries: the generator runs honest roles, with every
 * network and timing fault (lapsed leases, takeovers, late renewals, races).
 *
 * Replay a failure with GEN_SEED=<seed> (printed in the failure).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { derivePlan } from '../../src/core/derive.js'
import { CaseCounter, Corpus, Rng, causalOrder, loadActors, runSeed } from '../helpers/plan-gen.js'
import type { EventId, NodeId, PlanEvent, TaskId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const RUNS = Math.max(1000, Number(process.env.FC_RUNS ?? 1000))
const CORPUS = Math.max(50, Number(process.env.GEN_CORPUS ?? 120))
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/fold-monotonic.test.ts`

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(
    await loadActors(),
    { equivocation: false, review: false, amendments: false, authorActions: false },
    SEED,
    CORPUS
  )
})

interface Decided {
  /** node -> accepted proposal and children, once composite */
  readonly splits: Map<NodeId, { accepted: EventId; children: string }>
  /** tasks seen done */
  readonly done: Set<TaskId>
}

function decided(tree: PlanTree): Decided {
  const splits = new Map<NodeId, { accepted: EventId; children: string }>()
  for (const n of tree.nodes)
    if (n.kind === 'composite' && n.accepted !== null)
      splits.set(n.id, { accepted: n.accepted, children: n.children.join(',') })
  return { splits, done: new Set(tree.tasks.filter(t => t.status === 'done').map(t => t.id)) }
}

type Aspect = 'splits' | 'done'

/** Fold the prefixes of a random causal order and check, at checkpoints, that what was decided stays decided. */
function monotonic(
  aspect: Aspect,
  counter: CaseCounter
): fc.IPropertyWithHooks<[{ plan: number; order: number; checkpoints: number }]> {
  const arb = fc.record({
    plan: fc.nat({ max: CORPUS - 1 }),
    order: fc.noBias(fc.integer()),
    checkpoints: fc.integer({ min: 5, max: 12 })
  })
  return fc.property(arb, c => {
    const p = corpus.plan(c.plan)
    const rng = new Rng(c.order)
    const order = causalOrder(p.events, rng)
    const at = new Set(Array.from({ length: c.checkpoints }, () => rng.int(0, order.length - 1)))
    at.add(order.length - 1)
    const splits = new Map<NodeId, { accepted: EventId; children: string; since: number }>()
    const done = new Map<TaskId, number>()
    /** What was decided and is no longer, or null. */
    const broken = (tree: PlanTree): string | null => {
      const now = decided(tree)
      if (aspect === 'splits') {
        for (const [node, was] of splits) {
          const is = now.splits.get(node)
          if (is?.accepted !== was.accepted || is.children !== was.children) {
            const nowWords = (n: (typeof tree.nodes)[number]): string =>
              `${n.kind}${n.leafReason === null ? '' : ` (${n.leafReason})`} with accepted ${String(n.accepted)} ` +
              `and ${n.children.length} children`
            const n = tree.nodes.find(x => x.id === node)
            return (
              `node ${node}, composite with accepted split ${was.accepted} since event ${was.since + 1}, ` +
              `is now ${n === undefined ? 'gone' : nowWords(n)}`
            )
          }
        }
      } else {
        for (const [task, since] of done) {
          if (!now.done.has(task))
            return `task ${task}, done since event ${since + 1}, reopened: now ${tree.tasks.find(t => t.id === task)?.status ?? 'gone'}`
        }
      }
      return null
    }
    const treeOf = (f: Fold): PlanTree | undefined => {
      const index = f.events.plan(p.plan)
      return index?.goal === undefined ? undefined : derivePlan(index)
    }
    const f = new Fold()
    let last = -1
    order.forEach((e, i) => {
      const out = f.add(e, NO_CLOCK)
      expect(out.status, 'a causal order never parks').toBe('folded')
      if (!at.has(i)) return
      const tree = treeOf(f)
      if (tree === undefined) return
      const bad = broken(tree)
      if (bad !== null) {
        // Find the event that changed it, stepping from the last good checkpoint.
        const g = new Fold()
        let k = 0
        for (; k <= last; k++) g.add(order[k] as PlanEvent, NO_CLOCK)
        for (; k < i; k++) {
          g.add(order[k] as PlanEvent, NO_CLOCK)
          const t = treeOf(g)
          if (t !== undefined && broken(t) !== null) break
        }
        const x = order[k] as PlanEvent
        throw new Error(
          `plan seed ${p.seed}, causal order ${c.order}: ${bad}; changed by event ${k + 1} ` +
            `of ${order.length}: ${x.env.type} ${x.id} by ${x.env.author} ` +
            `stamped ${x.env.hlc.ms}.${x.env.hlc.c}`
        )
      }
      for (const [node, s] of decided(tree).splits) if (!splits.has(node)) splits.set(node, { ...s, since: i })
      for (const task of decided(tree).done) if (!done.has(task)) done.set(task, i)
      last = i
    })
    counter.add([...corpus.reference(c.plan).cases].filter(k => WATCHED.includes(k)))
  })
}

const WATCHED = [
  'takeover',
  'late renewal',
  'moot takeover',
  'racing claims',
  'split ballots',
  'failed attempt',
  'duplicate execution',
  'max-nodes cut',
  'task-failed',
  'status completed'
]

function run(aspect: Aspect): void {
  const counter = new CaseCounter()
  const t0 = performance.now()
  fc.assert(monotonic(aspect, counter), {
    numRuns: RUNS,
    seed: SEED,
    reporter: out => {
      if (out.failed)
        throw new Error(
          `${fc.defaultReportMessage(out) ?? 'property failed'}\n${String((out.errorInstance as Error | null)?.message ?? '')}\n${REPLAY}`
        )
    }
  })
  console.log(
    `${counter.table(`monotonicity (${aspect}) cases`)}\n  ${((performance.now() - t0) / 1000).toFixed(1)} s, seed ${SEED}`
  )
  expect(
    counter.missing(['takeover', 'late renewal', 'moot takeover', 'racing claims', 'split ballots', 'status completed'])
  ).toEqual([])
}

describe('fold: monotonic in the set (honest roles, any timing)', () => {
  it('an accepted split never changes as events are added in causal order', () => run('splits'))
  it('a done task never reopens as events are added in causal order', () => run('done'))
})
