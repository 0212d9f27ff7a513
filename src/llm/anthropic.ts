/**
 * The Anthropic Messages API through @anthropic-ai/sdk: api.anthropic.com, or
 * any server that speaks the Messages API (Ollama, llama.cpp) at `baseURL`.
 * Structured answers come from a forced tool call (`tool_choice: {type:
 * 'tool'}`); a bad answer goes back as a `tool_result` with `is_error: true`.
 * The SDK's own retries are off (`maxRetries: 0`): retry.ts does them, so they
 * are observable and the same for every provider.
 *
 * A task run with tools (agent-loop.ts) offers every tool with `tool_choice:
 * {type: 'any'}` (the last turn forces report_result) and marks prompt-cache
 * breakpoints (`cache_control: {type: 'ephemeral'}`) on the system prompt, on
 * the task's user message and on the last block of the newest user turn:
 * three of the four the API allows, so each turn reads the conversation so
 * far from the cache and writes only what the last turn added.
 */
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError
} from '@anthropic-ai/sdk'
import type { Usage } from '../core/events.js'
import type { CacheUsage, LlmProvider } from './types.js'
import type { LoopCall, LoopConversation, LoopReply, LoopTransport } from './agent-loop.js'
import type { Prompt } from './prompts.js'
import { isRetryableStatus, parseRetryAfter, type RequestFailure } from './retry.js'
import { createModelProvider, type ModelProviderSettings } from './model-provider.js'
import { retryInstruction, type ToolConversation, type ToolReply, type ToolTransport } from './tool-call.js'
import type { ToolSpec } from './tools.js'

export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-5-5'
export const DEFAULT_ANTHROPIC_CHEAP_MODEL = 'claude-haiku-5-5'
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com'
/** One HTTP request may take this long before it counts as timed out (and is retried). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000

export interface AnthropicProviderOptions extends Partial<ModelProviderSettings> {
  readonly apiKey: string
  readonly baseURL?: string
  readonly timeoutMs?: number
  /** A fetch to use instead of the global one (tests, proxies). */
  readonly fetch?: typeof fetch
  /**
   * Prompt-cache breakpoints in tool loops (default true). Internal: the
   * tool-cache benchmark turns them off to measure what they save.
   */
  readonly promptCache?: boolean
}

type ResponseBlock = Anthropic.Messages.ContentBlock
type ToolUseBlock = Anthropic.Messages.ToolUseBlock

const n = (x: number | null | undefined): number => (typeof x === 'number' && Number.isSafeInteger(x) && x > 0 ? x : 0)

function usageOf(u: Anthropic.Messages.Usage | undefined): Usage {
  return {
    // Cache writes and reads are billed input too.
    inputTokens: n(u?.input_tokens) + n(u?.cache_creation_input_tokens) + n(u?.cache_read_input_tokens),
    outputTokens: n(u?.output_tokens)
  }
}

function cacheOf(u: Anthropic.Messages.Usage | undefined): CacheUsage {
  return { readTokens: n(u?.cache_read_input_tokens), writeTokens: n(u?.cache_creation_input_tokens) }
}

/** The answer blocks that go back into the conversation as the assistant's turn. */
function asParams(blocks: readonly ResponseBlock[]): Anthropic.Messages.ContentBlockParam[] {
  const out: Anthropic.Messages.ContentBlockParam[] = []
  for (const b of blocks) {
    if (b.type === 'text' && b.text !== '') out.push({ type: 'text', text: b.text })
    if (b.type === 'tool_use') out.push({ type: 'tool_use', id: b.id, name: b.name, input: b.input })
  }
  return out
}

interface AnthropicReply extends ToolReply {
  readonly blocks: readonly ResponseBlock[]
}

function conversation(
  client: Anthropic,
  prompt: Prompt,
  tool: ToolSpec,
  model: string,
  timeoutMs: number
): ToolConversation {
  const messages: Anthropic.Messages.MessageParam[] = [{ role: 'user', content: prompt.user }]
  return {
    async send({ signal, maxOutputTokens }): Promise<AnthropicReply> {
      const res = await client.messages.create(
        {
          model,
          max_tokens: maxOutputTokens,
          system: prompt.system,
          messages,
          tools: [
            {
              name: tool.name,
              description: tool.description,
              input_schema: tool.schema as Anthropic.Messages.Tool.InputSchema
            }
          ],
          tool_choice: { type: 'tool', name: tool.name }
        },
        { signal, timeout: timeoutMs, maxRetries: 0 }
      )
      const blocks = Array.isArray(res.content) ? res.content : []
      const use = blocks.find((b): b is ToolUseBlock => b.type === 'tool_use' && b.name === tool.name)
      const text = blocks.map(b => (b.type === 'text' ? b.text : '')).join('')
      return {
        call: use === undefined ? null : { input: use.input },
        text,
        usage: usageOf(res.usage),
        model: typeof res.model === 'string' ? res.model : null,
        truncated: res.stop_reason === 'max_tokens',
        blocks
      }
    },
    reject(reply: ToolReply, problem: string): void {
      const blocks = (reply as AnthropicReply).blocks
      const content = asParams(blocks)
      messages.push({
        role: 'assistant',
        content: content.length > 0 ? content : [{ type: 'text', text: '(no answer)' }]
      })
      const uses = blocks.filter((b): b is ToolUseBlock => b.type === 'tool_use')
      if (uses.length === 0) {
        messages.push({
          role: 'user',
          content: `${retryInstruction(tool.name, problem)} Answer only by calling ${tool.name}.`
        })
      } else {
        // Every tool_use needs its tool_result in the next turn.
        messages.push({
          role: 'user',
          content: uses.map(u => ({
            type: 'tool_result' as const,
            tool_use_id: u.id,
            is_error: true,
            content: retryInstruction(tool.name, problem)
          }))
        })
      }
    }
  }
}

interface AnthropicLoopReply extends LoopReply {
  readonly blocks: readonly ResponseBlock[]
}

const EPHEMERAL = Object.freeze({ type: 'ephemeral' as const })

/** `block` with a cache breakpoint, or as it is when caching is off. */
function marked<T extends object>(block: T, cache: boolean): T {
  return cache ? { ...block, cache_control: EPHEMERAL } : block
}

type UserBlock = Anthropic.Messages.TextBlockParam | Anthropic.Messages.ToolResultBlockParam

/** The newest user turn with a breakpoint on its last block (the conversation's growing prefix). */
function markLast(messages: readonly Anthropic.Messages.MessageParam[]): Anthropic.Messages.MessageParam[] {
  const out = [...messages]
  const at = out.length - 1
  const m = out[at]
  if (at <= 0 || m === undefined || m.role !== 'user' || typeof m.content === 'string') return out
  const blocks = [...m.content]
  const lastBlock = blocks[blocks.length - 1]
  if (lastBlock === undefined) return out
  blocks[blocks.length - 1] = marked(lastBlock as UserBlock, true)
  out[at] = { role: 'user', content: blocks }
  return out
}

function loopConversation(
  client: Anthropic,
  prompt: Prompt,
  tools: readonly ToolSpec[],
  model: string,
  opts: { timeoutMs: number; cache: boolean }
): LoopConversation {
  const messages: Anthropic.Messages.MessageParam[] = [
    { role: 'user', content: [marked({ type: 'text' as const, text: prompt.user }, opts.cache)] }
  ]
  const system = [marked({ type: 'text' as const, text: prompt.system }, opts.cache)]
  const toolParams = tools.map(t => ({
    name: t.name,
    description: t.description,
    input_schema: t.schema as Anthropic.Messages.Tool.InputSchema
  }))
  return {
    async send({ signal, maxOutputTokens, choice }): Promise<AnthropicLoopReply> {
      const res = await client.messages.create(
        {
          model,
          max_tokens: maxOutputTokens,
          system,
          messages: opts.cache ? markLast(messages) : messages,
          tools: toolParams,
          tool_choice: choice.kind === 'any' ? { type: 'any' } : { type: 'tool', name: choice.name }
        },
        { signal, timeout: opts.timeoutMs, maxRetries: 0 }
      )
      const blocks = Array.isArray(res.content) ? res.content : []
      const calls: LoopCall[] = blocks
        .filter((b): b is ToolUseBlock => b.type === 'tool_use')
        .map(b => ({ id: b.id, name: b.name, input: b.input }))
      return {
        calls,
        text: blocks.map(b => (b.type === 'text' ? b.text : '')).join(''),
        usage: usageOf(res.usage),
        cache: cacheOf(res.usage),
        model: typeof res.model === 'string' ? res.model : null,
        truncated: res.stop_reason === 'max_tokens',
        blocks
      }
    },
    answer(reply, results, note): void {
      const content = asParams((reply as AnthropicLoopReply).blocks)
      messages.push({
        role: 'assistant',
        content: content.length > 0 ? content : [{ type: 'text', text: '(no answer)' }]
      })
      const user: UserBlock[] = results.map(r => ({
        type: 'tool_result' as const,
        tool_use_id: r.id,
        content: r.text,
        ...(r.isError ? { is_error: true } : {})
      }))
      if (note !== null || user.length === 0) user.push({ type: 'text', text: note ?? 'Go on.' })
      messages.push({ role: 'user', content: user })
    }
  }
}

/** Map the SDK's errors onto retry decisions. */
export function classifyAnthropicError(err: unknown): RequestFailure {
  const base = { status: null, retryable: false, timedOut: false, aborted: false, retryAfterMs: null }
  if (err instanceof APIUserAbortError) return { ...base, aborted: true, detail: 'aborted' }
  if (err instanceof APIConnectionTimeoutError)
    return { ...base, retryable: true, timedOut: true, detail: 'request timed out' }
  if (err instanceof APIConnectionError)
    return { ...base, retryable: true, detail: `connection failed: ${err.message}` }
  if (err instanceof APIError && typeof err.status === 'number') {
    const headers = err.headers
    const get = (name: string): string | null => headers?.get(name) ?? null
    const should = get('x-should-retry')
    const retryable = should === 'true' ? true : should === 'false' ? false : isRetryableStatus(err.status)
    return {
      ...base,
      status: err.status,
      retryable,
      retryAfterMs: parseRetryAfter(get, Date.now()),
      detail: `HTTP ${err.status}: ${err.message}`
    }
  }
  return { ...base, detail: err instanceof Error ? err.message : String(err) }
}

export function anthropicTransport(opts: {
  apiKey: string
  baseURL: string
  timeoutMs: number
  fetch?: typeof fetch
  /** Prompt-cache breakpoints in tool loops; default true. */
  promptCache?: boolean
}): ToolTransport & LoopTransport {
  const client = new Anthropic({
    apiKey: opts.apiKey,
    baseURL: opts.baseURL,
    maxRetries: 0,
    timeout: opts.timeoutMs,
    ...(opts.fetch !== undefined ? { fetch: opts.fetch } : {})
  })
  return {
    provider: 'anthropic',
    start: (prompt, tool, model) => conversation(client, prompt, tool, model, opts.timeoutMs),
    startLoop: (prompt, tools, model) =>
      loopConversation(client, prompt, tools, model, { timeoutMs: opts.timeoutMs, cache: opts.promptCache ?? true }),
    classify: classifyAnthropicError
  }
}

export function createAnthropicProvider(opts: AnthropicProviderOptions): LlmProvider {
  const transport = anthropicTransport({
    apiKey: opts.apiKey,
    baseURL: opts.baseURL ?? DEFAULT_ANTHROPIC_BASE_URL,
    timeoutMs: opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    fetch: opts.fetch,
    promptCache: opts.promptCache
  })
  return createModelProvider('anthropic', transport, {
    ...opts,
    model: opts.model ?? DEFAULT_ANTHROPIC_MODEL,
    cheapModel: opts.cheapModel === undefined ? DEFAULT_ANTHROPIC_CHEAP_MODEL : opts.cheapModel
  })
}
