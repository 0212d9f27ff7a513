/**
 * The simulator's central scheduler (src/sim/central.ts): on hand-made trees
 * whose makespan is worked out by hand, with and without its limits binding.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { runCentral } from '../../src/sim/central.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import { makeCast, split, treeOf } from '../helpers/fold-fixtures.js'
import type { CentralLimits } from '../../src/sim/central.js'
import type { CallKind } from '../../src/sim/latency.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PlanParams } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const NONE: CentralLimits = { roleConcurrency: Infinity, executors: Infinity, executorConcurrency: Infinity }

/**
 * A plan whose root one decomposer splits into `titles` (leaves); scorers 0 and 1 of a committee of three vote for it
 * (the quorum is two).
 */
function onePlan(titles: readonly string[], params: Partial<PlanParams> = {}, text?: string): PlanTree {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), params, 1_000, text)
  const s = split(b, { node: b.root, by: cast.decomposers[0], titles, voters: cast.scorers.slice(0, 2), at: 2_000 })
  return treeOf(b, s.events)
}

/**
 * Latencies by hand: a proposal 1,000 ms; scorer 0's ballot 300, scorer 1's 500; every leaf 600, the roll-up 100. The
 * caller is the key's second field (src/sim/latency.ts callKey).
 */
function latency(kind: CallKind, key: string): number {
  const caller = key.split('\u0000')[1]
  if (kind === 'decompose') return 1_000
  if (kind === 'score') return caller === cast.scorers[0] ? 300 : 500
  if (kind === 'execute-leaf') return 600
  if (kind === 'execute-rollup') return 100
  throw new Error(`unexpected call ${kind}`)
}

describe('the central scheduler', () => {
  it('without limits: the longest chain of calls, the quorum-th ballot deciding', () => {
    const r = runCentral([{ tree: onePlan(['book flights', 'book hotels']) }], latency, NONE)
    // proposal 1,000, then the slower of the two ballots that make the quorum (500), a leaf (600), the roll-up (100)
    expect(r.makespanMs).toBe(1_000 + 500 + 600 + 100)
    expect(r.calls).toBe(1 + 2 + 2 + 1)
    expect(r.callsByKind).toEqual({ decompose: 1, score: 2, 'execute-leaf': 2, 'execute-rollup': 1 })
    expect(r.workMs).toBe(1_000 + 300 + 500 + 600 + 600 + 100)
    expect(r.maxInFlight).toBe(2)
  })

  it('one executor with one slot runs the leaves one after the other', () => {
    const r = runCentral([{ tree: onePlan(['book flights', 'book hotels']) }], latency, {
      ...NONE,
      executors: 1,
      executorConcurrency: 1
    })
    expect(r.makespanMs).toBe(1_000 + 500 + 600 + 600 + 100)
  })

  it("the plan's claims per executor bind: two slots, but one claim at a time in the plan", () => {
    const limits = { ...NONE, executors: 1, executorConcurrency: 4 }
    const two = runCentral([{ tree: onePlan(['book flights', 'book hotels']) }], latency, limits)
    expect(two.makespanMs).toBe(1_000 + 500 + 600 + 100)
    const one = runCentral(
      [{ tree: onePlan(['book flights', 'book hotels'], { maxClaimsPerExecutor: 1 }) }],
      latency,
      limits
    )
    expect(one.makespanMs).toBe(1_000 + 500 + 600 + 600 + 100)
    // Three leaves, two at once (the default maxClaimsPerExecutor): two rounds.
    const three = runCentral([{ tree: onePlan(['flights', 'hotels', 'trains']) }], latency, limits)
    expect(three.makespanMs).toBe(1_000 + 500 + 600 + 600 + 100)
    // Two executors: one round.
    const spread = runCentral([{ tree: onePlan(['flights', 'hotels', 'trains']) }], latency, {
      ...limits,
      executors: 2
    })
    expect(spread.makespanMs).toBe(1_000 + 500 + 600 + 100)
  })

  it('its floor: the longest chain, or the busiest resource over its slots, never above the makespan', () => {
    const tree = onePlan(['a', 'b', 'c', 'd', 'e'])
    const chain = runCentral([{ tree }], latency, NONE).makespanMs
    expect(chain).toBe(2_200)
    const one = runCentral([{ tree }], latency, { ...NONE, executors: 1, executorConcurrency: 1 })
    expect(one.makespanMs).toBe(1_000 + 500 + 5 * 600 + 100)
    // Five leaves and the roll-up on one slot: 3,100 ms of work, above the chain.
    expect(one.floorMs(chain)).toBe(5 * 600 + 100)
    expect(runCentral([{ tree }], latency, NONE).floorMs(chain)).toBe(chain)
  })

  it("a role's slots bind: one decomposer with one slot and two plans decomposes them in turn", () => {
    const plans = [
      { tree: onePlan(['book flights', 'book hotels'], {}, 'plan a trip to Japan') },
      { tree: onePlan(['book flights', 'book hotels'], {}, 'plan a trip to Peru') }
    ]
    const free = runCentral(plans, latency, NONE)
    expect(free.makespanMs).toBe(2_200)
    expect([...free.finishMs.values()]).toEqual([2_200, 2_200])
    const one = runCentral(plans, latency, { ...NONE, roleConcurrency: 1 })
    // The first plan as before; the second's proposal waits for the first's (1,000), its ballots start at 2,000.
    expect([...one.finishMs.values()].sort((a, b) => a - b)).toEqual([2_200, 2_000 + 500 + 600 + 100])
    expect(one.makespanMs).toBe(3_200)
    expect(one.maxInFlight).toBeLessThanOrEqual(4)
  })

  it('a ballot that scored only some proposals waits for those alone', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const fast = b.propose(cast.decomposers[0], b.root, 1, subgoals(['flights', 'hotels']), 2_000)
    const slow = b.propose(cast.decomposers[1], b.root, 1, subgoals(['trains', 'ferries']), 2_000)
    const ballots = cast.scorers
      .slice(0, 2)
      .map((v, i) => b.ballot(v, { node: b.root, attempt: 1 }, fast, 2_100 + i, { judged: [fast] }))
    const tree = treeOf(b, [fast, slow, ...ballots])
    const deps = new Map(ballots.map(x => [x.id as string, x.env.deps.map(d => d as string)]))
    const lat = (kind: CallKind, key: string): number =>
      kind === 'decompose' && key.split('\u0000')[1] === cast.decomposers[1] ? 5_000 : latency(kind, key)
    // Given the deps, the ballots wait for the fast proposal only: 1,000 + 500 + 600 + 100.
    expect(runCentral([{ tree, depsOf: id => deps.get(id) }], lat, NONE).makespanMs).toBe(2_200)
    // Without them, for every proposal: 5,000 + 500 + 600 + 100.
    expect(runCentral([{ tree }], lat, NONE).makespanMs).toBe(6_200)
  })

  it('refuses a plan whose calls never finish it', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['flights', 'hotels']), 2_000)
    // One ballot of a quorum of two: the attempt is still open, nothing wins.
    const tree = treeOf(b, [p, b.ballot(cast.scorers[0], { node: b.root, attempt: 1 }, p, 2_100)])
    expect(() => runCentral([{ tree }], latency, NONE)).toThrow(/was never decided/)
  })
})
