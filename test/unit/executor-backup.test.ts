/**
 * An honest executor's backup executions in a version-5 plan
 * (roles/backup-rules.ts through roles/claim-rules.ts decideExecutor;
 * docs/protocol/fold.md 11.8): idle in the plan, it claims a task that
 * another member has held past the fold's backup time (the tree's
 * `backupMs`), one at a time, the longest-held first, in the fold's contest
 * order; and a claim it makes so is one the fold takes as the backup.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { backupSkewMs, decideExecutor } from '../../roles/claim-rules.js'
import { createOutsideExecutor, outsideBackup } from '../../roles/outside-executor.js'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { BACKUP_FACTOR, claimRank } from '../../src/core/trust-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { twoLeaves, makeCast, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { EventId, PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'
import type { ClaimIntent } from '../../roles/claim-rules.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { NodeView } from '../../src/ports/node-view.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const LEASE = 1_000
const STAGGER = 250
/** The split, proposed 1 s after the goal, is the one sample of work: the typical task time is 1 s. */
const BACKUP_MS = BACKUP_FACTOR * 1_000
/** The hoarder claims the first task here, the second 100 ms later. */
const HELD_AT = 2_300
/** When the best-ranked other executor backs the first task up. */
const DUE = HELD_AT + BACKUP_MS + backupSkewMs(BACKUP_MS)

interface Case {
  readonly name: string
  readonly now: number
  /** Which executor decides: the best-ranked (for the first task) of the others, the next one, or the hoarder. */
  readonly who?: 'best' | 'second' | 'hoarder'
  /** The plan's rules: version 5 (default), or the earlier ones. */
  readonly v4?: true
  /** The hoarder stops renewing the first task at HELD_AT (its lease lapses: a takeover, not a backup). */
  readonly lapses?: true
  /** The deciding executor holds the second task itself (not idle). */
  readonly holdsSecond?: true
  /** The second task is left free (claimable: the executor is not idle). */
  readonly secondFree?: true
  /** The plan welcomes outside workers too (`executors: 'any'`). */
  readonly outside?: true
  /** What it claims: 'backup' (of the first task), 'takeover' (of the first task), 'second', or nothing. */
  readonly expect: 'backup' | 'takeover' | 'second' | null
}

const CASES: readonly Case[] = [
  { name: 'idle, past the backup time: backs the longest-held task up', now: DUE, expect: 'backup' },
  { name: 'before the backup time and its skew allowance: nothing yet', now: DUE - 1, expect: null },
  { name: 'the next-ranked executor waits a stagger more', now: DUE, who: 'second', expect: null },
  { name: '... and claims after it', now: DUE + STAGGER, who: 'second', expect: 'backup' },
  { name: 'never a backup of its own chain', now: DUE + 5_000, who: 'hoarder', expect: null },
  { name: 'holding a claim in the plan: one at a time', now: DUE, holdsSecond: true, expect: null },
  { name: 'a claimable task comes first', now: DUE, secondFree: true, expect: 'second' },
  { name: 'a lapsed chain is taken over, not backed up', now: DUE, lapses: true, expect: 'takeover' },
  { name: 'not in a plan of the earlier rules', now: DUE, v4: true, expect: null }
]

function setup(c: Case): {
  b: PlanBuilder
  events: PlanEvent[]
  ev: EventId[]
  tree: PlanTree
  t0: TaskId
  t1: TaskId
  me: PeerIdString
  executors: PeerIdString[]
  last0: EventId
} {
  const params: Partial<PlanParams> = {
    leaseMs: LEASE,
    maxClaimMs: 60_000,
    maxClaimsPerExecutor: 2,
    ...(c.outside === true ? { executors: 'any' as const } : {})
  }
  const b = new PlanBuilder(
    cast.author,
    cast.scorers.slice(0, 3),
    c.v4 === true ? params : { ...params, trust: DEFAULT_TRUST }
  )
  const { s, ev, t0, t1 } = twoLeaves(b, cast)
  const [hoarder, ...others] = cast.executors
  const ranked = [...others].sort((x, y) => (claimRank(t0, x) < claimRank(t0, y) ? -1 : 1))
  const me =
    c.who === 'hoarder' ? hoarder : c.who === 'second' ? (ranked[1] as PeerIdString) : (ranked[0] as PeerIdString)
  const events: PlanEvent[] = [...s.events]
  // Renewed every 800 ms up to `now`: a lease that never lapses.
  const held = (who: PeerIdString, task: TaskId, at: number, renew: boolean): PlanEvent => {
    const claim = b.claim(who, task, at, { evidence: ev })
    events.push(claim)
    let last: PlanEvent = claim
    if (renew)
      for (let ms = at + 800; ms <= c.now; ms += 800) {
        last = b.renew(claim, last, ms)
        events.push(last)
      }
    return last
  }
  const last0 = held(hoarder, t0, HELD_AT, c.lapses !== true)
  if (c.holdsSecond === true) held(me, t1, HELD_AT + 100, true)
  else if (c.secondFree !== true) held(hoarder, t1, HELD_AT + 100, true)
  return { b, events, ev, tree: treeOf(b, events), t0, t1, me, executors: [...cast.executors], last0: last0.id }
}

describe('backup executions started by an idle executor (protocol 5)', () => {
  for (const c of CASES)
    it(c.name, () => {
      const { tree, t0, t1, me, executors, last0 } = setup(c)
      const woke: number[] = []
      const working = c.holdsSecond === true ? 1 : 0
      const out: ClaimIntent[] = decideExecutor(tree, me, c.now, executors, working, () => HELD_AT, STAGGER, {
        stableView: true,
        lagMs: 0,
        workingOn: task => c.holdsSecond === true && task === t1,
        wake: at => woke.push(at)
      })
      const got = out[0]
      const what =
        got === undefined
          ? null
          : got.task.id === t1
            ? 'second'
            : got.backup === true
              ? 'backup'
              : got.task.id === t0
                ? 'takeover'
                : 'other'
      expect(what).toBe(c.expect)
      expect(out.length).toBeLessThanOrEqual(1)
      if (c.expect === 'backup') {
        expect(got).toMatchObject({ prev: last0, confirm: true, backup: true })
        expect(tree.backupMs).toBe(BACKUP_MS)
      }
      if (c.name.startsWith('before')) expect(woke).toContain(DUE)
    })
})

describe('backup executions by an outside worker (task next, MCP task_next)', () => {
  it('backs up the longest-held task once it is past the backup time, never its own, never before protocol 5', () => {
    const at = (c: Partial<Case>): TaskId | undefined => {
      const { tree, me } = setup({ name: '', now: DUE, expect: null, ...c })
      return outsideBackup(tree, me, c.now ?? DUE)?.id
    }
    const { t0 } = setup(CASES[0] as Case)
    expect(at({})).toBe(t0)
    expect(at({ now: DUE - 1 })).toBeUndefined()
    expect(at({ who: 'hoarder', now: DUE + 5_000 })).toBeUndefined()
    expect(at({ v4: true })).toBeUndefined()
  })

  it('task next claims it as a backup when nothing is claimable and the worker holds nothing in the plan', async () => {
    const c: Case = { name: '', now: DUE, expect: 'backup', outside: true }
    const { b, events, t0, me, last0 } = setup(c)
    let tree = treeOf(b, events)
    const now = (): number => c.now
    const view = {
      me,
      now,
      lagMs: () => 0,
      plans: () => [tree.plan],
      tree: () => tree,
      held: () => null,
      scheduler: {
        now,
        monotonic: now,
        after: (_ms: number, fn: () => void) => (queueMicrotask(fn), () => {}),
        every: () => () => {},
        soon: (fn: () => void) => (queueMicrotask(fn), () => {}),
        random: () => 0.5
      },
      publish: async (_type: string, _plan: string, cites: EventId[], body: { task: TaskId; prev: EventId | null }) => {
        const claim = b.claim(me, body.task, c.now, { evidence: cites.filter(x => x !== body.prev), prev: body.prev })
        events.push(claim)
        tree = treeOf(b, events)
        return { event: claim }
      }
    } as unknown as NodeView
    const worker = createOutsideExecutor(view, { silenceMs: 60_000 })
    const got = await worker.next()
    worker.stop()
    expect(got?.task).toBe(t0)
    const claim = events[events.length - 1] as PlanEvent<'task-claimed'>
    expect(claim.env.body.prev).toBe(last0)
    expect(taskOf(tree, t0).owner).toBe(me)
  })
})

describe('a backup claim as the fold takes it', () => {
  it('heads the task once made, and the hoarder’s chain is superseded', () => {
    const c = CASES[0] as Case
    const { b, events, ev, tree, t0, me, executors } = setup(c)
    const intent = decideExecutor(tree, me, c.now, executors, 0, () => HELD_AT, STAGGER, {
      stableView: true,
      lagMs: 0
    })[0]
    expect(intent?.backup).toBe(true)
    const backup = b.claim(me, t0, c.now, { evidence: ev, prev: intent?.prev ?? null })
    const after = treeOf(b, [...events, backup])
    expect(taskOf(after, t0).owner).toBe(me)
    expect(taskOf(after, t0).chains.map(x => x.end?.kind ?? null)).toStrictEqual(['superseded', null])
  })

  it('is in no chain once the holder’s result comes first: the executor’s book sees it lost, stops and releases it', () => {
    const c = CASES[0] as Case
    const { b, events, ev, t0, me, last0 } = setup(c)
    const backup = b.claim(me, t0, c.now, { evidence: ev, prev: last0 })
    const held = events.find(e => e.id === last0) as PlanEvent
    const holder = events.find(e => e.env.type === 'task-claimed' && e.env.author !== me) as PlanEvent<'task-claimed'>
    expect(held).toBeDefined()
    const first = b.result(holder, c.now + 200, 'slow but done')
    const after = treeOf(b, [...events, backup, first])
    const t = taskOf(after, t0)
    expect(t.accepted).toBe(first.id)
    // standingOf (roles/claim-book.ts) is 'lost' for a claim that heads no chain: the hold releases it and aborts.
    expect(t.chains.some(x => x.claim === backup.id)).toBe(false)
  })
})

describe('a member outdone in the plan (ADR-0054)', () => {
  /** `top` ranks first for t1 and holds t0 (and t1 too with `both`); the tree says it was outdone at the start. */
  function outdone(both: boolean): {
    tree: PlanTree
    sooner: PlanTree
    me: PeerIdString
    top: PeerIdString
    t0: TaskId
    t1: TaskId
  } {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), {
      leaseMs: LEASE,
      maxClaimMs: 60_000,
      maxClaimsPerExecutor: 2,
      trust: DEFAULT_TRUST
    })
    const { s, ev, t0, t1 } = twoLeaves(b, cast)
    const [top, me] = [...cast.executors].sort((x, y) => (claimRank(t1, x) < claimRank(t1, y) ? -1 : 1)) as [
      PeerIdString,
      PeerIdString
    ]
    const events: PlanEvent[] = [...s.events]
    for (const task of both ? [t0, t1] : [t0]) {
      const claim = b.claim(top, task, HELD_AT, { evidence: ev })
      events.push(claim)
      let last: PlanEvent = claim
      for (let ms = HELD_AT + 800; ms <= HELD_AT + 8_000; ms += 800) {
        last = b.renew(claim, last, ms)
        events.push(last)
      }
    }
    const tree = treeOf(b, events)
    return { tree, sooner: { ...tree, backupSooner: { after: { [top]: { ms: 0, c: 0 } }, ms: 500 } }, me, top, t0, t1 }
  }
  const decide = (tree: PlanTree, me: PeerIdString, now: number, executors: PeerIdString[]): ClaimIntent[] =>
    decideExecutor(tree, me, now, executors, 0, () => HELD_AT, STAGGER, { stableView: true, lagMs: 0 })

  it('is not waited for in the stagger of a claimable task, and its claim in a contest is contested', () => {
    const { tree, sooner, me, top, t0, t1 } = outdone(false)
    expect(decide(tree, me, HELD_AT, [top, me]).map(i => i.task.id)).not.toContain(t1)
    expect(
      decide(sooner, me, HELD_AT, [top, me])
        .map(i => i.task.id)
        .sort()
    ).toStrictEqual([t0, t1].sort())
  })

  it('has its chain backed up after the sooner backup time', () => {
    const { tree, sooner, me, top } = outdone(true)
    const due = HELD_AT + 500 + backupSkewMs(BACKUP_MS)
    expect(decide(sooner, me, due - 1, [top, me])).toStrictEqual([])
    const got = decide(sooner, me, due, [top, me])[0]
    expect(got).toMatchObject({ backup: true })
    expect(decide(tree, me, due, [top, me])).toStrictEqual([])
  })
})
