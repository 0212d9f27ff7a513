import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { logger } from '@libp2p/logger'
import { send } from '../server.js'
import { createStreamHub, MAX_STREAMS } from './stream.js'
import { DashboardRequestError, checkWriteRequest, readJsonBody } from './guard.js'
import { planLines } from './state.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HttpRoute } from '../server.js'
import type { PlanId } from '../../core/events.js'
import type { DashboardSource } from './state.js'

const log = logger('plan-swarm:dashboard')

const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static')

/** The page's files, read once: everything the page loads comes from here (no CDN, no fonts, no network beyond this node). */
const ASSETS: Record<string, { file: string, type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' }
}

/**
 * The page may load only what this node serves, may not be framed, and
 * sends no referrer: a dashboard cannot be made to talk to anyone else.
 */
const PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY'
}

const PLAN_ID = /^[0-9a-f]{64}$/
/** Submit fields the page may set; the names and checks are those of `submit`'s flags. */
const SUBMIT_FIELDS = ['committee', 'quorum', 'max-depth', 'min-children', 'max-children', 'max-attempts', 'lease-ms', 'max-claim-ms', 'max-nodes', 'budget', 'max-tokens-per-call', 'max-claims-per-executor', 'review'] as const

export interface DashboardOptions {
  /** With --allow-submit: the token POST requests must present. Without it the dashboard is read-only. */
  readonly submitToken?: string
}

export interface Dashboard {
  readonly route: HttpRoute
  readonly allowSubmit: boolean
  close: () => void
}

function sendError (res: ServerResponse, err: unknown): void {
  if (err instanceof DashboardRequestError) { send(res, err.status, { error: err.message }); return }
  // Bad plan parameters, an empty goal, not the author: the user's to fix.
  if (err instanceof Error && err.name === 'ConfigError') { send(res, 400, { error: err.message }); return }
  log.error('dashboard request failed: %s', (err as Error).stack)
  send(res, 500, { error: (err as Error).message })
}

/** Flag-named submit values from the page's JSON (numbers, strings or booleans). */
function submitValues (body: Record<string, unknown>): Record<string, string | boolean | undefined> {
  const raw = body.options ?? {}
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new DashboardRequestError(400, '"options" must be an object of submit options, e.g. {"max-depth": 2}')
  const values: Record<string, string | boolean | undefined> = {}
  for (const [k, v] of Object.entries(raw)) {
    if (!(SUBMIT_FIELDS as readonly string[]).includes(k)) throw new DashboardRequestError(400, `unknown option ${JSON.stringify(k)}; known: ${SUBMIT_FIELDS.join(', ')}`)
    if (v === null || v === '' || v === undefined) continue
    if (k === 'review') {
      if (typeof v !== 'boolean') throw new DashboardRequestError(400, '"review" must be true or false')
      values[k] = v
    } else if (typeof v === 'number' || typeof v === 'string') {
      values[k] = String(v)
    } else {
      throw new DashboardRequestError(400, `option ${k}: expected a number or a string`)
    }
  }
  return values
}

/**
 * The observer's live dashboard: the page at `/`, its feed at
 * `/events/stream` (server-sent events), the same snapshot as JSON at
 * `/api/dashboard`, and, only with `--allow-submit`, `POST /api/goals` and
 * `POST /api/plans/<id>/cancel`. Without it those answer 403 and the node
 * publishes nothing.
 */
export function createDashboard (source: DashboardSource, opts: DashboardOptions = {}): Dashboard {
  const token = opts.submitToken
  const allowSubmit = token !== undefined && token !== ''
  const hub = createStreamHub(source, allowSubmit)
  const assets = new Map<string, { body: Buffer, type: string }>(Object.entries(ASSETS).map(([path, a]) => [path, { body: readFileSync(join(STATIC_DIR, a.file)), type: a.type }]))
  const index = assets.get('/')
  if (index !== undefined) assets.set('/index.html', index)

  const writes = async (req: IncomingMessage, res: ServerResponse, url: URL, parts: string[]): Promise<void> => {
    if (!allowSubmit || token === undefined) {
      throw new DashboardRequestError(403, 'this observer is read-only: it publishes nothing. Start it with --allow-submit to submit goals and cancel plans from its dashboard')
    }
    checkWriteRequest(req, token)
    const body = await readJsonBody(req)
    if (url.pathname === '/api/goals') {
      if (typeof body.goal !== 'string' || body.goal.trim() === '') throw new DashboardRequestError(400, '"goal" must be the goal in words, e.g. "plan a two-week trip to Japan"')
      const r = await source.submit(body.goal, submitValues(body))
      log('dashboard submitted plan %s', r.plan)
      send(res, 201, r)
      return
    }
    const plan = parts[2] as PlanId
    if (!PLAN_ID.test(plan)) throw new DashboardRequestError(400, `${JSON.stringify(plan)} is not a plan id (64 hex digits)`)
    if (body.reason !== undefined && typeof body.reason !== 'string') throw new DashboardRequestError(400, '"reason" must be a string')
    if (source.tree(plan) === undefined) throw new DashboardRequestError(404, `no plan ${plan} here; GET /plans lists the plans this node holds`)
    await source.cancel(plan, body.reason)
    log('dashboard cancelled plan %s', plan)
    send(res, 200, { plan, cancelled: true })
  }

  const route: HttpRoute = async (req, res, url) => {
    const parts = url.pathname.split('/').filter(Boolean)
    const isWrite = url.pathname === '/api/goals' || (parts[0] === 'api' && parts[1] === 'plans' && parts.length === 4 && parts[3] === 'cancel')
    try {
      if (isWrite) {
        if (req.method !== 'POST') { res.setHeader('allow', 'POST'); throw new DashboardRequestError(405, `${url.pathname} takes POST`) }
        await writes(req, res, url, parts)
        return true
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') return false
      const asset = assets.get(url.pathname)
      if (asset !== undefined) {
        res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-cache', ...PAGE_HEADERS })
        res.end(req.method === 'HEAD' ? undefined : asset.body)
        return true
      }
      if (url.pathname === '/events/stream') {
        const plan = url.searchParams.get('plan')
        if (plan !== null && plan !== '' && !PLAN_ID.test(plan)) throw new DashboardRequestError(400, `plan=${JSON.stringify(plan)} is not a plan id (64 hex digits)`)
        if (hub.clients >= MAX_STREAMS) throw new DashboardRequestError(503, `${MAX_STREAMS} dashboards are open already; close one and reload`)
        hub.attach(req, res, plan === null || plan === '' ? null : plan as PlanId)
        return true
      }
      if (url.pathname === '/api/dashboard') {
        const plan = url.searchParams.get('plan')
        const s = source.status()
        send(res, 200, { allowSubmit, peerId: s.peerId, plans: planLines(source, s.peerId), tree: plan !== null && PLAN_ID.test(plan) ? source.tree(plan as PlanId) ?? null : null })
        return true
      }
      return false
    } catch (err) {
      sendError(res, err)
      return true
    }
  }
  return { route, allowSubmit, close: () => { hub.close() } }
}
