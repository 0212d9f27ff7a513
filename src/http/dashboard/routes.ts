import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { logger } from '@libp2p/logger'
import { send } from '../server.js'
import { createStreamHub, MAX_STREAMS } from './stream.js'
import { DashboardRequestError, checkWriteRequest, readJsonBody } from './guard.js'
import { awaitingLines, planLines } from './state.js'
import { MAX_NOTES_CHARS } from '../../core/limits.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HttpRoute } from '../server.js'
import type { PlanId } from '../../core/events.js'
import type { DashboardSource } from './state.js'

const log = logger('plan-swarm:dashboard')

const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static')

const JAVASCRIPT = 'text/javascript; charset=utf-8'

/** The page's files, read once: everything the page loads comes from here (no CDN, no fonts, no network beyond this node). */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard.js': { file: 'dashboard.js', type: JAVASCRIPT },
  '/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' }
}

/** A module's file name in static/js: nothing else there is served, and no name can leave the folder. */
const MODULE_NAME = /^[a-z0-9-]+\.js$/

/**
 * The modules dashboard.js imports, at `/js/<name>`: the files of
 * static/js when the dashboard is made. The page is served from this fixed
 * set by exact path, as the ASSETS are, so no request names a file outside.
 */
function moduleAssets(): Record<string, { file: string; type: string }> {
  return Object.fromEntries(
    readdirSync(join(STATIC_DIR, 'js'), { withFileTypes: true })
      .filter(d => d.isFile() && MODULE_NAME.test(d.name))
      .map(d => [`/js/${d.name}`, { file: join('js', d.name), type: JAVASCRIPT }])
  )
}

/**
 * The page may load only what this node serves, may not be framed, and
 * sends no referrer: a dashboard cannot be made to talk to anyone else.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY'
}

const PLAN_ID = /^[0-9a-f]{64}$/
/** Submit fields the page may set; the names and checks are those of `submit`'s flags. */
const SUBMIT_FIELDS = [
  'committee',
  'quorum',
  'max-depth',
  'min-children',
  'max-children',
  'max-attempts',
  'lease-ms',
  'max-claim-ms',
  'max-nodes',
  'budget',
  'max-tokens-per-call',
  'max-claims-per-executor',
  'review',
  'use-tools',
  'trust',
  'retain-days'
] as const

export interface DashboardOptions {
  /** With --allow-submit: the token POST requests must present. Without it the dashboard is read-only. */
  readonly submitToken?: string
}

export interface Dashboard {
  readonly route: HttpRoute
  readonly allowSubmit: boolean
  close: () => void
}

function sendError(res: ServerResponse, err: unknown): void {
  if (err instanceof DashboardRequestError) {
    send(res, err.status, { error: err.message })
    return
  }
  // Bad plan parameters, an empty goal, not the author: the user's to fix.
  if (err instanceof Error && err.name === 'ConfigError') {
    send(res, 400, { error: err.message })
    return
  }
  log.error('dashboard request failed: %s', (err as Error).stack)
  send(res, 500, { error: (err as Error).message })
}

/** A required, non-empty string field of a request body. */
function field(body: Record<string, unknown>, name: string, example: string): string {
  const v = body[name]
  if (typeof v !== 'string' || v.trim() === '') throw new DashboardRequestError(400, `"${name}" must be ${example}`)
  return v.trim()
}

function planField(body: Record<string, unknown>): PlanId {
  const plan = field(body, 'plan', 'the plan id (64 hex digits)')
  if (!PLAN_ID.test(plan))
    throw new DashboardRequestError(400, `${JSON.stringify(plan)} is not a plan id (64 hex digits)`)
  return plan as PlanId
}

/** The notes of a ballot or review: optional, at most MAX_NOTES_CHARS; `need` says why they are required when they are. */
function notesField(body: Record<string, unknown>, need: string | null): string {
  const v = body.notes ?? ''
  if (typeof v !== 'string') throw new DashboardRequestError(400, '"notes" must be a string')
  const t = v.trim()
  if (t.length > MAX_NOTES_CHARS)
    throw new DashboardRequestError(
      400,
      `the notes are ${t.length} characters long; the most is ${MAX_NOTES_CHARS}: say it shorter`
    )
  if (need !== null && t === '') throw new DashboardRequestError(400, need)
  return t
}

/**
 * A person's ballot or review failed its checks (castVote, castReview):
 * the page only sends what its last snapshot offered, so this means the
 * plan moved on (someone chose, the attempt closed, the result was
 * reviewed): 409, with what to do.
 */
async function asConflict<T>(act: () => Promise<T>): Promise<T> {
  try {
    return await act()
  } catch (err) {
    if (err instanceof Error && err.name === 'ConfigError') throw new DashboardRequestError(409, err.message)
    throw err
  }
}

/** Flag-named submit values from the page's JSON (numbers, strings or booleans). */
function submitValues(body: Record<string, unknown>): Record<string, string | boolean | undefined> {
  const raw = body.options ?? {}
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new DashboardRequestError(400, '"options" must be an object of submit options, e.g. {"max-depth": 2}')
  const values: Record<string, string | boolean | undefined> = {}
  for (const [k, v] of Object.entries(raw)) {
    if (!(SUBMIT_FIELDS as readonly string[]).includes(k))
      throw new DashboardRequestError(400, `unknown option ${JSON.stringify(k)}; known: ${SUBMIT_FIELDS.join(', ')}`)
    if (v === null || v === '' || v === undefined) continue
    if (k === 'review' || k === 'use-tools' || k === 'trust') {
      if (typeof v !== 'boolean') throw new DashboardRequestError(400, `"${k}" must be true or false`)
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
 * `POST /api/plans/<id>/cancel`, and a person's actions as this node's key:
 * `POST /api/vote` `{plan, node, choice: proposalId | null,
 * notes}` and `POST /api/review` `{plan, task, verdict: "accept" |
 * "reject", notes}`. Without it those answer 403 and the node publishes
 * nothing; every write passes the same guard (checkWriteRequest).
 */
export function createDashboard(source: DashboardSource, opts: DashboardOptions = {}): Dashboard {
  const token = opts.submitToken
  const allowSubmit = token !== undefined && token !== ''
  const hub = createStreamHub(source, allowSubmit)
  const assets = new Map<string, { body: Buffer; type: string }>(
    Object.entries({ ...ASSETS, ...moduleAssets() }).map(([path, a]) => [
      path,
      { body: readFileSync(join(STATIC_DIR, a.file)), type: a.type }
    ])
  )
  const index = assets.get('/')
  if (index !== undefined) assets.set('/index.html', index)

  const writes = async (req: IncomingMessage, res: ServerResponse, url: URL, parts: string[]): Promise<void> => {
    if (!allowSubmit || token === undefined) {
      throw new DashboardRequestError(
        403,
        'this observer is read-only: it publishes nothing. Start it with --allow-submit to submit ' +
          'goals, cancel plans, vote and review from its dashboard'
      )
    }
    checkWriteRequest(req, token)
    const body = await readJsonBody(req)
    if (url.pathname === '/api/vote' || url.pathname === '/api/review') {
      await person(res, url.pathname, body)
      return
    }
    if (url.pathname === '/api/goals') {
      if (typeof body.goal !== 'string' || body.goal.trim() === '')
        throw new DashboardRequestError(400, '"goal" must be the goal in words, e.g. "plan a two-week trip to Japan"')
      const r = await source.submit(body.goal, submitValues(body))
      log('dashboard submitted plan %s', r.plan)
      send(res, 201, r)
      return
    }
    const plan = parts[2] as PlanId
    if (!PLAN_ID.test(plan))
      throw new DashboardRequestError(400, `${JSON.stringify(plan)} is not a plan id (64 hex digits)`)
    if (body.reason !== undefined && typeof body.reason !== 'string')
      throw new DashboardRequestError(400, '"reason" must be a string')
    if (source.tree(plan) === undefined)
      throw new DashboardRequestError(404, `no plan ${plan} here; GET /plans lists the plans this node holds`)
    await source.cancel(plan, body.reason)
    log('dashboard cancelled plan %s', plan)
    send(res, 200, { plan, cancelled: true })
  }

  /** A ballot or a review from the "awaiting you" panel, signed with this node's key. */
  const person = async (res: ServerResponse, path: string, body: Record<string, unknown>): Promise<void> => {
    const plan = planField(body)
    if (source.tree(plan) === undefined)
      throw new DashboardRequestError(404, `no plan ${plan} here; GET /plans lists the plans this node holds`)
    if (path === '/api/vote') {
      const node = field(body, 'node', 'the id of the node to vote on')
      if (body.choice !== null && (typeof body.choice !== 'string' || body.choice.trim() === ''))
        throw new DashboardRequestError(
          400,
          '"choice" must be the id of the proposal you choose, or null for none of them'
        )
      const choice = body.choice === null ? null : body.choice.trim()
      const notes = notesField(
        body,
        choice === null
          ? 'choosing none needs notes: say what to change, so that the decomposers can address it in the next attempt'
          : null
      )
      if (source.vote === undefined) throw new DashboardRequestError(501, 'this dashboard cannot vote')
      const vote = source.vote
      const r = await asConflict(async () => await vote(plan, node, choice, notes))
      log('dashboard voted on node %s of plan %s: %s', node, plan, choice ?? 'none')
      send(res, 201, { plan, node, choice, event: r.event })
      return
    }
    const task = field(body, 'task', 'the id of the task whose result you review')
    const verdict = body.verdict
    if (verdict !== 'accept' && verdict !== 'reject')
      throw new DashboardRequestError(400, '"verdict" must be "accept" or "reject"')
    const notes = notesField(
      body,
      verdict === 'reject' ? 'a reject needs notes: say what to redo, so that the next executor can' : null
    )
    if (source.review === undefined) throw new DashboardRequestError(501, 'this dashboard cannot review')
    const review = source.review
    const r = await asConflict(async () => await review(plan, task, verdict, notes))
    log('dashboard reviewed task %s of plan %s: %s', task, plan, verdict)
    send(res, 201, { plan, task, verdict, event: r.event })
  }

  const route: HttpRoute = async (req, res, url) => {
    const parts = url.pathname.split('/').filter(Boolean)
    const isWrite =
      url.pathname === '/api/goals' ||
      url.pathname === '/api/vote' ||
      url.pathname === '/api/review' ||
      (parts[0] === 'api' && parts[1] === 'plans' && parts.length === 4 && parts[3] === 'cancel')
    try {
      if (isWrite) {
        if (req.method !== 'POST') {
          res.setHeader('allow', 'POST')
          throw new DashboardRequestError(405, `${url.pathname} takes POST`)
        }
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
        if (plan !== null && plan !== '' && !PLAN_ID.test(plan))
          throw new DashboardRequestError(400, `plan=${JSON.stringify(plan)} is not a plan id (64 hex digits)`)
        if (hub.clients >= MAX_STREAMS)
          throw new DashboardRequestError(503, `${MAX_STREAMS} dashboards are open already; close one and reload`)
        hub.attach(req, res, plan === null || plan === '' ? null : (plan as PlanId))
        return true
      }
      if (url.pathname === '/api/dashboard') {
        const plan = url.searchParams.get('plan')
        const s = source.status()
        const people =
          allowSubmit && source.awaiting !== undefined
            ? awaitingLines(source.awaiting())
            : { awaiting: null, awaitingMore: 0 }
        send(res, 200, {
          allowSubmit,
          peerId: s.peerId,
          plans: planLines(source, s.peerId),
          ...people,
          tree: plan !== null && PLAN_ID.test(plan) ? (source.tree(plan as PlanId) ?? null) : null
        })
        return true
      }
      return false
    } catch (err) {
      sendError(res, err)
      return true
    }
  }
  return {
    route,
    allowSubmit,
    close: () => {
      hub.close()
    }
  }
}
