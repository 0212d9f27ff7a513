/**
 * The spans a node emits for one event it authored, as a pure function of
 * that event, the folded tree and the event's deps.
 *
 * Every span has one emitter, so no span is sent twice:
 *   - an event's own span comes from its author;
 *   - a span that covers an interval between events (the plan, a tree node,
 *     a decomposition attempt, a claim and its execution) comes from the
 *     author of the event that settles the interval: the root task's finish
 *     event (or the cancellation) for the plan, a node's task's finish event
 *     for the node, the winning proposal for a won attempt and the last
 *     ballot for a failed one, the claim's result, failure or release for
 *     the claim. An author may learn that its event settled an interval only
 *     as others' events arrive (closedBy says when it is still open).
 * Parents follow the deps: an attempt hangs under its node, a proposal and a
 * ballot under their attempt, a claim under its task's node, a result or a
 * failure under its claim, a review under its result, a node under its
 * parent node, the root node being the plan. The other deps are links.
 * Times come from the events' HLC stamps; model calls (llm-spans.ts) are
 * timed on the caller's clock, and a slot's span starts at the first call
 * made for it.
 */
import { compareEvents } from '../core/order.js'
import { attemptSpanId, planSpanId, spanIdOfEvent, spanIdOfId, traceIdOf } from './ids.js'
import { ATTR } from './span.js'
import type { EventId, NodeId, PlanEvent, PlanId, Usage } from '../core/events.js'
import type { AttemptView, PlanTree, TaskView, TreeNode } from '../core/tree.js'
import type { SpanId } from './ids.js'
import type { SpanAttributes, SpanSpec } from './span.js'

/** What ownSpans and closedBy read besides the event. */
export interface PlanSpanContext {
  /** The plan's tree, with the event folded. */
  readonly tree: PlanTree
  /** A folded event by id (the event's deps and the tree's ids). */
  readonly event: (id: EventId) => PlanEvent | undefined
  /** When this node started the work behind a slot span (its first model call for it), if it recorded one. */
  readonly workStart: (span: SpanId) => number | undefined
  /** This node's renewals of one of its claims, in order. */
  readonly renewals: (claim: EventId) => ReadonlyArray<PlanEvent<'claim-renewed'>>
}

/** Links carried at most per span (a roll-up claim may cite many results). */
export const MAX_LINKS = 32
const GOAL_TEXT_CHARS = 200

type Mutable = Record<string, string | number | boolean>

function hlcText(e: PlanEvent): string {
  return `${e.env.hlc.ms}.${e.env.hlc.c}`
}

function eventAttrs(e: PlanEvent): Mutable {
  return {
    [ATTR.plan]: e.env.type === 'goal-submitted' ? e.id : e.env.plan,
    [ATTR.event]: e.id,
    [ATTR.eventType]: e.env.type,
    [ATTR.hlc]: hlcText(e),
    [ATTR.peer]: e.env.author
  }
}

function usageAttrs(u: Usage): Mutable {
  return { [ATTR.inputTokens]: u.inputTokens, [ATTR.outputTokens]: u.outputTokens }
}

function nodeAttrs(n: TreeNode): Mutable {
  return {
    [ATTR.node]: n.id,
    [ATTR.nodeTitle]: n.title.slice(0, GOAL_TEXT_CHARS),
    [ATTR.depth]: n.depth,
    [ATTR.nodeKind]: n.kind
  }
}

/** The deps of `e` other than the goal and `except`, as links to the spans they stand for. */
function linksOf(e: PlanEvent, ctx: PlanSpanContext, except: readonly EventId[] = []): SpanSpec['links'] {
  const out: Array<SpanSpec['links'][number]> = []
  for (const dep of e.env.deps) {
    if (dep === (e.env.plan as string) || except.includes(dep)) continue
    if (out.length >= MAX_LINKS) break
    const d = ctx.event(dep)
    out.push({
      spanId: d === undefined ? spanIdOfId(dep) : spanIdOfEvent(d),
      attributes: { [ATTR.event]: dep, ...(d === undefined ? {} : { [ATTR.eventType]: d.env.type }) }
    })
  }
  return out
}

function span(
  plan: PlanId,
  s: Omit<SpanSpec, 'traceId' | 'kind' | 'links' | 'events' | 'status'> &
    Partial<Pick<SpanSpec, 'links' | 'events' | 'status'>>
): SpanSpec {
  return {
    traceId: traceIdOf(plan),
    kind: 'internal',
    links: [],
    events: [],
    status: 'unset',
    ...s,
    // Stamps of events by different authors carry their clocks' skew: never end before the start.
    endMs: Math.max(s.startMs, s.endMs)
  }
}

function findNode(tree: PlanTree, id: NodeId): TreeNode | undefined {
  return tree.nodes.find(n => n.id === id)
}

function findTask(tree: PlanTree, id: string): TaskView | undefined {
  return tree.tasks.find(t => t.id === id)
}

/** When a node came to be: the goal for the root, else the latest of the events that made it (its split and the deciding ballots). */
function createdAtMs(n: TreeNode, ctx: PlanSpanContext): number {
  if (n.parent === null) return ctx.tree.submittedAt.ms
  let at = ctx.tree.submittedAt.ms
  for (const id of n.evidence) at = Math.max(at, ctx.event(id)?.env.hlc.ms ?? at)
  return at
}

/**
 * The ballot that closed an attempt: the deciding one of a won attempt, the
 * last one of a failed attempt. A failed attempt's last ballot is known for
 * good (every member has voted). A won attempt's deciding ballot is not:
 * the winner is final once a quorum chose it, but a ballot stamped earlier
 * that arrives later can make another ballot the deciding one. So a won
 * attempt's span is emitted by its winning proposal's author, which knows it
 * won for good, and ends at the deciding ballot as that node first saw it.
 */
function closingBallot(a: AttemptView, ctx: PlanSpanContext): PlanEvent | undefined {
  if (a.outcome === 'won') return a.decidedBy === null ? undefined : ctx.event(a.decidedBy)
  if (a.outcome !== 'failed') return undefined
  let last: PlanEvent | undefined
  for (const b of a.ballots) {
    const e = ctx.event(b.id)
    if (e !== undefined && (last === undefined || compareEvents(e, last) > 0)) last = e
  }
  return last
}

function attemptSpan(n: TreeNode, a: AttemptView, closer: PlanEvent, ctx: PlanSpanContext): SpanSpec {
  const previous = n.attempts.find(x => x.attempt === a.attempt - 1)
  const opened = previous === undefined ? undefined : closingBallot(previous, ctx)
  return span(ctx.tree.plan, {
    spanId: attemptSpanId(n.id, a.attempt),
    parentSpanId: spanIdOfId(n.id),
    name: 'decomposition-attempt',
    startMs: opened?.env.hlc.ms ?? createdAtMs(n, ctx),
    endMs: closer.env.hlc.ms,
    attributes: {
      [ATTR.plan]: ctx.tree.plan,
      ...nodeAttrs(n),
      [ATTR.attempt]: a.attempt,
      [ATTR.outcome]: a.outcome,
      [ATTR.event]: closer.id,
      [ATTR.peer]: closer.env.author,
      'plan_swarm.attempt.proposals': a.proposals.length,
      'plan_swarm.attempt.ballots': a.ballots.length,
      ...(a.winner === null ? {} : { 'plan_swarm.attempt.winner': a.winner })
    }
  })
}

/** The plan span: the root node, from the goal to the event that ended the plan. */
function planSpan(closer: PlanEvent, ctx: PlanSpanContext): SpanSpec {
  const t = ctx.tree
  return span(t.plan, {
    spanId: planSpanId(t.plan),
    parentSpanId: null,
    name: 'plan',
    startMs: t.submittedAt.ms,
    endMs: closer.env.hlc.ms,
    attributes: {
      [ATTR.plan]: t.plan,
      [ATTR.event]: t.plan,
      [ATTR.eventType]: 'goal-submitted',
      [ATTR.peer]: t.author,
      [ATTR.goal]: t.goal.slice(0, GOAL_TEXT_CHARS),
      [ATTR.status]: t.status,
      [ATTR.spentTokens]: t.spentTokens,
      [ATTR.budgetTokens]: t.budgetTokens,
      'plan_swarm.plan.nodes': t.nodes.length,
      'plan_swarm.plan.events': t.events,
      'plan_swarm.plan.duplicates': t.duplicates,
      'plan_swarm.plan.closed_by': closer.id
    },
    status: t.status === 'failed' ? 'error' : t.status === 'completed' ? 'ok' : 'unset',
    ...(t.status === 'failed' ? { statusMessage: t.statusReason } : {})
  })
}

/** A node's span, when `closer` is its task's finish event (the root's is the plan span). */
function nodeSpan(task: TaskView, closer: PlanEvent, ctx: PlanSpanContext): SpanSpec | undefined {
  const n = findNode(ctx.tree, task.node)
  if (n === undefined) return undefined
  if (n.parent === null)
    return ctx.tree.status === 'completed' || ctx.tree.status === 'failed' ? planSpan(closer, ctx) : undefined
  return span(ctx.tree.plan, {
    spanId: spanIdOfId(n.id),
    parentSpanId: spanIdOfId(n.parent),
    name: 'node',
    startMs: createdAtMs(n, ctx),
    endMs: closer.env.hlc.ms,
    attributes: {
      [ATTR.plan]: ctx.tree.plan,
      ...nodeAttrs(n),
      ...(n.leafReason === null ? {} : { [ATTR.leafReason]: n.leafReason }),
      [ATTR.task]: task.id,
      [ATTR.outcome]: task.status,
      'plan_swarm.node.closed_by': closer.id
    },
    status: task.status === 'failed' ? 'error' : 'unset'
  })
}

/** A claim and its execution, closed by its owner's result, failure or release. */
function claimSpan(
  claim: PlanEvent<'task-claimed'>,
  closer: PlanEvent,
  outcome: string,
  ctx: PlanSpanContext
): SpanSpec {
  const task = findTask(ctx.tree, claim.env.body.task)
  const renewals = ctx.renewals(claim.id)
  return span(ctx.tree.plan, {
    spanId: spanIdOfId(claim.id),
    parentSpanId: task === undefined ? planSpanId(ctx.tree.plan) : spanIdOfId(task.node),
    name: 'task-claimed',
    startMs: claim.env.hlc.ms,
    endMs: closer.env.hlc.ms,
    attributes: {
      ...eventAttrs(claim),
      [ATTR.task]: claim.env.body.task,
      ...(task === undefined ? {} : { [ATTR.taskKind]: task.kind, [ATTR.node]: task.node }),
      [ATTR.outcome]: outcome,
      'plan_swarm.claim.renewals': renewals.length,
      'plan_swarm.claim.takeover': claim.env.body.prev !== null
    },
    links: linksOf(claim, ctx),
    events: renewals.map(r => ({
      name: 'claim-renewed',
      timeMs: r.env.hlc.ms,
      attributes: { [ATTR.event]: r.id, [ATTR.hlc]: hlcText(r) }
    })),
    status: outcome === 'failed' ? 'error' : 'unset'
  })
}

/** The claim span `e` closes, when `e` ends one of this node's claims (its result, failure or release). */
function endOfClaim(
  e: PlanEvent<'result-reported' | 'task-failed' | 'task-released'>,
  outcome: string,
  ctx: PlanSpanContext
): SpanSpec[] {
  const claim = ctx.event(e.env.body.claim)
  return claim !== undefined && claim.env.type === 'task-claimed' && claim.env.author === e.env.author
    ? [claimSpan(claim as PlanEvent<'task-claimed'>, e, outcome, ctx)]
    : []
}

/** Whether `e` finished `task` (then the node's, or the plan's, span), or cannot any more, or may still turn out to. */
function finishing(e: PlanEvent, task: string, ctx: PlanSpanContext): Closed {
  const t = findTask(ctx.tree, task)
  if (t === undefined || t.finishEvent === null) return { spans: [], settled: t === undefined || isOver(ctx.tree) }
  if (t.finishEvent !== e.id) return { spans: [], settled: true }
  const s = nodeSpan(t, e, ctx)
  return { spans: s === undefined ? [] : [s], settled: true }
}

function isOver(tree: PlanTree): boolean {
  return tree.status === 'completed' || tree.status === 'failed' || tree.status === 'cancelled'
}

/** An instant span for an event: at its stamp (or from when this node began the work behind it). */
function eventSpan(
  e: PlanEvent,
  parent: SpanId,
  attrs: SpanAttributes,
  ctx: PlanSpanContext,
  opts: { except?: readonly EventId[]; status?: SpanSpec['status']; statusMessage?: string } = {}
): SpanSpec {
  const id = spanIdOfEvent(e)
  return span(ctx.tree.plan, {
    spanId: id,
    parentSpanId: parent,
    name: e.env.type,
    startMs: Math.min(ctx.workStart(id) ?? e.env.hlc.ms, e.env.hlc.ms),
    endMs: e.env.hlc.ms,
    attributes: { ...eventAttrs(e), ...attrs },
    links: linksOf(e, ctx, opts.except),
    ...(opts.status === undefined ? {} : { status: opts.status }),
    ...(opts.statusMessage === undefined ? {} : { statusMessage: opts.statusMessage })
  })
}

/** The interval spans an event closed, and whether that is settled (see closedBy). */
export interface Closed {
  readonly spans: SpanSpec[]
  /**
   * False while what `e` might close is still open on this node: an attempt
   * without a decision, a task without a finish. Its ballot or result may yet
   * turn out to be the one that decided, once the other scorers' ballots or
   * an earlier result arrive, so the tracer asks again as events fold.
   */
  readonly settled: boolean
}

const NOTHING: Closed = { spans: [], settled: true }

/**
 * The event's own span (none for the goal, whose span is the plan's, and
 * none for a claim or a renewal, which the claim's span covers when it
 * ends), and the claim span a result, failure or release of this node's
 * ends: these depend on `e` and its deps alone.
 */
export function ownSpans(e: PlanEvent, ctx: PlanSpanContext): SpanSpec[] {
  const plan = ctx.tree.plan
  switch (e.env.type) {
    case 'goal-submitted':
    case 'task-claimed':
    case 'claim-renewed':
      return []
    case 'split-proposed': {
      const b = (e as PlanEvent<'split-proposed'>).env.body
      return [
        eventSpan(
          e,
          attemptSpanId(b.node, b.attempt),
          {
            [ATTR.node]: b.node,
            [ATTR.attempt]: b.attempt,
            'plan_swarm.proposal.subgoals': b.subgoals.length,
            ...usageAttrs(b.usage)
          },
          ctx
        )
      ]
    }
    case 'ballot-cast': {
      const b = (e as PlanEvent<'ballot-cast'>).env.body
      return [
        eventSpan(
          e,
          attemptSpanId(b.node, b.attempt),
          {
            [ATTR.node]: b.node,
            [ATTR.attempt]: b.attempt,
            [ATTR.committee]: b.committee,
            [ATTR.choice]: b.choice ?? 'none',
            ...usageAttrs(b.usage)
          },
          ctx
        )
      ]
    }
    case 'result-reported': {
      const r = e as PlanEvent<'result-reported'>
      const b = r.env.body
      const task = findTask(ctx.tree, b.task)
      const own = eventSpan(
        e,
        spanIdOfId(b.claim),
        {
          [ATTR.task]: b.task,
          [ATTR.claim]: b.claim,
          ...(task === undefined ? {} : { [ATTR.taskKind]: task.kind }),
          [ATTR.model]: b.model,
          [ATTR.source]: b.source,
          'plan_swarm.result.output_chars': b.output.length,
          ...usageAttrs(b.usage)
        },
        ctx,
        { except: [b.claim] }
      )
      return [own, ...endOfClaim(r, 'result', ctx)]
    }
    case 'task-failed': {
      const f = e as PlanEvent<'task-failed'>
      const b = f.env.body
      const own = eventSpan(
        e,
        spanIdOfId(b.claim),
        { [ATTR.task]: b.task, [ATTR.claim]: b.claim, ...usageAttrs(b.usage) },
        ctx,
        { except: [b.claim], status: 'error', statusMessage: b.error }
      )
      return [own, ...endOfClaim(f, 'failed', ctx)]
    }
    case 'task-released': {
      const r = e as PlanEvent<'task-released'>
      const b = r.env.body
      const own = eventSpan(
        e,
        spanIdOfId(b.claim),
        { [ATTR.task]: b.task, [ATTR.claim]: b.claim, 'plan_swarm.release.reason': b.reason },
        ctx,
        { except: [b.claim] }
      )
      return [own, ...endOfClaim(r, 'released', ctx)]
    }
    case 'result-reviewed': {
      const b = (e as PlanEvent<'result-reviewed'>).env.body
      return [
        eventSpan(
          e,
          spanIdOfId(b.result),
          {
            [ATTR.task]: b.task,
            [ATTR.result]: b.result,
            [ATTR.committee]: b.committee,
            [ATTR.verdict]: b.verdict,
            ...usageAttrs(b.usage)
          },
          ctx,
          { except: [b.result] }
        )
      ]
    }
    case 'goal-cancelled':
      return [
        eventSpan(
          e,
          planSpanId(plan),
          { 'plan_swarm.cancel.reason': (e as PlanEvent<'goal-cancelled'>).env.body.reason },
          ctx
        )
      ]
    case 'committee-amended':
    case 'budget-raised':
    case 'task-retried':
      return [eventSpan(e, planSpanId(plan), {}, ctx)]
    default: {
      const unreachable: never = e.env.type
      throw new Error(`no spans for event type ${String(unreachable)}`)
    }
  }
}

/**
 * The interval spans `e` closed as this node's tree stands: the attempt its
 * proposal won (or its ballot, as the last one, failed), the node (or the
 * plan) whose task its result, failure or review finished, the plan its
 * cancellation ended.
 */
export function closedBy(e: PlanEvent, ctx: PlanSpanContext): Closed {
  switch (e.env.type) {
    case 'split-proposed':
    case 'ballot-cast': {
      const b = (e as PlanEvent<'split-proposed' | 'ballot-cast'>).env.body
      const n = findNode(ctx.tree, b.node)
      const a = n?.attempts.find(x => x.attempt === b.attempt)
      if (n === undefined || a === undefined) return NOTHING
      if (a.outcome === 'open') return { spans: [], settled: isOver(ctx.tree) }
      // A won attempt is closed for its winner's author, a failed one for its last ballot's (see closingBallot).
      const mine =
        e.env.type === 'split-proposed'
          ? a.outcome === 'won' && a.winner === e.id
          : a.outcome === 'failed' && closingBallot(a, ctx)?.id === e.id
      const closer = mine ? closingBallot(a, ctx) : undefined
      return { spans: closer === undefined ? [] : [attemptSpan(n, a, closer, ctx)], settled: true }
    }
    case 'result-reported':
    case 'task-failed':
    case 'result-reviewed':
      return finishing(e, (e as PlanEvent<'result-reported' | 'task-failed' | 'result-reviewed'>).env.body.task, ctx)
    case 'goal-cancelled':
      return { spans: ctx.tree.status === 'cancelled' ? [planSpan(e, ctx)] : [], settled: true }
    default:
      return NOTHING
  }
}
