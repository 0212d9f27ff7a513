/**
 * Fold.evict / Fold.reload, case by case: what may leave memory, what an
 * event that cites across plans does with or without eviction (every event's
 * deps are of its own plan, so such an event is rejected either way), and a
 * store that fails while a plan comes back. The random interleavings are in
 * test/property/fold-evict.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { planOf } from '../../src/core/event-set.js'
import { PlanBuilder, makeEvent, subgoals } from '../helpers/plan-builder.js'
import { makeCast } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { DepRejectReason } from '../../src/core/dep-rules.js'
import type { EventId, PlanEvent, PlanId } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

/** A fold whose "store" is every event added to it, by plan; `rejected` collects the rejections no add returned. */
function storedFold(opts: { failLoads?: () => boolean } = {}): {
  f: Fold
  add: (e: PlanEvent) => void
  rejected: Array<[EventId, DepRejectReason | 'builds-on-rejected']>
} {
  const stored = new Map<PlanId, PlanEvent[]>()
  const rejected: Array<[EventId, DepRejectReason | 'builds-on-rejected']> = []
  const f = new Fold({
    loadPlan: plan => {
      if (opts.failLoads?.() === true) throw new Error('SQLITE_BUSY: database is locked')
      return stored.get(plan) ?? []
    },
    onRejected: (id, reason) => {
      rejected.push([id, reason])
    }
  })
  const add = (e: PlanEvent): void => {
    const o = f.add(e, NO_CLOCK)
    if (o.status === 'rejected') rejected.push([e.id, o.reason])
    if (o.status !== 'folded') return
    for (const x of o.folded) stored.set(planOf(x), [...(stored.get(planOf(x)) ?? []), x])
  }
  return { f, add, rejected }
}

function twoPlans(): {
  a: PlanBuilder
  b: PlanBuilder
  pa: PlanEvent<'split-proposed'>
  pb: PlanEvent<'split-proposed'>
} {
  const a = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {}, 1_000, 'plan A')
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {}, 1_000, 'plan B')
  return {
    a,
    b,
    pa: a.propose(cast.decomposers[0], a.root, 1, subgoals(['x', 'y']), 2_000),
    pb: b.propose(cast.decomposers[0], b.root, 1, subgoals(['x', 'y']), 2_000)
  }
}

/** An event of plan B that also cites an event of plan A: never valid. */
function crossPlan(b: PlanBuilder, cites: readonly EventId[]): PlanEvent {
  return makeEvent({
    type: 'split-proposed',
    plan: b.plan,
    author: cast.decomposers[1],
    hlc: { ms: 3_000, c: 0 },
    deps: [b.goal.id, ...cites],
    body: {
      node: b.root,
      attempt: 1,
      subgoals: subgoals(['p', 'q']),
      rationale: 'across plans',
      usage: { inputTokens: 0, outputTokens: 0 }
    }
  })
}

describe('evict', () => {
  it('refuses a plan with a parked event, an unknown plan, and any plan without a loader', () => {
    const { a, pa } = twoPlans()
    const citesMissing = a.propose(cast.decomposers[1], a.root, 1, subgoals(['p', 'q']), 3_000, [pa.id])
    const { f, add } = storedFold()
    add(a.goal)
    add(citesMissing)
    expect(f.events.hasParked(a.plan)).toBe(true)
    expect(f.evict(a.plan)).toBe(false)
    expect(f.evict('0'.repeat(64) as PlanId)).toBe(false)
    add(pa)
    expect(f.evict(a.plan)).toBe(true)
    expect(f.evict(a.plan)).toBe(false)
    expect(foldAll([a.goal]).evict(a.plan)).toBe(false)
  })

  it("an event citing an evicted plan's event, parked before the eviction, is rejected as without eviction", () => {
    const { a, b, pa, pb } = twoPlans()
    const x = crossPlan(b, [pa.id, pb.id])
    const run = (evict: boolean): { hash: string; rejected: Array<[EventId, string]> } => {
      const { f, add, rejected } = storedFold()
      for (const e of [a.goal, pa, b.goal, x]) add(e)
      expect(f.events.parkedCount).toBe(1)
      // x belongs to B: A may go, and x keeps what it holds of A.
      if (evict) expect(f.evict(a.plan)).toBe(true)
      add(pb)
      f.reload(a.plan)
      return { hash: f.swarmHash(), rejected }
    }
    const kept = run(false)
    const evicted = run(true)
    expect(kept.rejected).toStrictEqual([[x.id, 'dep-other-plan']])
    expect(evicted).toStrictEqual(kept)
    expect(kept.hash).toBe(foldAll([a.goal, pa, b.goal, pb, x]).swarmHash())
  })

  it("an event citing an evicted plan's event, arriving after the eviction, waits until that plan comes back and is then rejected", () => {
    const { a, b, pa, pb } = twoPlans()
    const x = crossPlan(b, [pa.id, pb.id])
    const { f, add, rejected } = storedFold()
    for (const e of [a.goal, pa, b.goal, pb]) add(e)
    expect(f.evict(a.plan)).toBe(true)
    add(x)
    // A is out of memory, so x waits for pa like for any missing dep: never folded, so no hash changes.
    expect(f.events.parkedCount).toBe(1)
    expect(f.swarmHash()).toBe(foldAll([a.goal, pa, b.goal, pb]).swarmHash())
    f.reload(a.plan)
    expect(rejected).toStrictEqual([[x.id, 'dep-other-plan']])
    expect(f.events.parkedCount).toBe(0)
  })
})

describe('reload', () => {
  it('a store that fails while the plan comes back leaves it evicted, with its hashes, until a later try', () => {
    const { a, pa } = twoPlans()
    let failing = false
    const { f, add } = storedFold({ failLoads: () => failing })
    for (const e of [a.goal, pa]) add(e)
    const hash = f.swarmHash()
    expect(f.evict(a.plan)).toBe(true)
    failing = true
    const ballot = a.ballot(cast.scorers[0], { node: a.root, attempt: 1 }, pa, 4_000)
    expect(() => f.add(ballot, NO_CLOCK)).toThrow(/SQLITE_BUSY/)
    expect(f.isEvicted(a.plan)).toBe(true)
    expect(f.swarmHash()).toBe(hash)
    expect(f.plans()).toStrictEqual([a.plan])
    failing = false
    add(ballot)
    expect(f.isEvicted(a.plan)).toBe(false)
    expect(f.treeHash(a.plan)).toBe(foldAll([a.goal, pa, ballot]).treeHash(a.plan))
  })
})
