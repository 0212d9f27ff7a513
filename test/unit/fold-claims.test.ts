/**
 * Fold rules: claims. The owner is the earliest valid claim stamped after the
 * task became ready; renewals extend the lease one predecessor at a time; a
 * takeover counts only when stamped after the lapse (judged with the renewals
 * stamped before it, so a late renewal makes a takeover moot); maxClaimMs caps
 * a chain; a release lets the next claim stamped after it own.
 *
 * Not tested here, on purpose: maxClaimsPerExecutor. It is enforced by
 * executors, not by the fold (src/core/events.ts PlanParams): validity may
 * depend only on an event and its deps, never on the rest of the set.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, expectOrderFree, hlc, leafTask, makeCast, split, taskOf, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast, Split } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, TaskId } from '../../src/core/events.js'
import type { ChainView, PlanTree, TaskStatus } from '../../src/core/tree.js'

let cast: Cast
let e0: PeerIdString, e1: PeerIdString, e2: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  ;[e0, e1, e2] = cast.executors
})

const LEASE = 1000
const MAX_CLAIM = 2500

/** A plan whose root is split into two leaves, ready from 2200 (the deciding ballot). */
function leafPlan(): { b: PlanBuilder; s: Split; t: TaskId } {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { leaseMs: LEASE, maxClaimMs: MAX_CLAIM })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['book flights', 'book hotels'],
    voters: cast.scorers.slice(0, 2),
    at: 2000
  })
  return { b, s, t: leafTask(child(s, 0)) }
}

type EndKind = NonNullable<ChainView['end']>['kind']

interface Expect {
  status: TaskStatus
  /** Index into the executors. */
  owner: number | null
  /** Each chain: its owner's index into the executors, and how it ended (null: still open). */
  chains: Array<[number, EndKind | null]>
  ignored: number
  lapseMs?: number
  renewals?: number
}

interface Row {
  name: string
  events: (b: PlanBuilder, t: TaskId) => PlanEvent[]
  want: Expect
}

const rows: Row[] = [
  {
    name: 'no claim: ready, nobody owns it',
    events: () => [],
    want: { status: 'ready', owner: null, chains: [], ignored: 0 }
  },
  {
    name: 'one claim owns',
    events: (b, t) => [b.claim(e0, t, 3000)],
    want: { status: 'claimed', owner: 0, chains: [[0, null]], ignored: 0, lapseMs: 3000 + LEASE, renewals: 0 }
  },
  {
    name: 'the earliest claim owns, whatever arrives first',
    events: (b, t) => [b.claim(e0, t, 3000), b.claim(e1, t, 2900), b.claim(e2, t, 3100)],
    want: { status: 'claimed', owner: 1, chains: [[1, null]], ignored: 2 }
  },
  {
    name: 'two claims at the same stamp: the lower peer id owns',
    events: (b, t) => [b.claim(e1, t, hlc(3000, 4)), b.claim(e0, t, hlc(3000, 4))],
    want: { status: 'claimed', owner: 0, chains: [[0, null]], ignored: 1 }
  },
  {
    name: 'a claim stamped before the task was ready is ignored',
    events: (b, t) => [b.claim(e0, t, 2150)],
    want: { status: 'ready', owner: null, chains: [], ignored: 1 }
  },
  {
    name: 'a claim stamped exactly at readyAt is ignored; one counter tick later owns',
    events: (b, t) => [b.claim(e0, t, hlc(2200, 0)), b.claim(e1, t, hlc(2200, 1))],
    want: { status: 'claimed', owner: 1, chains: [[1, null]], ignored: 1 }
  },
  {
    name: 'an early claim does not stop a later one from owning',
    events: (b, t) => [b.claim(e0, t, 2150), b.claim(e1, t, 5000)],
    want: { status: 'claimed', owner: 1, chains: [[1, null]], ignored: 1 }
  },
  {
    name: 'a renewal chain extends the lease to the last renewal + leaseMs',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const r1 = b.renew(c, c, 3900)
      const r2 = b.renew(c, r1, 4400)
      return [c, r1, r2]
    },
    want: { status: 'claimed', owner: 0, chains: [[0, null]], ignored: 0, lapseMs: 5400, renewals: 2 }
  },
  {
    name: 'a claim before the lapse is ignored',
    events: (b, t) => [b.claim(e0, t, 3000), b.claim(e1, t, 3500), b.claim(e2, t, 4000)],
    want: { status: 'claimed', owner: 0, chains: [[0, null]], ignored: 2, lapseMs: 4000 }
  },
  {
    name: 'a claim stamped after the lapse takes over',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      return [c, b.claim(e1, t, 4001, { prev: c.id })]
    },
    want: {
      status: 'claimed',
      owner: 1,
      chains: [
        [0, 'superseded'],
        [1, null]
      ],
      ignored: 0
    }
  },
  {
    name: 'a takeover is judged against renewals: a claim before the renewed lapse is ignored',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const r = b.renew(c, c, 3900)
      return [c, r, b.claim(e1, t, 4500, { prev: c.id })]
    },
    want: { status: 'claimed', owner: 0, chains: [[0, null]], ignored: 1, lapseMs: 4900 }
  },
  {
    name: 'takeover of a takeover',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const c1 = b.claim(e1, t, 4001, { prev: c.id })
      return [c, c1, b.claim(e2, t, 5002, { prev: c1.id })]
    },
    want: {
      status: 'claimed',
      owner: 2,
      chains: [
        [0, 'superseded'],
        [1, 'superseded'],
        [2, null]
      ],
      ignored: 0
    }
  },
  {
    name: 'maxClaimMs caps the chain: a claim at the cap is ignored',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const r1 = b.renew(c, c, 3900)
      const r2 = b.renew(c, r1, 4800)
      const r3 = b.renew(c, r2, 5400)
      return [c, r1, r2, r3, b.claim(e1, t, 5500)]
    },
    want: { status: 'claimed', owner: 0, chains: [[0, null]], ignored: 1, lapseMs: 3000 + MAX_CLAIM, renewals: 3 }
  },
  {
    name: 'maxClaimMs caps the chain: a claim past the cap takes over although the last renewal was recent',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const r1 = b.renew(c, c, 3900)
      const r2 = b.renew(c, r1, 4800)
      const r3 = b.renew(c, r2, 5400)
      return [c, r1, r2, r3, b.claim(e1, t, 5501, { prev: r3.id })]
    },
    want: {
      status: 'claimed',
      owner: 1,
      chains: [
        [0, 'superseded'],
        [1, null]
      ],
      ignored: 0
    }
  },
  {
    name: 'a release lets the next claim stamped after it own; a claim before the release is ignored',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const rel = b.release(c, 3500)
      return [c, rel, b.claim(e1, t, 3400), b.claim(e2, t, 3600, { prev: rel.id })]
    },
    want: {
      status: 'claimed',
      owner: 2,
      chains: [
        [0, 'released'],
        [2, null]
      ],
      ignored: 1
    }
  },
  {
    name: 'after a release with no later claim, the task is ready again',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      return [c, b.release(c, 3500)]
    },
    want: { status: 'ready', owner: null, chains: [[0, 'released']], ignored: 0 }
  },
  {
    name: 'the releasing executor may claim again after its release',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      const rel = b.release(c, 3500)
      return [c, rel, b.claim(e0, t, 3600, { prev: rel.id })]
    },
    want: {
      status: 'claimed',
      owner: 0,
      chains: [
        [0, 'released'],
        [0, null]
      ],
      ignored: 0
    }
  },
  {
    name: 'a release after the takeover does not count: the chain was superseded first',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      return [c, b.claim(e1, t, 4001), b.release(c, 4100)]
    },
    want: {
      status: 'claimed',
      owner: 1,
      chains: [
        [0, 'superseded'],
        [1, null]
      ],
      ignored: 0
    }
  },
  {
    name: 'a release before the lapse, then a claim after the lapse: released, not superseded',
    events: (b, t) => {
      const c = b.claim(e0, t, 3000)
      return [c, b.release(c, 3900), b.claim(e1, t, 4001)]
    },
    want: {
      status: 'claimed',
      owner: 1,
      chains: [
        [0, 'released'],
        [1, null]
      ],
      ignored: 0
    }
  }
]

function check(tree: PlanTree, t: TaskId, want: Expect): void {
  const task = taskOf(tree, t)
  const ex = (i: number): PeerIdString => cast.executors[i] as PeerIdString
  expect(task.status).toBe(want.status)
  expect(task.owner).toBe(want.owner === null ? null : ex(want.owner))
  expect(task.chains.map(c => [c.owner, c.end?.kind ?? null])).toEqual(want.chains.map(([i, k]) => [ex(i), k]))
  expect(task.ignoredClaims).toBe(want.ignored)
  const last = task.chains[task.chains.length - 1]
  if (want.lapseMs !== undefined) expect(last?.lapseMs).toBe(want.lapseMs)
  if (want.renewals !== undefined) expect(last?.renewals).toBe(want.renewals)
  // The node shows the same status as its task.
  expect(tree.nodes.find(n => n.id === (t as string))?.status).toBe(want.status)
}

describe('claims: ownership, renewal, takeover, release', () => {
  it.each(rows)('$name', ({ events, want }) => {
    const { b, s, t } = leafPlan()
    const evs = events(b, t)
    const tree = expectOrderFree(b, [...s.events, ...evs])
    check(tree, t, want)
    // The other leaf is untouched by claims on this one.
    expect(taskOf(tree, child(s, 1)).status).toBe('ready')
  })

  it('a chain records its last claim or renewal and its lapse', () => {
    const { b, s, t } = leafPlan()
    const c = b.claim(e0, t, 3000)
    const r1 = b.renew(c, c, 3900)
    const chain = taskOf(treeOf(b, [...s.events, c, r1]), t).chains[0]
    expect(chain).toEqual({
      claim: c.id,
      owner: e0,
      claimedAt: c.env.hlc,
      renewals: 1,
      last: r1.id,
      lapseMs: 4900,
      end: null
    })
  })

  it('a late renewal (stamped before the takeover, arriving after it) makes the takeover moot', () => {
    const { b, s, t } = leafPlan()
    const c = b.claim(e0, t, 3000)
    const late = b.renew(c, c, 3990)
    const takeover = b.claim(e1, t, 4001, { prev: c.id })
    const f = new Fold()
    for (const e of [b.goal, ...s.events, c, takeover]) f.add(e, NO_CLOCK)
    // Before the renewal arrives, the takeover owns.
    check(f.tree(b.plan) as PlanTree, t, {
      status: 'claimed',
      owner: 1,
      chains: [
        [0, 'superseded'],
        [1, null]
      ],
      ignored: 0
    })
    f.add(late, NO_CLOCK)
    check(f.tree(b.plan) as PlanTree, t, {
      status: 'claimed',
      owner: 0,
      chains: [[0, null]],
      ignored: 1,
      lapseMs: 4990,
      renewals: 1
    })
    expectOrderFree(b, [...s.events, c, late, takeover])
  })

  // The owner of a task can change as events arrive (here: a late renewal makes a takeover moot),
  // so ownership does not decide whose result counts: the earliest result of any claim stamped
  // after readyAt is accepted. The harm of a moot takeover is one duplicate execution, counted
  // and shown, and the task never reopens when the late renewal arrives.
  it.each([
    {
      name: "the moot taker's result is earlier: it is accepted, the owner's is the duplicate",
      takerAt: 4300,
      ownerAt: 4500,
      accepted: 'taker'
    },
    {
      name: "the owner's result is earlier: it is accepted, the moot taker's is the duplicate",
      takerAt: 4500,
      ownerAt: 4300,
      accepted: 'owner'
    }
  ] as const)(
    'the harm of a moot takeover is one duplicate execution, counted and shown: $name',
    ({ takerAt, ownerAt, accepted }) => {
      const { b, s, t } = leafPlan()
      const c = b.claim(e0, t, 3000)
      const late = b.renew(c, c, 3990)
      const takeover = b.claim(e1, t, 4001, { prev: c.id })
      const fromTaker = b.result(takeover, takerAt, 'from the taker')
      const fromOwner = b.result(c, ownerAt, 'from the owner')
      const [winner, duplicate] = accepted === 'taker' ? [fromTaker, fromOwner] : [fromOwner, fromTaker]
      const shows = (tree: PlanTree): void => {
        const task = taskOf(tree, t)
        expect(task).toMatchObject({
          status: 'done',
          accepted: winner.id,
          duplicates: 1,
          finishedAt: winner.env.hlc,
          finishEvent: winner.id
        })
        expect(task.results.map(r => ({ id: r.id, author: r.author, accepted: r.accepted }))).toEqual([
          { id: winner.id, author: winner.env.author, accepted: true },
          { id: duplicate.id, author: duplicate.env.author, accepted: false }
        ])
        expect(tree.duplicates).toBe(1)
      }
      // Before the late renewal arrives, e1 took over; both results are in.
      const f = new Fold()
      for (const e of [b.goal, ...s.events, c, takeover, fromTaker, fromOwner]) f.add(e, NO_CLOCK)
      const before = f.tree(b.plan) as PlanTree
      expect(taskOf(before, t).chains.map(x => [x.owner, x.end?.kind])).toEqual([
        [e0, 'superseded'],
        [e1, 'result']
      ])
      shows(before)
      // The late renewal makes the takeover moot: e0's chain never lapsed. Same outcome: nothing reopens.
      f.add(late, NO_CLOCK)
      const after = f.tree(b.plan) as PlanTree
      expect(taskOf(after, t).chains.map(x => [x.owner, x.end?.kind])).toEqual([[e0, 'result']])
      expect(taskOf(after, t).ignoredClaims).toBe(1)
      shows(after)
      shows(expectOrderFree(b, [...s.events, c, late, takeover, fromTaker, fromOwner]))
    }
  )

  it('two renewals of one predecessor are equivocation: recorded, and the chain ends before them', () => {
    const { b, s, t } = leafPlan()
    const c = b.claim(e0, t, 3000)
    const r1 = b.renew(c, c, 3500)
    const r2 = b.renew(c, c, 3600)
    const tree = expectOrderFree(b, [...s.events, c, r1, r2])
    expect(tree.equivocations).toEqual([{ author: e0, slot: `renewal:${c.id}`, events: [r1.id, r2.id].sort() }])
    const task = taskOf(tree, t)
    expect(task.chains[0]).toMatchObject({ renewals: 0, last: c.id, lapseMs: 4000 })
    // So a claim after the claim's own lapse takes over.
    const taken = taskOf(treeOf(b, [...s.events, c, r1, r2, b.claim(e1, t, 4001)]), t)
    expect(taken.owner).toBe(e1)
  })

  it('claims on a task that is still blocked own nothing, and are counted as ignored', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { leaseMs: LEASE })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: cast.scorers.slice(0, 2),
      at: 2000,
      dependsOn: { 1: [0] }
    })
    const tree = treeOf(b, [...s.events, b.claim(e0, leafTask(child(s, 1)), 3000)])
    expect(taskOf(tree, child(s, 1))).toMatchObject({ status: 'blocked', owner: null, chains: [], ignoredClaims: 1 })
    expect(tree.ignoredClaims).toBe(1)
  })
})
