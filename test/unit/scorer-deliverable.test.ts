/**
 * Protocol 5's review policy of an honest scorer (roles/scorer.ts `acceptOnce`, ADR-0053): it reviews only the
 * result the fold holds for a task, accepts at most one result of a task (moving on from one it accepted only when
 * no quorum accepted that one, the fold no longer holds it, and REVIEW_SWITCH_MS have passed), and acknowledges a
 * deliverable nothing asked to have reviewed without a model call.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { createScorer, decideScorer, REVIEW_SWITCH_MS } from '../../roles/scorer.js'
import { DEFAULT_TRUST } from '../../src/core/events.js'
import { rollupId } from '../../src/core/derive.js'
import { claimRank } from '../../src/core/trust-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { expectOrderFree, leafTask, makeCast, split } from '../helpers/fold-fixtures.js'
import type { RoleContext } from '../../roles/driver.js'
import type { ReviewIntent } from '../../roles/scorer.js'
import type { EventId, PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { Cast } from '../helpers/fold-fixtures.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

/**
 * A version-5 plan whose root's roll-up got two results: `early` by the executor ranked second, which one scorer
 * accepted (no quorum), then `held` by the one ranked first, whose claim, stamped earlier within the window,
 * arrived late and holds the task.
 */
function twoDeliverables(): {
  b: PlanBuilder
  events: PlanEvent[]
  early: PlanEvent<'result-reported'>
  held: PlanEvent<'result-reported'>
  accepted: PlanEvent<'result-reviewed'>
} {
  const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { trust: DEFAULT_TRUST })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0],
    titles: ['a', 'b'],
    voters: cast.scorers.slice(0, 2),
    at: 2000
  })
  const x = cast.executors[2]
  const leaves = s.children.map(leafTask).flatMap((t, i) => {
    const c = b.claim(x, t, 2300 + i, { evidence: s.events.map(e => e.id) })
    return [c, b.result(c, 2400 + i)]
  })
  const roll = rollupId(b.root)
  const [first, second] = [cast.executors[0], cast.executors[1]].sort((p, q) =>
    claimRank(roll, p) < claimRank(roll, q) ? -1 : 1
  ) as [PeerIdString, PeerIdString]
  const evidence = [...s.events, ...leaves].map(e => e.id)
  const c2 = b.claim(second, roll, 2600, { evidence })
  const early = b.result(c2, 2700, 'the trip, by the second')
  const accepted = b.review(cast.scorers[0], early, 'accept', 2800)
  const c1 = b.claim(first, roll, 2650, { evidence })
  const held = b.result(c1, 2900, 'the trip, by the first')
  return { b, events: [...s.events, ...leaves, c2, early, accepted, c1, held], early, held, accepted }
}

function reviewsIn(events: readonly PlanEvent[]): (id: EventId) => Array<PlanEvent<'result-reviewed'>> {
  return id =>
    events
      .filter((e): e is PlanEvent<'result-reviewed'> => e.env.type === 'result-reviewed')
      .filter(e => e.env.body.result === id)
}

function intents(tree: PlanTree, me: PeerIdString, now: number, events: readonly PlanEvent[]): ReviewIntent[] {
  const byId = new Map(events.map(e => [e.id, e]))
  return decideScorer(tree, me, now, [], { get: id => byId.get(id) }, reviewsIn(events)).filter(
    (i): i is ReviewIntent => i.kind === 'review'
  )
}

describe('a scorer of a version-5 plan', () => {
  it('reviews only the held result, and moves on from its own accept only after REVIEW_SWITCH_MS', () => {
    const { events, early, held, accepted } = twoDeliverables()
    const tree = expectOrderFree(twoDeliverables().b, events)
    const roll = tree.tasks.find(t => t.id === held.env.body.task)
    expect(roll?.status).toBe('in-review')
    expect(roll?.results.map(r => [r.id, r.review, r.reviewedFor])).toEqual(
      expect.arrayContaining([
        [early.id, 'pending', 'deliverable'],
        [held.id, 'pending', 'deliverable']
      ])
    )
    // Another scorer: the held one only, though the other is pending too.
    expect(intents(tree, cast.scorers[1], 3_000, events).map(i => i.result.id)).toEqual([held.id])
    // The scorer that accepted the other waits, then reviews the held one, saying what it accepted before.
    const soon = accepted.env.hlc.ms + REVIEW_SWITCH_MS - 1
    expect(intents(tree, cast.scorers[0], soon, events)).toEqual([])
    const later = intents(tree, cast.scorers[0], soon + 1, events)
    expect(later.map(i => [i.result.id, i.acceptedOthers])).toEqual([[held.id, [accepted.id]]])
  })

  it('never accepts a second result of a task once a quorum accepted one', () => {
    const { b, events, early } = twoDeliverables()
    const quorum = [...events, b.review(cast.scorers[1], early, 'accept', 2850)]
    const tree = expectOrderFree(b, quorum)
    // The accepted deliverable is final: the claim stamped earlier, ranked first, does not hold the task.
    expect(tree.status).toBe('completed')
    expect(tree.deliverable?.result).toBe(early.id)
    for (const s of cast.scorers.slice(0, 3)) expect(intents(tree, s, 100_000, quorum)).toEqual([])
  })

  it('acknowledges the deliverable without a model call, and the plan completes', async () => {
    const { b, events, held } = twoDeliverables()
    let folded: PlanEvent[] = events
    const tree = (): PlanTree => expectOrderFree(b, folded)
    const me = cast.scorers[1]
    const [intent] = intents(tree(), me, 3_000, folded)
    expect(intent?.result.id).toBe(held.id)
    const provider = {
      review: () => Promise.reject(new Error('no model call for an acknowledged deliverable')),
      downgrade() {
        return this
      }
    }
    const view = {
      me,
      roster: () => [],
      event: (id: EventId) => folded.find(e => e.id === id),
      reviewsOf: (_plan: string, id: EventId) => reviewsIn(folded)(id),
      publish: async (
        type: string,
        _plan: string,
        _deps: EventId[],
        body: PlanEvent<'result-reviewed'>['env']['body']
      ) => {
        expect(type).toBe('result-reviewed')
        const e = b.review(me, held, body.verdict, 3_000, body.committee, body.notes)
        expect(body.usage).toEqual({ inputTokens: 0, outputTokens: 0 })
        folded = [...folded, e]
        return { event: e }
      }
    }
    const handler = createScorer({ view, provider, say: () => {} } as unknown as RoleContext)
    await handler.act(intent as never, tree())
    const ack = folded.at(-1) as PlanEvent<'result-reviewed'>
    expect(ack.env.body).toMatchObject({ verdict: 'accept', result: held.id })
    expect(ack.env.body.notes).toMatch(/Acknowledged as the plan’s deliverable/)
    // With a second member's acceptance, the quorum, the plan completes on the held result.
    folded = [...folded, b.review(cast.scorers[2], held, 'accept', 3_100)]
    expect(tree().status).toBe('completed')
    expect(tree().deliverable?.result).toBe(held.id)
  })
})
