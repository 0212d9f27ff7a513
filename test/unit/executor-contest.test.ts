/**
 * The honest executor in a version-5 plan (roles/claim-rules.ts): its
 * stagger is the fold's claim rank, so the executor the fold prefers claims
 * first; and when a worse-ranked claim started a task's chain within the
 * claim window, an executor that outranks it still claims while the window
 * is open (the fold gives it the task), never after, never when it was
 * full as that claim was made (the claim rightly skipped it), and never in a
 * plan of the earlier rules.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { decideExecutor } from '../../roles/claim-rules.js'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { claimRank } from '../../src/core/trust-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, leafTask, makeCast, split, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanParams } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

function contested(
  params: Partial<PlanParams>,
  nowMs: number,
  lastFullMs?: number
): { claims: number; owner: PeerIdString | null } {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { leaseMs: 3_000, ...params })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['a', 'b'],
    voters: cast.scorers.slice(0, 2),
    at: 2000
  })
  const t = leafTask(child(s, 0))
  const [best, worst] = [...cast.executors].sort((x, y) => (claimRank(t, x) < claimRank(t, y) ? -1 : 1)) as [
    PeerIdString,
    PeerIdString
  ]
  const sly = b.claim(worst, t, { ms: 2200, c: 1 }, { evidence: s.events.map(e => e.id) })
  const tree = treeOf(b, [...s.events, sly])
  const out = decideExecutor(tree, best, nowMs, [best, worst], 0, () => 2250, 250, {
    stableView: true,
    lagMs: 0,
    ...(lastFullMs === undefined ? {} : { lastFullMs })
  })
  return { claims: out.filter(i => i.task.id === t).length, owner: taskOf(tree, t).owner }
}

describe('claiming a contested task (protocol 5)', () => {
  it('claims a task a worse-ranked executor took within the window, while the window is open', () => {
    expect(contested({ trust: DEFAULT_TRUST }, 2400)).toMatchObject({ claims: 1 })
  })
  it('not once the window is closing', () => {
    expect(contested({ trust: DEFAULT_TRUST }, 2200 + DEFAULT_TRUST.claimWindowMs - 100).claims).toBe(0)
  })
  it('not when it held its limit of claims less than a stagger before that claim, which rightly skipped it', () => {
    // Seeds 6 and 10 of the simulator with the review sample: the owner had run the task by then, so it ran twice.
    expect(contested({ trust: DEFAULT_TRUST }, 2400, 2100).claims).toBe(0)
    expect(contested({ trust: DEFAULT_TRUST }, 2400, 1900).claims).toBe(1)
  })
  it('not in a plan of the earlier rules, where the earliest claim holds the task', () => {
    expect(contested({}, 2400).claims).toBe(0)
  })
})
