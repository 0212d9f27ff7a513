/**
 * What a task run with tools needs and gives: the tools an executor offers
 * (a `ToolBox`, served by src/tools over MCP), the limits of the loop, and
 * what the loop reports. The loop itself is agent-loop.ts; a provider runs
 * it through `executeWithTools`.
 */
import type { ToolCallRecord, Usage } from '../core/events.js'
import type { JsonSchema } from './tools.js'
import type { CallOptions, ExecuteInput, ExecuteOutput } from './types.js'

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

/** What providers that can run a task with tools add to LlmProvider. */
export interface ToolLoopProvider {
  executeWithTools(input: ExecuteInput, opts: ToolLoopOptions): Promise<ToolLoopOutput>
}
