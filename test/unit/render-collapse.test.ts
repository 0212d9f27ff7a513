/**
 * The observer's printout of a big plan (roles/render.ts renderTree): a totals line; a finished subtree as one line
 * with its counts; in a plan of more than QUIET_FROM nodes, a subtree with nothing under way too; what is under way
 * or failed stays expanded; `expand: true` prints every node; a small plan keeps its quiet nodes in sight.
 */
import { describe, expect, it } from 'vitest'
import { Fold } from '../../src/core/fold.js'
import { QUIET_FROM, renderTree } from '../../roles/render.js'
import { bigPlanEvents } from '../helpers/big-plan.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const FAR = Date.now() + 1e12

function treeOf(events: readonly PlanEvent[], plan: PlanId): PlanTree {
  const fold = new Fold()
  fold.addBatch(events, FAR)
  return fold.tree(plan) as PlanTree
}

const firstClaim = (events: readonly PlanEvent[]): number => events.findIndex(e => e.env.type === 'task-claimed')

describe('the printout of a big plan', () => {
  it('prints a finished plan of 64 nodes as its root and one line per finished subtree', async () => {
    const { events, plan } = await bigPlanEvents([3, 4, 4])
    const tree = treeOf(events, plan)
    expect(tree.status).toBe('completed')
    expect(tree.nodes).toHaveLength(64)
    const lines = renderTree(tree, FAR).split('\n')
    expect(lines).toContain('  nodes: 64 done')
    const collapsed = lines.filter(l => l.includes(' — 21 nodes done'))
    expect(collapsed).toHaveLength(3)
    expect(collapsed[0]).toMatch(/^ {2}├─ ✓ step 1 of \S+ v0 — 21 nodes done$/)
    expect(collapsed[2]).toMatch(/^ {2}└─ ✓ step 3 of/)
    expect(lines.filter(l => /[├└]─/.test(l))).toHaveLength(3)
  })

  it('keeps what is under way expanded and folds the rest into counts', async () => {
    const { events, plan } = await bigPlanEvents([3, 4, 4])
    // Every split, then the first 5 leaves and the first roll-up done, and the 6th leaf claimed.
    const claims = events.map((e, i) => (e.env.type === 'task-claimed' ? i : -1)).filter(i => i >= 0)
    const upTo = (claims[6] as number) + 1
    const tree = treeOf(events.slice(0, upTo), plan)
    const text = renderTree(tree, FAR)
    const lines = text.split('\n')
    expect(tree.nodes.filter(n => n.status === 'done')).toHaveLength(6)
    expect(lines).toContain('  nodes: 6 done · 1 claimed · 42 ready · 15 blocked')
    // The first grandchild is done: one line. The second has the claimed leaf: expanded, the claim in sight.
    expect(lines.filter(l => l.endsWith(' — 5 nodes done'))).toHaveLength(1)
    expect(text).toMatch(/⟳ step 2 of \S+ v0 {2}\[claimed by …\w+, lease \d+s\]/)
    // The subtrees nobody is on yet: one line each, with what they hold.
    expect(lines.filter(l => l.includes(' — 21 nodes, none under way: 16 ready · 5 blocked'))).toHaveLength(2)
    expect(lines.filter(l => l.includes(' — 5 nodes, none under way: 4 ready · 1 blocked'))).toHaveLength(2)
    // Its done and ready siblings are in sight.
    expect(lines.filter(l => /│ {2}│ {2}[├└]─ [✓○] step \d of /.test(l))).toHaveLength(3)
    expect(lines.length).toBeLessThan(20)
    // Everything, on request.
    const all = renderTree(tree, FAR, { expand: true }).split('\n')
    expect(all.filter(l => /[├└]─/.test(l))).toHaveLength(63)
    expect(all.some(l => l.includes(' — '))).toBe(false)
  })

  it('keeps a failed node and its ancestors in sight', async () => {
    const { events, plan, builder } = await bigPlanEvents([3, 4, 4], { maxAttempts: 1 })
    const at = firstClaim(events)
    const claim = events[at] as PlanEvent<'task-claimed'>
    const failed = builder.fail(claim, claim.env.hlc.ms + 1)
    const tree = treeOf([...events.slice(0, at + 1), failed], plan)
    const lines = renderTree(tree, FAR).split('\n')
    expect(lines.some(l => /✗ step 1 of \S+ v0 {2}\[1\/1 failed\]/.test(l))).toBe(true)
    expect(lines.find(l => l.startsWith('  nodes:'))).toContain('1 failed')
    // Its siblings are in sight; the other subtrees are folded.
    expect(lines.filter(l => / ○ step [234] of /.test(l) && !l.includes(' — '))).toHaveLength(3)
    expect(lines.filter(l => l.includes(' none under way'))).toHaveLength(2 + 3)
  })

  it(`keeps every quiet node of a plan of at most ${QUIET_FROM} nodes in sight, finished subtrees folded`, async () => {
    const { events, plan } = await bigPlanEvents([2, 3])
    const claims = events.map((e, i) => (e.env.type === 'task-claimed' ? i : -1)).filter(i => i >= 0)
    // The first three leaves and their parent's roll-up done.
    const tree = treeOf(events.slice(0, claims[4]), plan)
    expect(tree.nodes).toHaveLength(9)
    const lines = renderTree(tree, FAR).split('\n')
    expect(lines.filter(l => l.endsWith(' — 4 nodes done'))).toHaveLength(1)
    expect(lines.filter(l => / ○ step \d of /.test(l))).toHaveLength(3)
    expect(lines.some(l => l.includes('none under way'))).toBe(false)
  })
})
