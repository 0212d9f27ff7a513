/**
 * Errors of the LLM layer. One class per condition, each with a stable `name`
 * and a message that says what to do. Roles turn LlmOutputError and
 * LlmRequestError into a released claim or a `task-failed` (carrying `usage`,
 * so tokens spent on a failure still count against the budget); they never
 * substitute a made-up answer.
 */
import type { ToolCallRecord, Usage } from '../core/events.js'

/** The provider options or environment cannot make a working provider. */
export class ProviderConfigError extends Error {
  override readonly name = 'ProviderConfigError'
  /** Same exit code as the runtime's ConfigError: a bad command line or environment. */
  readonly exitCode = 2
}

/** The model kept answering with output that fails validation, after every allowed try. */
export class LlmOutputError extends Error {
  override readonly name = 'LlmOutputError'
  readonly operation: string
  readonly attempts: number
  /** What was wrong with each try, in order. */
  readonly problems: readonly string[]
  /** Tokens spent on all the tries. */
  readonly usage: Usage

  constructor(operation: string, model: string, problems: readonly string[], usage: Usage) {
    const last = problems[problems.length - 1] ?? 'no answer'
    super(
      `${model} gave no valid ${operation} answer in ${problems.length} tries (last problem: ${last}); ` +
        'release or fail the task rather than using a made-up answer, or try a stronger model with --model'
    )
    this.operation = operation
    this.attempts = problems.length
    this.problems = problems
    this.usage = usage
  }
}

/** The endpoint failed: a non-retryable HTTP status, or retryable failures (429, 5xx, timeouts) past the retry limit. */
export class LlmRequestError extends Error {
  override readonly name = 'LlmRequestError'
  /** HTTP status, or null for a connection failure or timeout. */
  readonly status: number | null
  readonly retryable: boolean
  readonly timedOut: boolean
  /** HTTP requests made, including retries. */
  readonly requests: number
  /** Tokens spent by earlier successful responses of the same call (validation retries). */
  readonly usage: Usage

  constructor(opts: {
    provider: string
    status: number | null
    retryable: boolean
    timedOut: boolean
    requests: number
    usage: Usage
    detail: string
  }) {
    super(
      `${opts.provider} request failed ` +
        `after ${opts.requests} ${opts.requests === 1 ? 'try' : 'tries'}: ${opts.detail}; ${advice(opts.status, opts.timedOut)}`
    )
    this.status = opts.status
    this.retryable = opts.retryable
    this.timedOut = opts.timedOut
    this.requests = opts.requests
    this.usage = opts.usage
  }
}

function advice(status: number | null, timedOut: boolean): string {
  if (timedOut) return 'the endpoint did not answer in time: check it is up, or allow a longer timeout'
  if (status === 401 || status === 403) return 'check the API key (ANTHROPIC_API_KEY or OPENAI_API_KEY)'
  if (status === 404) return 'check --base-url and --model'
  if (status === 400 || status === 413 || status === 422)
    return 'the endpoint refused the request: check --model and that it supports forced tool calls'
  if (status === 429) return 'rate limited: slow down, or raise the limit with the provider'
  if (status !== null && status >= 500) return 'the endpoint kept failing: try again later'
  return 'check --base-url and that the endpoint is reachable'
}

/** The caller aborted the call (its signal fired). */
export class LlmAbortedError extends Error {
  override readonly name = 'LlmAbortedError'
  readonly usage: Usage

  constructor(usage: Usage) {
    super('LLM call aborted by the caller')
    this.usage = usage
  }
}

/**
 * A task's tool loop stopped without a result: the step limit ran out while
 * the model was still calling tools, or `beforeTurn` gave a reason to stop
 * (the plan's budget, a lost claim). It carries what the loop cost and did,
 * so budgets count the tokens and the failure can record the calls.
 */
export class ToolLoopError extends Error {
  override readonly name = 'ToolLoopError'
  /** Why the loop stopped, in words (the step limit, or what beforeTurn said). */
  readonly reason: string
  /** Tokens spent on every turn taken. */
  readonly usage: Usage
  /** Every tool call made, in order. */
  readonly calls: readonly ToolCallRecord[]
  /** Model turns taken. */
  readonly steps: number

  constructor(reason: string, usage: Usage, calls: readonly ToolCallRecord[], steps: number) {
    super(`the task's tool loop stopped after ${steps} ${steps === 1 ? 'turn' : 'turns'}: ${reason}`)
    this.reason = reason
    this.usage = usage
    this.calls = calls
    this.steps = steps
  }
}
