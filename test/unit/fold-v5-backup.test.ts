/**
 * Protocol 5's backup executions and plan-wide precedence (ADR-0050,
 * docs/protocol/fold.md 11.8): a hoarder that renews its claims up to
 * maxClaimMs delays a task by about BACKUP_FACTOR typical task times, not by
 * maxClaimMs. Each rule is folded in a version-5 plan (every case in several
 * orders) and, where the earlier rules differ, beside them.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { BACKUP_FACTOR, OUTDONE_BACKUP_FACTOR, claimRank } from '../../src/core/trust-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, leafTask, split, twoLeaves, expectOrderFree, makeCast, taskOf } from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { EventId, PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const LEASE = 1_000
/**
 * The split, proposed 1 s after the goal and built on by the claims, is the plan's one sample of work so far: the
 * typical task time is 1 s, so a backup may start this long after a claim.
 */
const BACKUP_MS = BACKUP_FACTOR * 1_000

function builder(params: Partial<PlanParams> = {}): PlanBuilder {
  return new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
    leaseMs: LEASE,
    maxClaimMs: 60_000,
    trust: DEFAULT_TRUST,
    ...params
  })
}

/** Root split into two leaves, decided at 2200. */
function leaves(b: PlanBuilder): { s: Split; t0: TaskId; t1: TaskId; ev: EventId[] } {
  return twoLeaves(b, cast)
}

/** A claim renewed every 800 ms until `untilMs`: a hoarder that never lets its lease lapse. */
function renewed(b: PlanBuilder, c: PlanEvent<'task-claimed'>, untilMs: number): PlanEvent[] {
  const out: PlanEvent[] = []
  let prev: PlanEvent = c
  for (let ms = c.env.hlc.ms + 800; ms <= untilMs; ms += 800) {
    prev = b.renew(c, prev, ms)
    out.push(prev)
  }
  return out
}

function byRank(task: string): PeerIdString[] {
  return [...cast.executors].sort((a, b) => (claimRank(task, a) < claimRank(task, b) ? -1 : 1))
}

describe('a backup of a chain held far longer than the typical task', () => {
  it('before the backup time, another claim neither holds the task nor counts its result', () => {
    const b = builder()
    const { s, t0, ev } = leaves(b)
    const [hoarder, honest] = cast.executors
    const c0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const early = b.claim(honest, t0, 2300 + BACKUP_MS - 100, { evidence: ev })
    const r = b.result(early, 2300 + BACKUP_MS + 500, 'early')
    const tree = expectOrderFree(b, [...s.events, c0, ...renewed(b, c0, 20_000), early, r])
    expect(taskOf(tree, t0).status).toBe('claimed')
    expect(taskOf(tree, t0).owner).toBe(hoarder)
    expect(tree.standing?.evidence.map(e => e.kind)).toContain('result-not-held')
  })

  it('after it, another member backs the chain up and its result finishes the task', () => {
    const b = builder()
    const { s, t0, ev } = leaves(b)
    const [hoarder, honest] = cast.executors
    const c0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const backup = b.claim(honest, t0, 2300 + BACKUP_MS + 100, { evidence: ev })
    const r = b.result(backup, 2300 + BACKUP_MS + 600, 'the flights')
    const tree = expectOrderFree(b, [...s.events, c0, ...renewed(b, c0, 20_000), backup, r])
    const t = taskOf(tree, t0)
    expect(t.status).toBe('done')
    expect(t.accepted).toBe(r.id)
    expect(t.chains.map(c => [c.owner, c.end?.kind ?? null])).toStrictEqual([
      [hoarder, 'superseded'],
      [honest, 'result']
    ])
    // The hoarder delayed the task by the backup time, not by maxClaimMs.
    expect((t.finishedAt?.ms ?? Infinity) - c0.env.hlc.ms).toBeLessThan(BACKUP_MS + 1_000)
  })

  it('the holder’s result still finishes the task when it comes before the backup’s, and the backup’s is no evidence', () => {
    const b = builder()
    const { s, t0, ev } = leaves(b)
    const [slow, idle] = cast.executors
    const c0 = b.claim(slow, t0, 2300, { evidence: ev })
    const backup = b.claim(idle, t0, 2300 + BACKUP_MS + 100, { evidence: ev })
    const mine = b.result(c0, 2300 + BACKUP_MS + 300, 'slow but done')
    const theirs = b.result(backup, 2300 + BACKUP_MS + 900, 'backup')
    const tree = expectOrderFree(b, [...s.events, c0, ...renewed(b, c0, 2300 + BACKUP_MS), backup, mine, theirs])
    const t = taskOf(tree, t0)
    expect(t.accepted).toBe(mine.id)
    expect(t.chains.map(c => c.end?.kind)).toStrictEqual(['result'])
    expect(tree.standing?.evidence ?? []).toStrictEqual([])
  })

  it('nobody backs up its own chain', () => {
    const b = builder()
    const { s, t0, ev } = leaves(b)
    const hoarder = cast.executors[0] as PeerIdString
    const c0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const again = b.claim(hoarder, t0, 2300 + BACKUP_MS + 100, { evidence: ev })
    const r = b.result(again, 2300 + BACKUP_MS + 600, 'mine again')
    const tree = expectOrderFree(b, [...s.events, c0, ...renewed(b, c0, 20_000), again, r])
    const t = taskOf(tree, t0)
    expect(t.chains.length).toBe(1)
    expect(t.status).toBe('claimed')
    expect(t.owner).toBe(hoarder)
    expect(tree.standing?.evidence.map(e => e.kind)).toStrictEqual(['result-not-held'])
  })

  it('a hoarder holding its limit of tasks delays the plan by a bounded amount, not by maxClaimMs', () => {
    const b = builder({ maxClaimsPerExecutor: 2 })
    const { s, t0, t1, ev } = leaves(b)
    const [hoarder, e1, e2] = [...cast.executors] as [PeerIdString, PeerIdString, PeerIdString]
    const h0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const h1 = b.claim(hoarder, t1, 2301, { evidence: ev })
    const b0 = b.claim(e1, t0, 2300 + BACKUP_MS + 50, { evidence: ev })
    const b1 = b.claim(e2, t1, 2301 + BACKUP_MS + 50, { evidence: ev })
    const r0 = b.result(b0, 2300 + BACKUP_MS + 400, 'flights')
    const r1 = b.result(b1, 2301 + BACKUP_MS + 400, 'hotels')
    const events = [...s.events, h0, h1, ...renewed(b, h0, 59_000), ...renewed(b, h1, 59_000), b0, b1, r0, r1]
    const tree = expectOrderFree(b, events)
    for (const t of [t0, t1]) {
      expect(taskOf(tree, t).status).toBe('done')
      expect(taskOf(tree, t).finishedAt?.ms ?? Infinity).toBeLessThan(2300 + BACKUP_MS + 1_000)
    }
  })
})

describe('precedence in the plan after a chain ended without a result', () => {
  it('a member that held a task and gave it up ranks last for every task of the plan', () => {
    const b = builder()
    const { s, t0, t1, ev } = leaves(b)
    const [quitter, other, third] = byRank(t1) as [PeerIdString, PeerIdString, PeerIdString]
    const held = b.claim(quitter, t0, 2300, { evidence: ev })
    // Held past its contest (more than the claim window and the takeover grace), then given up.
    const gone = b.release(held, 2300 + DEFAULT_TRUST.claimWindowMs + 2_500)
    // t1 is contested anew after its first holder lets it go at 6900.
    const first = b.claim(third, t1, 2300, { evidence: ev })
    const free = b.release(first, 6900)
    const mine = b.claim(quitter, t1, 7000, { evidence: [...ev, gone.id, free.id] })
    const theirs = b.claim(other, t1, 7100, { evidence: [...ev, free.id] })
    const tree = expectOrderFree(b, [...s.events, held, gone, first, free, mine, theirs])
    expect(taskOf(tree, t1).owner).toBe(other)
  })

  it('a claim released promptly after losing its contest keeps the member’s rank', () => {
    const b = builder()
    const { s, t0, t1, ev } = leaves(b)
    const [quitter, other, third] = byRank(t1) as [PeerIdString, PeerIdString, PeerIdString]
    const lost = b.claim(quitter, t0, 2300, { evidence: ev })
    const gone = b.release(lost, 2300 + DEFAULT_TRUST.claimWindowMs + 500)
    const first = b.claim(third, t1, 2300, { evidence: ev })
    const free = b.release(first, 6900)
    const mine = b.claim(quitter, t1, 7000, { evidence: [...ev, gone.id, free.id] })
    const theirs = b.claim(other, t1, 7100, { evidence: [...ev, free.id] })
    const tree = expectOrderFree(b, [...s.events, lost, gone, first, free, mine, theirs])
    expect(taskOf(tree, t1).owner).toBe(quitter)
  })
})

describe('the typical task time (ADR-0054)', () => {
  it('reads the built-on split proposals too, and with a sample the backup time has no two-lease floor', () => {
    const b = builder()
    // Proposed 200 ms after the goal (at 1000): the one sample, so the backup time is 4 x 200 ms, under two leases.
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: cast.scorers.slice(0, 2),
      at: 1_200
    })
    const ev = s.events.map(e => e.id)
    const t0 = leafTask(child(s, 0))
    const [hoarder, honest] = cast.executors
    const c0 = b.claim(hoarder, t0, 1_500, { evidence: ev })
    // Past the claim window (decided at 1400, so to 2400): a backup, not a rival in the first contest.
    const backup = b.claim(honest, t0, 2_500, { evidence: ev })
    const r = b.result(backup, 2_700, 'done sooner')
    const tree = expectOrderFree(b, [...s.events, c0, ...renewed(b, c0, 20_000), backup, r])
    expect(tree.backupMs).toBe(BACKUP_FACTOR * 200)
    expect(taskOf(tree, t0).accepted).toBe(r.id)
    expect(taskOf(tree, t0).chains.map(c => c.end?.kind)).toStrictEqual(['superseded', 'result'])
  })
})

describe('a member outdone in the plan (ADR-0054)', () => {
  /**
   * t1 depends on t0. The member that ranks first for t1 hoards t0 and is outdone there: a backup's result, which
   * the claims of t1 build on, makes t1 ready. The split (1 s) and that result (500 ms) are the samples: the typical
   * task time is 1 s.
   */
  function outdone(): {
    b: PlanBuilder
    events: PlanEvent[]
    ev: EventId[]
    t1: TaskId
    hoarder: PeerIdString
    rival: PeerIdString
    readyMs: number
  } {
    const b = builder()
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['book flights', 'book hotels'],
      voters: cast.scorers.slice(0, 2),
      at: 2000,
      dependsOn: { 1: [0] }
    })
    const ev = s.events.map(e => e.id)
    const t0 = leafTask(child(s, 0))
    const t1 = leafTask(child(s, 1))
    const [hoarder, rival, backer] = byRank(t1) as [PeerIdString, PeerIdString, PeerIdString]
    const h0 = b.claim(hoarder, t0, 2300, { evidence: ev })
    const bk = b.claim(backer, t0, 2300 + BACKUP_MS + 100, { evidence: ev })
    const r0 = b.result(bk, 2300 + BACKUP_MS + 600, 'flights')
    const events = [...s.events, h0, ...renewed(b, h0, 2300 + BACKUP_MS + 600), bk, r0]
    return { b, events, ev: [...ev, r0.id], t1, hoarder, rival, readyMs: r0.env.hlc.ms }
  }

  it('its chains claimed after it may be backed up sooner: after one typical task time', () => {
    const { b, events, ev, t1, hoarder, rival, readyMs } = outdone()
    const h1 = b.claim(hoarder, t1, readyMs + 1, { evidence: ev })
    // Past the window, so no contest: a backup only by the sooner time (1 s), not by the plan's (4 s).
    const backup = b.claim(rival, t1, readyMs + 1 + OUTDONE_BACKUP_FACTOR * 1_000 + 100, { evidence: ev })
    const r1 = b.result(backup, backup.env.hlc.ms + 400, 'hotels')
    const tree = expectOrderFree(b, [...events, h1, ...renewed(b, h1, 30_000), backup, r1])
    expect(tree.backupMs).toBe(BACKUP_MS)
    expect(tree.backupSooner).toStrictEqual({ after: { [hoarder]: { ms: readyMs, c: 0 } }, ms: 1_000 })
    const t = taskOf(tree, t1)
    expect(t.accepted).toBe(r1.id)
    expect(t.chains.map(c => [c.owner, c.end?.kind])).toStrictEqual([
      [hoarder, 'superseded'],
      [rival, 'result']
    ])
  })

  it('its claims made after it rank last in a contest', () => {
    const { b, events, ev, t1, rival, hoarder, readyMs } = outdone()
    const h1 = b.claim(hoarder, t1, readyMs + 1, { evidence: ev })
    const mine = b.claim(rival, t1, readyMs + 300, { evidence: ev })
    const tree = expectOrderFree(b, [...events, h1, mine])
    expect(taskOf(tree, t1).owner).toBe(rival)
  })

  it('a claim that lost its contest and was released within it is never outdone', () => {
    const b = builder()
    // Samples of 200 ms (the split, the backup's result): a backup may come 800 ms after a claim, before a lost
    // claim is released.
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: cast.scorers.slice(0, 2),
      at: 1_200
    })
    const ev = s.events.map(e => e.id)
    const [t0, t1] = [leafTask(child(s, 0)), leafTask(child(s, 1))]
    const [first, second, backer] = byRank(t0) as [PeerIdString, PeerIdString, PeerIdString]
    const won = b.claim(first, t0, 1_500, { evidence: ev })
    const lost = b.claim(second, t0, 1_600, { evidence: ev })
    const bk = b.claim(backer, t0, 2_450, { evidence: ev })
    const gone = b.release(lost, 1_600 + DEFAULT_TRUST.claimWindowMs + 1_500)
    const r = b.result(bk, 2_650, 'flights')
    const built = b.claim(second, t1, 2_700, { evidence: [...ev, r.id] })
    const tree = expectOrderFree(b, [...s.events, won, ...renewed(b, won, 20_000), lost, bk, gone, r, built])
    expect(taskOf(tree, t0).accepted).toBe(r.id)
    expect(tree.backupSooner?.after).toStrictEqual({ [first]: r.env.hlc })
  })
})
