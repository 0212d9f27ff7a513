/**
 * Model calls, measured: a wrapper around an LlmProvider that counts every
 * call's tokens and latency (the node's /metrics) and, when tracing is on,
 * emits a span per call with the OpenTelemetry GenAI attribute names, as a
 * child of the span of the work the call serves (CallOptions.trace: the
 * proposal, ballot or review slot it fills, or the claim it executes).
 *
 * HTTP retries happen inside the provider (src/llm/retry.ts); they reach
 * the call they belong to through the provider's retry hook and an
 * AsyncLocalStorage scoped to each call, never through shared state.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomBytes } from 'node:crypto'
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
  GEN_AI_USAGE_INPUT_TOKENS,
  GEN_AI_USAGE_OUTPUT_TOKENS
} from './span.js'
import type { PeerIdString, Usage } from '../core/events.js'
import type { RetryEvent, RetryHooks } from '../llm/retry.js'
import type { CallOptions, CallTrace, LlmProvider } from '../llm/types.js'
import type { SpanId } from './ids.js'
import type { SpanSink, SpanSpec } from './span.js'

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

    const observe = async <T extends { readonly usage: Usage; readonly model: string }>(
      question: string,
      callOpts: CallOptions | undefined,
      run: () => Promise<T>
    ): Promise<T> => {
      const state: CallState = { retries: [], retryAtMs: [], now: clock.now }
      const startMs = clock.now()
      const t0 = clock.monotonic()
      const trace = callOpts?.trace
      const parent = tracer === undefined || trace === undefined ? undefined : parentOfCall(trace, tracer.me)
      if (parent?.slot === true && tracer !== undefined) tracer.noteWorkStart(parent.span, startMs)
      const finish = (
        outcome: LlmCallRecord['outcome'],
        usage: Usage,
        responseModel: string | null,
        err?: Error
      ): void => {
        const ms = clock.monotonic() - t0
        meter?.llmCall({
          operation: question,
          model: provider.model,
          usage,
          seconds: ms / 1000,
          outcome,
          retries: state.retries.length
        })
        if (tracer === undefined || trace === undefined || parent === undefined) return
        const spanId = randomSpanId()
        const s: SpanSpec = {
          traceId: traceIdOf(trace.plan),
          spanId,
          parentSpanId: parent.span,
          name: `${GEN_AI_OPERATION_CHAT} ${provider.model}`,
          kind: 'client',
          startMs,
          endMs: startMs + ms,
          attributes: {
            [GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_CHAT,
            [GEN_AI_PROVIDER_NAME]: providerName(provider.name),
            [GEN_AI_REQUEST_MODEL]: provider.model,
            ...(responseModel === null ? {} : { [GEN_AI_RESPONSE_MODEL]: responseModel }),
            ...(callOpts?.maxOutputTokens === undefined
              ? {}
              : { [GEN_AI_REQUEST_MAX_TOKENS]: callOpts.maxOutputTokens }),
            [GEN_AI_USAGE_INPUT_TOKENS]: usage.inputTokens,
            [GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
            [ATTR.question]: question,
            [ATTR.retries]: state.retries.length,
            [ATTR.retried]: state.retries.length > 0,
            [ATTR.plan]: trace.plan,
            [ATTR.peer]: tracer.me,
            [ATTR.outcome]: outcome,
            ...parent.attributes,
            ...(err === undefined ? {} : { [ERROR_TYPE]: err.name })
          },
          links: [],
          events: state.retries.map((r, i) => ({
            name: 'retry',
            timeMs: state.retryAtMs[i] ?? startMs,
            attributes: {
              'plan_swarm.llm.retry': r.retry,
              'plan_swarm.llm.retry_delay_ms': r.delayMs,
              'plan_swarm.llm.retry_status': r.status ?? 0,
              'plan_swarm.llm.retry_timed_out': r.timedOut
            }
          })),
          status: outcome === 'error' ? 'error' : 'unset',
          ...(err === undefined || outcome !== 'error' ? {} : { statusMessage: err.message.slice(0, 500) })
        }
        tracer.emit(s)
      }
      try {
        const out = await calls.run(state, run)
        finish('ok', out.usage, out.model)
        return out
      } catch (err) {
        const aborted = (err as Error | null)?.name === 'LlmAbortedError' || callOpts?.signal?.aborted === true
        finish(aborted ? 'aborted' : 'error', usageOf(err), null, err as Error)
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
      review: async (input, o) => await observe('review', o, async () => await provider.review(input, o))
    }
    return wrapped
  }

  return { retryHooks, instrument }
}

/** A model call's own span id: random, as nothing else names it (its parent is what joins it to the trace). */
function randomSpanId(): SpanId {
  const id = randomBytes(8).toString('hex')
  return id === '0000000000000000' ? '0000000000000001' : id
}
