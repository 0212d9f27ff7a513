/**
 * A plan held under the open-plan limit per author tells its reason where a
 * person looks: the observer's printout (under the plan's first line) and
 * the dashboard's plan list (as the status reason, in place of the tree's
 * "growing the tree", which nobody does while it waits).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { startObserver } from '../../roles/observer.js'
import { planLines } from '../../src/http/dashboard/state.js'
import { summarizeTree } from '../../src/core/fold.js'
import { realScheduler } from '../../src/ports/scheduler.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { makeCast, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { ObserverView } from '../../roles/observer.js'
import type { PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const REASON = "waits for its author's earlier open plan to finish (at most 1 open plan per author)"

let cast: Cast
let trees: Map<PlanId, PlanTree>
let heldPlan: PlanId
let freePlan: PlanId

beforeAll(async () => {
  cast = await makeCast()
  const first = new PlanBuilder(cast.author, cast.scorers, {}, 1_000, 'plan a garden')
  const second = new PlanBuilder(cast.author, cast.scorers, {}, 2_000, 'plan a party')
  trees = new Map([
    [first.plan, treeOf(first, [first.goal])],
    [second.plan, treeOf(second, [second.goal])]
  ])
  freePlan = first.plan
  heldPlan = second.plan
})

const held = (plan: PlanId): string | null => (plan === heldPlan ? REASON : null)

describe('a held plan, where a person looks', () => {
  it('the observer prints the reason under the held plan only', () => {
    const view = {
      roster: () => [],
      plans: () => [...trees.keys()],
      tree: (p: PlanId) => trees.get(p),
      loadTree: (p: PlanId) => trees.get(p),
      isEvicted: () => false,
      treeHash: () => 'h',
      summary: () => undefined,
      held,
      now: () => 3_000,
      scheduler: realScheduler(),
      health: () => ({ peers: 0, parked: 0, rejected: {} })
    } as unknown as ObserverView
    const out: string[] = []
    const obs = startObserver(view, { json: false, tty: false, write: t => out.push(t) })
    const screen = obs.render()
    obs.stop()
    const blocks = screen.split('\n\n')
    const heldBlock = blocks.find(b => b.includes('plan a party')) as string
    const freeBlock = blocks.find(b => b.includes('plan a garden')) as string
    expect(heldBlock.split('\n')[1]).toBe(`  ⏸ the plan ${REASON}; it starts by itself then`)
    expect(freeBlock).not.toContain('⏸')
  })

  it("the dashboard's plan list gives the reason as the status reason", () => {
    const lines = planLines(
      {
        plans: () => [...trees.keys()],
        tree: p => trees.get(p),
        summary: p => summarizeTree(trees.get(p) as PlanTree),
        held
      },
      cast.author
    )
    expect(lines.find(l => l.id === heldPlan)?.statusReason).toBe(`the plan ${REASON}`)
    expect(lines.find(l => l.id === freePlan)?.statusReason).toBe('decomposers and scorers are growing the tree')
  })
})
