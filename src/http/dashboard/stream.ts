import { offersIn } from '../../core/needs.js'
import { RateMeter, awaitingLines, defaultPlan, planLines, standingLines } from './state.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { PlanId } from '../../core/events.js'
import type { AwaitingLine, DashboardSource, PlanLine, StandingLine, Summary } from './state.js'

/** How often the stream looks for changes. */
const TICK_MS = 400
/** A changing tree goes out at most this often to one page (a big tree is a big message). */
const TREE_EVERY_MS = 1_000
/** A summary goes out at least this often (it carries the clock that lease countdowns use, and keeps proxies from timing out). */
const SUMMARY_EVERY_MS = 2_000
/** Open streams at once; more get 503 (each one costs a tree serialisation per change). */
export const MAX_STREAMS = 32
/** What the browser waits before it reconnects. */
const RETRY_MS = 2_000

interface Client {
  readonly res: ServerResponse
  /** The plan the page chose, or null to follow the default. */
  readonly plan: PlanId | null
  sentPlan: PlanId | null | undefined
  sentHash: string | undefined
  sentTreeAt: number
  sentSummary: string
  sentSummaryAt: number
}

export interface StreamHub {
  /** Serve `GET /events/stream[?plan=<id>]`: a full snapshot first, then changes, as server-sent events. */
  attach: (req: IncomingMessage, res: ServerResponse, plan: PlanId | null) => void
  readonly clients: number
  close: () => void
}

/**
 * The live feed. Every message is a whole state, not a delta: `summary`
 * (roster, counters, the plan list) and `tree` (the followed plan's folded
 * tree, sent when its treeHash changes). A page that connects, or
 * reconnects after any gap (EventSource does so by itself, sending
 * Last-Event-ID), gets the full snapshot at once, so it can never miss a
 * change: there is nothing to replay.
 */
export function createStreamHub(source: DashboardSource, allowSubmit: boolean): StreamHub {
  const clients = new Set<Client>()
  const rate = new RateMeter(10, source.now())
  let seq = 0
  let dirty = true
  let lines: PlanLine[] = []
  // What waits for this key changes only when events fold: worked out then, not at every tick.
  let waiting: { awaiting: AwaitingLine[]; awaitingMore: number } = { awaiting: [], awaitingMore: 0 }
  // Standing too changes only when events fold.
  let standing: { standing: StandingLine[]; standingMore: number } = { standing: [], standingMore: 0 }
  const people = allowSubmit ? source.awaiting?.bind(source) : undefined
  const self = source.status().peerId
  const unsubscribe = source.onFolded(n => {
    rate.add(n, source.now())
    dirty = true
  })

  const write = (c: Client, event: string, data: unknown): void => {
    seq++
    c.res.write(`id: ${seq}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  }

  const summary = (now: number): Summary => {
    if (dirty) {
      lines = planLines(source, self)
      if (people !== undefined) waiting = awaitingLines(people())
      if (source.standing !== undefined) standing = standingLines(source.standing())
      dirty = false
    }
    const s = source.status()
    return {
      now,
      peerId: s.peerId,
      role: s.role,
      swarm: s.swarm,
      allowSubmit,
      peers: s.peers,
      roster: s.roster.map(r => ({
        peerId: r.peerId,
        role: r.role,
        lastSeenMs: r.lastSeenMs,
        offers: offersIn(r.capabilities)
      })),
      events: { held: s.events.held, parked: s.events.parked, perSecond: rate.perSecond(now) },
      rejected: source.rejected(),
      plans: lines,
      awaiting: people === undefined ? null : waiting.awaiting,
      awaitingMore: waiting.awaitingMore,
      ...standing
    }
  }

  const push = (c: Client, s: Summary, force: boolean): void => {
    const now = s.now
    // Compare without the clock and the roster's ages, which change every tick.
    const key = JSON.stringify({
      ...s,
      now: 0,
      roster: s.roster.map(r => [r.peerId, r.role, r.offers, r.lastSeenMs > 30_000])
    })
    if (force || key !== c.sentSummary || now - c.sentSummaryAt >= SUMMARY_EVERY_MS) {
      write(c, 'summary', s)
      c.sentSummary = key
      c.sentSummaryAt = now
    }
    const plan = c.plan ?? defaultPlan(s.plans)
    const hash = plan === null ? undefined : source.treeHash(plan)
    if (force || plan !== c.sentPlan || (hash !== c.sentHash && now - c.sentTreeAt >= TREE_EVERY_MS)) {
      seq++
      c.res.write(
        `id: ${seq}\nevent: tree\ndata: ` +
          (`{"plan":${JSON.stringify(plan)},"following":${String(c.plan === null)},"treeHash":` +
            `${JSON.stringify(hash ?? null)},"now":${now},"tree":${treeJson(plan, hash)}}\n\n`)
      )
      c.sentPlan = plan
      c.sentHash = hash
      c.sentTreeAt = now
    }
  }

  // One serialisation per tree version, however many pages show it.
  const trees = new Map<PlanId, { hash: string | undefined; json: string }>()
  const treeJson = (plan: PlanId | null, hash: string | undefined): string => {
    if (plan === null) return 'null'
    const cached = trees.get(plan)
    if (cached !== undefined && cached.hash === hash) return cached.json
    const json = JSON.stringify(source.tree(plan) ?? null)
    trees.set(plan, { hash, json })
    if (trees.size > 8) trees.delete(trees.keys().next().value as PlanId)
    return json
  }

  let timer: NodeJS.Timeout | undefined
  const tick = (): void => {
    if (clients.size === 0) {
      clearInterval(timer)
      timer = undefined
      return
    }
    const s = summary(source.now())
    for (const c of clients) {
      try {
        push(c, s, false)
      } catch {
        clients.delete(c)
      }
    }
  }

  return {
    get clients() {
      return clients.size
    },
    attach(req, res, plan) {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-content-type-options': 'nosniff'
      })
      res.write(`retry: ${RETRY_MS}\n\n`)
      const c: Client = {
        res,
        plan,
        sentPlan: undefined,
        sentHash: undefined,
        sentTreeAt: 0,
        sentSummary: '',
        sentSummaryAt: 0
      }
      clients.add(c)
      const drop = (): void => {
        clients.delete(c)
      }
      req.on('close', drop)
      res.on('error', drop)
      push(c, summary(source.now()), true)
      if (timer === undefined) {
        timer = setInterval(tick, TICK_MS)
        timer.unref()
      }
    },
    close() {
      unsubscribe()
      clearInterval(timer)
      for (const c of clients) c.res.end()
      clients.clear()
    }
  }
}
