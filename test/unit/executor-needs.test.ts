/**
 * Executors and needs (protocol 3), decided from the tree alone: an executor
 * claims a leaf that needs something only if it offers it, and its rank and
 * stagger count only the executors that offer it too, so the capable
 * executor claims at once even when an incapable one would outrank it.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { decideExecutor, rankFor } from '../../roles/claim-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { makeCast, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { NodeId, PeerIdString } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

/** A tool plan whose root splits into a leaf that needs `lab` and one that needs nothing. */
function plan(): { tree: PlanTree; lab: NodeId; plain: NodeId } {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { tools: true, maxDepth: 1 })
  const proposal = b.propose(
    cast.decomposers[0],
    b.root,
    1,
    [
      { title: 'read the lab', detail: '', leaf: true, dependsOn: [], needs: ['lab'] },
      { title: 'write it up', detail: '', leaf: true, dependsOn: [] }
    ],
    1_500
  )
  const ballots = cast.scorers
    .slice(0, 2)
    .map((s, i) => b.ballot(s, { node: b.root, attempt: 1 }, proposal, 1_600 + 100 * i))
  const tree = treeOf(b, [proposal, ...ballots])
  const [lab, plain] = tree.nodes.filter(n => n.parent === b.root).map(n => n.id)
  return { tree, lab: lab as NodeId, plain: plain as NodeId }
}

const decide = (tree: PlanTree, me: PeerIdString, offers: Record<string, string[]>): string[] =>
  decideExecutor(tree, me, 10_000, [...cast.executors], 0, () => 10_000, 250, {
    stableView: true,
    offers: new Set(offers[me] ?? []),
    offersOf: p => new Set(offers[p] ?? [])
  }).map(i => i.task.node)

describe('executors and needs', () => {
  it('only an executor that offers the need claims the leaf, at once, whatever its rank among all', () => {
    const { tree, lab, plain } = plan()
    expect(tree.nodes.find(n => n.id === lab)?.needs).toStrictEqual(['lab'])
    const [e0, e1, e2] = cast.executors
    // The one with the lab ranks last among all three for that task, if such an order exists; it still goes first.
    const capable = [e0, e1, e2].sort(
      (a, b) => rankFor(lab, b, cast.executors) - rankFor(lab, a, cast.executors)
    )[0] as PeerIdString
    expect(rankFor(lab, capable, cast.executors)).toBeGreaterThan(0)
    const offers: Record<string, string[]> = { [capable]: ['lab', 'lab/read'] }
    for (const e of cast.executors) {
      const mine = decide(tree, e, offers)
      if (e === capable) expect(mine).toContain(lab)
      else expect(mine).not.toContain(lab)
    }
    // The plain leaf is everyone's to rank as always: exactly one executor claims it at once.
    expect(cast.executors.filter(e => decide(tree, e, offers).includes(plain))).toHaveLength(1)
  })

  it('with two capable executors, exactly one claims first, and nobody without the need claims at all', () => {
    const { tree, lab } = plan()
    const [e0, e1] = cast.executors
    const offers: Record<string, string[]> = { [e0 as string]: ['lab'], [e1 as string]: ['lab'] }
    const claimers = cast.executors.filter(e => decide(tree, e, offers).includes(lab))
    expect(claimers).toHaveLength(1)
    expect([e0, e1]).toContain(claimers[0])
  })

  it('in a plan without tools, offers change nothing', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { maxDepth: 0 })
    const tree = treeOf(b, [])
    const claims = cast.executors.filter(e => decide(tree, e, { [e]: ['lab'] }).length > 0)
    expect(claims).toHaveLength(1)
  })
})
