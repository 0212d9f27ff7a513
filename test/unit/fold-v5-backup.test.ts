/**
 * Protocol 5's backup executions and plan-wide precedence (ADR-0050,
 * docs/protocol/fold.md 11.8): a hoarder that renews its claims up to
 * maxClaimMs delays a task by about BACKUP_FACTOR typical task times, not by
 * maxClaimMs. Each rule is folded in a version-5 plan (every case in several
 * orders) and, where the earlier rules differ, beside them.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { BACKUP_FACTOR, claimRank } from '../../src/core/trust-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { twoLeaves, expectOrderFree, makeCast, taskOf } from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { EventId, PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const LEASE = 1_000
/** No built-on results yet: the typical task time is the lease, so a backup may start this long after a claim. */
const BACKUP_MS = Math.max(2 * LEASE, BACKUP_FACTOR * LEASE)

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
