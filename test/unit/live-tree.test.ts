/**
 * The tree a Fold keeps between reads (src/core/live-tree.ts): what a read shares with the one before, and what it
 * must not hide. That every read equals a fresh derivation is test/property/live-tree.test.ts's.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { derivePlan } from '../../src/core/derive.js'
import { LiveTree } from '../../src/core/live-tree.js'
import { leafTask, makeCast, split } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { NodeId, PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { PlanIndex } from '../../src/core/plan-index.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
let voters: PeerIdString[]
beforeAll(async () => {
  cast = await makeCast()
  voters = [cast.scorers[0], cast.scorers[1]]
})

const committee = (): PeerIdString[] => cast.scorers.slice(0, 3)

function fold(events: readonly PlanEvent[]): Fold {
  const f = new Fold()
  for (const e of events) f.add(e, NO_CLOCK)
  return f
}

describe('the kept tree', () => {
  it('shares the nodes and task views an event did not change with the tree before, and replaces the ones it did', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['a', 'b', 'c'], voters, at: 2000 })
    const f = fold([b.goal, ...s.events])
    const before = f.tree(b.plan) as PlanTree
    const task = leafTask(s.children[1] as NodeId)
    const claim = b.claim(cast.executors[0], task, 3000)
    f.add(claim, NO_CLOCK)
    const after = f.tree(b.plan) as PlanTree
    expect(after).toEqual(derivePlan(f.events.plan(b.plan) as PlanIndex))
    const changed = after.nodes.filter((n, i) => n !== before.nodes[i]).map(n => n.id)
    expect(changed).toEqual([s.children[1]])
    const views = after.tasks.filter((t, i) => t !== before.tasks[i]).map(t => t.id)
    expect(views).toEqual([task])
    expect(after.tasks.find(t => t.id === task)?.status).toBe('claimed')
    expect(after.status).toBe('executing')
  })

  it('a dependency cycle (events that skipped validation) throws on every read, as the derivation does', () => {
    const b = new PlanBuilder(cast.author, committee())
    const f = fold([b.goal])
    expect(f.tree(b.plan)?.status).toBe('planning')
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters,
      at: 2000,
      dependsOn: { 0: [1], 1: [0] }
    })
    for (const e of s.events) f.add(e, NO_CLOCK)
    const index = f.events.plan(b.plan) as PlanIndex
    expect(() => derivePlan(index)).toThrow(/dependency cycle/)
    expect(() => f.tree(b.plan)).toThrow(/dependency cycle/)
    expect(() => f.tree(b.plan)).toThrow(/dependency cycle/)
    const live = new LiveTree(index)
    expect(() => live.tree()).toThrow(/dependency cycle/)
    expect(() => live.tree()).toThrow(/dependency cycle/)
  })
})
