/**
 * Tool calls, traced: a ToolBox wrapper that emits one `execute_tool` span
 * per call (the OpenTelemetry GenAI convention: gen_ai.operation.name,
 * gen_ai.tool.name, gen_ai.tool.call.id when the model gave one, error.type
 * on failure), with the server as `plan_swarm.tool.server`. llm-spans.ts
 * wraps the tools of each traced task loop with it, so the spans hang under
 * the claim the loop executes, next to its model-call spans.
 */
import { randomBytes } from 'node:crypto'
import type { ToolBox } from '../llm/types.js'
import type { SpanId, TraceId } from './ids.js'
import {
  ATTR,
  ERROR_TYPE,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME,
  GEN_AI_TOOL_CALL_ID,
  GEN_AI_TOOL_NAME,
  type SpanAttributes,
  type SpanSink
} from './span.js'

/** error.type of a call the tool (or its server) failed: low cardinality, as the convention asks. */
export const TOOL_ERROR_TYPE = 'tool_error'

/** Where a loop's tool spans go and what they hang under. */
export interface ToolSpanContext {
  readonly sink: SpanSink
  readonly traceId: TraceId
  readonly parentSpanId: SpanId
  /** Attributes every span of the loop carries (plan, peer, the claim). */
  readonly attributes: SpanAttributes
  /** Wall-clock ms. */
  readonly now: () => number
  /** Monotonic ms, for durations. */
  readonly monotonic: () => number
}

/** A span id nothing else names (its parent joins it to the trace). */
export function randomSpanId(): SpanId {
  const id = randomBytes(8).toString('hex')
  return id === '0000000000000000' ? '0000000000000001' : id
}

/** `tools`, with a span for every call. Listing is passed through; what calls return is unchanged. */
export function tracedToolBox(tools: ToolBox, ctx: ToolSpanContext): ToolBox {
  return {
    list: () => tools.list(),
    async call(server, tool, args, opts) {
      const startMs = ctx.now()
      const t0 = ctx.monotonic()
      const emit = (outcome: 'ok' | 'error' | 'aborted', errorType: string | null, message: string | null): void => {
        ctx.sink.emit({
          traceId: ctx.traceId,
          spanId: randomSpanId(),
          parentSpanId: ctx.parentSpanId,
          name: `${GEN_AI_OPERATION_EXECUTE_TOOL} ${tool}`,
          kind: 'internal',
          startMs,
          endMs: startMs + (ctx.monotonic() - t0),
          attributes: {
            [GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
            [GEN_AI_TOOL_NAME]: tool,
            ...(opts.callId === undefined ? {} : { [GEN_AI_TOOL_CALL_ID]: opts.callId }),
            [ATTR.toolServer]: server,
            [ATTR.outcome]: outcome,
            ...ctx.attributes,
            ...(errorType === null ? {} : { [ERROR_TYPE]: errorType })
          },
          links: [],
          events: [],
          status: outcome === 'error' ? 'error' : 'unset',
          ...(message === null || outcome !== 'error' ? {} : { statusMessage: message.slice(0, 500) })
        })
      }
      try {
        const out = await tools.call(server, tool, args, opts)
        if (out.ok) emit('ok', null, null)
        else emit('error', TOOL_ERROR_TYPE, out.text)
        return out
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err))
        emit(opts.signal?.aborted === true ? 'aborted' : 'error', e.name, e.message)
        throw err
      }
    }
  }
}
