/**
 * A task run with tools, through any transport: the bounded agent loop. The
 * model gets the task prompt and the executor's tools (under model-safe
 * names) plus report_result; each turn it calls tools, the loop runs them and
 * sends their results back as quoted data, until it reports a valid result or
 * the step limit runs out. On the last turn only report_result is allowed.
 * Shared by the Anthropic and OpenAI-compatible providers, which differ only
 * in transport, as tool-call.ts is for single questions.
 *
 * HTTP failures are retried underneath (retry.ts), exactly as for single
 * questions. Usage is summed over every turn and travels on the errors.
 */
import { logger } from '@libp2p/logger'
import type { ToolCallRecord, Usage } from '../core/events.js'
import { MAX_TOOL_ARGS_CHARS, MAX_TOOL_ERROR_CHARS, MAX_TOOL_MS, MAX_TOOL_NAME_CHARS } from '../core/limits.js'
import {
  addUsage,
  ZERO_USAGE,
  type CacheUsage,
  type ExecuteInput,
  type ToolBox,
  type ToolDef,
  type ToolLoopLimits,
  type ToolLoopOptions,
  type ToolLoopOutput
} from './types.js'
import { LlmAbortedError, ToolLoopError } from './errors.js'
import { buildToolLoopPrompt, quoteToolResult, type Prompt } from './prompts.js'
import { sendWithRetries, type RequestFailure, type RetryHooks, type RetryPolicy } from './retry.js'
import { retryInstruction } from './tool-call.js'
import { RESULT_TOOL, resultTool, type ToolSpec } from './tools.js'
import { checkOutput } from './validate.js'

const log = logger('plan-swarm:llm')

/** One tool call in a model's answer: its id, the name called, and its input (or why that is unreadable). */
export type LoopCall =
  | { readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly id: string; readonly name: string; readonly problem: string }

/** What one model turn gave, whatever the wire format. */
export interface LoopReply {
  /** Every tool call of the answer, in order. */
  readonly calls: readonly LoopCall[]
  /** Any plain text the model wrote alongside. */
  readonly text: string
  /** Billed tokens of the turn (cache reads and writes are in inputTokens). */
  readonly usage: Usage
  readonly cache: CacheUsage
  /** The model that answered, as the endpoint named it. */
  readonly model: string | null
  /** The answer stopped at the token limit. */
  readonly truncated: boolean
}

/** The answer to one tool call, as it goes back to the model. */
export interface LoopResult {
  /** The id of the call it answers. */
  readonly id: string
  readonly text: string
  readonly isError: boolean
}

/** Which tools the model may call this turn: any of them, or only the one named. */
export type LoopChoice = { readonly kind: 'any' } | { readonly kind: 'tool'; readonly name: string }

/** A conversation with one endpoint about one task. */
export interface LoopConversation {
  /** Send the conversation so far; resolves with the answer, rejects with the transport's error. */
  send(opts: { signal?: AbortSignal; maxOutputTokens: number; choice: LoopChoice }): Promise<LoopReply>
  /**
   * Append the model's answer, then one result per call of it (in the calls'
   * order) and, when given, `note` as text of the same user turn.
   */
  answer(reply: LoopReply, results: readonly LoopResult[], note: string | null): void
}

/** A wire format that can run the loop (Anthropic Messages, OpenAI chat completions). */
export interface LoopTransport {
  readonly provider: string
  startLoop(prompt: Prompt, tools: readonly ToolSpec[], model: string): LoopConversation
  classify(err: unknown): RequestFailure
}

export interface LoopSettings {
  readonly policy: RetryPolicy
  readonly hooks: RetryHooks
}

/** A tool as the model sees it, and where a call to it goes. */
export interface ExposedTool {
  /** Unique among the tools offered, matching {@link MODEL_TOOL_NAME}; never report_result. */
  readonly name: string
  readonly def: ToolDef
}

/** The names the Anthropic and OpenAI APIs accept for a tool. */
export const MODEL_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

const MAX_NAME = 64

/**
 * Model-safe unique names for the tools, in order: `<server>__<tool>` with
 * every other character made `_`, cut to 64, and a `_2`, `_3`, ... suffix
 * where two would be the same (or would be report_result).
 */
export function exposeTools(defs: readonly ToolDef[]): ExposedTool[] {
  const taken = new Set<string>([RESULT_TOOL])
  const out: ExposedTool[] = []
  for (const def of defs) {
    const clean = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, '_')
    const base = `${clean(def.server)}__${clean(def.name)}`.slice(0, MAX_NAME)
    let name = base
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, MAX_NAME - String(n).length - 1)}_${n}`
    taken.add(name)
    out.push({ name, def })
  }
  return out
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Cut `text` to at most `maxBytes` UTF-8 bytes, on a character boundary, with a note saying so. */
export function cutToBytes(text: string, maxBytes: number): string {
  const bytes = encoder.encode(text)
  if (bytes.length <= maxBytes) return text
  let end = Math.max(0, Math.floor(maxBytes))
  // Back off continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--
  return `${decoder.decode(bytes.subarray(0, end))}\n[... cut: the tool returned ${bytes.length} bytes, ${end} kept]`
}

/** `text` cut to at most `max` UTF-16 units without splitting a surrogate pair. */
function cutChars(text: string, max: number): string {
  if (text.length <= max) return text
  const code = text.charCodeAt(max - 1)
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)
}

/** Read through a call so TypeScript does not keep an earlier check's narrowing across awaits. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

/** The record of one tool call, within the caps the result event allows (src/core/limits.ts). */
export function toolRecord(
  server: string,
  tool: string,
  args: unknown,
  ms: number,
  ok: boolean,
  text: string
): ToolCallRecord {
  let json: string | undefined
  try {
    json = JSON.stringify(args)
  } catch {
    json = undefined
  }
  return {
    server: cutChars(server, MAX_TOOL_NAME_CHARS),
    tool: cutChars(tool, MAX_TOOL_NAME_CHARS),
    ms: Math.min(MAX_TOOL_MS, Math.max(0, Math.round(ms))),
    ok,
    args: json !== undefined && json.length <= MAX_TOOL_ARGS_CHARS ? json : null,
    error: ok ? null : cutChars(text === '' ? 'failed' : text, MAX_TOOL_ERROR_CHARS)
  }
}

/**
 * Run one tool call through the ToolBox, timing it. A ToolBox that breaks its
 * contract and throws counts as a failed call; an abort becomes
 * LlmAbortedError with the usage so far.
 */
export async function runToolCall(
  tools: ToolBox,
  def: ToolDef,
  args: unknown,
  opts: { limits: ToolLoopLimits; signal?: AbortSignal; callId?: string; usage: Usage }
): Promise<{ ok: boolean; text: string; record: ToolCallRecord }> {
  if (aborted(opts.signal)) throw new LlmAbortedError(opts.usage)
  const t0 = performance.now()
  let ok: boolean
  let text: string
  try {
    const out = await tools.call(def.server, def.name, args, {
      timeoutMs: opts.limits.toolTimeoutMs,
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      ...(opts.callId === undefined ? {} : { callId: opts.callId })
    })
    ok = out.ok
    text = out.text
  } catch (err) {
    if (aborted(opts.signal)) throw new LlmAbortedError(opts.usage)
    ok = false
    text = `the tool call failed: ${err instanceof Error ? err.message : String(err)}`
  }
  return { ok, text, record: toolRecord(def.server, def.name, args, performance.now() - t0, ok, text) }
}

/** The reason a loop that never reported a result stops with. */
export function stepLimitReason(steps: number): string {
  return `the model called tools for ${steps} steps without reporting a result (the step limit)`
}

function addCache(a: CacheUsage, b: CacheUsage): CacheUsage {
  return { readTokens: a.readTokens + b.readTokens, writeTokens: a.writeTokens + b.writeTokens }
}

/**
 * Run the task as a tool loop. Resolves with the reported output, the usage
 * and cache figures summed over every turn, the calls made and the turns
 * taken; rejects with ToolLoopError, LlmRequestError or LlmAbortedError.
 */
export async function runToolLoop(
  transport: LoopTransport,
  settings: LoopSettings,
  q: { input: ExecuteInput; model: string; maxOutputTokens: number; opts: ToolLoopOptions }
): Promise<Omit<ToolLoopOutput, 'model' | 'source'> & { readonly model: string }> {
  const { opts } = q
  const limits = opts.limits
  const maxSteps = Math.max(1, Math.floor(limits.maxSteps))
  const exposed = exposeTools(opts.tools.list())
  const byName = new Map(exposed.map(t => [t.name, t]))
  const specs: ToolSpec[] = [
    ...exposed.map(t => ({ name: t.name, description: t.def.description, schema: t.def.schema })),
    resultTool()
  ]
  const prompt = buildToolLoopPrompt(
    q.input,
    exposed.map(t => ({ name: t.name, server: t.def.server, description: t.def.description })),
    { ...limits, maxSteps }
  )
  const known = [...exposed.map(t => t.name), RESULT_TOOL].join(', ')
  const conversation = transport.startLoop(prompt, specs, q.model)
  const calls: ToolCallRecord[] = []
  let usage = ZERO_USAGE
  let cache: CacheUsage = { readTokens: 0, writeTokens: 0 }
  let model = q.model

  for (let step = 1; step <= maxSteps; step++) {
    if (step > 1) {
      const stop = opts.beforeTurn?.(usage) ?? null
      if (stop !== null) throw new ToolLoopError(stop, usage, calls, step - 1)
    }
    const last = step === maxSteps
    const reply = await sendWithRetries({
      provider: transport.provider,
      send: async () =>
        await conversation.send({
          signal: opts.signal,
          maxOutputTokens: q.maxOutputTokens,
          choice: last ? { kind: 'tool', name: RESULT_TOOL } : { kind: 'any' }
        }),
      classify: err => transport.classify(err),
      policy: settings.policy,
      hooks: settings.hooks,
      signal: opts.signal,
      usageSoFar: usage
    })
    usage = addUsage(usage, reply.usage)
    cache = addCache(cache, reply.cache)
    if (reply.model !== null && reply.model !== '') model = reply.model
    opts.afterTurn?.(step, usage, cache)

    // A valid report_result ends the task; the answer's other calls are not run.
    const results: LoopResult[] = []
    for (const c of reply.calls) {
      if (c.name !== RESULT_TOOL) continue
      const checked = 'problem' in c ? { ok: false as const, problem: c.problem } : checkOutput(c.input)
      if (checked.ok) return { output: checked.value.output, usage, model, calls, steps: step, cache }
      let problem = checked.problem
      if (reply.truncated) problem += ' (the answer reached the output token limit: answer more briefly)'
      log('%s tool loop: invalid %s at step %d: %s', transport.provider, RESULT_TOOL, step, problem)
      results.push({ id: c.id, text: retryInstruction(RESULT_TOOL, problem), isError: true })
    }
    if (last) break

    for (const c of reply.calls) {
      if (c.name === RESULT_TOOL) continue
      const tool = byName.get(c.name)
      if (tool === undefined) {
        // Not recorded: no server was asked, and the record names a server.
        results.push({ id: c.id, text: `no tool named ${c.name}; the tools are ${known}`, isError: true })
        continue
      }
      if ('problem' in c) {
        results.push({ id: c.id, text: `${c.problem}; call ${c.name} again with valid JSON`, isError: true })
        continue
      }
      const r = await runToolCall(opts.tools, tool.def, c.input, {
        limits,
        signal: opts.signal,
        callId: c.id,
        usage
      })
      calls.push(r.record)
      const text = quoteToolResult(tool.def.server, tool.def.name, cutToBytes(r.text, limits.maxResultBytes), r.ok)
      results.push({ id: c.id, text, isError: !r.ok })
    }
    // Results go back in the order of the calls they answer.
    const order = new Map(reply.calls.map((c, i) => [c.id, i]))
    results.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0))

    const notes: string[] = []
    if (reply.calls.length === 0) {
      notes.push(
        reply.truncated
          ? 'The answer reached the output token limit before any tool call; answer more briefly.'
          : `No tool call. Answer only with tool calls: one of the tools, or ${RESULT_TOOL} when the task is done.`
      )
    }
    if (step + 1 === maxSteps) {
      notes.push(`This is the last turn: call ${RESULT_TOOL} now with the whole result, from what you have.`)
    }
    if (aborted(opts.signal)) throw new LlmAbortedError(usage)
    conversation.answer(reply, results, notes.length === 0 ? null : notes.join(' '))
  }
  throw new ToolLoopError(stepLimitReason(maxSteps), usage, calls, maxSteps)
}
