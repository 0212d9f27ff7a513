/**
 * The dashboard's HTTP side, against a stub node (no libp2p):
 *   - the page and its files (the modules of js/ too) are served by the
 *     node, with a CSP that allows nothing else, and name no other host; no
 *     path reaches a file outside them;
 *   - read-only (no --allow-submit): POSTs answer 403 and nothing is published;
 *   - with --allow-submit: a POST needs the token and JSON, and a foreign
 *     Origin or a cross-site fetch is refused; bad input gets a JSON error
 *     that says what to fix; good input reaches submit/cancel;
 *   - the stream: a full snapshot on every (re)connection, then a new tree
 *     whenever the followed plan's treeHash changes;
 *   - the rate meter and the default plan.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { request } from 'node:http'
import { join, sep } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startHttpServer } from '../../src/http/server.js'
import { createDashboard } from '../../src/http/dashboard/routes.js'
import { RateMeter, defaultPlan, planLines } from '../../src/http/dashboard/state.js'
import { ConfigError } from '../../src/errors.js'
import { REPO_ROOT } from '../helpers/cli-process.js'
import type { HttpServer } from '../../src/http/server.js'
import type { DashboardSource } from '../../src/http/dashboard/state.js'
import type { PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const SELF = '12D3KooWSelf'
const A = 'a'.repeat(64) as PlanId
const B = 'b'.repeat(64) as PlanId
const TOKEN = 'test-token-0123456789abcdefghijkl'

function fakeTree(plan: PlanId, goal: string, status: string, ms: number, author = SELF): PlanTree {
  return {
    plan,
    goal,
    status,
    statusReason: `${status} because`,
    author,
    submittedAt: { ms, c: 0 },
    nodes: [{ id: plan, status: 'decomposing' }],
    tasks: [],
    spentTokens: 10,
    budgetTokens: 100
  } as unknown as PlanTree
}

interface Stub extends DashboardSource {
  trees: Map<PlanId, PlanTree>
  hashes: Map<PlanId, string>
  submitted: Array<{ goal: string; values: unknown }>
  cancelled: Array<{ plan: PlanId; reason: string | undefined }>
  fold: (n: number) => void
}

function stubSource(): Stub {
  const listeners = new Set<(n: number) => void>()
  const trees = new Map<PlanId, PlanTree>([
    [A, fakeTree(A, 'older, finished', 'completed', 1_000)],
    [B, fakeTree(B, 'newer, running', 'executing', 2_000)]
  ])
  const hashes = new Map<PlanId, string>([
    [A, 'hash-a'],
    [B, 'hash-b1']
  ])
  const stub: Stub = {
    trees,
    hashes,
    submitted: [],
    cancelled: [],
    fold: n => {
      for (const fn of listeners) fn(n)
    },
    now: () => Date.now(),
    status: () => ({
      peerId: SELF,
      role: 'observer',
      swarm: 'test',
      peers: 2,
      roster: [{ peerId: 'p1', role: 'scorer', lastSeenMs: 100, capabilities: [] }],
      events: { held: 5, parked: 0 }
    }),
    plans: () => [...trees.keys()],
    tree: p => trees.get(p),
    treeHash: p => hashes.get(p),
    onFolded: fn => {
      listeners.add(fn)
      return () => listeners.delete(fn)
    },
    rejected: () => ({ 'bad-signature': 2 }),
    submit: async (goal, values) => {
      stub.submitted.push({ goal, values })
      return { plan: 'c'.repeat(64) as PlanId, committee: ['p1'], quorum: 1 }
    },
    cancel: async (plan, reason) => {
      stub.cancelled.push({ plan, reason })
    }
  }
  return stub
}

const servers: HttpServer[] = []
const closers: Array<() => void> = []
afterEach(async () => {
  for (const c of closers.splice(0)) c()
  await Promise.all(servers.splice(0).map(async s => await s.close()))
})

async function serve(source: DashboardSource, submitToken?: string): Promise<HttpServer> {
  const server = await startHttpServer('127.0.0.1', 0, { status: () => ({}), replica: {}, metrics: {} } as never)
  const d = createDashboard(source, { submitToken })
  server.mount(d.route)
  servers.push(server)
  closers.push(d.close)
  return server
}

async function post(
  server: HttpServer,
  path: string,
  body: string,
  headers: Record<string, string> = {}
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-plan-swarm-token': TOKEN, ...headers },
    body
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

const STATIC = join(REPO_ROOT, 'src', 'http', 'dashboard', 'static')

/** Every file of the page, as paths relative to the static folder. */
function staticFiles(): string[] {
  return readdirSync(STATIC, { recursive: true, encoding: 'utf8' }).filter(f => statSync(join(STATIC, f)).isFile())
}

/** A GET of `path` exactly as written: fetch would resolve its dot segments before sending. */
async function rawGet(server: HttpServer, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(server.url)
  return await new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: 'GET' }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Reads server-sent events until `count` have come. */
async function readEvents(
  url: string,
  count: number,
  headers: Record<string, string> = {},
  during?: (got: number) => void
): Promise<Array<{ id: string; event: string; data: Record<string, unknown> }>> {
  const ctrl = new AbortController()
  const res = await fetch(url, { headers, signal: ctrl.signal })
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const out: Array<{ id: string; event: string; data: Record<string, unknown> }> = []
  let buf = ''
  const timer = setTimeout(() => {
    ctrl.abort()
  }, 10_000)
  try {
    while (out.length < count) {
      const { value, done } = await reader.read()
      if (done) break
      buf += new TextDecoder().decode(value)
      let i: number
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i)
        buf = buf.slice(i + 2)
        const f = Object.fromEntries(
          block.split('\n').map(l => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()])
        )
        if (f.event !== undefined) {
          out.push({ id: f.id ?? '', event: f.event, data: JSON.parse(f.data ?? 'null') as Record<string, unknown> })
          during?.(out.length)
        }
      }
    }
  } finally {
    clearTimeout(timer)
    ctrl.abort()
  }
  return out
}

describe('the dashboard page', () => {
  it('is served by the node with a CSP that allows nothing else, and names no other host', async () => {
    const server = await serve(stubSource())
    const res = await fetch(`${server.url}/`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    const html = await res.text()
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map(m => m[1] as string)
    expect(refs.length).toBeGreaterThan(0)
    for (const ref of refs) {
      expect(ref, 'same-origin paths only').toMatch(/^(\/|#)/)
      if (ref.startsWith('/')) expect((await fetch(`${server.url}${ref}`)).status, ref).toBe(200)
    }
    for (const f of staticFiles()) {
      const text = readFileSync(join(STATIC, f), 'utf8').replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, '')
      expect(text, `${f} must not reach the network beyond the node`).not.toMatch(
        /(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i
      )
      expect(text, `${f} draws no HTML from data`).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/)
    }
  })

  it('serves every module the page imports as JavaScript, with the same headers as the page', async () => {
    const server = await serve(stubSource())
    const page = await fetch(`${server.url}/`)
    const modules = staticFiles().filter(f => f.startsWith(`js${sep}`))
    expect(modules.length).toBeGreaterThan(0)
    for (const f of modules) {
      const path = `/${f.split(sep).join('/')}`
      const res = await fetch(`${server.url}${path}`)
      expect(res.status, path).toBe(200)
      expect(res.headers.get('content-type'), path).toBe('text/javascript; charset=utf-8')
      for (const h of ['cache-control', 'content-security-policy', 'x-content-type-options', 'referrer-policy'])
        expect(res.headers.get(h), `${path} ${h}`).toBe(page.headers.get(h))
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(STATIC, f))), path).toBe(true)
    }
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    // Every import, from the entry module down, names a file the node serves.
    const seen = new Set<string>()
    const walk = async (path: string): Promise<void> => {
      if (seen.has(path)) return
      seen.add(path)
      const res = await fetch(`${server.url}${path}`)
      expect(res.status, path).toBe(200)
      for (const m of (await res.text()).matchAll(/^import [^'\n]+ from '([^']+)'$/gm))
        await walk(new URL(m[1] as string, `http://x${path}`).pathname)
    }
    await walk('/dashboard.js')
    expect(seen.size).toBe(modules.length + 1)
  })

  it('serves nothing outside its static files, however the path is written', async () => {
    const server = await serve(stubSource())
    expect((await rawGet(server, '/js/dom.js')).status).toBe(200)
    for (const path of [
      '/js/../routes.ts',
      '/js/%2e%2e/routes.ts',
      '/js/..%2froutes.ts',
      '/js/..%5croutes.ts',
      '/js/../../state.ts',
      '/../../../package.json',
      '/js/',
      '/js',
      '/js/dom.js/',
      '/js/DOM.js',
      '/js/dom.js%00.ts',
      '/static/dashboard.js',
      '/static/js/dom.js',
      '//js/dom.js'
    ]) {
      const res = await rawGet(server, path)
      expect(res.status, path).toBe(404)
      expect(res.body, path).toMatch(/no such path/)
    }
  })

  it('leaves the built-in routes alone and answers unknown paths with JSON 404', async () => {
    const server = await serve(stubSource())
    const res = await fetch(`${server.url}/nope`)
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: string }).error).toMatch(/no such path/)
  })
})

describe('read-only (no --allow-submit)', () => {
  it('refuses every POST with 403 and publishes nothing; the stream says so', async () => {
    const source = stubSource()
    const server = await serve(source)
    for (const path of ['/api/goals', `/api/plans/${B}/cancel`, '/api/vote', '/api/review']) {
      const r = await post(server, path, '{"goal":"plan a picnic"}')
      expect(r.status).toBe(403)
      expect(r.body.error).toMatch(/read-only.*--allow-submit/)
    }
    expect(source.submitted).toEqual([])
    expect(source.cancelled).toEqual([])
    const [summary] = await readEvents(`${server.url}/events/stream`, 1)
    expect(summary?.data.allowSubmit).toBe(false)
  })
})

describe('with --allow-submit', () => {
  it('answers a vote or review the person cannot cast with 409 and its reason, publishing nothing', async () => {
    const source = stubSource()
    const refused: string[] = []
    const mistake = (what: string): never => {
      refused.push(what)
      throw new ConfigError(`node ${what} is not waiting for a ballot: it is done`)
    }
    source.vote = async (_plan, node) => mistake(node)
    source.review = async (_plan, task) => mistake(task)
    const server = await serve(source, TOKEN)
    const headers = { origin: server.url, 'sec-fetch-site': 'same-origin' }
    const vote = await post(
      server,
      '/api/vote',
      JSON.stringify({ plan: B, node: B, choice: null, notes: 'fewer steps' }),
      headers
    )
    expect(vote.status).toBe(409)
    expect(vote.body.error).toMatch(/is not waiting for a ballot/)
    const review = await post(
      server,
      '/api/review',
      JSON.stringify({ plan: B, task: B, verdict: 'accept', notes: '' }),
      headers
    )
    expect(review.status).toBe(409)
    expect(refused).toEqual([B, B])
  })

  it("needs the token, JSON, and the page's own origin", async () => {
    const source = stubSource()
    const server = await serve(source, TOKEN)
    const goal = '{"goal":"plan a picnic"}'
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [{ 'x-plan-swarm-token': '' }, 401, /missing token/],
      [{ 'x-plan-swarm-token': 'wrong' }, 401, /wrong token/],
      [{ 'x-plan-swarm-token': TOKEN.replace(/.$/, 'X') }, 401, /wrong token/],
      [{ origin: 'http://evil.example' }, 403, /cross-origin/],
      [{ origin: `http://127.0.0.1:${server.port + 1}` }, 403, /cross-origin/],
      [{ 'sec-fetch-site': 'cross-site' }, 403, /cross-site/],
      [{ 'content-type': 'text/plain' }, 415, /JSON/],
      [{ 'content-type': 'application/x-www-form-urlencoded' }, 415, /JSON/]
    ]
    for (const [headers, status, error] of cases) {
      const r = await post(server, '/api/goals', goal, headers)
      expect(r.status, JSON.stringify(headers)).toBe(status)
      expect(r.body.error).toMatch(error)
    }
    expect(source.submitted).toEqual([])
    // Bearer works as well as the header; the page's own Origin is accepted.
    const ok = await post(server, '/api/goals', goal, {
      'x-plan-swarm-token': '',
      authorization: `Bearer ${TOKEN}`,
      origin: server.url,
      'sec-fetch-site': 'same-origin'
    })
    expect(ok.status).toBe(201)
    expect(ok.body.plan).toBe('c'.repeat(64))
  })

  it('answers bad input with a JSON error that says what to fix', async () => {
    const source = stubSource()
    const server = await serve(source, TOKEN)
    const cases: Array<[string, string, number, RegExp]> = [
      ['/api/goals', '{"goal": ', 400, /not JSON/],
      ['/api/goals', '[1]', 400, /JSON object/],
      ['/api/goals', '{"goal":"  "}', 400, /"goal"/],
      ['/api/goals', '{"goal":"x","options":{"colour":"red"}}', 400, /unknown option "colour"/],
      ['/api/goals', '{"goal":"x","options":{"review":"yes"}}', 400, /review/],
      ['/api/goals', '{"goal":"x","options":[]}', 400, /options/],
      ['/api/goals', JSON.stringify({ goal: 'x'.repeat(20_000) }), 413, /over 16384 bytes/],
      ['/api/plans/nothex/cancel', '{}', 400, /not a plan id/],
      [`/api/plans/${'d'.repeat(64)}/cancel`, '{}', 404, /no plan/],
      [`/api/plans/${B}/cancel`, '{"reason":5}', 400, /reason/]
    ]
    for (const [path, body, status, error] of cases) {
      const r = await post(server, path, body)
      expect(r.status, `${path} ${body.slice(0, 40)}`).toBe(status)
      expect(r.body.error).toMatch(error)
    }
    const get = await fetch(`${server.url}/api/goals`)
    expect(get.status).toBe(405)
    expect(source.submitted).toEqual([])
    expect(source.cancelled).toEqual([])
  })

  it('passes good input to submit and cancel, flag-named like the CLI', async () => {
    const source = stubSource()
    const server = await serve(source, TOKEN)
    const r = await post(
      server,
      '/api/goals',
      JSON.stringify({
        goal: 'plan a picnic',
        options: { 'max-depth': 2, budget: '5000', committee: '', review: true }
      })
    )
    expect(r.status).toBe(201)
    expect(source.submitted).toEqual([
      { goal: 'plan a picnic', values: { 'max-depth': '2', budget: '5000', review: true } }
    ])
    const c = await post(server, `/api/plans/${B}/cancel`, '{"reason":"changed my mind"}')
    expect(c.status).toBe(200)
    expect(source.cancelled).toEqual([{ plan: B, reason: 'changed my mind' }])
  })

  it('reports a ConfigError from the node (bad plan parameters) as 400', async () => {
    const source = stubSource()
    source.submit = async () => {
      const e = new Error('plan parameters: maxDepth must be at most 8')
      e.name = 'ConfigError'
      throw e
    }
    const server = await serve(source, TOKEN)
    const r = await post(server, '/api/goals', '{"goal":"x","options":{"max-depth":99}}')
    expect(r).toEqual({ status: 400, body: { error: 'plan parameters: maxDepth must be at most 8' } })
  })
})

describe('the stream', () => {
  it('sends a full snapshot at once, on every (re)connection, following the newest running plan', async () => {
    const server = await serve(stubSource(), TOKEN)
    const reconnects: Array<Record<string, string>> = [{}, { 'last-event-id': '42' }]
    for (const headers of reconnects) {
      const [summary, tree] = await readEvents(`${server.url}/events/stream`, 2, headers)
      expect(summary?.event).toBe('summary')
      expect(summary?.data).toMatchObject({
        peerId: SELF,
        allowSubmit: true,
        peers: 2,
        events: { held: 5, parked: 0 },
        rejected: { 'bad-signature': 2 }
      })
      expect((summary?.data.plans as Array<{ id: string; mine: boolean }>).map(p => p.id)).toEqual([B, A])
      expect(tree?.event).toBe('tree')
      expect(tree?.data).toMatchObject({ plan: B, following: true, treeHash: 'hash-b1' })
      expect((tree?.data.tree as { goal: string }).goal).toBe('newer, running')
    }
    const [, chosen] = await readEvents(`${server.url}/events/stream?plan=${A}`, 2)
    expect(chosen?.data).toMatchObject({ plan: A, following: false, treeHash: 'hash-a' })
    expect((await fetch(`${server.url}/events/stream?plan=bad`)).status).toBe(400)
  })

  it('sends the tree again when its treeHash changes', async () => {
    const source = stubSource()
    const server = await serve(source)
    const events = await readEvents(`${server.url}/events/stream`, 5, {}, got => {
      if (got === 2) {
        source.trees.set(B, fakeTree(B, 'newer, running', 'completed', 2_000))
        source.hashes.set(B, 'hash-b2')
        source.fold(3)
      }
    })
    const trees = events.filter(e => e.event === 'tree')
    expect(trees.length).toBeGreaterThanOrEqual(2)
    expect(trees[1]?.data).toMatchObject({ plan: B, treeHash: 'hash-b2' })
    expect((trees[1]?.data.tree as { status: string }).status).toBe('completed')
    // Ids increase, so a reconnecting browser's Last-Event-ID is meaningful in logs.
    const ids = events.map(e => Number(e.id))
    expect([...ids].sort((x, y) => x - y)).toEqual(ids)
  })
})

describe('state', () => {
  it('lists plans newest first and follows the newest unfinished one', () => {
    const source = stubSource()
    const lines = planLines(source, SELF)
    expect(lines.map(l => [l.id, l.status, l.mine])).toEqual([
      [B, 'executing', true],
      [A, 'completed', true]
    ])
    expect(defaultPlan(lines)).toBe(B)
    expect(defaultPlan(lines.map(l => ({ ...l, status: 'completed' })))).toBe(B)
    expect(defaultPlan([lines[1] as never, { ...lines[0], status: 'cancelled' } as never])).toBe(A)
    expect(defaultPlan([])).toBeNull()
    expect(
      planLines({ plans: () => [A], tree: () => fakeTree(A, 'g', 'planning', 1, 'someone-else') }, SELF)[0]?.mine
    ).toBe(false)
  })

  it('measures events per second over whole seconds', () => {
    const m = new RateMeter(10, 0)
    for (let s = 0; s < 20; s++) m.add(5, s * 1000 + 500)
    expect(m.perSecond(20_000)).toBe(5)
    expect(m.perSecond(40_000)).toBe(0)
    const fresh = new RateMeter(10, 100_000)
    fresh.add(30, 100_500)
    expect(fresh.perSecond(101_200)).toBe(30)
  })
})
