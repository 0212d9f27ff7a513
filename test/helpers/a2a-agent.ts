/**
 * A stand-in A2A agent for the tests of `--role executor --a2a-agent URL`,
 * built from the SDK's server pieces (DefaultRequestHandler,
 * JsonRpcTransportHandler, InMemoryTaskStore, an AgentExecutor) over
 * node:http: its card at /.well-known/agent-card.json, JSON-RPC at /a2a.
 *
 * What it does with a task depends on a mode, picked per message: the first
 * `[a2a:<mode>]` tag in the message's text (the plan's goal carries it), else
 * the agent's default mode.
 *   - normal: working, an artifact, completed;
 *   - slow: working, then a status update every `beatMs` for `slowMs`, then
 *     as normal (so the executor renews its lease meanwhile);
 *   - failing: working, then failed with a message;
 *   - input-required: asks for input (and waits for an answer that never comes);
 *   - garbage: answers the stream with bytes that are no A2A;
 *   - silent: working, then nothing, ever (until cancelled);
 *   - hang: never answers the HTTP request at all;
 *   - endless: status updates forever, never done (until cancelled).
 * Everything received and every cancel is recorded.
 */
import { createServer } from 'node:http'
import { AgentCard, TaskState, formatSSEEvent } from '@a2a-js/sdk'
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  defaultServerCallContextBuilder
} from '@a2a-js/sdk/server'
import type { Message, Part } from '@a2a-js/sdk'
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export const AGENT_MODES = [
  'normal',
  'slow',
  'failing',
  'input-required',
  'garbage',
  'silent',
  'hang',
  'endless'
] as const
export type AgentMode = (typeof AGENT_MODES)[number]

export interface Received {
  readonly taskId: string
  readonly mode: AgentMode
  readonly text: string
  /** The data part, if the message had one. */
  readonly data: unknown
  readonly at: number
}

export interface StandInAgentOptions {
  /** Listen here (default: any free port on 127.0.0.1). */
  readonly port?: number
  readonly name?: string
  readonly mode?: AgentMode
  /** The card says it streams (default true). */
  readonly streaming?: boolean
  /** The card lists application/json as an input mode (default true). */
  readonly acceptsData?: boolean
  /** How long a slow task works (default 5 s) and how often it says so (default 400 ms). */
  readonly slowMs?: number
  readonly beatMs?: number
  /** Refuse JSON-RPC requests (401) without `Authorization: Bearer <token>`; the card stays public. */
  readonly token?: string
}

export interface StandInAgent {
  readonly url: string
  readonly port: number
  readonly name: string
  readonly received: Received[]
  readonly cancelled: string[]
  /** Tasks it completed, by task id, with the text it returned. */
  readonly completed: Map<string, string>
  close: () => Promise<void>
}

/** The mode a message asks for. */
export function modeOf(text: string, fallback: AgentMode): AgentMode {
  const m = /\[a2a:([a-z-]+)\]/.exec(text)
  const want = m?.[1] as AgentMode | undefined
  return want !== undefined && (AGENT_MODES as readonly string[]).includes(want) ? want : fallback
}

function textOf(parts: readonly Part[]): string {
  return parts.map(p => (p.content?.$case === 'text' ? p.content.value : '')).join('\n')
}

/** The task's title, from the data part when there is one, else from the text's task tag. */
function titleOf(text: string, data: unknown): string {
  const d = (data as { planSwarm?: { title?: unknown } } | undefined)?.planSwarm?.title
  if (typeof d === 'string') return d
  return /<task [^>]*title="([^"]*)"/.exec(text)?.[1] ?? 'the task'
}

const sleep = async (ms: number): Promise<void> => {
  await new Promise(resolve => setTimeout(resolve, ms))
}

export async function startStandInAgent(opts: StandInAgentOptions = {}): Promise<StandInAgent> {
  const name = opts.name ?? 'stand-in agent'
  const fallback = opts.mode ?? 'normal'
  const slowMs = opts.slowMs ?? 5_000
  const beatMs = opts.beatMs ?? 400
  const received: Received[] = []
  const cancelled: string[] = []
  const completed = new Map<string, string>()
  const stop = new Set<string>()
  const sockets = new Set<Socket>()
  let closing = false

  const status = (bus: ExecutionEventBus, ctx: RequestContext, state: TaskState, text?: string): void => {
    const message: Message | undefined =
      text === undefined
        ? undefined
        : {
            messageId: crypto.randomUUID(),
            contextId: ctx.contextId,
            taskId: ctx.taskId,
            role: 2,
            parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: []
          }
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: { state, message, timestamp: new Date().toISOString() },
        metadata: undefined
      })
    )
  }

  const executor: AgentExecutor = {
    execute: async (ctx, bus) => {
      const msg = ctx.userMessage
      const text = textOf(msg.parts)
      const dataPart = msg.parts.find(p => p.content?.$case === 'data')
      const data = dataPart?.content?.$case === 'data' ? (dataPart.content.value as unknown) : undefined
      const mode = modeOf(text, fallback)
      received.push({ taskId: ctx.taskId, mode, text, data, at: Date.now() })
      bus.publish(
        AgentEvent.task({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          artifacts: [],
          history: [msg],
          metadata: undefined
        })
      )
      status(bus, ctx, TaskState.TASK_STATE_WORKING, 'on it')
      const live = (): boolean => !stop.has(ctx.taskId) && !closing
      const end = (state: TaskState, note: string): void => {
        status(bus, ctx, state, note)
        bus.finished()
      }
      if (mode === 'failing') return end(TaskState.TASK_STATE_FAILED, 'the stand-in agent fails this task on purpose')
      if (mode === 'input-required') {
        status(bus, ctx, TaskState.TASK_STATE_INPUT_REQUIRED, 'which city do you mean?')
        bus.finished()
        return
      }
      if (mode === 'silent') {
        while (live()) await sleep(100)
        return end(TaskState.TASK_STATE_CANCELED, 'cancelled')
      }
      if (mode === 'endless' || mode === 'slow') {
        const until = mode === 'slow' ? Date.now() + slowMs : Infinity
        while (live() && Date.now() < until) {
          await sleep(beatMs)
          if (live()) status(bus, ctx, TaskState.TASK_STATE_WORKING, 'still working')
        }
        if (!live()) return end(TaskState.TASK_STATE_CANCELED, 'cancelled')
      }
      const output = `${name} did "${titleOf(text, data)}" (${mode}): done, checked, written up.`
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: {
            artifactId: 'result',
            name: 'result',
            description: '',
            parts: [{ content: { $case: 'text', value: output }, metadata: undefined, filename: '', mediaType: '' }],
            metadata: undefined,
            extensions: []
          },
          append: false,
          lastChunk: true,
          metadata: undefined
        })
      )
      completed.set(ctx.taskId, output)
      end(TaskState.TASK_STATE_COMPLETED, 'done')
    },
    cancelTask: async (taskId, bus) => {
      cancelled.push(taskId)
      stop.add(taskId)
      // A task whose execute already returned (input-required) is ended here.
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
          metadata: undefined
        })
      )
      bus.finished()
      await Promise.resolve()
    }
  }

  let port = opts.port ?? 0
  const base = (): string => `http://127.0.0.1:${port}`
  const card = (): AgentCard =>
    AgentCard.fromJSON({
      name,
      description: 'A stand-in A2A agent for tests',
      version: '1.0.0',
      supportedInterfaces: [{ url: `${base()}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: opts.streaming ?? true },
      defaultInputModes: opts.acceptsData === false ? ['text/plain'] : ['text/plain', 'application/json'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'do', name: 'do a task', description: 'does one task', tags: ['test'] }]
    })
  // Made once the port is known: the card names it.
  const rpc: { handler?: JsonRpcTransportHandler } = {}

  const readBody = async (req: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  }

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', base()).pathname
    if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(AgentCard.toJSON(card())))
      return
    }
    if (req.method !== 'POST' || path !== '/a2a' || rpc.handler === undefined) {
      res.writeHead(404).end()
      return
    }
    if (opts.token !== undefined && req.headers.authorization !== `Bearer ${opts.token}`) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' })
      res.end('a bearer token is needed')
      return
    }
    const body = await readBody(req)
    const mode = modeOf(body, fallback)
    const isSend = /"method"\s*:\s*"Send(Streaming)?Message"/.test(body)
    // Recorded from the raw request, as no task is made of it.
    if (isSend && (mode === 'hang' || mode === 'garbage')) {
      const parts = (
        JSON.parse(body) as { params?: { message?: { parts?: Array<{ text?: string; data?: unknown }> } } }
      ).params?.message?.parts
      const text = (parts ?? []).map(p => p.text ?? '').join('\n')
      received.push({ taskId: '', mode, text, data: parts?.find(p => 'data' in p)?.data, at: Date.now() })
    }
    if (isSend && mode === 'hang') return
    if (isSend && mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end('data: {"this is": not json at all\n\n')
      return
    }
    const context = defaultServerCallContextBuilder({
      extensions: undefined,
      user: undefined,
      headers: req.headers,
      requestedVersion: req.headers['a2a-version'] as string | undefined
    })
    const out = await rpc.handler.handle(body, context)
    if (typeof (out as AsyncGenerator<unknown>)[Symbol.asyncIterator] === 'function') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      try {
        for await (const ev of out as AsyncGenerator<unknown>) res.write(formatSSEEvent(ev))
      } catch (err) {
        res.write(`event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: null, error: String(err) })}\n\n`)
      }
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(out))
  }

  const server: Server = createServer((req, res) => {
    serve(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(err))
    })
  })
  server.on('connection', s => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      resolve()
    })
  })
  port = (server.address() as { port: number }).port
  rpc.handler = new JsonRpcTransportHandler(new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor))
  return {
    url: base(),
    port,
    name,
    received,
    cancelled,
    completed,
    close: async () => {
      closing = true
      for (const s of sockets) s.destroy()
      await new Promise<void>(resolve => {
        server.close(() => {
          resolve()
        })
      })
    }
  }
}

/** A port that was free a moment ago (for an agent that starts after the executor that needs it). */
export async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>(resolve => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise<void>(resolve => s.close(() => resolve()))
  return port
}
