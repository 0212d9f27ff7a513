/**
 * Model calls, measured: a wrapper around an LlmProvider that counts every
 * call's tokens and latency (the node's /metrics) and, when tracing is on,
 * emits a span per call with the OpenTelemetry GenAI attribute names, as a
 * child of the span of the work the call serves (CallOptions.trace: the
 * proposal, ballot or review slot it fills, or the claim it executes). A task
 * run with tools gets a span per model turn and, through tool-spans.ts, one
 * per tool call, all under the claim.
 *
 * HTTP retries happen inside the provider (src/llm/retry.ts); they reach
 * the call they belong to through the provider's retry hook and an
 * AsyncLocalStorage scoped to each call, never through shared state.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { ballotSpanId, proposalSpanId, reviewSpanId, spanIdOfId, traceIdOf } from './ids.js'
import {
  ATTR,
  ERROR_TYPE,
  GEN_AI_OPERATION_CHAT,
  GEN_AI_OPERATION_NAME,
  GEN_AI_PROVIDER_NAME,
  GEN_AI_REQUEST_MAX_TOKENS,
  GEN_AI_REQUEST_MODEL,
  GEN_AI_RESPONSE_MODEL,
  GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  GEN_AI_USAGE_INPUT_TOKENS,
  GEN_AI_USAGE_OUTPUT_TOKENS
} from './span.js'
import { randomSpanId, tracedToolBox } from './tool-spans.js'
import type { PeerIdString, Usage } from '../core/events.js'
import type { RetryEvent, RetryHooks } from '../llm/retry.js'
import type { CacheUsage, ToolLoopOptions, ToolLoopOutput } from '../llm/types.js'
import type { CallOptions, CallTrace, LlmProvider } from '../llm/types.js'
import { ZERO_USAGE } from '../llm/types.js'
import type { SpanId } from './ids.js'
import type { SpanSink } from './span.js'

/** One finished model call, as the metrics count it. */
export interface LlmCallRecord {
  /** decompose, score, execute, roll-up or review. */
  readonly operation: string
  /** The model asked (the configured one: bounded label values). */
  readonly model: string
  /** Tokens used; for a failed call, what its error reports. */
  readonly usage: Usage
  readonly seconds: number
  readonly outcome: 'ok' | 'error' | 'aborted'
  /** HTTP retries inside the call. */
  readonly retries: number
}

/** Where call figures go: the node's metrics (NodeMetrics.llmCall). */
export interface LlmMeter {
  llmCall: (c: LlmCallRecord) => void
}

/** What call spans need from the node's plan tracer. */
export interface LlmSpanTarget extends SpanSink {
  /** This node: the author of the slots its calls fill. */
  readonly me: PeerIdString
  /** The caller started work behind a slot span at `ms` (kept only if it is the first). */
  noteWorkStart: (span: SpanId, ms: number) => void
}

export interface LlmClock {
  /** Wall-clock ms (the node's scheduler.now). */
  readonly now: () => number
  /** Monotonic ms, for durations. */
  readonly monotonic: () => number
}

export interface LlmTelemetry {
  /** Give these to createProvider: they attribute each HTTP retry to the call it happens in. */
  readonly retryHooks: RetryHooks
  /** The provider, measured (and traced when `tracer` is given). */
  instrument: (
    provider: LlmProvider,
    opts: { meter?: LlmMeter; tracer?: LlmSpanTarget; clock: LlmClock }
  ) => LlmProvider
}

/** The span a call hangs under, and whether that span is a slot the call's work fills. */
export function parentOfCall(
  trace: CallTrace,
  me: PeerIdString
): { span: SpanId; slot: boolean; attributes: Record<string, string | number> } {
  const f = trace.for
  switch (f.slot) {
    case 'proposal':
      return {
        span: proposalSpanId(me, f.node, f.attempt),
        slot: true,
        attributes: { [ATTR.node]: f.node, [ATTR.attempt]: f.attempt }
      }
    case 'ballot':
      return {
        span: ballotSpanId(me, f.node, f.attempt, f.committee),
        slot: true,
        attributes: { [ATTR.node]: f.node, [ATTR.attempt]: f.attempt, [ATTR.committee]: f.committee }
      }
    case 'review':
      return {
        span: reviewSpanId(me, f.result, f.committee),
        slot: true,
        attributes: { [ATTR.result]: f.result, [ATTR.committee]: f.committee }
      }
    case 'claim':
      return { span: spanIdOfId(f.claim), slot: false, attributes: { [ATTR.claim]: f.claim } }
    default: {
      const unreachable: never = f
      throw new Error(`unknown call purpose ${JSON.stringify(unreachable)}`)
    }
  }
}

/** gen_ai.provider.name: the convention's well-known values, and our own for the offline heuristics. */
function providerName(name: string): string {
  return name === 'offline' ? 'plan_swarm.offline' : name
}

interface CallState {
  readonly retries: RetryEvent[]
  readonly retryAtMs: number[]
  readonly now: () => number
}

function usageOf(err: unknown): Usage {
  const u = (err as { usage?: Usage } | null)?.usage
  return u !== undefined && typeof u.inputTokens === 'number' && typeof u.outputTokens === 'number'
    ? u
    : { inputTokens: 0, outputTokens: 0 }
}

export function createLlmTelemetry(): LlmTelemetry {
  const calls = new AsyncLocalStorage<CallState>()
  const retryHooks: RetryHooks = {
    // Called inside sendWithRetries, in the async context of the call that retries.
    onRetry: e => {
      const s = calls.getStore()
      if (s === undefined) return
      s.retries.push(e)
      s.retryAtMs.push(s.now())
    }
  }

  const instrument = (
    provider: LlmProvider,
    opts: { meter?: LlmMeter; tracer?: LlmSpanTarget; clock: LlmClock }
  ): LlmProvider => {
    const { meter, tracer, clock } = opts

    /** Where a call's spans go, or null when it is not traced. */
    const whereTo = (
      callOpts: CallOptions | undefined
    ): { tracer: LlmSpanTarget; trace: CallTrace; parent: ReturnType<typeof parentOfCall> } | null =>
      tracer === undefined || callOpts?.trace === undefined
        ? null
        : { tracer, trace: callOpts.trace, parent: parentOfCall(callOpts.trace, tracer.me) }

    const meterCall = (
      question: string,
      outcome: LlmCallRecord['outcome'],
      usage: Usage,
      ms: number,
      retries: number
    ): void => {
      meter?.llmCall({ operation: question, model: provider.model, usage, seconds: ms / 1000, outcome, retries })
    }

    /** One model request's span (a whole question, or one turn of a tool loop). */
    const emitChat = (
      to: NonNullable<ReturnType<typeof whereTo>>,
      c: {
        question: string
        maxOutputTokens: number | undefined
        startMs: number
        ms: number
        outcome: LlmCallRecord['outcome']
        usage: Usage
        cache: CacheUsage | null
        responseModel: string | null
        retries: readonly RetryEvent[]
        retryAtMs: readonly number[]
        turn: number | null
        err?: Error
      }
    ): void => {
      const { tracer: t, trace, parent } = to
      const err = c.err
      t.emit({
        traceId: traceIdOf(trace.plan),
        spanId: randomSpanId(),
        parentSpanId: parent.span,
        name: `${GEN_AI_OPERATION_CHAT} ${provider.model}`,
        kind: 'client',
        startMs: c.startMs,
        endMs: c.startMs + c.ms,
        attributes: {
          [GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_CHAT,
          [GEN_AI_PROVIDER_NAME]: providerName(provider.name),
          [GEN_AI_REQUEST_MODEL]: provider.model,
          ...(c.responseModel === null ? {} : { [GEN_AI_RESPONSE_MODEL]: c.responseModel }),
          ...(c.maxOutputTokens === undefined ? {} : { [GEN_AI_REQUEST_MAX_TOKENS]: c.maxOutputTokens }),
          [GEN_AI_USAGE_INPUT_TOKENS]: c.usage.inputTokens,
          [GEN_AI_USAGE_OUTPUT_TOKENS]: c.usage.outputTokens,
          ...(c.cache === null
            ? {}
            : {
                [GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: c.cache.readTokens,
                [GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: c.cache.writeTokens
              }),
          [ATTR.question]: c.question,
          ...(c.turn === null ? {} : { [ATTR.turn]: c.turn }),
          [ATTR.retries]: c.retries.length,
          [ATTR.retried]: c.retries.length > 0,
          [ATTR.plan]: trace.plan,
          [ATTR.peer]: t.me,
          [ATTR.outcome]: c.outcome,
          ...parent.attributes,
          ...(err === undefined ? {} : { [ERROR_TYPE]: err.name })
        },
        links: [],
        events: c.retries.map((r, i) => ({
          name: 'retry',
          timeMs: c.retryAtMs[i] ?? c.startMs,
          attributes: {
            'plan_swarm.llm.retry': r.retry,
            'plan_swarm.llm.retry_delay_ms': r.delayMs,
            'plan_swarm.llm.retry_status': r.status ?? 0,
            'plan_swarm.llm.retry_timed_out': r.timedOut
          }
        })),
        status: c.outcome === 'error' ? 'error' : 'unset',
        ...(err === undefined || c.outcome !== 'error' ? {} : { statusMessage: err.message.slice(0, 500) })
      })
    }

    const outcomeOf = (err: unknown, callOpts: CallOptions | undefined): LlmCallRecord['outcome'] =>
      (err as Error | null)?.name === 'LlmAbortedError' || callOpts?.signal?.aborted === true ? 'aborted' : 'error'

    const observe = async <T extends { readonly usage: Usage; readonly model: string }>(
      question: string,
      callOpts: CallOptions | undefined,
      run: () => Promise<T>
    ): Promise<T> => {
      const state: CallState = { retries: [], retryAtMs: [], now: clock.now }
      const startMs = clock.now()
      const t0 = clock.monotonic()
      const to = whereTo(callOpts)
      if (to?.parent.slot === true) to.tracer.noteWorkStart(to.parent.span, startMs)
      const finish = (
        outcome: LlmCallRecord['outcome'],
        usage: Usage,
        responseModel: string | null,
        err?: Error
      ): void => {
        const ms = clock.monotonic() - t0
        meterCall(question, outcome, usage, ms, state.retries.length)
        if (to === null) return
        emitChat(to, {
          question,
          maxOutputTokens: callOpts?.maxOutputTokens,
          startMs,
          ms,
          outcome,
          usage,
          cache: null,
          responseModel,
          retries: state.retries,
          retryAtMs: state.retryAtMs,
          turn: null,
          ...(err === undefined ? {} : { err })
        })
      }
      try {
        const out = await calls.run(state, run)
        finish('ok', out.usage, out.model)
        return out
      } catch (err) {
        finish(outcomeOf(err, callOpts), usageOf(err), null, err as Error)
        throw err
      }
    }

    /**
     * A task's tool loop: one model-call span per turn (from the turn's start
     * to its afterTurn, with that turn's tokens), an execute_tool span per
     * tool call, and one metered call for the whole loop. A turn that never
     * reached afterTurn (a failed request, or a provider with no turns such
     * as the offline one) gets its span when the loop ends.
     */
    const observeLoop = async (
      question: string,
      loopOpts: ToolLoopOptions,
      run: (o: ToolLoopOptions) => Promise<ToolLoopOutput>
    ): Promise<ToolLoopOutput> => {
      const state: CallState = { retries: [], retryAtMs: [], now: clock.now }
      const loopT0 = clock.monotonic()
      const to = whereTo(loopOpts)
      // A turn's span starts at the wall clock and times its duration from the monotonic one read right after it.
      const openTurn = (): { startMs: number; t0: number; retriesFrom: number } => ({
        startMs: clock.now(),
        t0: clock.monotonic(),
        retriesFrom: state.retries.length
      })
      let open: ReturnType<typeof openTurn> | null = openTurn()
      if (to?.parent.slot === true) to.tracer.noteWorkStart(to.parent.span, open.startMs)
      let turnNo = 1
      let usageBefore = ZERO_USAGE
      let cacheBefore: CacheUsage = { readTokens: 0, writeTokens: 0 }
      const closeTurn = (
        outcome: LlmCallRecord['outcome'],
        usage: Usage,
        cache: CacheUsage,
        responseModel: string | null,
        err?: Error
      ): void => {
        const turn = open
        open = null
        if (turn === null || to === null) return
        emitChat(to, {
          question,
          maxOutputTokens: loopOpts.maxOutputTokens,
          startMs: turn.startMs,
          ms: clock.monotonic() - turn.t0,
          outcome,
          usage: {
            inputTokens: Math.max(0, usage.inputTokens - usageBefore.inputTokens),
            outputTokens: Math.max(0, usage.outputTokens - usageBefore.outputTokens)
          },
          cache: {
            readTokens: Math.max(0, cache.readTokens - cacheBefore.readTokens),
            writeTokens: Math.max(0, cache.writeTokens - cacheBefore.writeTokens)
          },
          responseModel,
          retries: state.retries.slice(turn.retriesFrom),
          retryAtMs: state.retryAtMs.slice(turn.retriesFrom),
          turn: turnNo,
          ...(err === undefined ? {} : { err })
        })
      }
      const traced: ToolLoopOptions = {
        ...loopOpts,
        tools:
          to === null
            ? loopOpts.tools
            : tracedToolBox(loopOpts.tools, {
                sink: to.tracer,
                traceId: traceIdOf(to.trace.plan),
                parentSpanId: to.parent.span,
                attributes: { [ATTR.plan]: to.trace.plan, [ATTR.peer]: to.tracer.me, ...to.parent.attributes },
                now: clock.now,
                monotonic: clock.monotonic
              }),
        beforeTurn: usageSoFar => {
          const stop = loopOpts.beforeTurn?.(usageSoFar) ?? null
          if (stop === null) open = openTurn()
          return stop
        },
        afterTurn: (turn, usageSoFar, cacheSoFar) => {
          turnNo = turn
          closeTurn('ok', usageSoFar, cacheSoFar, null)
          usageBefore = usageSoFar
          cacheBefore = cacheSoFar
          turnNo = turn + 1
          loopOpts.afterTurn?.(turn, usageSoFar, cacheSoFar)
        }
      }
      try {
        const out = await calls.run(state, async () => await run(traced))
        closeTurn('ok', out.usage, out.cache, out.model)
        meterCall(question, 'ok', out.usage, clock.monotonic() - loopT0, state.retries.length)
        return out
      } catch (err) {
        const outcome = outcomeOf(err, loopOpts)
        const usage = usageOf(err)
        closeTurn(outcome, usage, cacheBefore, null, err as Error)
        meterCall(question, outcome, usage, clock.monotonic() - loopT0, state.retries.length)
        throw err
      }
    }

    const wrapped: LlmProvider = {
      name: provider.name,
      model: provider.model,
      cheapModel: provider.cheapModel,
      withModel: m => instrument(provider.withModel(m), opts),
      downgrade: () => {
        const d = provider.downgrade()
        return d === provider ? wrapped : instrument(d, opts)
      },
      decompose: async (input, o) => await observe('decompose', o, async () => await provider.decompose(input, o)),
      score: async (input, o) => await observe('score', o, async () => await provider.score(input, o)),
      execute: async (input, o) =>
        await observe(input.kind === 'leaf' ? 'execute' : 'roll-up', o, async () => await provider.execute(input, o)),
      executeWithTools: async (input, o) =>
        await observeLoop(
          input.kind === 'leaf' ? 'execute' : 'roll-up',
          o,
          async traced => await provider.executeWithTools(input, traced)
        ),
      review: async (input, o) => await observe('review', o, async () => await provider.review(input, o))
    }
    return wrapped
  }

  return { retryHooks, instrument }
}
