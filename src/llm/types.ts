/**
 * What the roles ask of a language model, and what they get back.
 *
 * Every provider (Anthropic, OpenAI-compatible, offline heuristics) answers the
 * same four questions with values the wire accepts as they are: subgoal lists
 * within the plan's child bounds, texts within the caps of src/core/limits.ts,
 * integer scores. A provider never makes an answer up: when the model cannot
 * produce a valid one it throws (see errors.ts), and the role turns that into
 * a released claim or a failed task.
 */
import type { EventId, NodeId, PlanId, Subgoal, ToolCallRecord, Usage } from '../core/events.js'
import type { JsonSchema } from './tools.js'

/** The kinds of provider `createProvider` can build. */
export const PROVIDER_NAMES = ['anthropic', 'openai', 'offline'] as const
export type ProviderName = (typeof PROVIDER_NAMES)[number]

/**
 * Angles decomposers take so that their proposals compete. A decomposer picks
 * one from its peer id; any other string is accepted and mapped onto the
 * closest of these by the offline provider (models read it as written).
 */
export const ANGLES = ['by place', 'by activity', 'by time', 'by phase', 'by resource'] as const
export type KnownAngle = (typeof ANGLES)[number]

/** A plan node as prompts see it. */
export interface NodeText {
  readonly title: string
  readonly detail: string
}

/** Context every call carries: the plan's goal and the titles of the ancestors, root first. */
export interface PlanContext {
  readonly goal: string
  /** Ancestor titles from the root down to (not including) the node in question; empty at the root. */
  readonly path: readonly string[]
}

export interface DecomposeInput extends PlanContext {
  readonly node: NodeText
  readonly angle: string
  readonly minChildren: number
  readonly maxChildren: number
  /** The children will sit at maxDepth: they become leaves whatever they say, so they should be executable. */
  readonly leafHint: boolean
  /** The committee's notes on the failed previous attempt; empty on a first attempt. */
  readonly notes: readonly string[]
  /**
   * Protocol 3: the capabilities executors in sight offer (tags, servers,
   * `server/tool`), so that a subgoal may say what it needs; empty or
   * absent in a plan without tools.
   */
  readonly tools?: readonly string[]
}

export interface DecomposeOutput {
  readonly subgoals: readonly Subgoal[]
  readonly rationale: string
  readonly usage: Usage
  readonly model: string
}

/** A proposal put to a scorer: the event id of its `split-proposed`, and what it proposes. */
export interface ProposalText {
  readonly id: string
  readonly subgoals: readonly Subgoal[]
  readonly rationale: string
}

export interface ScoreInput extends PlanContext {
  readonly node: NodeText
  readonly proposals: readonly ProposalText[]
}

export interface ScoreOutput {
  /** One entry per proposal given, in the order given. */
  readonly scores: ReadonlyArray<{ readonly proposal: string; readonly score: number; readonly notes: string }>
  /** The id of the proposal this scorer accepts, or null for none. */
  readonly choice: string | null
  readonly notes: string
  readonly usage: Usage
  readonly model: string
}

/** A finished task's output, fed into a later prompt as quoted data. */
export interface QuotedResult {
  readonly title: string
  readonly output: string
}

export interface ExecuteInput extends PlanContext {
  readonly task: NodeText
  /** 'leaf': do the task; 'rollup': combine the children's results into the node's deliverable. */
  readonly kind: 'leaf' | 'rollup'
  /** Results of the task's dependencies (leaf) or of the node's children (roll-up). */
  readonly inputs: readonly QuotedResult[]
}

export interface ExecuteOutput {
  readonly output: string
  readonly usage: Usage
  readonly model: string
  /** 'offline' when no model ran: the result is a heuristic placeholder, not work done. */
  readonly source: 'llm' | 'offline'
}

export interface ReviewInput extends PlanContext {
  readonly task: NodeText
  readonly output: string
}

export interface ReviewOutput {
  readonly verdict: 'accept' | 'reject'
  readonly notes: string
  readonly usage: Usage
  readonly model: string
}

/** Per-call options. */
export interface CallOptions {
  /** Abort the call (e.g. an executor learns an earlier claim won); rejects with LlmAbortedError. */
  readonly signal?: AbortSignal
  /** Upper bound on the tokens the model may generate in one response (e.g. the plan's maxTokensPerCall). */
  readonly maxOutputTokens?: number
  /** What the call is for, so tracing (src/telemetry) can hang its span under that work. Providers ignore it. */
  readonly trace?: CallTrace
}

/**
 * The work a model call serves, in the plan's terms: the proposal, ballot or
 * review slot the caller will fill with the answer, or the claim it executes.
 */
export type CallPurpose =
  | { readonly slot: 'proposal'; readonly node: NodeId; readonly attempt: number }
  | { readonly slot: 'ballot'; readonly node: NodeId; readonly attempt: number; readonly committee: EventId }
  | { readonly slot: 'review'; readonly result: EventId; readonly committee: EventId }
  | { readonly slot: 'claim'; readonly claim: EventId }

export interface CallTrace {
  readonly plan: PlanId
  readonly for: CallPurpose
}

/**
 * The LLM layer as roles use it. Implementations are stateless between calls
 * (safe to share across plans and roles) and never return an answer that
 * would fail the wire's shape checks.
 */
export interface LlmProvider {
  readonly name: ProviderName
  /** The model that answers calls (for the offline provider, a fixed label). */
  readonly model: string
  /** The cheaper model configured for budget downgrades, or null when there is none. */
  readonly cheapModel: string | null
  /** The same provider on another model (the offline provider returns itself). */
  withModel(model: string): LlmProvider
  /** The same provider on its cheap model, or itself when there is none: for plans near their token budget. */
  downgrade(): LlmProvider
  decompose(input: DecomposeInput, opts?: CallOptions): Promise<DecomposeOutput>
  score(input: ScoreInput, opts?: CallOptions): Promise<ScoreOutput>
  execute(input: ExecuteInput, opts?: CallOptions): Promise<ExecuteOutput>
  /**
   * Carry out a task with tools: a bounded loop of model turns and tool calls
   * (agent-loop.ts) that ends when the model reports its result. Rejects with
   * ToolLoopError (step limit, beforeTurn stop), LlmRequestError or
   * LlmAbortedError.
   */
  executeWithTools(input: ExecuteInput, opts: ToolLoopOptions): Promise<ToolLoopOutput>
  review(input: ReviewInput, opts?: CallOptions): Promise<ReviewOutput>
}

export const ZERO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0 })

export function addUsage(a: Usage, b: Usage): Usage {
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens }
}

// ---------------------------------------------------------------- tasks run with tools
// What a task run with tools needs and gives: the tools an executor offers (a `ToolBox`, served by src/tools over
// MCP), the limits of the loop, and what it reports. The loop itself is agent-loop.ts.

/** One tool an executor offers: the server it comes from, its name there, and its input schema. */
export interface ToolDef {
  readonly server: string
  readonly name: string
  readonly description: string
  readonly schema: JsonSchema
}

/** What a tool call gave back: its content as text, and whether the tool (or the call) failed. */
export interface ToolOutcome {
  readonly ok: boolean
  readonly text: string
}

/**
 * The tools of one executor. `call` never throws for a failure of the tool
 * or its server (a hang past `timeoutMs`, a crash, an unknown tool): it
 * resolves with `ok: false` and a text that says what went wrong, so the
 * model can read it and the loop goes on. It rejects only when `signal`
 * aborts.
 */
export interface ToolBox {
  /** The tools offered now (a server that is down offers none). */
  list(): readonly ToolDef[]
  call(
    server: string,
    tool: string,
    args: unknown,
    opts: {
      readonly timeoutMs: number
      readonly signal?: AbortSignal
      /** The model's id for this call, when it gave one (tracing names the call by it); ToolBoxes may ignore it. */
      readonly callId?: string
    }
  ): Promise<ToolOutcome>
}

/** The limits of one task's loop. */
export interface ToolLoopLimits {
  /** Model turns per task; a model still calling tools at the last one fails the task. */
  readonly maxSteps: number
  /** One tool call may take this long before it counts as failed (the model is told). */
  readonly toolTimeoutMs: number
  /** Bytes of one tool result kept for the model; the rest is cut, with a note saying so. */
  readonly maxResultBytes: number
}

export const DEFAULT_TOOL_LIMITS: ToolLoopLimits = Object.freeze({
  maxSteps: 20,
  toolTimeoutMs: 60_000,
  maxResultBytes: 16_384
})

/** Prompt-cache tokens over a loop (Anthropic reports them; 0 elsewhere). */
export interface CacheUsage {
  readonly readTokens: number
  readonly writeTokens: number
}

export interface ToolLoopOptions extends CallOptions {
  readonly tools: ToolBox
  readonly limits: ToolLoopLimits
  /**
   * Asked before each turn after the first with the usage so far: a reason
   * to stop (the plan ran out of budget, the claim was lost) or null to go on.
   */
  readonly beforeTurn?: (usageSoFar: Usage) => string | null
  /** Told after each turn (e.g. so the executor renews its lease), with the usage and cache figures so far. */
  readonly afterTurn?: (turn: number, usageSoFar: Usage, cacheSoFar: CacheUsage) => void
}

export interface ToolLoopOutput extends ExecuteOutput {
  /** Every tool call made, in order. */
  readonly calls: readonly ToolCallRecord[]
  /** Model turns taken. */
  readonly steps: number
  readonly cache: CacheUsage
}
