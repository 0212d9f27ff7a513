/**
 * A node's plan tracer: watches what the node folds and, for each event the
 * node authored, emits the spans plan-spans.ts says it owes (the event's own
 * span and the interval spans the event closes). It also serves the
 * model-call wrapper (llm-spans.ts): the node's id for slot span ids, and
 * the start of the work behind each slot.
 *
 * An event of this node may turn out to close an interval only once others'
 * events arrive (two scorers' ballots cross; each folds its own first, and
 * only the later of them sees the decision, which may be the other's
 * ballot): such events stay pending and are asked again whenever more
 * events of their plan fold, until what they could close is settled.
 *
 * The work happens off the fold: events are queued in the onFolded callback
 * and turned into spans on the next turn of the node's scheduler, so a
 * tracer never slows down or breaks the replica.
 */
import { logger } from '@libp2p/logger'
import { spanIdOfEvent } from './ids.js'
import { closedBy, ownSpans } from './plan-spans.js'
import type { EventId, EventType, PlanEvent, PlanId } from '../core/events.js'
import type { NodeView } from '../ports/node-view.js'
import type { SpanId } from './ids.js'
import type { LlmSpanTarget } from './llm-spans.js'
import type { SpanSink, SpanSpec } from './span.js'
import type { PlanSpanContext } from './plan-spans.js'

const log = logger('plan-swarm:telemetry')

/** Slot work starts and claims in flight kept at most (a slot whose event never comes is forgotten eventually). */
const MAX_TRACKED = 10_000
/** Span ids already emitted, kept to never send one twice. */
const MAX_EMITTED = 50_000

export interface PlanTracer extends LlmSpanTarget {
  /** Spans emitted since start. */
  readonly emitted: () => number
  /** Turn what is queued into spans now, and stop watching. */
  stop: () => void
}

/** Others' events that can settle what a pending event of ours might close: decisions of attempts, finishes of tasks, the plan's end. */
const SETTLING: ReadonlySet<EventType> = new Set<EventType>([
  'ballot-cast',
  'committee-amended',
  'result-reported',
  'result-reviewed',
  'task-failed',
  'goal-cancelled'
])

function planOf(e: PlanEvent): PlanId {
  return (e.env.type === 'goal-submitted' ? e.id : e.env.plan) as PlanId
}

function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.set(key, value)
  if (map.size > max) map.delete(map.keys().next().value as K)
}

/** Watch `view` and send the spans of the events it authors to `sink`. */
export function startPlanTracer(view: NodeView, sink: SpanSink): PlanTracer {
  const me = view.me
  const workStarts = new Map<SpanId, number>()
  const renewals = new Map<EventId, Array<PlanEvent<'claim-renewed'>>>()
  const emittedIds = new Set<string>()
  let count = 0
  let queue: PlanEvent[] = []
  let cancel: (() => void) | undefined

  const emit = (s: SpanSpec): void => {
    const key = `${s.traceId}:${s.spanId}`
    if (emittedIds.has(key)) return
    emittedIds.add(key)
    if (emittedIds.size > MAX_EMITTED) emittedIds.delete(emittedIds.values().next().value as string)
    count++
    try {
      sink.emit(s)
    } catch (err) {
      log.error('span %s not exported: %s', s.name, (err as Error).message)
    }
  }

  const pending = new Map<PlanId, Map<EventId, PlanEvent>>()
  let pendingCount = 0
  const dirty = new Set<PlanId>()

  const contextOf = (plan: PlanId): PlanSpanContext | undefined => {
    const tree = view.tree(plan) ?? view.loadTree(plan)
    return tree === undefined
      ? undefined
      : {
          tree,
          event: id => view.event(id),
          workStart: span => workStarts.get(span),
          renewals: claim => renewals.get(claim) ?? []
        }
  }

  const settle = (e: PlanEvent, plan: PlanId, ctx: PlanSpanContext): void => {
    const closed = closedBy(e, ctx)
    for (const s of closed.spans) emit(s)
    const waiting = pending.get(plan)
    if (closed.settled) {
      if (waiting?.delete(e.id) === true) {
        pendingCount--
        if (waiting.size === 0) pending.delete(plan)
      }
    } else if (waiting?.has(e.id) !== true && pendingCount < MAX_TRACKED) {
      pending.set(plan, (waiting ?? new Map<EventId, PlanEvent>()).set(e.id, e))
      pendingCount++
    }
  }

  const handle = (e: PlanEvent): void => {
    const plan = planOf(e)
    if (e.env.type === 'claim-renewed') {
      const r = e as PlanEvent<'claim-renewed'>
      remember(renewals, r.env.body.claim, [...(renewals.get(r.env.body.claim) ?? []), r], MAX_TRACKED)
      return
    }
    const ctx = contextOf(plan)
    if (ctx === undefined) return
    for (const s of ownSpans(e, ctx)) emit(s)
    workStarts.delete(spanIdOfEvent(e))
    if (e.env.type === 'result-reported' || e.env.type === 'task-failed' || e.env.type === 'task-released') {
      renewals.delete((e as PlanEvent<'result-reported' | 'task-failed' | 'task-released'>).env.body.claim)
    }
    settle(e, plan, ctx)
  }

  const flush = (): void => {
    cancel = undefined
    const batch = queue
    queue = []
    for (const e of batch) {
      try {
        handle(e)
      } catch (err) {
        log.error('no spans for %s %s: %s', e.env.type, e.id, (err as Error).stack)
      }
    }
    const plans = [...dirty]
    dirty.clear()
    for (const plan of plans) {
      const waiting = pending.get(plan)
      const ctx = waiting === undefined ? undefined : contextOf(plan)
      if (waiting === undefined || ctx === undefined) continue
      for (const e of [...waiting.values()]) {
        try {
          settle(e, plan, ctx)
        } catch (err) {
          log.error('no closing spans for %s %s: %s', e.env.type, e.id, (err as Error).stack)
        }
      }
    }
  }

  const unsubscribe = view.onFolded(events => {
    let work = false
    for (const e of events) {
      if (e.env.author === me) {
        queue.push(e)
        work = true
      } else if (pending.size > 0 && SETTLING.has(e.env.type)) {
        const plan = planOf(e)
        if (pending.has(plan)) {
          dirty.add(plan)
          work = true
        }
      }
    }
    if (work && cancel === undefined) cancel = view.scheduler.soon(flush)
  })

  return {
    me,
    emit,
    noteWorkStart: (span, ms) => {
      if (!workStarts.has(span)) remember(workStarts, span, ms, MAX_TRACKED)
    },
    emitted: () => count,
    stop: () => {
      unsubscribe()
      cancel?.()
      flush()
    }
  }
}
