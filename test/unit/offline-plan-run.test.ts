/**
 * A whole offline plan, in process: the simulator's world (real replicas,
 * role drivers and roles over a simulated network, the offline provider
 * behind them) runs a non-trip goal to completion, and the finished tree,
 * not only the provider's output, reads as a plan of the goal's kind.
 */
import { describe, expect, it } from 'vitest'
import type { PlanTree, TreeNode } from '../../src/core/tree.js'
import { OFFLINE_OUTPUT_PREFIX } from '../../src/offline/index.js'
import { shapeFor } from '../../src/offline/shape.js'
import { startsWithAction, words } from '../../src/offline/text.js'
import { World } from '../../src/sim/world.js'

/** Run one seed of the simulator (no faults) and return the finished tree from node 0. */
async function finishedTree(seed: number): Promise<PlanTree> {
  const w = await World.create({ seed, nodes: 6, faults: [] })
  try {
    expect(await w.run()).toBe('done')
    const plan = w.plan
    if (plan === undefined) throw new Error('no plan was submitted')
    const tree = w.nodes[0]?.runtime?.view.loadTree(plan)
    if (tree === undefined) throw new Error('node 0 has no tree')
    return tree
  } finally {
    await w.stop()
  }
}

describe('an offline plan run to completion', () => {
  it.each([
    [2, 'write a grant proposal for a community solar project', 'writing'],
    [1, 'organise a neighbourhood book swap', 'event']
  ] as const)(
    'seed %i: "%s" becomes a finished %s plan',
    async (seed, goal, kind) => {
      const tree = await finishedTree(seed)
      expect(tree.goal).toBe(goal)
      expect(tree.status).toBe('completed')
      const byId = new Map(tree.nodes.map(n => [n.id, n]))
      const root = byId.get(tree.root) as TreeNode
      const children = root.children.map(id => byId.get(id) as TreeNode)
      const lines = tree.nodes.map(n => `${'  '.repeat(n.depth)}${n.kind} ${n.title}`).join('\n')

      // Two levels, and the first level is one of the kind's views, in order.
      expect(Math.max(...tree.nodes.map(n => n.depth)), lines).toBe(2)
      const shape = shapeFor(goal)
      expect(shape.kind).toBe(kind)
      const views = Object.values(shape.views).map(v => v.parts.map(p => p.title).join(' | '))
      expect(views, lines).toContain(children.map(c => c.title).join(' | '))
      expect(
        tree.nodes.some(n => n.dependsOn.length > 0),
        lines
      ).toBe(true)

      const g = words(goal).join(' ')
      for (const n of tree.nodes) {
        if (n.id === tree.root) continue
        expect(words(n.title).join(' '), lines).not.toContain(g)
        const parent = n.parent === null ? undefined : byId.get(n.parent)
        if (parent !== undefined && parent.id !== tree.root)
          expect(words(n.title).join(' ')).not.toContain(words(parent.title).join(' '))
        if (n.kind === 'leaf') expect(startsWithAction(n.title), n.title).toBe(true)
      }
      // Honest about what it is: every result offline, the deliverable says no model ran and carries checklists.
      for (const t of tree.tasks) for (const r of t.results) expect(r.source).toBe('offline')
      expect(tree.deliverable?.output.startsWith(OFFLINE_OUTPUT_PREFIX)).toBe(true)
      expect(tree.deliverable?.output).toContain('Nothing was researched, booked, bought or carried out.')
      for (const c of children) expect(tree.deliverable?.output).toContain(`  - ${c.title}`)
    },
    120_000
  )
})
