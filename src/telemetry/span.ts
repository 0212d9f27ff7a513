/**
 * A finished span as plain data: what the plan tracer and the model-call
 * wrapper produce, and what the OTLP exporter (otel-export.ts, the only
 * module that loads the OpenTelemetry SDK) turns into an SDK span. Keeping
 * spans as data lets everything but the exporter run, and be tested, with no
 * SDK loaded.
 */
import type { SpanId, TraceId } from './ids.js'

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>

export interface SpanSpec {
  readonly traceId: TraceId
  readonly spanId: SpanId
  /** null: a root span (only the plan span is one). */
  readonly parentSpanId: SpanId | null
  readonly name: string
  /** 'client' for model calls (the GenAI convention), 'internal' for the rest. */
  readonly kind: 'internal' | 'client'
  /** Wall-clock milliseconds since the epoch (fractions allowed). */
  readonly startMs: number
  readonly endMs: number
  readonly attributes: SpanAttributes
  /** Deps other than the parent: the rest of the event's causal inputs. */
  readonly links: ReadonlyArray<{ readonly spanId: SpanId; readonly attributes: SpanAttributes }>
  readonly events: ReadonlyArray<{
    readonly name: string
    readonly timeMs: number
    readonly attributes: SpanAttributes
  }>
  readonly status: 'unset' | 'ok' | 'error'
  readonly statusMessage?: string
}

/** Where finished spans go (the OTLP exporter, or a list in a test). */
export interface SpanSink {
  emit: (span: SpanSpec) => void
}

/*
 * Attribute names of the OpenTelemetry GenAI semantic conventions (the
 * incubating entry point of @opentelemetry/semantic-conventions 1.45:
 * ATTR_GEN_AI_*, GEN_AI_OPERATION_NAME_VALUE_CHAT), written out so that no
 * node loads that module; test/unit/telemetry-llm.test.ts checks them
 * against the package.
 */
export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name'
export const GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name'
export const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model'
export const GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens'
export const GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model'
export const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens'
export const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens'
export const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens'
export const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = 'gen_ai.usage.cache_creation.input_tokens'
export const GEN_AI_TOOL_NAME = 'gen_ai.tool.name'
export const GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id'
/** gen_ai.operation.name for a chat-style model request (ours force a tool call in a chat). */
export const GEN_AI_OPERATION_CHAT = 'chat'
/** gen_ai.operation.name for one tool call of a task's loop. */
export const GEN_AI_OPERATION_EXECUTE_TOOL = 'execute_tool'
/** The stable convention's error.type. */
export const ERROR_TYPE = 'error.type'

/** Our own attribute names: `plan_swarm.*`. */
export const ATTR = Object.freeze({
  plan: 'plan_swarm.plan.id',
  goal: 'plan_swarm.plan.goal',
  status: 'plan_swarm.plan.status',
  spentTokens: 'plan_swarm.plan.spent_tokens',
  budgetTokens: 'plan_swarm.plan.budget_tokens',
  event: 'plan_swarm.event.id',
  eventType: 'plan_swarm.event.type',
  hlc: 'plan_swarm.event.hlc',
  peer: 'plan_swarm.peer.id',
  node: 'plan_swarm.node.id',
  nodeTitle: 'plan_swarm.node.title',
  depth: 'plan_swarm.node.depth',
  nodeKind: 'plan_swarm.node.kind',
  leafReason: 'plan_swarm.node.leaf_reason',
  attempt: 'plan_swarm.attempt',
  outcome: 'plan_swarm.outcome',
  committee: 'plan_swarm.committee',
  choice: 'plan_swarm.ballot.choice',
  task: 'plan_swarm.task.id',
  taskKind: 'plan_swarm.task.kind',
  claim: 'plan_swarm.claim.id',
  result: 'plan_swarm.result.id',
  verdict: 'plan_swarm.review.verdict',
  model: 'plan_swarm.model',
  source: 'plan_swarm.result.source',
  /**
   * Tokens an event reports (and the plan's budget counts); not gen_ai.usage.*, so GenAI-aware backends count each call
   * once, on its model-call span.
   */
  inputTokens: 'plan_swarm.usage.input_tokens',
  outputTokens: 'plan_swarm.usage.output_tokens',
  /** The question asked of the model: decompose, score, execute, roll-up or review. */
  question: 'plan_swarm.llm.question',
  retries: 'plan_swarm.llm.retries',
  retried: 'plan_swarm.llm.retried',
  /** The turn of a task's tool loop a model-call span is (1 for the first). */
  turn: 'plan_swarm.llm.turn',
  /** The MCP server a tool call went to (gen_ai.tool.name is the tool's name there). */
  toolServer: 'plan_swarm.tool.server'
})
