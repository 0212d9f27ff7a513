/**
 * A fake LLM server on 127.0.0.1 that speaks enough of the Anthropic Messages
 * API (`POST /v1/messages`, non-streaming) and of OpenAI chat completions
 * (`POST /v1/chat/completions`) for the real SDK and our fetch client.
 *
 * Replies follow a script (text, a tool call with given input, a malformed
 * tool call, an HTTP error with retry-after, a slow or hanging reply, a reset
 * connection); once the script runs out, "auto" mode answers any forced tool
 * call of plan-swarm with valid deterministic content derived from the
 * request, so a whole plan can run against it. Every request is recorded
 * (body, headers, time) so tests assert what was sent, and `GET
 * /_fake/requests` lists them for other processes (benchmarks count duplicate
 * executions from it).
 *
 * No test-framework imports: benchmarks and e2e scripts use it too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
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
}

export interface FakeUsage {
  readonly input_tokens: number
  readonly output_tokens: number
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

interface Ask {
  readonly api: FakeApi
  readonly tool: string | null
  readonly schema: any // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly prompt: string
  readonly model: string
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function askOf(api: FakeApi | 'other', body: any): Ask | null {
  if (api === 'anthropic') {
    const tool: string | null = body?.tool_choice?.type === 'tool' ? body.tool_choice.name : null
    const schema = (body?.tools ?? []).find((t: any) => t?.name === tool)?.input_schema
    const first = (body?.messages ?? []).find((m: any) => m?.role === 'user')
    const prompt = typeof first?.content === 'string' ? first.content : JSON.stringify(first?.content ?? '')
    return { api, tool, schema, prompt, model: String(body?.model ?? 'fake') }
  }
  if (api === 'openai') {
    const tool: string | null = body?.tool_choice?.type === 'function' ? body.tool_choice.function?.name : null
    const schema = (body?.tools ?? []).find((t: any) => t?.function?.name === tool)?.function?.parameters
    const first = (body?.messages ?? []).find((m: any) => m?.role === 'user')
    return { api, tool, schema, prompt: String(first?.content ?? ''), model: String(body?.model ?? 'fake') }
  }
  return null
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

function anthropicToolReply(
  n: number,
  model: string,
  name: string,
  input: unknown,
  usage: FakeUsage,
  stopReason = 'tool_use'
): unknown {
  return {
    id: `msg_fake_${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'tool_use', id: `toolu_fake_${n}`, name, input }],
    stop_reason: stopReason,
    stop_sequence: null,
    usage
  }
}

function openAiToolReply(
  n: number,
  model: string,
  name: string,
  input: unknown,
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
          tool_calls: [{ id: `call_fake_${n}`, type: 'function', function: { name, arguments: JSON.stringify(input) } }]
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
/* eslint-enable @typescript-eslint/no-explicit-any */

function errorBody(api: FakeApi | 'other', status: number, message: string): unknown {
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error'
  return api === 'openai' ? { error: { message, type, code: status } } : { type: 'error', error: { type, message } }
}

export async function startFakeLlm(opts: FakeLlmOptions = {}): Promise<FakeLlm> {
  const requests: RecordedRequest[] = []
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
      tool: ask?.tool ?? null
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
    const toolReply = (name: string, input: unknown, usage: FakeUsage | undefined, stop?: string): unknown => {
      const u = usage ?? { input_tokens: inTokens, output_tokens: tokens(JSON.stringify(input)) + 1 }
      return api === 'anthropic'
        ? anthropicToolReply(n, model, name, input, u, stop)
        : openAiToolReply(n, model, name, input, u, stop)
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
              step.usage ?? { input_tokens: inTokens, output_tokens: tokens(step.text) }
            )
          )
        )
        return
      case 'tool':
        later(delay, () =>
          send(res, 200, toolReply(step.name ?? ask.tool ?? 'tool', step.input, step.usage, step.stopReason))
        )
        return
      case 'malformed':
        later(delay, () => send(res, 200, toolReply(ask.tool ?? 'tool', { malformed: true }, step.usage)))
        return
      case 'auto':
        later(delay, () => {
          if (ask.tool === null)
            send(
              res,
              200,
              textReply(api as FakeApi, n, model, 'fake reply', { input_tokens: inTokens, output_tokens: 2 })
            )
          else send(res, 200, toolReply(ask.tool, autoInput(ask, opts.auto), undefined))
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
