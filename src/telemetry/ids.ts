/**
 * Trace and span ids derived from the plan log, so that every node names the
 * same span the same way with no one handing ids out: the trace id from the
 * plan id, a span id from the event (or the tree node, or the slot) it
 * stands for. A span's parent, named by one of its event's deps, then
 * resolves to the span another node emitted for that dep.
 *
 * Pure: hashes only (no I/O, no clock), so tests compute what any node emits.
 */
import { hashParts } from '../core/hash.js'
import type { EventId, NodeId, PeerIdString, PlanEvent, PlanId } from '../core/events.js'

/** 32 hex characters (16 bytes): the OpenTelemetry trace id of a plan. */
export type TraceId = string
/** 16 hex characters (8 bytes): an OpenTelemetry span id. */
export type SpanId = string

const TRACE_ID_HEX = 32
const SPAN_ID_HEX = 16

/** The plan's trace: the first 16 bytes of its id (the goal event's SHA-256). */
export function traceIdOf(plan: PlanId): TraceId {
  return plan.slice(0, TRACE_ID_HEX)
}

/** The first 8 bytes of a 64-hex id: the span of an event, or of a tree node (node ids are hashes too). */
export function spanIdOfId(id: EventId | NodeId | PlanId): SpanId {
  return id.slice(0, SPAN_ID_HEX)
}

/** The plan span: the root node's span, which is the goal's (the root node id is the plan id). */
export function planSpanId(plan: PlanId): SpanId {
  return spanIdOfId(plan)
}

function derived(...parts: string[]): SpanId {
  return hashParts('plan-swarm/span', ...parts).slice(0, SPAN_ID_HEX)
}

/** One decomposition attempt of a tree node: its proposals and ballots hang under it. */
export function attemptSpanId(node: NodeId, attempt: number): SpanId {
  return derived('attempt', node, String(attempt))
}

/**
 * A decomposer's proposal slot (decomposer, node, attempt). Named by the
 * slot, not by the event's id, because the model call that fills it runs
 * before the event exists: the call's span needs its parent's id up front.
 */
export function proposalSpanId(author: PeerIdString, node: NodeId, attempt: number): SpanId {
  return derived('split-proposed', author, node, String(attempt))
}

/** A scorer's ballot slot (scorer, node, attempt, committee event); see proposalSpanId. */
export function ballotSpanId(author: PeerIdString, node: NodeId, attempt: number, committee: EventId): SpanId {
  return derived('ballot-cast', author, node, String(attempt), committee)
}

/** A scorer's review slot (scorer, result, committee event); see proposalSpanId. */
export function reviewSpanId(author: PeerIdString, result: EventId, committee: EventId): SpanId {
  return derived('result-reviewed', author, result, committee)
}

/**
 * The span an event stands for, from the event alone: its slot's for the
 * events a model call fills (proposals, ballots, reviews), the plan span for
 * the goal, its claim's for a renewal, the first 8 bytes of its id for the
 * rest (claims, results, failures, the author's commands).
 */
export function spanIdOfEvent(e: PlanEvent): SpanId {
  const env = e.env
  switch (env.type) {
    case 'goal-submitted':
      return spanIdOfId(e.id)
    case 'split-proposed': {
      const b = (e as PlanEvent<'split-proposed'>).env.body
      return proposalSpanId(env.author, b.node, b.attempt)
    }
    case 'ballot-cast': {
      const b = (e as PlanEvent<'ballot-cast'>).env.body
      return ballotSpanId(env.author, b.node, b.attempt, b.committee)
    }
    case 'result-reviewed': {
      const b = (e as PlanEvent<'result-reviewed'>).env.body
      return reviewSpanId(env.author, b.result, b.committee)
    }
    case 'claim-renewed':
      // A renewal is an event on its claim's span, not a span of its own.
      return spanIdOfId((e as PlanEvent<'claim-renewed'>).env.body.claim)
    case 'committee-amended':
    case 'budget-raised':
    case 'task-retried':
    case 'goal-cancelled':
    case 'task-claimed':
    case 'task-released':
    case 'task-failed':
    case 'result-reported':
      return spanIdOfId(e.id)
    default: {
      const unreachable: never = env.type
      throw new Error(`no span for event type ${String(unreachable)}`)
    }
  }
}
