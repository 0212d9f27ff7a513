/**
 * Fold rules, ingest: what EventSet / Fold.add do with each event before it
 * reaches the tree. Duplicates, parking on missing deps and on stamps from the
 * future, the dep rules (validity depends only on the event and its deps) and
 * what builds on a rejected event.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { EventSet } from '../../src/core/event-set.js'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { MAX_CLOCK_AHEAD_MS } from '../../src/core/limits.js'
import { PlanBuilder, makeEvent, subgoals } from '../helpers/plan-builder.js'
import {
  child,
  expectOrderFree,
  forge,
  hlc,
  leafTask,
  makeCast,
  nodeOf,
  rootOf,
  split,
  treeOf
} from '../helpers/fold-fixtures.js'
import { shuffle } from '../helpers/random.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { AddOutcome } from '../../src/core/event-set.js'
import type { DepRejectReason } from '../../src/core/dep-rules.js'
import type { PlanEvent, TaskId } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const committee = (): Cast['scorers'][number][] => cast.scorers.slice(0, 3)

function addAll(f: Fold, events: readonly PlanEvent[], now = NO_CLOCK): AddOutcome[] {
  return events.map(e => f.add(e, now))
}

function rejectedReason(o: AddOutcome): string | null {
  return o.status === 'rejected' ? o.reason : null
}

describe('ingest: duplicates', () => {
  it('a folded event added again is a duplicate and changes nothing', () => {
    const b = new PlanBuilder(cast.author, committee())
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
    const f = new Fold()
    expect(f.add(b.goal, NO_CLOCK).status).toBe('folded')
    expect(f.add(p, NO_CLOCK).status).toBe('folded')
    const before = f.treeHash(b.plan)
    expect(f.add(p, NO_CLOCK)).toEqual({ status: 'duplicate' })
    expect(f.add(b.goal, NO_CLOCK)).toEqual({ status: 'duplicate' })
    expect(f.events.size).toBe(2)
    expect(f.treeHash(b.plan)).toBe(before)
    expect(f.tree(b.plan)?.events).toBe(2)
  })

  it('a parked event added again is a duplicate, and still waits once', () => {
    const b = new PlanBuilder(cast.author, committee())
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
    const f = new Fold()
    expect(f.add(p, NO_CLOCK).status).toBe('parked')
    expect(f.add(p, NO_CLOCK)).toEqual({ status: 'duplicate' })
    expect(f.events.parkedCount).toBe(1)
    expect(f.events.has(p.id)).toBe(true)
    expect(f.events.isFolded(p.id)).toBe(false)
    const out = f.add(b.goal, NO_CLOCK)
    expect(out.status === 'folded' ? out.folded.map(e => e.id) : []).toEqual([b.goal.id, p.id])
    expect(f.events.parkedCount).toBe(0)
  })
})

describe('ingest: missing deps park, and fold when the deps arrive', () => {
  it('an event whose deps are missing is parked with the missing ids, not rejected', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: committee().slice(0, 2),
      at: 2000
    })
    const f = new Fold()
    const ballot = s.ballots[0] as PlanEvent
    const out = f.add(ballot, NO_CLOCK)
    expect(out).toEqual({ status: 'parked', why: 'missing-deps', missing: [...ballot.env.deps] })
    expect(f.events.parkedEvents()).toEqual([{ id: ballot.id, why: 'missing-deps', since: NO_CLOCK, missing: 2 }])
    expect(f.plans()).toEqual([])
    expect(f.tree(b.plan)).toBeUndefined()
  })

  it('a chain parked back to front folds transitively when its first event arrives', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: committee().slice(0, 2),
      at: 2000
    })
    const t = leafTask(child(s, 0))
    const c = b.claim(cast.executors[0], t, 3000, { evidence: s.ballots.map(x => x.id) })
    const r = b.result(c, 3500)
    const f = new Fold()
    const later = [r, c, ...[...s.events].reverse()]
    for (const e of later) expect(f.add(e, NO_CLOCK).status).toBe('parked')
    expect(f.events.parkedCount).toBe(later.length)
    const out = f.add(b.goal, NO_CLOCK)
    expect(out.status).toBe('folded')
    const folded = out.status === 'folded' ? out.folded.map(e => e.id) : []
    expect(new Set(folded)).toEqual(new Set([b.goal.id, ...later.map(e => e.id)]))
    // Every event is folded after all of its deps.
    for (const [i, id] of folded.entries()) {
      const e = [b.goal, ...later].find(x => x.id === id) as PlanEvent
      for (const d of e.env.deps) expect(folded.indexOf(d)).toBeLessThan(i)
    }
    expect(f.events.parkedCount).toBe(0)
    expect(f.tree(b.plan)?.tasks.find(x => x.id === t)?.status).toBe('done')
  })

  it('every arrival order of goal, proposal and two ballots folds to the same tree', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: committee().slice(0, 2),
      at: 2000
    })
    const all = [b.goal, ...s.events]
    const perms = (xs: PlanEvent[]): PlanEvent[][] =>
      xs.length <= 1 ? [xs] : xs.flatMap((x, i) => perms([...xs.slice(0, i), ...xs.slice(i + 1)]).map(p => [x, ...p]))
    const hashes = new Set<string | undefined>()
    for (const order of perms(all)) {
      const f = new Fold()
      addAll(f, order)
      expect(f.events.parkedCount).toBe(0)
      hashes.add(f.treeHash(b.plan))
    }
    expect(hashes.size).toBe(1)
    expect(rootOf(treeOf(b, s.events)).kind).toBe('composite')
  })

  it('events split between two deliveries (gossip then sync) give the same tree as one delivery', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b', 'c'],
      voters: committee().slice(0, 2),
      at: 2000
    })
    const c = b.claim(cast.executors[0], leafTask(child(s, 1)), 3000)
    expectOrderFree(b, [...s.events, c], 6)
  })
})

describe('ingest: dep rules reject provably bad events', () => {
  interface Row {
    name: string
    reason: DepRejectReason
    make: (b: PlanBuilder) => { setup: PlanEvent[]; bad: PlanEvent }
    review?: boolean
  }
  const leafPlan = (b: PlanBuilder): { setup: PlanEvent[]; task: TaskId; claim: PlanEvent<'task-claimed'> } => {
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: committee().slice(0, 2),
      at: 2000
    })
    const task = leafTask(child(s, 0))
    const claim = b.claim(cast.executors[0], task, 3000)
    return { setup: [...s.events, claim], task, claim }
  }
  const rows: Row[] = [
    {
      name: 'stamped at the same hlc as a dep',
      reason: 'stamp-not-after-dep',
      make: b => ({ setup: [], bad: b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), b.goal.env.hlc) })
    },
    {
      name: 'stamped before a dep',
      reason: 'stamp-not-after-dep',
      make: b => ({ setup: [], bad: b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 500) })
    },
    {
      name: 'a result stamped before its claim',
      reason: 'stamp-not-after-dep',
      make: b => {
        const l = leafPlan(b)
        return { setup: l.setup, bad: b.result(l.claim, 2999) }
      }
    },
    {
      name: 'an event of the plan that does not cite its goal',
      reason: 'missing-goal-dep',
      make: b => {
        const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
        // A ballot that cites the proposal but not the goal.
        const bad = makeEvent({
          type: 'ballot-cast',
          plan: b.plan,
          author: cast.scorers[0],
          hlc: hlc(2100),
          deps: [p.id],
          body: {
            node: b.root,
            attempt: 1,
            committee: b.goal.id,
            scores: [],
            choice: p.id,
            notes: '',
            usage: { inputTokens: 0, outputTokens: 0 }
          }
        })
        return { setup: [p], bad }
      }
    },
    {
      name: 'a dep from another plan',
      reason: 'dep-other-plan',
      make: b => {
        const other = new PlanBuilder(cast.author, committee(), {}, 1000, 'another goal')
        const p = other.propose(cast.decomposers[0], other.root, 1, subgoals(['x', 'y']), 1500)
        return {
          setup: [other.goal, p],
          bad: forge(b, 'split-proposed', cast.decomposers[1], 2000, [p.id], {
            node: b.root,
            attempt: 1,
            subgoals: subgoals(['a', 'b']),
            rationale: '',
            usage: { inputTokens: 0, outputTokens: 0 }
          })
        }
      }
    },
    {
      name: "another plan's goal as a dep",
      reason: 'dep-other-plan',
      make: b => {
        const other = new PlanBuilder(cast.author, committee(), {}, 900, 'another goal')
        return {
          setup: [other.goal],
          bad: forge(b, 'goal-cancelled', cast.author, 2000, [other.goal.id], { reason: 'x' })
        }
      }
    },
    ...(['committee-amended', 'budget-raised', 'task-retried', 'goal-cancelled'] as const).map((type): Row => ({
      name: `${type} by someone other than the goal's author`,
      reason: 'not-goal-author',
      make: b => {
        const bodies = {
          'committee-amended': { committee: committee(), quorum: 2 },
          'budget-raised': { budgetTokens: 9_000_000 },
          'task-retried': { task: b.root as string as TaskId },
          'goal-cancelled': { reason: 'mine now' }
        }
        return { setup: [], bad: forge(b, type, cast.scorers[0], 2000, [], bodies[type]) }
      }
    })),
    {
      name: 'a ballot by a scorer outside the committee',
      reason: 'not-in-committee',
      make: b => {
        const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
        return { setup: [p], bad: b.ballot(cast.outsiders[0], { node: b.root, attempt: 1 }, p, 2100) }
      }
    },
    {
      name: 'a ballot under the goal by a member only of a later amendment',
      reason: 'not-in-committee',
      make: b => {
        const amend = b.amend([cast.scorers[0], cast.scorers[3]], 1500)
        const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
        return { setup: [amend, p], bad: b.ballot(cast.scorers[3], { node: b.root, attempt: 1 }, p, 2100) }
      }
    },
    {
      name: 'a ballot that scores a proposal of another node',
      reason: 'bad-reference',
      make: b => {
        const s = split(b, {
          node: b.root,
          by: cast.decomposers[0],
          titles: ['a', 'b'],
          voters: committee().slice(0, 2),
          at: 2000
        })
        const p = b.propose(cast.decomposers[0], child(s, 0), 1, subgoals(['x', 'y']), 2500)
        return { setup: [...s.events, p], bad: b.ballot(cast.scorers[0], { node: child(s, 1), attempt: 1 }, p, 2600) }
      }
    },
    {
      name: 'a ballot that scores a proposal of another attempt',
      reason: 'bad-reference',
      make: b => {
        const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
        return { setup: [p], bad: b.ballot(cast.scorers[0], { node: b.root, attempt: 2 }, p, 2100) }
      }
    },
    {
      name: 'a proposal for an attempt beyond maxAttempts',
      reason: 'params-violated',
      make: b => ({
        setup: [],
        bad: b.propose(cast.decomposers[0], b.root, b.params.maxAttempts + 1, subgoals(['a', 'b']), 2000)
      })
    },
    {
      name: 'a proposal with more subgoals than maxChildren',
      reason: 'params-violated',
      make: b => ({
        setup: [],
        bad: b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']), 2000)
      })
    },
    {
      name: 'a review in a plan that does not ask for review',
      reason: 'params-violated',
      make: b => {
        const l = leafPlan(b)
        const r = b.result(l.claim, 3500)
        return { setup: [...l.setup, r], bad: b.review(cast.scorers[0], r, 'accept', 3600) }
      }
    },
    {
      name: 'a renewal stamped more than leaseMs after its claim',
      reason: 'late-renewal',
      make: b => {
        const l = leafPlan(b)
        return { setup: l.setup, bad: b.renew(l.claim, l.claim, 3000 + b.params.leaseMs + 1) }
      }
    },
    {
      name: 'a renewal stamped more than leaseMs after the previous renewal',
      reason: 'late-renewal',
      make: b => {
        const l = leafPlan(b)
        const r1 = b.renew(l.claim, l.claim, 3900)
        return { setup: [...l.setup, r1], bad: b.renew(l.claim, r1, 3900 + b.params.leaseMs + 1) }
      }
    },
    {
      name: 'a renewal stamped more than maxClaimMs after its claim',
      reason: 'claim-too-long',
      make: b => {
        const l = leafPlan(b)
        // leaseMs 1000, maxClaimMs 2500: renewals at +900, +1800, +2400 are fine, +2600 is too long.
        const r1 = b.renew(l.claim, l.claim, 3900)
        const r2 = b.renew(l.claim, r1, 4800)
        const r3 = b.renew(l.claim, r2, 5400)
        return { setup: [...l.setup, r1, r2, r3], bad: b.renew(l.claim, r3, 5600) }
      }
    },
    {
      name: 'a renewal whose prev is a renewal of another claim',
      reason: 'bad-reference',
      make: b => {
        const l = leafPlan(b)
        const c2 = b.claim(cast.executors[0], l.task, 3100)
        const r = b.renew(c2, c2, 3200)
        return { setup: [...l.setup, c2, r], bad: b.renew(l.claim, r, 3300) }
      }
    },
    ...(['result', 'release', 'fail', 'renew'] as const).map((kind): Row => ({
      name: `a ${kind} by someone other than the claimant`,
      reason: 'not-claim-owner',
      make: b => {
        const l = leafPlan(b)
        const thief = cast.executors[1]
        const body = { task: l.task, claim: l.claim.id }
        const usage = { inputTokens: 1, outputTokens: 1 }
        const bad =
          kind === 'result'
            ? forge(b, 'result-reported', thief, 3500, [l.claim.id], {
                ...body,
                output: 'mine',
                usage,
                model: 'm',
                source: 'llm'
              })
            : kind === 'release'
              ? forge(b, 'task-released', thief, 3500, [l.claim.id], { ...body, reason: 'r' })
              : kind === 'fail'
                ? forge(b, 'task-failed', thief, 3500, [l.claim.id], { ...body, error: 'e', usage })
                : forge(b, 'claim-renewed', thief, 3500, [l.claim.id], { ...body, prev: l.claim.id })
        return { setup: l.setup, bad }
      }
    })),
    {
      name: 'a review by a scorer outside the committee',
      reason: 'not-in-committee',
      review: true,
      make: b => {
        const l = leafPlan(b)
        const r = b.result(l.claim, 3500)
        return { setup: [...l.setup, r], bad: b.review(cast.outsiders[0], r, 'accept', 3600) }
      }
    },
    {
      name: 'a ballot naming a committee event that is not among its deps',
      reason: 'bad-reference',
      make: b => {
        const amend = b.amend(committee(), 1500)
        const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
        const bad = forge(b, 'ballot-cast', cast.scorers[0], 2100, [p.id], {
          node: b.root,
          attempt: 1,
          committee: amend.id,
          scores: [{ proposal: p.id, score: 50, notes: '' }],
          choice: p.id,
          notes: '',
          usage: { inputTokens: 0, outputTokens: 0 }
        })
        return { setup: [amend, p], bad }
      }
    },
    {
      name: 'a takeover claim whose prev is not among its deps',
      reason: 'bad-reference',
      make: b => {
        const l = leafPlan(b)
        return {
          setup: l.setup,
          bad: forge(b, 'task-claimed', cast.executors[1], 4001, [], { task: l.task, prev: l.claim.id })
        }
      }
    },
    {
      name: 'a result that names another task than its claim',
      reason: 'bad-reference',
      make: b => {
        const l = leafPlan(b)
        return {
          setup: l.setup,
          bad: forge(b, 'result-reported', cast.executors[0], 3500, [l.claim.id], {
            task: 'f'.repeat(64) as TaskId,
            claim: l.claim.id,
            output: 'x',
            usage: { inputTokens: 0, outputTokens: 0 },
            model: 'm',
            source: 'llm'
          })
        }
      }
    }
  ]

  it.each(rows)('$name -> rejected $reason, and the tree is as if it never came', ({ reason, make, review }) => {
    const b = new PlanBuilder(cast.author, committee(), { leaseMs: 1000, maxClaimMs: 2500, review: review ?? false })
    const { setup, bad } = make(b)
    const f = new Fold()
    for (const e of [b.goal, ...setup]) expect(f.add(e, NO_CLOCK).status).toBe('folded')
    const before = f.treeHash(b.plan)
    const out = f.add(bad, NO_CLOCK)
    expect(rejectedReason(out)).toBe(reason)
    expect(out.status === 'rejected' ? out.detail.length : 0).toBeGreaterThan(0)
    expect(f.events.has(bad.id)).toBe(false)
    expect(f.treeHash(b.plan)).toBe(before)
    // Valid once, valid forever, invalid likewise: delivered again, it is refused at once.
    expect(f.add(bad, NO_CLOCK).status).toBe('rejected')
  })

  it('boundary: a renewal stamped exactly leaseMs after its claim is valid', () => {
    const b = new PlanBuilder(cast.author, committee(), { leaseMs: 1000, maxClaimMs: 2500 })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: committee().slice(0, 2),
      at: 2000
    })
    const claim = b.claim(cast.executors[0], leafTask(child(s, 0)), 3000)
    const f = new Fold()
    addAll(f, [b.goal, ...s.events, claim])
    expect(f.add(b.renew(claim, claim, 4000), NO_CLOCK).status).toBe('folded')
  })

  it('boundary: an event stamped one counter tick after its dep, in the same millisecond, is valid', () => {
    const b = new PlanBuilder(cast.author, committee())
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), hlc(b.goal.env.hlc.ms, 1))
    const f = new Fold()
    addAll(f, [b.goal])
    expect(f.add(p, NO_CLOCK).status).toBe('folded')
  })

  it('a valid amendment, raise, retry and cancel by the goal author are folded', () => {
    const b = new PlanBuilder(cast.author, committee())
    const f = new Fold()
    addAll(f, [b.goal])
    for (const e of [
      b.amend(committee(), 2000),
      b.raiseBudget(5_000_000, 2100),
      b.retry(b.root as string as TaskId, 2200),
      b.cancel(2300)
    ]) {
      expect(f.add(e, NO_CLOCK).status).toBe('folded')
    }
  })

  it('a ballot whose choice (uncited) is a proposal of another node is folded but never counts', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b'],
      voters: committee().slice(0, 2),
      at: 2000,
      leaf: false
    })
    const a = child(s, 0)
    const pA = b.propose(cast.decomposers[0], a, 1, subgoals(['x', 'y']), 2500)
    const pB = b.propose(cast.decomposers[1], child(s, 1), 1, subgoals(['u', 'v']), 2500)
    // Two committee members choose pB while voting on node a: a quorum, for a proposal that is not node a's.
    const stray = committee()
      .slice(0, 2)
      .map((m, i) =>
        forge(b, 'ballot-cast', m, 2600 + i, [b.goal.id, pA.id], {
          node: a,
          attempt: 1,
          committee: b.goal.id,
          scores: [{ proposal: pA.id, score: 10, notes: '' }],
          choice: pB.id,
          notes: '',
          usage: { inputTokens: 0, outputTokens: 0 }
        })
      )
    const tree = treeOf(b, [...s.events, pA, pB, ...stray])
    expect(nodeOf(tree, a).kind).toBe('decomposing')
    expect(nodeOf(tree, a).accepted).toBeNull()
    expect(nodeOf(tree, child(s, 1)).kind).toBe('decomposing')
  })
})

describe('ingest: what builds on a rejected event is rejected', () => {
  it('an event citing a rejected event is rejected builds-on-rejected, transitively', () => {
    const b = new PlanBuilder(cast.author, committee())
    const bad = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 500)
    const vote = b.ballot(cast.scorers[0], { node: b.root, attempt: 1 }, bad, 2100)
    const f = new Fold()
    addAll(f, [b.goal])
    expect(rejectedReason(f.add(bad, NO_CLOCK))).toBe('stamp-not-after-dep')
    expect(rejectedReason(f.add(vote, NO_CLOCK))).toBe('builds-on-rejected')
    // And what builds on that vote.
    const next = forge(b, 'goal-cancelled', cast.author, 2200, [vote.id], { reason: 'x' })
    expect(rejectedReason(f.add(next, NO_CLOCK))).toBe('builds-on-rejected')
    expect(f.events.parkedCount).toBe(0)
    expect(f.events.size).toBe(1)
  })

  it('an event parked on a dep that is rejected is folded neither then nor later', () => {
    const b = new PlanBuilder(cast.author, committee())
    const bad = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 500)
    const vote = b.ballot(cast.scorers[0], { node: b.root, attempt: 1 }, bad, 2100)
    const f = new Fold()
    addAll(f, [b.goal])
    expect(f.add(vote, NO_CLOCK).status).toBe('parked')
    expect(rejectedReason(f.add(bad, NO_CLOCK))).toBe('stamp-not-after-dep')
    expect(f.events.isFolded(vote.id)).toBe(false)
    expect(f.events.size).toBe(1)
  })

  // Had the dep arrived first, the same event would have been rejected 'builds-on-rejected'
  // at once; so when it arrives second, the waiter must not linger in `parked` (counted by
  // parkedCount, reported by has() to sync, shown by the observer) until the TTL.
  it('an event parked on a dep that is then rejected leaves the parked set at once, as if the dep had come first', () => {
    const b = new PlanBuilder(cast.author, committee())
    const bad = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 500)
    const vote = b.ballot(cast.scorers[0], { node: b.root, attempt: 1 }, bad, 2100)
    const f = new Fold()
    addAll(f, [b.goal])
    f.add(vote, NO_CLOCK)
    f.add(bad, NO_CLOCK)
    expect(f.events.parkedCount).toBe(0)
    expect(f.events.has(vote.id)).toBe(false)
  })
})

describe('ingest: stamps from the future wait for the clock', () => {
  it('an event stamped beyond the clock-ahead allowance parks, and tick(now) folds it once the clock catches up', () => {
    const b = new PlanBuilder(cast.author, committee(), {}, 100_000)
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 200_000)
    const ballot = b.ballot(cast.scorers[0], { node: b.root, attempt: 1 }, p, 200_100)
    const f = new Fold()
    expect(f.add(b.goal, 100_000).status).toBe('folded')
    const now = 200_000 - MAX_CLOCK_AHEAD_MS - 1
    expect(f.add(p, now)).toEqual({ status: 'parked', why: 'clock-ahead', missing: [] })
    // A later event waiting on it waits for the dep, then for the clock.
    expect(f.add(ballot, now)).toMatchObject({ status: 'parked', why: 'missing-deps', missing: [p.id] })
    expect(f.events.tick(now).folded).toEqual([])
    expect(f.events.isFolded(p.id)).toBe(false)
    const later = f.events.tick(200_100 - MAX_CLOCK_AHEAD_MS)
    expect(later.folded.map(e => e.id)).toEqual([p.id, ballot.id])
    expect(later.expired).toEqual([])
    expect(f.events.parkedCount).toBe(0)
    expect(rootOf(f.tree(b.plan) as NonNullable<ReturnType<Fold['tree']>>).attempts[0]?.proposals[0]?.votes).toBe(1)
  })

  it('an event stamped exactly at the allowance is folded at once', () => {
    const b = new PlanBuilder(cast.author, committee(), {}, 100_000)
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 200_000)
    const f = new Fold()
    f.add(b.goal, 100_000)
    expect(f.add(p, 200_000 - MAX_CLOCK_AHEAD_MS).status).toBe('folded')
  })

  it('an event whose missing dep arrives while its own stamp is still ahead moves from missing-deps to clock-ahead', () => {
    const b = new PlanBuilder(cast.author, committee(), {}, 100_000)
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 200_000)
    const f = new Fold()
    expect(f.add(p, 0).status).toBe('parked')
    const out = f.add(b.goal, 150_000)
    expect(out.status === 'folded' ? out.folded.map(e => e.id) : []).toEqual([b.goal.id])
    expect(f.events.parkedEvents().map(x => ({ id: x.id, why: x.why }))).toEqual([{ id: p.id, why: 'clock-ahead' }])
    expect(f.events.tick(200_000).folded.map(e => e.id)).toEqual([p.id])
  })

  it('the allowance is configurable', () => {
    const b = new PlanBuilder(cast.author, committee(), {}, 1_000)
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 1_500)
    const f = new Fold({ maxClockAheadMs: 100 })
    f.add(b.goal, 1_000)
    expect(f.add(p, 1_399).status).toBe('parked')
    expect(f.events.tick(1_400).folded.map(e => e.id)).toEqual([p.id])
  })
})

describe('ingest: parked events are bounded and expire', () => {
  it('a parked event older than the TTL is dropped by tick, and folds if delivered again with its deps', () => {
    const b = new PlanBuilder(cast.author, committee())
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2000)
    const set = new EventSet({ parkTtlMs: 1000 })
    expect(set.add(p, 5_000).status).toBe('parked')
    expect(set.tick(6_000)).toEqual({ folded: [], expired: [] })
    expect(set.has(p.id)).toBe(true)
    expect(set.tick(6_001)).toEqual({ folded: [], expired: [p.id] })
    expect(set.has(p.id)).toBe(false)
    expect(set.parkedCount).toBe(0)
    // The goal arrives after the expiry: the proposal no longer waits for it.
    expect(set.add(b.goal, 7_000)).toEqual({ status: 'folded', folded: [b.goal] })
    expect(set.add(p, 7_000)).toEqual({ status: 'folded', folded: [p] })
  })

  it('beyond maxParked the oldest parked event is dropped', () => {
    const b = new PlanBuilder(cast.author, committee())
    const ps = [0, 1, 2].map(i =>
      b.propose(cast.decomposers[i] as Cast['decomposers'][number], b.root, 1, subgoals(['a', 'b']), 2000 + i)
    )
    const set = new EventSet({ maxParked: 2 })
    for (const p of ps) expect(set.add(p, 0).status).toBe('parked')
    expect(set.parkedCount).toBe(2)
    expect(set.parkedEvents().map(x => x.id)).toEqual([ps[1]?.id, ps[2]?.id])
    const out = set.add(b.goal, 0)
    expect(out.status === 'folded' ? out.folded.length : 0).toBe(3)
    expect(set.isFolded((ps[0] as PlanEvent).id)).toBe(false)
  })

  it('folding in a random order with the goal last still folds everything once the goal arrives', () => {
    const b = new PlanBuilder(cast.author, committee())
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0],
      titles: ['a', 'b', 'c'],
      voters: committee(),
      at: 2000
    })
    const cs = s.children.map((c, i) =>
      b.claim(cast.executors[i % 3] as Cast['executors'][number], leafTask(c), 3000 + i)
    )
    const rs = cs.map((c, i) => b.result(c, 3500 + i))
    const events = shuffle([...s.events, ...cs, ...rs], 42)
    const f = new Fold()
    for (const e of events) expect(f.add(e, NO_CLOCK).status).toBe('parked')
    const out = f.add(b.goal, NO_CLOCK)
    expect(out.status === 'folded' ? out.folded.length : 0).toBe(events.length + 1)
    expect(f.tree(b.plan)?.tasks.filter(t => t.status === 'done').length).toBe(3)
  })
})
