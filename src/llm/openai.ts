/**
 * OpenAI-compatible chat completions (`POST <baseUrl>/chat/completions`) over
 * plain fetch: OpenAI, vLLM, llama.cpp, Ollama's /v1, LiteLLM and the like.
 * Structured answers come from a forced function call (`tool_choice: {type:
 * 'function'}`); a bad answer goes back as a `role: 'tool'` message saying
 * what was wrong. A task run with tools (agent-loop.ts) offers every tool
 * with `tool_choice: "required"` (the last turn forces report_result); the
 * API has no cache markers, so none are sent, and cached prompt tokens are
 * read from `usage.prompt_tokens_details.cached_tokens` where the endpoint
 * reports them.
 */
import type { Usage } from '../core/events.js'
import type { CacheUsage, LlmProvider } from './types.js'
import type { LoopCall, LoopConversation, LoopReply, LoopTransport } from './agent-loop.js'
import type { Prompt } from './prompts.js'
import { isRetryableStatus, parseRetryAfter, type RequestFailure } from './retry.js'
import { createModelProvider, type ModelProviderSettings } from './model-provider.js'
import { retryInstruction, type ToolConversation, type ToolReply, type ToolTransport } from './tool-call.js'
import type { ToolSpec } from './tools.js'
import { DEFAULT_REQUEST_TIMEOUT_MS } from './anthropic.js'

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1'
export const DEFAULT_OPENAI_MODEL = 'gpt-4o-mini'

export interface OpenAiProviderOptions extends Partial<ModelProviderSettings> {
  /** Sent as a bearer token when given; local servers usually need none. */
  readonly apiKey?: string
  readonly baseUrl?: string
  readonly timeoutMs?: number
  readonly fetch?: typeof fetch
}

/** A non-2xx answer from the endpoint. */
export class OpenAiHttpError extends Error {
  override readonly name = 'OpenAiHttpError'
  readonly status: number
  readonly retryAfterMs: number | null

  constructor(status: number, body: string, retryAfterMs: number | null) {
    super(`HTTP ${status}: ${body.slice(0, 300)}`)
    this.status = status
    this.retryAfterMs = retryAfterMs
  }
}

/** The request took longer than the timeout. */
export class OpenAiTimeoutError extends Error {
  override readonly name = 'OpenAiTimeoutError'
}

interface ChatToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}
interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string | null
  tool_calls?: ChatToolCall[]
  tool_call_id?: string
}

interface OpenAiReply extends ToolReply {
  readonly message: ChatMessage
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

const n = (x: unknown): number => (typeof x === 'number' && Number.isSafeInteger(x) && x > 0 ? x : 0)

function usageOf(u: unknown): Usage {
  return isObj(u)
    ? { inputTokens: n(u.prompt_tokens), outputTokens: n(u.completion_tokens) }
    : { inputTokens: 0, outputTokens: 0 }
}

/** Prompt tokens served from the endpoint's cache (already counted in prompt_tokens); no writes are reported. */
function cacheOf(u: unknown): CacheUsage {
  const details = isObj(u) ? u.prompt_tokens_details : undefined
  return { readTokens: isObj(details) ? n(details.cached_tokens) : 0, writeTokens: 0 }
}

function toolCalls(v: unknown): ChatToolCall[] {
  if (!Array.isArray(v)) return []
  return v.filter(
    (c): c is ChatToolCall =>
      isObj(c) &&
      typeof c.id === 'string' &&
      isObj(c.function) &&
      typeof c.function.name === 'string' &&
      typeof c.function.arguments === 'string'
  )
}

function parseReply(json: unknown, tool: ToolSpec): OpenAiReply {
  const choice: unknown = isObj(json) && Array.isArray(json.choices) ? json.choices[0] : undefined
  const msg: unknown = isObj(choice) ? choice.message : undefined
  const content = isObj(msg) && typeof msg.content === 'string' ? msg.content : null
  const calls = isObj(msg) ? toolCalls(msg.tool_calls) : []
  const message: ChatMessage = { role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}) }
  const use = calls.find(c => c.function.name === tool.name)
  let call: ToolReply['call'] = null
  if (use !== undefined) {
    try {
      call = { input: JSON.parse(use.function.arguments) as unknown }
    } catch (err) {
      call = { problem: `the arguments of ${tool.name} are not valid JSON (${(err as Error).message})` }
    }
  }
  return {
    call,
    text: content ?? '',
    usage: usageOf(isObj(json) ? json.usage : undefined),
    model: isObj(json) && typeof json.model === 'string' ? json.model : null,
    truncated: isObj(choice) && choice.finish_reason === 'length',
    message
  }
}

interface Connection {
  readonly url: string
  readonly apiKey?: string
  readonly timeoutMs: number
  readonly fetch: typeof fetch
}

/** POST one chat completion request; resolves with the parsed JSON, rejects with the transport's errors. */
async function post(conn: Connection, body: unknown, signal: AbortSignal | undefined): Promise<unknown> {
  const timeout = AbortSignal.timeout(conn.timeoutMs)
  const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout])
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (conn.apiKey !== undefined && conn.apiKey !== '') headers.authorization = `Bearer ${conn.apiKey}`
  try {
    const res = await conn.fetch(conn.url, { method: 'POST', headers, body: JSON.stringify(body), signal: combined })
    const text = await res.text()
    if (!res.ok)
      throw new OpenAiHttpError(
        res.status,
        text,
        parseRetryAfter(h => res.headers.get(h), Date.now())
      )
    try {
      return JSON.parse(text) as unknown
    } catch {
      throw new OpenAiHttpError(res.status, `response is not JSON: ${text.slice(0, 100)}`, null)
    }
  } catch (err) {
    if (timeout.aborted && signal?.aborted !== true)
      throw new OpenAiTimeoutError(`no answer within ${conn.timeoutMs} ms`)
    throw err
  }
}

function conversation(opts: Connection, prompt: Prompt, tool: ToolSpec, model: string): ToolConversation {
  const messages: ChatMessage[] = [
    { role: 'system', content: prompt.system },
    { role: 'user', content: prompt.user }
  ]
  return {
    async send({ signal, maxOutputTokens }): Promise<OpenAiReply> {
      const body = {
        model,
        messages,
        max_tokens: maxOutputTokens,
        tools: [
          { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.schema } }
        ],
        tool_choice: { type: 'function', function: { name: tool.name } }
      }
      return parseReply(await post(opts, body, signal), tool)
    },
    reject(reply: ToolReply, problem: string): void {
      const message = (reply as OpenAiReply).message
      const calls = message.tool_calls ?? []
      messages.push(calls.length > 0 ? message : { role: 'assistant', content: message.content ?? '(no answer)' })
      if (calls.length === 0) {
        messages.push({
          role: 'user',
          content: `${retryInstruction(tool.name, problem)} Answer only by calling ${tool.name}.`
        })
      } else {
        for (const c of calls)
          messages.push({ role: 'tool', tool_call_id: c.id, content: retryInstruction(tool.name, problem) })
      }
    }
  }
}

interface OpenAiLoopReply extends LoopReply {
  readonly message: ChatMessage
}

function parseLoopReply(json: unknown): OpenAiLoopReply {
  const choice: unknown = isObj(json) && Array.isArray(json.choices) ? json.choices[0] : undefined
  const msg: unknown = isObj(choice) ? choice.message : undefined
  const content = isObj(msg) && typeof msg.content === 'string' ? msg.content : null
  const chatCalls = isObj(msg) ? toolCalls(msg.tool_calls) : []
  const calls: LoopCall[] = chatCalls.map(c => {
    try {
      return { id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) as unknown }
    } catch (err) {
      return {
        id: c.id,
        name: c.function.name,
        problem: `the arguments of ${c.function.name} are not valid JSON (${(err as Error).message})`
      }
    }
  })
  const usage = isObj(json) ? json.usage : undefined
  return {
    calls,
    text: content ?? '',
    usage: usageOf(usage),
    cache: cacheOf(usage),
    model: isObj(json) && typeof json.model === 'string' ? json.model : null,
    truncated: isObj(choice) && choice.finish_reason === 'length',
    message: { role: 'assistant', content, ...(chatCalls.length > 0 ? { tool_calls: chatCalls } : {}) }
  }
}

function loopConversation(
  conn: Connection,
  prompt: Prompt,
  tools: readonly ToolSpec[],
  model: string
): LoopConversation {
  const messages: ChatMessage[] = [
    { role: 'system', content: prompt.system },
    { role: 'user', content: prompt.user }
  ]
  const functions = tools.map(t => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.schema }
  }))
  return {
    async send({ signal, maxOutputTokens, choice }): Promise<OpenAiLoopReply> {
      const body = {
        model,
        messages,
        max_tokens: maxOutputTokens,
        tools: functions,
        tool_choice: choice.kind === 'any' ? 'required' : { type: 'function', function: { name: choice.name } }
      }
      return parseLoopReply(await post(conn, body, signal))
    },
    answer(reply, results, note): void {
      const message = (reply as OpenAiLoopReply).message
      const hasCalls = (message.tool_calls ?? []).length > 0
      messages.push(hasCalls ? message : { role: 'assistant', content: message.content ?? '(no answer)' })
      // The API has no is_error: a failure says so in its text (a quoted result carries status="error").
      for (const r of results) messages.push({ role: 'tool', tool_call_id: r.id, content: r.text })
      if (note !== null || results.length === 0) messages.push({ role: 'user', content: note ?? 'Go on.' })
    }
  }
}

export function classifyOpenAiError(err: unknown): RequestFailure {
  const base = { status: null, retryable: false, timedOut: false, aborted: false, retryAfterMs: null }
  if (err instanceof OpenAiTimeoutError) return { ...base, retryable: true, timedOut: true, detail: err.message }
  if (err instanceof OpenAiHttpError) {
    // A 2xx that is not JSON is a broken proxy or server: worth another try.
    const retryable = isRetryableStatus(err.status) || (err.status >= 200 && err.status < 300)
    return { ...base, status: err.status, retryable, retryAfterMs: err.retryAfterMs, detail: err.message }
  }
  if (err instanceof Error && err.name === 'AbortError') return { ...base, aborted: true, detail: 'aborted' }
  // fetch rejects with a TypeError on connection failures.
  if (err instanceof TypeError)
    return {
      ...base,
      retryable: true,
      detail: `connection failed: ${String((err as { cause?: unknown }).cause ?? err.message)}`
    }
  return { ...base, detail: err instanceof Error ? err.message : String(err) }
}

export function openAiTransport(opts: {
  baseUrl: string
  apiKey?: string
  timeoutMs: number
  fetch?: typeof fetch
}): ToolTransport & LoopTransport {
  const conn: Connection = {
    url: `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`,
    apiKey: opts.apiKey,
    timeoutMs: opts.timeoutMs,
    fetch: opts.fetch ?? globalThis.fetch
  }
  return {
    provider: 'openai',
    start: (prompt, tool, model) => conversation(conn, prompt, tool, model),
    startLoop: (prompt, tools, model) => loopConversation(conn, prompt, tools, model),
    classify: classifyOpenAiError
  }
}

export function createOpenAiProvider(opts: OpenAiProviderOptions = {}): LlmProvider {
  const transport = openAiTransport({
    baseUrl: opts.baseUrl ?? DEFAULT_OPENAI_BASE_URL,
    apiKey: opts.apiKey,
    timeoutMs: opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    fetch: opts.fetch
  })
  return createModelProvider('openai', transport, {
    ...opts,
    model: opts.model ?? DEFAULT_OPENAI_MODEL,
    cheapModel: opts.cheapModel ?? null
  })
}
