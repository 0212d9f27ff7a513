/**
 * One structured question to a model: force a tool call, validate its input,
 * and on a bad answer send the problem back (as a failed tool result) and ask
 * again, up to `maxTries` answers. HTTP failures are retried underneath
 * (retry.ts). Usage is summed over every answer received, including the bad
 * ones, and travels on the errors too, so budgets see what failures cost.
 */
import { logger } from '@libp2p/logger'
import type { Usage } from '../core/events.js'
import { LlmOutputError } from './errors.js'
import { sendWithRetries, type RequestFailure, type RetryHooks, type RetryPolicy } from './retry.js'
import type { Prompt } from './prompts.js'
import type { ToolSpec } from './tools.js'
import { addUsage, ZERO_USAGE } from './types.js'
import type { Checked } from './validate.js'

const log = logger('plan-swarm:llm')

/** What a model's answer contained, whatever the wire format. */
export interface ToolReply {
  /** The forced tool's input; `problem` when the call was there but unreadable (e.g. arguments not JSON); null when no call came. */
  readonly call: { readonly input: unknown } | { readonly problem: string } | null
  /** Any plain text the model wrote alongside. */
  readonly text: string
  readonly usage: Usage
  /** The model that answered, as the endpoint named it. */
  readonly model: string | null
  /** The answer stopped at the token limit. */
  readonly truncated: boolean
}

/** A conversation with one endpoint about one question. */
export interface ToolConversation {
  /** Send the conversation so far; resolves with the answer, rejects with the transport's error. */
  send(opts: { signal?: AbortSignal; maxOutputTokens: number }): Promise<ToolReply>
  /** Append the model's answer and the problem with it, so the next send asks for a corrected call. */
  reject(reply: ToolReply, problem: string): void
}

/** A wire format (Anthropic Messages, OpenAI chat completions). */
export interface ToolTransport {
  readonly provider: string
  start(prompt: Prompt, tool: ToolSpec, model: string): ToolConversation
  classify(err: unknown): RequestFailure
}

export interface ToolCallSettings {
  readonly maxTries: number
  readonly policy: RetryPolicy
  readonly hooks: RetryHooks
}

export interface ToolCallResult<T> {
  readonly value: T
  readonly usage: Usage
  readonly model: string
}

/** Feedback the model gets on a bad answer. */
export function retryInstruction(tool: string, problem: string): string {
  return `Invalid answer: ${problem}. Call ${tool} again with the whole answer corrected.`
}

export async function callTool<T>(
  transport: ToolTransport,
  settings: ToolCallSettings,
  q: {
    operation: string
    prompt: Prompt
    tool: ToolSpec
    model: string
    maxOutputTokens: number
    validate: (input: unknown) => Checked<T>
    signal?: AbortSignal
  }
): Promise<ToolCallResult<T>> {
  const conversation = transport.start(q.prompt, q.tool, q.model)
  const problems: string[] = []
  let usage = ZERO_USAGE
  for (let attempt = 1; attempt <= Math.max(1, settings.maxTries); attempt++) {
    const reply = await sendWithRetries({
      provider: transport.provider,
      send: async () => await conversation.send({ signal: q.signal, maxOutputTokens: q.maxOutputTokens }),
      classify: err => transport.classify(err),
      policy: settings.policy,
      hooks: settings.hooks,
      signal: q.signal,
      usageSoFar: usage
    })
    usage = addUsage(usage, reply.usage)
    const model = reply.model !== null && reply.model !== '' ? reply.model : q.model
    let problem: string
    if (reply.call === null) {
      problem = reply.truncated
        ? `the answer reached the output token limit before any call to ${q.tool.name}; answer more briefly`
        : `no call to the tool ${q.tool.name}` +
          `${reply.text === '' ? '' : ` (the answer was plain text: ${JSON.stringify(reply.text.slice(0, 120))})`}`
    } else if ('problem' in reply.call) {
      problem = reply.call.problem
    } else {
      const checked = q.validate(reply.call.input)
      if (checked.ok) return { value: checked.value, usage, model }
      problem = checked.problem
      if (reply.truncated) problem += ' (the answer reached the output token limit: answer more briefly)'
    }
    problems.push(problem)
    log('%s %s: invalid answer %d/%d: %s', transport.provider, q.operation, attempt, settings.maxTries, problem)
    if (attempt < settings.maxTries) conversation.reject(reply, problem)
  }
  throw new LlmOutputError(q.operation, `${transport.provider} ${q.model}`, problems, usage)
}
