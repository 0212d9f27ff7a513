/**
 * Protocol 5's fold rules against the attacks seen on real processes, by a
 * member whose code is modified but whose events are correctly signed
 * (docs/protocol/fold.md section 11, ADR-0047). Each attack is folded twice:
 * in a plan of the earlier rules, where it succeeds (so the test shows what
 * it guards against, and fails if the v5 rules are switched off), and in a
 * version-5 plan, where it gains nothing. Every v5 case also folds to one
 * treeHash in any order.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { arbParamsV5, peerIdOf, testKeys } from '../helpers/arbitraries.js'
import { DEFAULT_TRUST, PROTOCOL_VERSION_5, paramsVersion } from '../../src/core/events.js'
import { claimRank } from '../../src/core/trust-rules.js'
import { rollupId } from '../../src/core/derive.js'
import { validateParams } from '../../src/wire/index.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import {
  twoLeaves,
  child,
  expectOrderFree,
  leafTask,
  makeCast,
  nodeOf,
  split,
  taskOf,
  treeOf
} from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { EventId, NodeId, PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

type Rules = 'v4' | 'v5'
/** These cases are about claims and finality: results are accepted as they come (the review sample has its own tests). */
const UNSAMPLED = { ...DEFAULT_TRUST, reviewOneIn: 0 }
const RULES: readonly Rules[] = ['v4', 'v5']

function builder(rules: Rules, params: Partial<PlanParams> = {}): PlanBuilder {
  return new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
    leaseMs: 1_000,
    maxClaimMs: 5_000,
    ...params,
    ...(rules === 'v5' ? { trust: UNSAMPLED } : {})
  })
}

/** Root split into two leaves, decided at 2200 (two of three scorers). */
function leaves(b: PlanBuilder): { s: Split; t0: TaskId; t1: TaskId } {
  return twoLeaves(b, cast)
}

/** The executors ordered by their rank for a task: first the one protocol 5 prefers. */
function byRank(task: string): PeerIdString[] {
  return [...cast.executors].sort((a, b) => (claimRank(task, a) < claimRank(task, b) ? -1 : 1))
}

function fold(rules: Rules, b: PlanBuilder, events: readonly PlanEvent[]): PlanTree {
  return rules === 'v5' ? expectOrderFree(b, events) : treeOf(b, events)
}

describe('version 5 scaffolding', () => {
  it('a goal with trust is version 5; its parameters are checked', () => {
    const b = builder('v5')
    expect(b.goal.env.v).toBe(PROTOCOL_VERSION_5)
    expect(paramsVersion(b.params)).toBe(PROTOCOL_VERSION_5)
    expect(validateParams(b.params)).toBeNull()
    expect(validateParams({ ...b.params, trust: { claimWindowMs: 5_000 } })).toMatch(/claimWindowMs/)
    expect(validateParams({ ...b.params, trust: { claimWindowMs: 10, more: 1 } })).toMatch(/trust/)
    expect(validateParams({ ...b.params, retainDays: 7 })).toBeNull()
    const tree = treeOf(b, [])
    expect(tree.params.trust).toStrictEqual(UNSAMPLED)
    expect(tree.standing).toStrictEqual({ equivocators: [], evidence: [] })
    expect(treeOf(builder('v4'), []).standing).toBeUndefined()
  })

  it('every generated version-5 parameter set is valid and version 5; a window past the lease is not', async () => {
    const peers = (await testKeys(4)).map(peerIdOf)
    fc.assert(
      fc.property(arbParamsV5(peers), p => {
        expect(validateParams(p)).toBeNull()
        expect(paramsVersion(p)).toBe(PROTOCOL_VERSION_5)
        const wide = { ...p, trust: { claimWindowMs: p.leaseMs + 1 } }
        expect(validateParams(wide)).toMatch(/claimWindowMs/)
      }),
      { numRuns: 300 }
    )
  })
})

describe('(a) a claim stamped one tick after readyAt', () => {
  const run = (rules: Rules): { owner: PeerIdString | null; honest: PeerIdString } => {
    const b = builder(rules)
    const { s, t0 } = leaves(b)
    const [honest, attacker] = byRank(t0) as [PeerIdString, PeerIdString]
    const ev = s.events.map(e => e.id)
    const sly = b.claim(attacker, t0, { ms: 2200, c: 1 }, { evidence: ev })
    const fair = b.claim(honest, t0, 2350, { evidence: ev })
    return { owner: taskOf(fold(rules, b, [...s.events, sly, fair]), t0).owner, honest }
  }
  it('wins by its stamp under the earlier rules', () => {
    const r = run('v4')
    expect(r.owner).not.toBe(r.honest)
  })
  it('wins nothing under version 5: the better-ranked claim in the window holds the task', () => {
    const r = run('v5')
    expect(r.owner).toBe(r.honest)
  })
  it('changing its own stamp within the window gains nothing', () => {
    const b = builder('v5')
    const { s, t0 } = leaves(b)
    const [honest, attacker] = byRank(t0) as [PeerIdString, PeerIdString]
    const ev = s.events.map(e => e.id)
    const fair = b.claim(honest, t0, 2900, { evidence: ev })
    for (const ms of [2201, 2500, 2899, 2901, 3199]) {
      const sly = b.claim(attacker, t0, ms, { evidence: ev })
      expect(taskOf(treeOf(b, [...s.events, sly, fair]), t0).owner).toBe(honest)
    }
  })
})

describe('(b) hoarding: beyond the claim limit, and taking over its own chain', () => {
  const run = (rules: Rules): PlanTree => {
    const b = builder(rules, { maxClaimsPerExecutor: 1 })
    const { s, t0, t1 } = leaves(b)
    const hoarder = cast.executors[0]
    const ev = s.events.map(e => e.id)
    const c0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const c1 = b.claim(hoarder, t1, 2301, { evidence: ev })
    // Past c0's lapse (3300), the hoarder takes its own chain over instead of letting anyone else.
    const again = b.claim(hoarder, t0, 3400, { evidence: ev, prev: c0.id })
    return fold(rules, b, [...s.events, c0, c1, again])
  }
  it('holds every task as long as it likes under the earlier rules', () => {
    const tree = run('v4')
    expect(tree.tasks.filter(t => t.status === 'claimed').length).toBe(2)
    expect(tree.tasks[1]?.chains.map(c => c.end?.kind ?? null)).toStrictEqual(['superseded', null])
  })
  it('holds at most its limit under version 5, and cannot take over its own chain', () => {
    const tree = run('v5')
    const [t0, t1] = [tree.tasks[1], tree.tasks[2]]
    expect(t0?.chains.length).toBe(1)
    expect(t1?.status).toBe('ready')
    const kinds = tree.standing?.evidence.map(e => e.kind).sort()
    expect(kinds).toStrictEqual(['claim-over-limit', 'self-takeover'])
  })
})

describe('(b) hoarding by releasing and claiming again', () => {
  const run = (rules: Rules): { owner: PeerIdString | null; honest: PeerIdString } => {
    const b = builder(rules)
    const { s, t0 } = leaves(b)
    const [hoarder, honest] = byRank(t0) as [PeerIdString, PeerIdString]
    const ev = s.events.map(e => e.id)
    const c0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const gone = b.release(c0, 4000)
    const again = b.claim(hoarder, t0, { ms: 4000, c: 1 }, { evidence: ev, prev: gone.id })
    const fair = b.claim(honest, t0, 4200, { evidence: ev, prev: gone.id })
    return { owner: taskOf(fold(rules, b, [...s.events, c0, gone, again, fair]), t0).owner, honest }
  }
  it('keeps the task by its rank under the earlier rules (and by its stamp)', () => {
    const r = run('v4')
    expect(r.owner).not.toBe(r.honest)
  })
  it('ranks last for that task under version 5 once it gave the task up', () => {
    const r = run('v5')
    expect(r.owner).toBe(r.honest)
  })
})

describe('(c) an early result of a claim that does not hold the task', () => {
  const run = (rules: Rules): { tree: PlanTree; task: TaskId; honest: EventId } => {
    const b = builder(rules)
    const { s, t0 } = leaves(b)
    const [honest, attacker] = byRank(t0) as [PeerIdString, PeerIdString]
    const ev = s.events.map(e => e.id)
    const hc = b.claim(honest, t0, 2250, { evidence: ev })
    const ac = b.claim(attacker, t0, 2260, { evidence: ev })
    const junk = b.result(ac, 2270, 'junk')
    const good = b.result(hc, 4000, 'the flights')
    return { tree: fold(rules, b, [...s.events, hc, ac, junk, good]), task: t0, honest: good.id }
  }
  it('replaces the holder’s result under the earlier rules', () => {
    const r = run('v4')
    expect(taskOf(r.tree, r.task).accepted).not.toBe(r.honest)
  })
  it('never counts under version 5, and is evidence', () => {
    const r = run('v5')
    expect(taskOf(r.tree, r.task).accepted).toBe(r.honest)
    expect(r.tree.standing?.evidence.map(e => e.kind)).toStrictEqual(['result-not-held'])
  })
})

describe('(d) a late equivocation in a slot whose proposal already won', () => {
  const run = (rules: Rules): { before: PlanTree; after: PlanTree } => {
    const b = builder(rules)
    const { s, t0, t1 } = leaves(b)
    const ev = s.events.map(e => e.id)
    const [x, y] = cast.executors
    const c0 = b.claim(x, t0, 2300, { evidence: ev })
    const c1 = b.claim(y, t1, 2300, { evidence: ev })
    const r0 = b.result(c0, 2400)
    const r1 = b.result(c1, 2400)
    const roll = rollupId(b.root)
    const cr = b.claim(x, roll, 2500, { evidence: [r0.id, r1.id, ...ev] })
    const rr = b.result(cr, 2600, 'the trip')
    // Version 5 has the deliverable reviewed (fold.md 11.9).
    const accepts =
      rules === 'v5'
        ? [b.review(cast.scorers[0], rr, 'accept', 2700), b.review(cast.scorers[1], rr, 'accept', 2710)]
        : []
    const done = [...s.events, c0, c1, r0, r1, cr, rr, ...accepts]
    // Published late, stamped early: a second proposal in the winner's own slot.
    const late = b.propose(cast.decomposers[0], b.root, 1, s.proposal.env.body.subgoals.slice().reverse(), 2001)
    return { before: fold(rules, b, done), after: fold(rules, b, [...done, late]) }
  }
  it('unseats the split and sends a completed plan back to planning under the earlier rules', () => {
    const r = run('v4')
    expect(r.before.status).toBe('completed')
    expect(r.after.status).toBe('planning')
  })
  it('is kept as evidence under version 5, and the plan stays completed', () => {
    const r = run('v5')
    expect(r.before.status).toBe('completed')
    expect(r.after.status).toBe('completed')
    expect(r.after.standing?.equivocators).toStrictEqual([cast.decomposers[0]])
  })
  it('an equivocator loses its vote in the plan under version 5', () => {
    for (const rules of RULES) {
      const b = builder(rules)
      const { s } = leaves(b)
      const voter = cast.scorers[1]
      const other = child(s, 0) as NodeId
      // It cites nothing of the root's split: nobody has built on that yet.
      const p = b.propose(cast.decomposers[1], other, 1, s.proposal.env.body.subgoals, 2300)
      const twice = [
        b.ballot(voter, { node: other, attempt: 1 }, p, 2400),
        b.ballot(voter, { node: other, attempt: 1 }, null, 2401, { judged: [p] })
      ]
      const tree = fold(rules, b, [...s.events, p, ...twice])
      expect(nodeOf(tree, b.root).kind, rules).toBe(rules === 'v4' ? 'composite' : 'decomposing')
    }
  })
})

describe('(e) self-reported usage on events that do not count', () => {
  const run = (rules: Rules): PlanTree => {
    const b = builder(rules)
    const drain = Array.from({ length: 126 }, (_, i) =>
      b.propose(
        cast.decomposers[2],
        (i % 2 === 0 ? b.root : `${i}`.padStart(64, 'a')) as NodeId,
        1,
        leavesOf(i),
        2000 + i,
        [],
        {
          inputTokens: 16_000,
          outputTokens: 16_000
        }
      )
    )
    return fold(rules, b, drain)
  }
  it('exhausts a fresh plan’s budget under the earlier rules', () => {
    expect(run('v4').status).toBe('budget-exhausted')
  })
  it('counts nothing under version 5: one slot, equivocated, and nodes that do not exist', () => {
    const tree = run('v5')
    expect(tree.status).toBe('planning')
    expect(tree.spentTokens).toBe(0)
  })
})

function leavesOf(i: number): Array<{ title: string; detail: string; leaf: boolean; dependsOn: number[] }> {
  return [
    { title: `a${i}`, detail: '', leaf: true, dependsOn: [] },
    { title: `b${i}`, detail: '', leaf: true, dependsOn: [] }
  ]
}

describe('(c2) a late rewrite of work the member rolled up itself', () => {
  // x did both leaves of node A and A's roll-up (citing only its own results); y did node B and claims the root's
  // roll-up, citing A's roll-up result. Then a better-ranked claim on a leaf of A, stamped just after it became
  // ready, arrives with its result.
  const run = (rules: Rules): { before: PlanTree; after: PlanTree; leaf: TaskId; honest: EventId } => {
    const b = builder(rules)
    const voters = cast.scorers.slice(0, 2)
    const s = split(b, { node: b.root, by: cast.decomposers[0], titles: ['A', 'B'], voters, at: 2000, leaf: false })
    const [a, bn] = [child(s, 0), child(s, 1)]
    const sa = split(b, { node: a, by: cast.decomposers[1], titles: ['a0', 'a1'], voters, at: 2300 })
    const sb = split(b, { node: bn, by: cast.decomposers[1], titles: ['b0', 'b1'], voters, at: 2300 })
    const leaf = leafTask(child(sa, 0))
    const [late, x, y] = byRank(leaf) as [PeerIdString, PeerIdString, PeerIdString]
    const base = [...s.events, ...sa.events, ...sb.events].map(e => e.id)
    const does = (who: PeerIdString, sp: Split, node: NodeId): PlanEvent[] => {
      const work = sp.children.map(leafTask).flatMap((t, i) => {
        const c = b.claim(who, t, 2700 + i, { evidence: base })
        return [c, b.result(c, 2800 + i)]
      })
      const c = b.claim(who, rollupId(node), 2900, { evidence: [...base, ...work.map(e => e.id)] })
      return [...work, c, b.result(c, 3000)]
    }
    const ofA = does(x, sa, a)
    const ofB = does(y, sb, bn)
    const cr = b.claim(y, rollupId(b.root), 3100, { evidence: [...base, ofA.at(-1)?.id, ofB.at(-1)?.id] as EventId[] })
    const done = [...s.events, ...sa.events, ...sb.events, ...ofA, ...ofB, cr]
    const lc = b.claim(late, leaf, 2601, { evidence: base })
    const lr = b.result(lc, 2602, 'REWRITTEN')
    return {
      before: fold(rules, b, done),
      after: fold(rules, b, [...done, lc, lr]),
      leaf,
      honest: ofA[1]?.id as EventId
    }
  }
  it('replaces the leaf’s result under the earlier rules', () => {
    const r = run('v4')
    expect(taskOf(r.before, r.leaf).accepted).toBe(r.honest)
    expect(taskOf(r.after, r.leaf).accepted).not.toBe(r.honest)
  })
  it('keeps it under version 5: what another member built on, however far down, is final', () => {
    const r = run('v5')
    expect(taskOf(r.before, r.leaf).accepted).toBe(r.honest)
    expect(taskOf(r.after, r.leaf).accepted).toBe(r.honest)
    expect(r.after.standing?.evidence.map(e => e.kind)).toContain('late')
  })
})

describe('(b2) a claim over the limit, made to look built on through the review that rejected its result', () => {
  it('stays over the limit: a claim citing a rejecting review builds on the rejection, not on the result', () => {
    const b = builder('v5', { maxClaimsPerExecutor: 1 })
    const { s, t0, t1 } = leaves(b)
    const worst = byRank(t1)[cast.executors.length - 1] as PeerIdString
    const other = cast.executors.find(p => p !== worst) as PeerIdString
    const ev = s.events.map(e => e.id)
    const held = b.claim(worst, t0, 2300, { evidence: ev })
    const over = b.claim(worst, t1, 2301, { evidence: ev })
    const junk = b.result(over, 2500, 'junk')
    const no1 = b.review(cast.scorers[0], junk, 'reject', 2600)
    const no2 = b.review(cast.scorers[1], junk, 'reject', 2650)
    // Another member claims the task again, citing the review that rejected the junk.
    const again = b.claim(other, t1, 2700, { evidence: [...ev, no2.id] })
    const tree = expectOrderFree(b, [...s.events, held, over, junk, no1, no2, again])
    expect(taskOf(tree, t1).chains.map(c => c.owner)).toStrictEqual([other])
    expect(tree.standing?.evidence.map(e => e.kind)).toContain('claim-over-limit')
  })
})

describe('(c3) a rejected chain before a result others built on', () => {
  it('stays in the walk: the task was open again from the rejecting review, so nothing was passed over', () => {
    const b = builder('v5', { review: true, leaseMs: 10_000, maxClaimMs: 20_000 })
    const { s, t0, t1 } = leaves(b)
    const [x, y, z] = cast.executors as readonly PeerIdString[] as [PeerIdString, PeerIdString, PeerIdString]
    const ev = s.events.map(e => e.id)
    const cx = b.claim(x, t0, 2300, { evidence: ev })
    const bad = b.result(cx, 3500, 'junk')
    const no1 = b.review(cast.scorers[0], bad, 'reject', 3600)
    const no2 = b.review(cast.scorers[1], bad, 'reject', 3650)
    const cy = b.claim(y, t0, 3700, { evidence: [...ev, no2.id] })
    const good = b.result(cy, 3900, 'the flights')
    const yes1 = b.review(cast.scorers[0], good, 'accept', 4000)
    const yes2 = b.review(cast.scorers[1], good, 'accept', 4050)
    // Past the first claim window (readyAt 2200 + 1 s): Y's claim is for the task reopened. Another member builds on
    // Y's result.
    const cz = b.claim(z, t1, 4100, { evidence: [...ev, good.id, yes2.id] })
    const tree = expectOrderFree(b, [...s.events, cx, bad, no1, no2, cy, good, yes1, yes2, cz])
    const task = taskOf(tree, t0)
    expect(task.accepted).toBe(good.id)
    expect(task.chains.map(c => [c.owner, c.end?.kind])).toStrictEqual([
      [x, 'rejected'],
      [y, 'result']
    ])
    expect(tree.standing?.evidence.map(e => e.kind)).not.toContain('late')
  })
})
