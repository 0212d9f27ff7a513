/**
 * The honest executor in a version-5 plan (roles/claim-rules.ts): its
 * stagger is the fold's claim rank, so the executor the fold prefers claims
 * first; and when a worse-ranked claim started a task's chain within the
 * claim window, an executor that outranks it still claims while the window
 * is open (the fold gives it the task), never after, never when it was
 * full as that claim was made (the claim rightly skipped it), and never in a
 * plan of the earlier rules. A member whose result was rejected ranks last:
 * nobody waits for it, and it contests no claim of a member that does not.
 * A task reopened by a rejection is staggered again from then, so the
 * executors that would lose its contest do not claim it (and, releasing the
 * lost claim, rank last for it from then on).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { decideExecutor } from '../../roles/claim-rules.js'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { claimRank } from '../../src/core/trust-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, leafTask, makeCast, split, taskOf, treeOf, twoLeaves } from '../helpers/fold-fixtures.js'
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

/**
 * Leaf t0 of a version-5 plan (ready at 2200), reopened at 2410 by the rejection of junk from `x`, the best ranked of
 * the three executors for the task decided: t0, or with `t1` leaf t1, which `y` (ranked next) claimed at 2500. `who`
 * decides at 3000 (2600 with `t1`) with all three in view; `seenAt` says when it first saw a task claimable.
 */
function reopened(
  who: (ranked: readonly PeerIdString[]) => PeerIdString,
  seenAt: (t0: string) => (key: string) => number,
  t1 = false
): { claims: number; wakes: number[] } {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
    leaseMs: 3_000,
    review: true,
    trust: DEFAULT_TRUST
  })
  const { s, t0, t1: other, ev } = twoLeaves(b, cast)
  const t = t1 ? other : t0
  const ranked = [...cast.executors].sort((p, q) => (claimRank(t, p) < claimRank(t, q) ? -1 : 1))
  const [x, y] = ranked as [PeerIdString, PeerIdString]
  const junk = b.claim(x, t0, 2300, { evidence: ev })
  const r = b.result(junk, 2350, 'junk')
  const no = [b.review(cast.scorers[0], r, 'reject', 2400), b.review(cast.scorers[1], r, 'reject', 2410)]
  const took = t1 ? [b.claim(y, other, 2500, { evidence: ev })] : []
  const tree = treeOf(b, [...s.events, junk, r, ...no, ...took])
  expect(taskOf(tree, t0).status).toBe('ready')
  const wakes: number[] = []
  const out = decideExecutor(tree, who(ranked), t1 ? 2600 : 3000, ranked, 0, seenAt(t0), 250, {
    stableView: true,
    lagMs: 0,
    wake: at => wakes.push(at)
  })
  return { claims: out.filter(i => i.task.id === t).length, wakes }
}

describe('a task reopened by a rejection (protocol 5)', () => {
  it('the executor ranked next after the rejected member claims it at once: nobody waits for that member', () => {
    expect(
      reopened(
        r => r[1] as PeerIdString,
        () => () => 3000
      ).claims
    ).toBe(1)
  })
  it('the one ranked after it waits its stagger from the reopening, not from when it first saw the task', () => {
    // Seeds 2 and 6 of the junk run: every executor claimed at once, and each that lost released its claim, which
    // ranked it last for the task; the next junk member then won it, until its attempts were used up.
    const out = reopened(
      r => r[2] as PeerIdString,
      t0 => key => (key === t0 ? 2250 : 3000)
    )
    expect(out).toStrictEqual({ claims: 0, wakes: expect.arrayContaining([3250]) as number[] })
  })
  it('the rejected member does not contest the claim of one that ranks after it by the hash alone', () => {
    expect(
      reopened(
        r => r[0] as PeerIdString,
        () => () => 2250,
        true
      ).claims
    ).toBe(0)
  })
})
