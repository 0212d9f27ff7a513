import { createServer } from 'node:http'
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { createMcpHandler } from '@modelcontextprotocol/server'
import { toNodeHandler } from '@modelcontextprotocol/node'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { SwarmMcp } from './server.js'

/** The MCP endpoint's path. */
export const MCP_PATH = '/mcp'

export interface McpHttpServer {
  readonly url: string
  readonly token: string
  close: () => Promise<void>
}

export class McpPortInUseError extends Error {
  override readonly name = 'PortInUseError'
  constructor(host: string, port: number) {
    super(
      `--mcp-http ${host}:${port}: that address is already in use; stop the other process or choose another port (port 0 picks a free one)`
    )
  }
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }) + '\n')
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

/** What a local HTTP endpoint is called in its refusals: MCP's, or A2A's (src/a2a). */
export interface LocalEndpoint {
  /** Its name in messages: "MCP", "A2A". */
  readonly name: string
  /** The path a client should use. */
  readonly path: string
  /** The variable that fixes its token. */
  readonly tokenEnv: string
}

const MCP_ENDPOINT: LocalEndpoint = { name: 'MCP', path: MCP_PATH, tokenEnv: 'PLAN_SWARM_MCP_TOKEN' }

/**
 * Why a request may not reach a local endpoint's handler, or null. Neither
 * SDK (MCP's, A2A's) checks Host or Origin, so this does: a browser page
 * elsewhere must not drive the swarm through a user's loopback port (DNS
 * rebinding, cross-site requests). An Origin, when sent, must be this
 * server's own; on a loopback bind the Host must name loopback; and every
 * request must carry the bearer token printed at start.
 */
export function checkLocalRequest(
  req: IncomingMessage,
  bound: { host: string; port: number },
  token: string,
  endpoint: LocalEndpoint
): { status: number; message: string } | null {
  const host = req.headers.host ?? ''
  const hostname = host.replace(/:\d+$/, '')
  if (LOOPBACK.has(bound.host) && !LOOPBACK.has(hostname))
    return {
      status: 403,
      message:
        `Host ${JSON.stringify(host)} refused: this ${endpoint.name} server is bound to loopback; connect to ` +
        `http://127.0.0.1:${bound.port}${endpoint.path}`
    }
  const origin = req.headers.origin
  if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`)
    return {
      status: 403,
      message: `cross-origin request refused: Origin ${origin} is not this server (http://${host})`
    }
  const auth = req.headers.authorization
  const given = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7).trim() : ''
  if (given === '')
    return { status: 401, message: 'missing token: send Authorization: Bearer <the token the node printed at start>' }
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  if (a.length !== b.length || !timingSafeEqual(a, b))
    return {
      status: 401,
      message:
        `wrong token: use the ${endpoint.name} token this node printed at start ` +
        `(it changes at every start unless ${endpoint.tokenEnv} is set)`
    }
  return null
}

/** checkLocalRequest for the MCP endpoint. */
export function checkMcpRequest(
  req: IncomingMessage,
  bound: { host: string; port: number },
  token: string
): { status: number; message: string } | null {
  return checkLocalRequest(req, bound, token, MCP_ENDPOINT)
}

/**
 * `--mcp-http HOST:PORT`: MCP over Streamable HTTP at /mcp, bound exactly
 * where told. Stateless serving (a fresh McpServer per request, as the SDK's
 * handler does), so every request stands alone; the swarm state lives in the
 * node. Plan changes go out to `subscriptions/listen` streams.
 */
export async function startMcpHttp(
  mcp: SwarmMcp,
  host: string,
  port: number,
  token = process.env.PLAN_SWARM_MCP_TOKEN ?? randomBytes(24).toString('base64url')
): Promise<McpHttpServer> {
  const handler = createMcpHandler(mcp.factory, { legacy: 'stateless' })
  mcp.onPlanChanged(uri => {
    handler.notify.resourceUpdated(uri)
  })
  const node = toNodeHandler(handler)
  let bound = { host, port }
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname !== MCP_PATH) {
      refuse(res, 404, `no such path ${url.pathname}: the MCP endpoint is ${MCP_PATH}`)
      return
    }
    const problem = checkMcpRequest(req, bound, token)
    if (problem !== null) {
      refuse(res, problem.status, problem.message)
      return
    }
    Promise.resolve(node(req, res)).catch((err: Error) => {
      if (!res.headersSent) refuse(res, 500, err.message)
      else res.end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new McpPortInUseError(host, port) : err)
    })
    server.listen(port, host, () => {
      resolve()
    })
  })
  const addr = server.address()
  const actual = typeof addr === 'object' && addr !== null ? addr.port : port
  bound = { host, port: actual }
  const shown = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shown}:${actual}${MCP_PATH}`,
    token,
    close: async () => {
      await handler.close()
      server.closeAllConnections()
      await new Promise<void>(resolve => {
        server.close(() => {
          resolve()
        })
      })
    }
  }
}
