/**
 * A fake LLM server on 127.0.0.1 that speaks enough of the Anthropic Messages
 * API (`POST /v1/messages`, non-streaming) and of OpenAI chat completions
 * (`POST /v1/chat/completions`) for the real SDK and our fetch client.
 *
 * Replies follow a script (text, a tool call with given input, several tool
 * calls in one answer, a malformed tool call, an HTTP error with
 * retry-after, a slow or hanging reply, a reset connection); once the script
 * runs out, "auto" mode answers any forced tool call of plan-swarm with valid
 * deterministic content derived from the request, so a whole plan can run
 * against it. A task run with tools (a request that offers tools besides
 * report_result) is answered in auto mode by one call of one of its tools,
 * then, once the conversation holds tool results, by report_result with an
 * output that quotes them.
 *
 * Anthropic prompt caching is modelled when a request carries cache_control
 * (an approximation, see `cacheAccount`): tokens are ceil(chars / 4), a
 * prefix some earlier request marked is read from the cache, the rest up to
 * the request's last breakpoint is written. Every request is recorded
 * (body, headers, time) so tests assert what was sent, and `GET
 * /_fake/requests` lists them for other processes (benchmarks count duplicate
 * executions from it).
 *
 * No test-framework imports: benchmarks and e2e scripts use it too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'

export type FakeApi = 'anthropic' | 'openai'

export interface RecordedRequest {
  /** 0-based, in arrival order. */
  readonly index: number
  readonly api: FakeApi | 'other'
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body (undefined when it was not JSON). */
  readonly body: any // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly raw: string
  /** Wall-clock milliseconds when the request arrived. */
  readonly at: number
  /** The forced tool's name, or null. */
  readonly tool: string | null
  /** The names of every tool the request offers, in order. */
  readonly offered: readonly string[]
}

export interface FakeUsage {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_input_tokens?: number
  readonly cache_creation_input_tokens?: number
}

/** One call of a `calls` step. */
export interface FakeCall {
  readonly name: string
  readonly input: unknown
}

export type ScriptStep =
  | { readonly kind: 'auto'; readonly delayMs?: number }
  | { readonly kind: 'text'; readonly text: string; readonly delayMs?: number; readonly usage?: FakeUsage }
  | {
      readonly kind: 'tool'
      readonly input: unknown
      readonly name?: string
      readonly delayMs?: number
      readonly usage?: FakeUsage
      readonly stopReason?: string
    }
  /** Several tool calls in one answer, of any names (a tool loop's turn). */
  | {
      readonly kind: 'calls'
      readonly calls: readonly FakeCall[]
      readonly delayMs?: number
      readonly usage?: FakeUsage
    }
  /** A tool call whose input fails every validator (`{ malformed: true }`). */
  | { readonly kind: 'malformed'; readonly delayMs?: number; readonly usage?: FakeUsage }
  | {
      readonly kind: 'status'
      readonly status: number
      readonly retryAfterS?: number
      readonly retryAfterMs?: number
      readonly message?: string
      readonly delayMs?: number
    }
  /** Exactly this JSON body (for replies no other step can express, e.g. tool arguments that are not JSON). */
  | { readonly kind: 'raw'; readonly body: unknown; readonly status?: number; readonly delayMs?: number }
  /** Never answers; the connection is cut on close(). */
  | { readonly kind: 'hang' }
  /** Destroys the connection without an answer. */
  | { readonly kind: 'reset'; readonly delayMs?: number }

/** A list consumed one step per request (then auto), or a function of the request. */
export type FakeScript = readonly ScriptStep[] | ((req: RecordedRequest) => ScriptStep)

export interface AutoOptions {
  /** Children per split (clamped to the tool's min..max); default 3. */
  readonly children?: number
  /** Subgoals at this depth or deeper are marked leaf (the root's children are depth 1); default 2. */
  readonly leafDepth?: number
  /** 'chain': each subgoal depends on the one before; default 'none'. */
  readonly deps?: 'none' | 'chain'
  /** 'first' (default): choose the first proposal; 'none': choose none. */
  readonly choice?: 'first' | 'none'
  /** Review verdict; default 'accept'. */
  readonly verdict?: 'accept' | 'reject'
}

export interface FakeLlmOptions {
  /** Delay before every answer (ms), unless a step says otherwise. */
  readonly latencyMs?: number
  readonly script?: FakeScript
  readonly auto?: AutoOptions
  /** The model name the fake reports; default: the one requested. */
  readonly model?: string
  /** Default 0 (any free port). */
  readonly port?: number
}

export interface FakeLlm {
  /** The server root: the Anthropic SDK's baseURL. */
  readonly url: string
  /** `${url}/v1`: the OpenAI-compatible base URL. */
  readonly openaiUrl: string
  readonly requests: RecordedRequest[]
  setScript(script: FakeScript): void
  /** Requests that forced the given tool (all model requests when omitted). */
  calls(tool?: string): RecordedRequest[]
  close(): Promise<void>
}

const TITLE_IN = (tag: string): RegExp => new RegExp(`<${tag} title="([^"]*)"`)

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|amp);/g, (_m, e: string) =>
    e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : '&'
  )
}

function attr(text: string, name: string): string | null {
  const m = new RegExp(`<constraints[^>]*\\s${name}="([^"]*)"`).exec(text)
  return m === null ? null : (m[1] as string)
}

/* eslint-disable @typescript-eslint/no-explicit-any */
interface OfferedTool {
  readonly name: string
  readonly schema: any
}

interface Ask {
  readonly api: FakeApi
  readonly tool: string | null
  readonly schema: any
  readonly prompt: string
  readonly model: string
  /** Every tool the request offers (absent in asks built by other helpers: then only the forced one). */
  readonly offered?: readonly OfferedTool[]
  /** 'any': the model may (must) call any offered tool (Anthropic `any`/`auto`, OpenAI `required`/`auto`). */
  readonly choice?: 'any' | 'tool' | 'none'
}

/** The text of a message's content: the string, or its text blocks joined. */
function contentText(content: any): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content))
    return content.map((b: any) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('')
  return ''
}

/** The prompt of a request: its first user message's text. */
export function promptText(body: any): string {
  const first = (body?.messages ?? []).find((m: any) => m?.role === 'user')
  return contentText(first?.content)
}

function askOf(api: FakeApi | 'other', body: any): Ask | null {
  if (api === 'anthropic') {
    const choice = body?.tool_choice?.type
    const tool: string | null = choice === 'tool' ? body.tool_choice.name : null
    const offered: OfferedTool[] = (body?.tools ?? []).map((t: any) => ({
      name: String(t?.name),
      schema: t?.input_schema
    }))
    return {
      api,
      tool,
      schema: offered.find(t => t.name === tool)?.schema,
      prompt: promptText(body),
      model: String(body?.model ?? 'fake'),
      offered,
      choice: choice === 'tool' ? 'tool' : choice === 'any' || choice === 'auto' ? 'any' : 'none'
    }
  }
  if (api === 'openai') {
    const choice = body?.tool_choice
    const tool: string | null = choice?.type === 'function' ? choice.function?.name : null
    const offered: OfferedTool[] = (body?.tools ?? []).map((t: any) => ({
      name: String(t?.function?.name),
      schema: t?.function?.parameters
    }))
    return {
      api,
      tool,
      schema: offered.find(t => t.name === tool)?.schema,
      prompt: promptText(body),
      model: String(body?.model ?? 'fake'),
      offered,
      choice: tool !== null ? 'tool' : choice === 'required' || choice === 'auto' ? 'any' : 'none'
    }
  }
  return null
}

/** The texts of the tool results a conversation holds, in order, as sent (quoted). */
export function toolResultsOf(api: FakeApi, body: any): string[] {
  const out: string[] = []
  for (const m of body?.messages ?? []) {
    if (api === 'openai' && m?.role === 'tool') out.push(String(m.content ?? ''))
    if (api === 'anthropic' && m?.role === 'user' && Array.isArray(m.content)) {
      for (const b of m.content) if (b?.type === 'tool_result') out.push(contentText(b.content))
    }
  }
  return out
}

/** A tool result's own text: the inside of its `<tool-result>` quote, unescaped. */
function unquoteResult(text: string): string {
  const m = /^<tool-result[^>]*>([\s\S]*)<\/tool-result>$/.exec(text)
  return unescapeXml(m === null ? text : (m[1] as string))
}

/** Input for a tool from its schema: its required properties filled ("x" for strings, 1 for numbers). */
export function fillArgs(schema: any): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const required: unknown[] = Array.isArray(schema?.required) ? schema.required : []
  for (const key of required) {
    if (typeof key !== 'string') continue
    const t = schema?.properties?.[key]?.type
    const type = Array.isArray(t) ? t[0] : t
    out[key] =
      type === 'number' || type === 'integer'
        ? 1
        : type === 'boolean'
          ? true
          : type === 'array'
            ? []
            : type === 'object'
              ? {}
              : 'x'
  }
  return out
}

function needsNothing(schema: any): boolean {
  return !Array.isArray(schema?.required) || schema.required.length === 0
}

/** Output over this many characters is cut (the wire caps outputs at 20,000). */
const MAX_AUTO_OUTPUT = 8_000

/**
 * Auto mode for a tool loop's turn: the first call of a tool (one that needs
 * no arguments, else the first, with its required arguments filled), then,
 * once tool results are in the conversation (or when report_result is
 * forced, or no other tool is offered), report_result quoting them.
 */
export function autoLoopCall(ask: Ask, body: any): FakeCall {
  const others = (ask.offered ?? []).filter(t => t.name !== 'report_result')
  const results = toolResultsOf(ask.api, body)
  if (ask.choice === 'any' && others.length > 0 && results.length === 0) {
    const pick = others.find(t => needsNothing(t.schema)) ?? (others[0] as OfferedTool)
    return { name: pick.name, input: fillArgs(pick.schema) }
  }
  const title = unescapeXml(TITLE_IN('task').exec(ask.prompt)?.[1] ?? 'task')
  let output = `result of ${title}`
  if (results.length > 0) output += `\n\nTool results:\n${results.map(unquoteResult).join('\n')}`
  return { name: 'report_result', input: { output: output.slice(0, MAX_AUTO_OUTPUT) } }
}

/** A task run with tools: the request offers report_result and may call it (or must), among others or alone. */
function isLoopAsk(ask: Ask): boolean {
  const offered = ask.offered ?? []
  if (!offered.some(t => t.name === 'report_result')) return false
  return ask.choice === 'any' || (ask.tool === 'report_result' && offered.length > 1)
}

/** Valid, deterministic tool input for plan-swarm's tools, derived from the request. */
export function autoInput(ask: Ask, auto: AutoOptions = {}): unknown {
  const p = ask.prompt
  switch (ask.tool) {
    case 'propose_split': {
      const items = ask.schema?.properties?.subgoals
      const min: number = items?.minItems ?? 2
      const max: number = items?.maxItems ?? 7
      const n = Math.max(min, Math.min(max, auto.children ?? 3))
      const node = unescapeXml(TITLE_IN('node').exec(p)?.[1] ?? 'node').slice(0, 150)
      const depth = Number(attr(p, 'depth') ?? '1')
      const leaf = attr(p, 'leaf-hint') === 'true' || depth >= (auto.leafDepth ?? 2)
      return {
        subgoals: Array.from({ length: n }, (_v, i) => ({
          title: `${node} / part ${i + 1}`,
          detail: `part ${i + 1} of ${n} of "${node}"`,
          leaf,
          dependsOn: auto.deps === 'chain' && i > 0 ? [i - 1] : []
        })),
        rationale: `fake split of "${node}" into ${n} parts`
      }
    }
    case 'score_proposals': {
      const labels: string[] = ask.schema?.properties?.scores?.items?.properties?.proposal?.enum ?? []
      return {
        scores: labels.map((label, i) => ({
          proposal: label,
          score: Math.max(0, 80 - i),
          notes: `fake score for ${label}`
        })),
        choice: auto.choice === 'none' ? null : (labels[0] ?? null),
        notes: 'fake scorer'
      }
    }
    case 'report_result':
      return { output: `result of ${unescapeXml(TITLE_IN('task').exec(p)?.[1] ?? 'task')}` }
    case 'review_result':
      return { verdict: auto.verdict ?? 'accept', notes: 'fake review' }
    default:
      return {}
  }
}

function tokens(s: string): number {
  return Math.ceil(s.length / 4)
}

/** Call ids: `<prefix><n>` for an answer's only call (as before), `<prefix><n>_<i>` for several. */
function callId(prefix: string, n: number, i: number, count: number): string {
  return count === 1 ? `${prefix}${n}` : `${prefix}${n}_${i}`
}

function anthropicToolReply(
  n: number,
  model: string,
  calls: readonly FakeCall[],
  usage: FakeUsage,
  stopReason = 'tool_use'
): unknown {
  return {
    id: `msg_fake_${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content: calls.map((c, i) => ({
      type: 'tool_use',
      id: callId('toolu_fake_', n, i, calls.length),
      name: c.name,
      input: c.input
    })),
    stop_reason: stopReason,
    stop_sequence: null,
    usage
  }
}

function openAiToolReply(
  n: number,
  model: string,
  calls: readonly FakeCall[],
  usage: FakeUsage,
  stopReason = 'tool_calls'
): unknown {
  return {
    id: `chatcmpl-fake-${n}`,
    object: 'chat.completion',
    created: 0,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: calls.map((c, i) => ({
            id: callId('call_fake_', n, i, calls.length),
            type: 'function',
            function: { name: c.name, arguments: JSON.stringify(c.input) }
          }))
        },
        finish_reason: stopReason === 'max_tokens' ? 'length' : stopReason
      }
    ],
    usage: {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.input_tokens + usage.output_tokens
    }
  }
}

function textReply(api: FakeApi, n: number, model: string, text: string, usage: FakeUsage): unknown {
  return api === 'anthropic'
    ? {
        id: `msg_fake_${n}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage
      }
    : {
        id: `chatcmpl-fake-${n}`,
        object: 'chat.completion',
        created: 0,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
        usage: { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens }
      }
}
/**
 * Anthropic prompt caching, approximated. The request is cut into parts in
 * the order the API caches them (each tool, each system block, each content
 * block of each message), each serialized as JSON without its cache_control.
 * A part that carries cache_control is a breakpoint (more than 4 is a 400,
 * as with the API). The longest prefix that ends on a part boundary at or
 * before the last breakpoint and that an earlier request (in this fake's
 * lifetime) marked with a breakpoint is read from the cache; the rest up to
 * the last breakpoint is written (every breakpoint's prefix is remembered);
 * the rest of the request is plain input. Tokens are ceil(chars / 4), and
 * the three add up to ceil(raw body chars / 4) as without caching. Not
 * modelled: minimum cacheable lengths, the 20-block lookback, expiry.
 */
export interface CacheAccount {
  readonly breakpoints: number
  readonly readTokens: number
  readonly writeTokens: number
  readonly inputTokens: number
}

function cacheParts(body: any): Array<{ text: string; mark: boolean }> {
  const parts: Array<{ text: string; mark: boolean }> = []
  const add = (v: any): void => {
    if (v === null || typeof v !== 'object') {
      parts.push({ text: JSON.stringify(v ?? null), mark: false })
      return
    }
    const { cache_control: cc, ...rest } = v
    parts.push({ text: JSON.stringify(rest), mark: cc !== undefined && cc !== null })
  }
  for (const t of body?.tools ?? []) add(t)
  if (typeof body?.system === 'string') add({ type: 'text', text: body.system })
  else for (const b of body?.system ?? []) add(b)
  for (const m of body?.messages ?? []) {
    if (typeof m?.content === 'string') add({ role: m.role, type: 'text', text: m.content })
    else for (const b of m?.content ?? []) add({ role: m?.role, ...b })
  }
  return parts
}

/** Whether a Messages request carries any cache_control. */
export function hasCacheControl(body: any): boolean {
  return cacheParts(body).some(p => p.mark)
}

export function cacheAccount(body: any, raw: string, written: Set<string>): CacheAccount {
  const parts = cacheParts(body)
  const keys: string[] = []
  const chars: number[] = []
  const hash = createHash('sha256')
  let total = 0
  for (const p of parts) {
    hash.update(`${p.text}\u0000`)
    keys.push(hash.copy().digest('hex'))
    total += p.text.length
    chars.push(total)
  }
  const marks = parts.flatMap((p, i) => (p.mark ? [i] : []))
  const lastMark = marks[marks.length - 1]
  const all = tokens(raw)
  if (lastMark === undefined) return { breakpoints: 0, readTokens: 0, writeTokens: 0, inputTokens: all }
  let hit = -1
  for (let i = lastMark; i >= 0; i--) {
    if (written.has(keys[i] as string)) {
      hit = i
      break
    }
  }
  const readChars = hit < 0 ? 0 : (chars[hit] as number)
  const readTokens = Math.ceil(readChars / 4)
  // Rounded at prefix boundaries, so a later read of this prefix is exactly what was read and written before.
  const writeTokens = hit === lastMark ? 0 : Math.ceil((chars[lastMark] as number) / 4) - readTokens
  for (const i of marks) written.add(keys[i] as string)
  return {
    breakpoints: marks.length,
    readTokens,
    writeTokens,
    inputTokens: Math.max(0, all - readTokens - writeTokens)
  }
}
/* eslint-enable @typescript-eslint/no-explicit-any */

function errorBody(api: FakeApi | 'other', status: number, message: string): unknown {
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error'
  return api === 'openai' ? { error: { message, type, code: status } } : { type: 'error', error: { type, message } }
}

export async function startFakeLlm(opts: FakeLlmOptions = {}): Promise<FakeLlm> {
  const requests: RecordedRequest[] = []
  /** Prefix hashes requests marked with cache_control (see cacheAccount). */
  const cacheWritten = new Set<string>()
  let script: FakeScript = opts.script ?? []
  let cursor = 0
  const timers = new Set<NodeJS.Timeout>()

  const nextStep = (req: RecordedRequest): ScriptStep => {
    if (typeof script === 'function') return script(req)
    const step = script[cursor]
    if (step === undefined) return { kind: 'auto' }
    cursor++
    return step
  }

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    if (res.destroyed) return
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(body))
  }

  const later = (ms: number, fn: () => void): void => {
    if (ms <= 0) {
      fn()
      return
    }
    const t = setTimeout(() => {
      timers.delete(t)
      fn()
    }, ms)
    timers.add(t)
  }

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string): void => {
    const path = (req.url ?? '/').split('?')[0] as string
    if (req.method === 'GET' && path === '/_fake/requests') {
      send(
        res,
        200,
        requests.map(r => ({
          index: r.index,
          api: r.api,
          path: r.path,
          tool: r.tool,
          at: r.at,
          model: r.body?.model ?? null
        }))
      )
      return
    }
    const api: FakeApi | 'other' = path.endsWith('/v1/messages')
      ? 'anthropic'
      : path.endsWith('/chat/completions')
        ? 'openai'
        : 'other'
    let body: unknown
    try {
      body = JSON.parse(raw)
    } catch {
      body = undefined
    }
    const ask = askOf(api, body)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : String(v ?? '')
    const rec: RecordedRequest = {
      index: requests.length,
      api,
      method: req.method ?? 'GET',
      path,
      headers,
      body,
      raw,
      at: Date.now(),
      tool: ask?.tool ?? null,
      offered: (ask?.offered ?? []).map(t => t.name)
    }
    requests.push(rec)
    if (req.method !== 'POST' || ask === null) {
      send(res, 404, errorBody(api, 404, `fake LLM: no route ${req.method ?? ''} ${path}`))
      return
    }

    const step = nextStep(rec)
    const n = rec.index
    const model = opts.model ?? ask.model
    const delay = 'delayMs' in step && step.delayMs !== undefined ? step.delayMs : (opts.latencyMs ?? 0)
    const inTokens = tokens(raw)
    const cached = api === 'anthropic' && hasCacheControl(body)
    if (cached) {
      const marks = cacheParts(body).filter(p => p.mark).length
      if (marks > 4) {
        const message = `A maximum of 4 blocks with cache_control may be provided. Found ${marks}.`
        send(res, 400, errorBody(api, 400, message), { 'x-should-retry': 'false' })
        return
      }
    }
    /** Input usage of a reply: plain, or split by the cache accounting (done once, when a reply is sent). */
    const inputUsage = (): Omit<FakeUsage, 'output_tokens'> => {
      if (!cached) return { input_tokens: inTokens }
      const c = cacheAccount(body, raw, cacheWritten)
      return {
        input_tokens: c.inputTokens,
        cache_read_input_tokens: c.readTokens,
        cache_creation_input_tokens: c.writeTokens
      }
    }
    const toolReply = (calls: readonly FakeCall[], usage: FakeUsage | undefined, stop?: string): unknown => {
      const u = usage ?? { ...inputUsage(), output_tokens: tokens(JSON.stringify(calls.map(c => c.input))) + 1 }
      return api === 'anthropic'
        ? anthropicToolReply(n, model, calls, u, stop)
        : openAiToolReply(n, model, calls, u, stop)
    }
    switch (step.kind) {
      case 'hang':
        return
      case 'reset':
        later(delay, () => req.socket.destroy())
        return
      case 'status': {
        const h: Record<string, string> = {
          'x-should-retry': step.status === 429 || step.status >= 500 ? 'true' : 'false'
        }
        if (step.retryAfterS !== undefined) h['retry-after'] = String(step.retryAfterS)
        if (step.retryAfterMs !== undefined) h['retry-after-ms'] = String(step.retryAfterMs)
        later(delay, () =>
          send(
            res,
            step.status,
            errorBody(api, step.status, step.message ?? `fake LLM: scripted HTTP ${step.status}`),
            h
          )
        )
        return
      }
      case 'raw':
        later(delay, () => send(res, step.status ?? 200, step.body))
        return
      case 'text':
        later(delay, () =>
          send(
            res,
            200,
            textReply(
              api as FakeApi,
              n,
              model,
              step.text,
              step.usage ?? { ...inputUsage(), output_tokens: tokens(step.text) }
            )
          )
        )
        return
      case 'tool':
        later(delay, () =>
          send(
            res,
            200,
            toolReply([{ name: step.name ?? ask.tool ?? 'tool', input: step.input }], step.usage, step.stopReason)
          )
        )
        return
      case 'calls':
        later(delay, () => send(res, 200, toolReply(step.calls, step.usage)))
        return
      case 'malformed':
        later(delay, () =>
          send(res, 200, toolReply([{ name: ask.tool ?? 'tool', input: { malformed: true } }], step.usage))
        )
        return
      case 'auto':
        later(delay, () => {
          if (isLoopAsk(ask)) send(res, 200, toolReply([autoLoopCall(ask, body)], undefined))
          else if (ask.tool === null)
            send(res, 200, textReply(api as FakeApi, n, model, 'fake reply', { ...inputUsage(), output_tokens: 2 }))
          else send(res, 200, toolReply([{ name: ask.tool, input: autoInput(ask, opts.auto) }], undefined))
        })
        return
      default: {
        const unreachable: never = step
        throw new Error(`unknown script step ${JSON.stringify(unreachable)}`)
      }
    }
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    openaiUrl: `${url}/v1`,
    requests,
    setScript(s: FakeScript): void {
      script = s
      cursor = 0
    },
    calls: (tool?: string) => requests.filter(r => r.api !== 'other' && (tool === undefined || r.tool === tool)),
    async close(): Promise<void> {
      for (const t of timers) clearTimeout(t)
      timers.clear()
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    }
  }
}
