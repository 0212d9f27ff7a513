import { createServer } from 'node:http'
import { randomBytes } from 'node:crypto'
import { AgentCard, A2A_VERSION_HEADER } from '@a2a-js/sdk'
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server'
import { checkLocalRequest } from '../mcp/http.js'
import { METHODS, SIGNAL_KEY, createSwarmA2a } from './server.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { SwarmA2aDeps } from './server.js'

/** The JSON-RPC endpoint's path, and the Agent Card's. */
export const A2A_PATH = '/a2a'
export const CARD_PATH = '/.well-known/agent-card.json'

/** The largest request body taken: a goal is at most 4000 characters, so this is plenty. */
const MAX_BODY_BYTES = 256 * 1024
/** A blocking SendMessage that takes longer than this gets its headers now and a space every so often. */
const HEADERS_AFTER_MS = 5_000
const KEEPALIVE_MS = 15_000

const ENDPOINT = { name: 'A2A', path: A2A_PATH, tokenEnv: 'PLAN_SWARM_A2A_TOKEN' }

/** JSON-RPC 2.0's own codes (A2A keeps them). */
const PARSE_ERROR = -32700
const INVALID_REQUEST = -32600
const METHOD_NOT_FOUND = -32601
const INTERNAL_ERROR = -32603

export interface A2aHttpServer {
  /** The JSON-RPC endpoint. */
  readonly url: string
  /** The Agent Card's URL. */
  readonly cardUrl: string
  readonly token: string
  close: () => Promise<void>
}

export class A2aPortInUseError extends Error {
  override readonly name = 'PortInUseError'
  constructor(host: string, port: number) {
    super(
      `--a2a ${host}:${port}: that address is already in use; stop the other process or choose another port (port 0 picks a free one)`
    )
  }
}

type Id = string | number | null

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers })
  res.end(JSON.stringify(body) + '\n')
}

function rpcError(
  res: ServerResponse,
  status: number,
  id: Id,
  code: number,
  message: string,
  headers: Record<string, string> = {}
): void {
  json(res, status, { jsonrpc: '2.0', id, error: { code, message } }, headers)
}

/** The body, or null when it is larger than MAX_BODY_BYTES (the rest is drained). */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size <= MAX_BODY_BYTES) chunks.push(chunk)
  }
  return size > MAX_BODY_BYTES ? null : Buffer.concat(chunks).toString('utf8')
}

/** What is wrong with a JSON-RPC request's envelope, or null. */
function envelopeProblem(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'the body must be one JSON-RPC request object (batches are not served)'
  const r = body as Record<string, unknown>
  if (r.jsonrpc !== '2.0') return 'the request must say "jsonrpc": "2.0"'
  if ('id' in r && !(typeof r.id === 'string' || Number.isInteger(r.id) || r.id === null))
    return 'the id must be a string, an integer or null'
  if (typeof r.method !== 'string' || r.method === '') return 'the request must name its method'
  return null
}

/**
 * `--a2a HOST:PORT`: the A2A v1.0 JSON-RPC binding at /a2a and the Agent
 * Card at /.well-known/agent-card.json, bound exactly where told, on
 * node:http. The card is served to anyone (discovery needs it); every call
 * to /a2a needs the bearer token printed at start, and the Origin and Host
 * checks MCP's endpoint makes (checkLocalRequest). The SDK's
 * JsonRpcTransportHandler decodes and encodes the protocol; the swarm's
 * handler (server.ts) answers.
 */
export async function startA2aHttp(
  deps: SwarmA2aDeps,
  host: string,
  port: number,
  token = process.env.PLAN_SWARM_A2A_TOKEN ?? randomBytes(24).toString('base64url')
): Promise<A2aHttpServer> {
  const a2a = createSwarmA2a(deps)
  const transport = new JsonRpcTransportHandler(a2a.handler)
  let bound = { host, port }
  const shown = (): string => `http://${host.includes(':') ? `[${host}]` : host}:${bound.port}`
  const live = new Set<AbortController>()

  const serveCard = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, { error: `the Agent Card is read with GET ${CARD_PATH}` }, { allow: 'GET, HEAD' })
      return
    }
    // The card names the endpoint at the address the client reached, so it works behind 0.0.0.0 too.
    const base = req.headers.host === undefined ? shown() : `http://${req.headers.host}`
    const body = JSON.stringify(AgentCard.toJSON(a2a.card(`${base}${A2A_PATH}`)))
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' })
    res.end(req.method === 'HEAD' ? undefined : body)
  }

  const serveRpc = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'POST') {
      rpcError(res, 405, null, INVALID_REQUEST, `A2A's JSON-RPC binding takes POST ${A2A_PATH}`, { allow: 'POST' })
      return
    }
    const problem = checkLocalRequest(req, bound, token, ENDPOINT)
    if (problem !== null) {
      rpcError(
        res,
        problem.status,
        null,
        INVALID_REQUEST,
        problem.message,
        problem.status === 401 ? { 'www-authenticate': 'Bearer realm="plan-swarm"' } : {}
      )
      return
    }
    const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim().toLowerCase()
    if (type !== 'application/json') {
      rpcError(res, 415, null, -32005, `Content-Type ${type ?? ''} is not served: send Content-Type: application/json`)
      return
    }
    const raw = await readBody(req)
    if (raw === null) {
      rpcError(res, 413, null, INVALID_REQUEST, `the request is over ${MAX_BODY_BYTES} bytes`)
      return
    }
    let body: unknown
    try {
      body = JSON.parse(raw)
    } catch (err) {
      rpcError(res, 200, null, PARSE_ERROR, `the body is not JSON (${(err as Error).message}): send a JSON-RPC request`)
      return
    }
    const bad = envelopeProblem(body)
    const id = ((body as Record<string, unknown> | null)?.id ?? null) as Id
    if (bad !== null) {
      rpcError(res, 200, typeof id === 'object' ? null : id, INVALID_REQUEST, `not a JSON-RPC request: ${bad}`)
      return
    }
    const method = (body as { method: string }).method
    if (!(METHODS as readonly string[]).includes(method)) {
      rpcError(
        res,
        200,
        id,
        METHOD_NOT_FOUND,
        `no method ${JSON.stringify(method.slice(0, 80))}: this agent serves ${METHODS.slice(0, 6).join(', ')} ` +
          '(A2A v1.0 names)'
      )
      return
    }
    const version = req.headers[A2A_VERSION_HEADER.toLowerCase()]
    if (version !== '1.0') {
      rpcError(
        res,
        200,
        id,
        -32009,
        `A2A version ${typeof version === 'string' ? JSON.stringify(version) : '0.3 (no A2A-Version header)'} ` +
          'is not served: this agent speaks A2A 1.0; send the header A2A-Version: 1.0'
      )
      return
    }
    const abort = new AbortController()
    live.add(abort)
    res.on('close', () => {
      abort.abort()
      live.delete(abort)
    })
    const context = new ServerCallContext({ requestedVersion: '1.0', state: new Map([[SIGNAL_KEY, abort.signal]]) })
    // A blocking SendMessage lasts as long as its plan: send the headers early and a space now and then,
    // so that no client or proxy gives up on a silent connection (JSON allows leading whitespace).
    let early: ReturnType<typeof setInterval> | undefined
    const headersTimer = setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
      res.write(' ')
      early = setInterval(() => res.write(' '), KEEPALIVE_MS)
    }, HEADERS_AFTER_MS)
    let out: Awaited<ReturnType<JsonRpcTransportHandler['handle']>>
    try {
      out = await transport.handle(body as Record<string, unknown>, context)
    } finally {
      clearTimeout(headersTimer)
      clearInterval(early)
    }
    if (!(Symbol.asyncIterator in out)) {
      if (res.headersSent) res.end(JSON.stringify(out) + '\n')
      else {
        const internal = (out.error as { code?: number } | undefined)?.code === INTERNAL_ERROR
        json(res, internal ? 500 : 200, out)
      }
      return
    }
    await stream(res, out, id)
  }

  /** Server-sent events, one JSON-RPC response each; a first error is a plain JSON answer, as the SDK does. */
  const stream = async (
    res: ServerResponse,
    events: AsyncGenerator<{ jsonrpc: string; id: Id; result?: unknown; error?: unknown }, void, undefined>,
    id: Id
  ): Promise<void> => {
    let first: IteratorResult<unknown, void>
    try {
      first = await events.next()
    } catch (err) {
      json(res, 200, { jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) })
      return
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no'
    })
    const keepalive = setInterval(() => res.write(': keep-alive\n\n'), KEEPALIVE_MS)
    try {
      if (first.done !== true) res.write(`data: ${JSON.stringify(first.value)}\n\n`)
      for await (const e of { [Symbol.asyncIterator]: () => events }) res.write(`data: ${JSON.stringify(e)}\n\n`)
    } catch (err) {
      const error = { jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }
      if (!res.writableEnded) res.write(`event: error\ndata: ${JSON.stringify(error)}\n\n`)
    } finally {
      clearInterval(keepalive)
      if (!res.writableEnded) res.end()
    }
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    if (path === CARD_PATH) {
      serveCard(req, res)
      return
    }
    if (path !== A2A_PATH) {
      json(res, 404, {
        error: `no such path ${path}: the A2A endpoint is ${A2A_PATH}, its Agent Card ${CARD_PATH}`
      })
      return
    }
    serveRpc(req, res).catch((err: Error) => {
      deps.say(`A2A request failed: ${err.stack ?? err.message}`)
      if (!res.headersSent) rpcError(res, 500, null, INTERNAL_ERROR, err.message)
      else res.end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new A2aPortInUseError(host, port) : err)
    })
    server.listen(port, host, () => {
      resolve()
    })
  })
  const addr = server.address()
  bound = { host, port: typeof addr === 'object' && addr !== null ? addr.port : port }
  return {
    url: `${shown()}${A2A_PATH}`,
    cardUrl: `${shown()}${CARD_PATH}`,
    token,
    close: async () => {
      for (const a of live) a.abort()
      server.closeAllConnections()
      await new Promise<void>(resolve => {
        server.close(() => {
          resolve()
        })
      })
    }
  }
}
