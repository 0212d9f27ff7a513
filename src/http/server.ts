import { createServer } from 'node:http'
import { logger } from '@libp2p/logger'
import { sortEvents } from '../core/order.js'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { PlanId } from '../core/events.js'
import type { NodeView } from '../ports/node-view.js'

const log = logger('plan-swarm:http')

/** The port is taken: the message says what to do. Exit code 4. */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError'
  readonly exitCode = 4
  constructor(host: string, port: number) {
    super(
      `--http ${host}:${port}: that address is already in use; stop the other process or choose another port (port 0 picks a free one)`
    )
  }
}

/** The Prometheus text exposition format, as GET /metrics serves it. */
const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

/** The part of a node's view the built-in routes read: nothing here publishes. */
export type HttpView = Pick<
  NodeView,
  | 'status'
  | 'planLines'
  | 'loadTree'
  | 'treeHash'
  | 'planEvents'
  | 'metricsText'
  | 'planSummary'
  | 'me'
  | 'history'
  | 'standing'
>

/**
 * More routes on the same server (the observer's dashboard). A route answers
 * and returns true, or returns false to let the next one (then the built-in
 * read-only routes) answer.
 */
export type HttpRoute = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>

export interface HttpServer {
  readonly host: string
  readonly port: number
  readonly url: string
  /** Add routes, tried before the built-in ones; the function returned removes them. */
  mount: (route: HttpRoute) => () => void
  close: () => Promise<void>
}

/** Send JSON (or text), never cached. */
export function send(res: ServerResponse, code: number, body: unknown, type = 'application/json; charset=utf-8'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body, null, 2) + '\n'
  res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' })
  res.end(text)
}

/**
 * `--http HOST:PORT`: /status, /standing, /plans/<id>, /plans/<id>/events, /plans/<id>/summary, /metrics.
 * Read-only; binds exactly where told.
 */
export async function startHttpServer(host: string, port: number, view: HttpView): Promise<HttpServer> {
  const routes: HttpRoute[] = []
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    for (const route of [...routes]) if (await route(req, res, url)) return
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, { error: 'only GET is served here' })
      return
    }
    const parts = url.pathname.split('/').filter(Boolean)
    if (url.pathname === '/status') {
      send(res, 200, view.status())
      return
    }
    if (url.pathname === '/standing') {
      // Every member with evidence against it in this node's version-5 plans (ADR-0048); /status lists the poor ones.
      send(res, 200, view.standing?.() ?? [])
      return
    }
    if (url.pathname === '/metrics') {
      send(res, 200, await view.metricsText(), METRICS_CONTENT_TYPE)
      return
    }
    if (parts[0] === 'plans' && parts.length === 1) {
      send(res, 200, view.planLines())
      return
    }
    if (parts[0] === 'plans' && parts.length === 3 && parts[2] === 'summary') {
      const id = parts[1] as PlanId
      const found = /^[0-9a-f]{64}$/.test(id) ? await view.planSummary(id) : null
      if (found === null) {
        send(res, 404, { error: `no plan ${id} here, and no connected peer holds it` })
        return
      }
      send(res, 200, { ...found.summary, from: found.from, own: found.from === view.me })
      return
    }
    if (parts[0] === 'plans' && (parts.length === 2 || (parts.length === 3 && parts[2] === 'events'))) {
      const id = parts[1] as PlanId
      // A finished plan that left memory is loaded back from the store for this read (and leaves again once quiet).
      const tree = /^[0-9a-f]{64}$/.test(id) ? view.loadTree(id) : undefined
      if (tree === undefined) {
        const why =
          view.history === 'open'
            ? '; this node keeps only the plans under way and those it saw finish (--history open): ' +
              `GET /plans/${id}/summary asks its peers`
            : ''
        send(res, 404, { error: `no plan ${id} here; GET /plans lists the plans this node holds${why}` })
        return
      }
      if (parts.length === 2) {
        send(res, 200, { treeHash: view.treeHash(id), tree })
        return
      }
      const events = sortEvents(view.planEvents(id) ?? []).map(e => ({ id: e.id, ...e.env }))
      send(res, 200, events)
      return
    }
    send(res, 404, {
      error:
        `no such path ${url.pathname}; try /status, /standing, /plans, /plans/<id>, /plans/<id>/events, ` +
        '/plans/<id>/summary or /metrics'
    })
  }
  const server: Server = createServer((req, res) => {
    handle(req, res).catch(err => {
      log.error('request %s failed: %s', req.url, (err as Error).stack)
      if (!res.headersSent) send(res, 500, { error: (err as Error).message })
      else res.end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(host, port) : err)
    })
    server.listen(port, host, () => resolve())
  })
  const addr = server.address()
  const bound = typeof addr === 'object' && addr !== null ? addr.port : port
  const shownHost = host.includes(':') ? `[${host}]` : host
  return {
    host,
    port: bound,
    url: `http://${shownHost}:${bound}`,
    mount: route => {
      routes.push(route)
      return () => {
        const i = routes.indexOf(route)
        if (i >= 0) routes.splice(i, 1)
      }
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    }
  }
}
