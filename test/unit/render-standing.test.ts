/**
 * The observer's tree shows standing (ADR-0048): a version-5 plan's evidence
 * in a line under its head, each item on the node whose event it is, and a
 * peer whose record across plans is poor marked where it appears.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { renderTree, short } from '../../roles/render.js'
import { evidenceByNode } from '../../roles/render-standing.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { twoLeaves, makeCast, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
let tree: PlanTree
beforeAll(async () => {
  cast = await makeCast()
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
    leaseMs: 1_000,
    maxClaimMs: 5_000,
    trust: DEFAULT_TRUST
  })
  const { s, t0, ev } = twoLeaves(b, cast)
  const [x, y] = cast.executors
  const hc = b.claim(x, t0, 2250, { evidence: ev })
  const ac = b.claim(y, t0, 2260, { evidence: ev })
  // Whichever claim holds the task, the other's result is for a task its author did not hold.
  const r1 = b.result(hc, 2270, 'one')
  const r2 = b.result(ac, 2280, 'two')
  tree = treeOf(b, [...s.events, hc, ac, r1, r2])
})

describe('standing in the observer’s tree', () => {
  it('names the evidence under the plan’s head and on its node', () => {
    const items = tree.standing?.evidence ?? []
    expect(items.map(i => i.kind)).toStrictEqual(['result-not-held'])
    const offender = items[0]?.author as string
    expect(evidenceByNode(tree).get(tree.tasks.find(t => t.chains.length > 0)?.node as never)).toHaveLength(1)
    const printed = renderTree(tree, 0, { expand: true })
    expect(printed).toContain(`! standing: ${short(offender)} 1 result-not-held`)
    expect(printed).toMatch(new RegExp(`book flights .*⚠ evidence: 1 result-not-held by ${short(offender)}`))
  })

  it('marks a peer with a poor record across plans wherever it appears', () => {
    const owner = tree.tasks.flatMap(t => t.results).find(r => r.accepted)?.author as string
    const printed = renderTree(tree, 0, { expand: true, poor: new Set([owner]) })
    expect(printed).toContain(`${short(owner)} (poor record)`)
    expect(renderTree(tree, 0, { expand: true })).not.toContain('(poor record)')
  })

  it('prints nothing of standing for a plan without evidence', () => {
    const clean = { ...tree, standing: { equivocators: [], evidence: [] } }
    expect(renderTree(clean, 0, { expand: true })).not.toMatch(/standing|evidence/)
  })
})
