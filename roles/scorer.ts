import { hashParts } from '../src/core/hash.js'
import { view } from '../src/core/view.js'
import { isIdle, nearBudget, nodeMap, pathOf } from './plan-context.js'
import { reviewsResults } from '../src/core/events.js'
import { ZERO_USAGE } from '../src/llm/types.js'
import type { EventId, PeerIdString, PlanEvent, PlanId } from '../src/core/events.js'
import type { PlanTree, TreeNode, ResultView, TaskView } from '../src/core/tree.js'
import type { RoleContext, RoleHandler } from './driver.js'
import type { EventLookup } from './plan-context.js'

/** How long a scorer waits after the first proposal for proposals from the other live decomposers. */
export const BALLOT_WINDOW_MS = 1_500

/**
 * The most proposals a ballot considers (and cites: its deps are these and
 * the committee event, so well within MAX_DEPS). More proposals in one
 * attempt (a member with many keys stuffing it) would push the ballot past
 * MAX_DEPS (64), where it can no longer be signed, and the prompt with them:
 * the scorer takes the first ones by {@link proposalRank} and scores only those (ADR-0046).
 */
export const MAX_BALLOT_PROPOSALS = 16

/**
 * Protocol 5: how long after accepting a result of a task a scorer waits before it may accept another result of
 * that task (one its fold now holds in place of the first, which no quorum accepted). Long enough for the reviews
 * already under way to arrive, so that two results of one task are not both accepted (ADR-0053).
 */
export const REVIEW_SWITCH_MS = 10_000

/** A scorer's acceptance of a deliverable that nothing asked to have reviewed (fold.md 11.9): no model call. */
const ACKNOWLEDGED = Object.freeze({
  verdict: 'accept' as const,
  notes: 'Acknowledged as the plan’s deliverable (version 5); not reviewed by a model, as the plan did not ask for it.',
  usage: ZERO_USAGE
})

/**
 * A proposal's rank in its attempt: the hash of the node, the attempt and the
 * proposal's id. The same for every scorer (so a committee considers the
 * same proposals and can agree), and not chosen by anyone: a proposal's id is
 * the hash of its signed envelope, fixed before the attempt's other proposals
 * are known.
 */
export function proposalRank(node: string, attempt: number, proposal: string): string {
  return hashParts('ballot-rank', node, String(attempt), proposal)
}

/** The proposals a ballot considers: all of them when few, else the MAX_BALLOT_PROPOSALS first by proposalRank. */
export function consideredProposals<P extends { readonly id: string }>(
  node: string,
  attempt: number,
  proposals: readonly P[]
): P[] {
  if (proposals.length <= MAX_BALLOT_PROPOSALS) return [...proposals]
  return proposals
    .map(p => ({ p, rank: proposalRank(node, attempt, p.id) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .slice(0, MAX_BALLOT_PROPOSALS)
    .map(x => x.p)
}

export interface BallotIntent {
  readonly kind: 'ballot'
  readonly key: string
  readonly plan: PlanId
  readonly node: TreeNode
  readonly attempt: number
  readonly committee: EventId
  readonly proposals: ReadonlyArray<PlanEvent<'split-proposed'>>
  readonly path: string[]
}

export interface ReviewIntent {
  readonly kind: 'review'
  readonly key: string
  readonly plan: PlanId
  readonly task: TaskView
  readonly node: TreeNode
  readonly result: ResultView
  readonly committee: EventId
  readonly path: string[]
  /** Protocol 5: this scorer's accepting reviews of the task's other results when it decided (see acceptOnce). */
  readonly acceptedOthers: readonly EventId[]
}

/**
 * A committee member casts one ballot per node and attempt under the latest
 * committee event, once it has a proposal from every live decomposer or the
 * window since the first proposal has passed; and reviews results when the
 * plan asks for review. Scorers outside the committee stay idle. A ballot
 * considers at most MAX_BALLOT_PROPOSALS of an attempt's proposals
 * (consideredProposals), so stuffing an attempt cannot stop it being cast.
 */
export function decideScorer(
  tree: PlanTree,
  me: PeerIdString,
  nowMs: number,
  liveDecomposers: readonly string[],
  events: EventLookup,
  reviewsBy: (result: EventId) => readonly PlanEvent<'result-reviewed'>[],
  wake?: (atMs: number) => void
): Array<BallotIntent | ReviewIntent> {
  if (isIdle(tree)) return []
  const committee = tree.committees[tree.committees.length - 1]
  if (committee === undefined || !committee.members.includes(me)) return []
  const nodes = nodeMap(tree)
  const out: Array<BallotIntent | ReviewIntent> = []
  for (const { node, attempt } of view(tree, nowMs).openAttempts) {
    const a = node.attempts.find(x => x.attempt === attempt)
    if (a === undefined || a.proposals.length === 0) continue
    if (a.ballots.some(b => b.author === me && b.committee === committee.event)) continue
    const proposals = a.proposals
      .filter(p => !p.equivocated)
      .map(p => events.get(p.id))
      .filter((e): e is PlanEvent<'split-proposed'> => e !== undefined)
    if (proposals.length === 0) continue
    const authors = new Set(proposals.map(p => p.env.author as string))
    const first = Math.min(...proposals.map(p => p.env.hlc.ms))
    const heardAll = liveDecomposers.length > 0 && liveDecomposers.every(d => authors.has(d))
    if (!heardAll && nowMs < first + BALLOT_WINDOW_MS) {
      wake?.(first + BALLOT_WINDOW_MS)
      continue
    }
    out.push({
      kind: 'ballot',
      key: `ballot:${tree.plan}:${node.id}#${attempt}@${committee.event}`,
      plan: tree.plan,
      node,
      attempt,
      committee: committee.event,
      proposals: consideredProposals(node.id, attempt, proposals),
      path: pathOf(tree, node, nodes)
    })
  }
  // Every result with --review; protocol 5 without it: those its sample takes (the fold marks them pending).
  if (reviewsResults(tree.params)) {
    for (const task of tree.tasks) {
      if (task.status !== 'in-review') continue
      const node = nodes.get(task.node)
      if (node === undefined) continue
      const once = tree.params.trust === undefined ? undefined : acceptOnce(task, me, nowMs, reviewsBy)
      if (once !== undefined && once.reviewable === null) {
        if (once.wakeAt !== null) wake?.(once.wakeAt)
        continue
      }
      for (const result of task.results) {
        if (result.review !== 'pending') continue
        if (once !== undefined && result.id !== once.reviewable) continue
        if (reviewsBy(result.id).some(r => r.env.author === me && r.env.body.committee === committee.event)) continue
        out.push({
          kind: 'review',
          key: `review:${tree.plan}:${result.id}@${committee.event}`,
          plan: tree.plan,
          task,
          node,
          result,
          committee: committee.event,
          path: pathOf(tree, node, nodes),
          acceptedOthers: once?.acceptedOthers ?? []
        })
      }
    }
  }
  return out
}

/**
 * Protocol 5's review policy (ADR-0053): review only the result the fold holds for the task (the last chain's), and
 * accept at most one result of a task. Two results of one task reported about the same time (a back-dated claim
 * beside the holder's) could otherwise each win a quorum, and which one a plan finished with would follow what each
 * node heard first. A scorer moves on from a result it accepted only when no quorum accepted that one, the fold no
 * longer holds it, and REVIEW_SWITCH_MS have passed since its accept: so a split vote with a crashed member does not
 * stall the task.
 */
function acceptOnce(
  task: TaskView,
  me: PeerIdString,
  nowMs: number,
  reviewsBy: (result: EventId) => readonly PlanEvent<'result-reviewed'>[]
): { reviewable: EventId | null; wakeAt: number | null; acceptedOthers: EventId[] } {
  const end = task.chains[task.chains.length - 1]?.end
  const held = end?.kind === 'result' ? end.event : null
  const acceptedOthers: EventId[] = []
  let wakeAt: number | null = null
  for (const r of task.results) {
    if (r.id === held) continue
    const mine = reviewsBy(r.id).filter(v => v.env.author === me && v.env.body.verdict === 'accept')
    if (mine.length === 0) continue
    if (r.review === 'accepted') return { reviewable: null, wakeAt: null, acceptedOthers }
    for (const v of mine) {
      acceptedOthers.push(v.id)
      const free = v.env.hlc.ms + REVIEW_SWITCH_MS
      if (free > nowMs) wakeAt = Math.max(wakeAt ?? 0, free)
    }
  }
  return wakeAt === null
    ? { reviewable: held, wakeAt: null, acceptedOthers }
    : { reviewable: null, wakeAt, acceptedOthers }
}

/** Whether this scorer accepted another result of the task after it decided to review this one (see acceptOnce). */
function acceptedSince(
  intent: ReviewIntent,
  me: PeerIdString,
  reviewsOf: (result: EventId) => readonly PlanEvent<'result-reviewed'>[]
): boolean {
  const before = new Set(intent.acceptedOthers)
  return intent.task.results.some(
    r =>
      r.id !== intent.result.id &&
      reviewsOf(r.id).some(v => v.env.author === me && v.env.body.verdict === 'accept' && !before.has(v.id))
  )
}

export function createScorer(ctx: RoleContext): RoleHandler {
  const me = ctx.view.me
  const events: EventLookup = { get: id => ctx.view.event(id) }
  const liveDecomposers = (): string[] =>
    ctx.view
      .roster()
      .filter(r => r.role === 'decomposer')
      .map(r => r.peerId)
      .sort()
  let wakeAt: number | null = null
  const wake = (at: number): void => {
    if (wakeAt === null || at < wakeAt) wakeAt = at
  }
  return {
    decide: (tree, now) => {
      const live = liveDecomposers()
      return decideScorer(tree, me, now, live, events, id => ctx.view.reviewsOf(tree.plan, id), wake)
    },
    nextWakeAt: () => {
      const at = wakeAt
      wakeAt = null
      return at
    },
    viewKey: () => liveDecomposers().join(','),
    act: async (intent: BallotIntent | ReviewIntent, tree) => {
      const provider = nearBudget(tree) ? ctx.provider.downgrade() : ctx.provider
      if (intent.kind === 'review') {
        // Protocol 5 has the deliverable accepted by the committee so that it is final (ADR-0053); unless the plan
        // asks for a review of it, that acceptance is an acknowledgement, without a model call.
        const out =
          intent.result.reviewedFor === 'deliverable'
            ? ACKNOWLEDGED
            : await provider.review(
                {
                  goal: tree.goal,
                  path: intent.path,
                  task: { title: intent.node.title, detail: intent.node.detail },
                  output: intent.result.output
                },
                {
                  trace: {
                    plan: intent.plan,
                    for: { slot: 'review', result: intent.result.id, committee: intent.committee }
                  }
                }
              )
        if (
          tree.params.trust !== undefined &&
          out.verdict === 'accept' &&
          acceptedSince(intent, me, id => ctx.view.reviewsOf(intent.plan, id))
        )
          return
        await ctx.view.publish('result-reviewed', intent.plan, [intent.result.id, intent.committee], {
          task: intent.task.id,
          result: intent.result.id,
          committee: intent.committee,
          verdict: out.verdict,
          notes: out.notes,
          usage: out.usage
        })
        ctx.say(`reviewed "${intent.node.title}": ${out.verdict}`)
        return
      }
      const out = await provider.score(
        {
          goal: tree.goal,
          path: intent.path,
          node: { title: intent.node.title, detail: intent.node.detail },
          proposals: intent.proposals.map(p => ({
            id: p.id,
            subgoals: p.env.body.subgoals,
            rationale: p.env.body.rationale
          }))
        },
        {
          trace: {
            plan: intent.plan,
            for: { slot: 'ballot', node: intent.node.id, attempt: intent.attempt, committee: intent.committee }
          }
        }
      )
      await ctx.view.publish('ballot-cast', intent.plan, [intent.committee, ...intent.proposals.map(p => p.id)], {
        node: intent.node.id,
        attempt: intent.attempt,
        committee: intent.committee,
        scores: out.scores.map(s => ({ proposal: s.proposal as EventId, score: s.score, notes: s.notes })),
        choice: out.choice as EventId | null,
        notes: out.notes,
        usage: out.usage
      })
      ctx.say(
        `voted on "${intent.node.title}" ` +
          `(attempt ${intent.attempt}): ${out.choice === null ? 'none' : `proposal ${out.choice.slice(0, 8)}`}`
      )
    }
  }
}
