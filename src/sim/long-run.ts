/**
 * The long run (`npm run sim -- --days N`): a swarm that runs for weeks of
 * virtual time, with goals arriving all along (some kept only a few days,
 * most the default DEFAULT_RETAIN_DAYS), nodes that crash and restart on
 * their stores and newcomers that join on empty ones, and retention as every
 * node runs it (src/runtime/retention.ts, started by the node runtime).
 *
 * What it checks, at every simulated day and whenever it skips idle time:
 * every live node's store, sync id set and tombstones stay within the bound
 * the plans' own events give (`bounds`); no plan that any node expired is
 * ever stored or folded again by any node (every store is watched as it
 * takes rows); and at the end, every plan finished, and every plan held has
 * one treeHash on every node that holds it.
 *
 * Idle time is skipped, not simulated: once the swarm is quiet (no plan
 * under way, every live node holding the same set of events, no message,
 * dial, sync session or act under way, nothing due to expire), the clock
 * and every queued timer move on together to the next thing that happens
 * (a goal, a crash, a restart, a newcomer, a day's check, or the moment
 * plans are due to expire: VirtualTime.skip). To every node that is the
 * whole world frozen for the span. What it would have done meanwhile
 * (announce itself every presence interval, a sync session every 10 s that
 * finds nothing to fetch, retention passes with nothing due) is not run,
 * and its traffic is not in the simulated bytes; the run measures that idle
 * traffic in windows it does simulate and reports bytes per node per day
 * both ways. After a skip the nodes' rosters have expired; before a goal
 * arrives every node announces itself at the landing and the swarm
 * runs WARM_MS, so the executors' view is as stable as in a swarm that
 * never stopped.
 */
import { DAY_MS, expiresAtMs } from '../core/retention.js'
import { scorersInSight } from '../author/author-events.js'
import { isFinished } from '../core/view.js'
import { planOf } from '../core/event-set.js'
import { TOMBSTONE_KEEP_MS, RETENTION_PASS_MS } from '../runtime/retention.js'
import { PRESENCE_JITTER } from '../net/presence-announcer.js'
import { seededRandom } from '../ports/scheduler.js'
import { World } from './world.js'
import { SIM_EPOCH_MS } from './virtual-time.js'
import type { PlanId } from '../core/events.js'
import type { EventRow, EventStore } from '../ports/event-store.js'
import type { LatencySpec } from './latency.js'

export interface LongRunOptions {
  readonly seed: number
  /** Nodes at the start (the client, node 0, never crashes). */
  readonly nodes: number
  /** Virtual days the run lasts. */
  readonly days: number
  /** Goals submitted over the run (`--plans`), at times of a Poisson process over all but the last `tailDays`. */
  readonly plans: number
  /** Crashes, each followed by a restart on the node's store (default days / 3, at least 1). */
  readonly restarts?: number
  /** Newcomers that join on an empty store (executors; default days / 10, at least 1). */
  readonly joins?: number
  /** Share of goals with a short `retainDays` (default 0.25); the rest keep the default. */
  readonly shortShare?: number
  /** The short `retainDays`, drawn uniformly from [lo, hi] (default 1 to 7). */
  readonly shortRetainDays?: readonly [number, number]
  /** The plans' depth (default 1). */
  readonly maxDepth?: number
  readonly llmLatencyMs?: number
  readonly llmLatency?: LatencySpec
  readonly linkMs?: { readonly minMs: number; readonly maxMs: number }
  readonly maxPeers?: number
  /** Told one line at every simulated day, crash, restart and newcomer, and at each of the first 20 problems found. */
  readonly trace?: (line: string) => void
  /** Test hook: called at every day's check, before it looks (the canary in test/sim/long-run.test.ts meddles here). */
  readonly onDay?: (day: number, world: World) => void | Promise<void>
}

/** One long run, as `npm run sim -- --days N` prints it and test/sim/long-run.test.ts checks it. */
export interface LongRunReport {
  readonly seed: number
  readonly nodes: number
  readonly joins: number
  readonly restarts: number
  readonly days: number
  readonly plans: number
  /** Plans with a short retainDays. */
  readonly shortPlans: number
  /** Plans some node expired during the run. */
  readonly expiredPlans: number
  /** Events of every plan, all told (each counted once). */
  readonly events: number
  readonly ok: boolean
  readonly problems: readonly string[]
  /** Times an expired plan's event was stored or folded again, by any node. */
  readonly returned: number
  /** Bound checks made (at every day and every skip), and how many a node failed. */
  readonly boundChecks: number
  readonly boundFailures: number
  /** Largest store (events) a live node held at a check (one up for BOUND_SLACK_MS at least), which node, and when (days). */
  readonly maxStore: number
  readonly maxStoreNode: number
  readonly maxStoreDay: number
  /** The bound at that check (see `bounds`), and the largest bound of the run. */
  readonly boundAtMaxStore: number
  readonly maxBound: number
  /** Largest sync id set, and most tombstones, a live node held at a check; the largest tombstone bound. */
  readonly maxIdSet: number
  readonly maxTombstones: number
  readonly maxTombstoneBound: number
  /** Bytes a node received per day up (gossip of events and presence, and sync), in the time simulated. */
  readonly bytesPerNodePerDay: number
  readonly eventBytesPerNodePerDay: number
  readonly presenceBytesPerNodePerDay: number
  readonly syncBytesPerNodePerDay: number
  /** What an idle node received per hour, measured in idle windows the run simulated (null if none fit). */
  readonly idleBytesPerNodePerHour: number | null
  readonly idleWindowMs: number
  /** bytesPerNodePerDay with every skipped span charged at the idle rate (an estimate; null without the rate). */
  readonly bytesPerNodePerDayWithIdle: number | null
  /** Virtual ms simulated and skipped (their sum is the run), and how many skips. */
  readonly simulatedMs: number
  readonly skippedMs: number
  readonly skips: number
  readonly steps: number
  readonly wallMs: number
  readonly heapMb: number
  readonly peakRssMb: number
  readonly replay: string
}

/**
 * A goal arrives this long after the landing of the skip before it: every
 * node has announced itself (in WAKE_HOLD_MS) and run its timers once.
 */
export const WARM_MS = 1_000
/** A day's check lands this early, so every node's retention pass has run after a skip. */
const CHECK_LEAD_MS = 2_000
/** After a skip, the swarm runs at least this long (every node's retention tick, once a second, has run). */
const DWELL_MS = 1_500
/** Shorter spans are simulated, not skipped. */
const MIN_SKIP_MS = 2_000
/** Plans due to expire within this of the first are expired at one landing (a node's pass may run this late anyway). */
const EXPIRY_COALESCE_MS = RETENTION_PASS_MS
/**
 * How late a node may expire a plan and still be within the bound: a pass
 * every RETENTION_PASS_MS, plans landed together EXPIRY_COALESCE_MS apart,
 * and a backlog worked off 25 plans a second; a node restarted less than
 * this ago is not held to the bound yet.
 */
export const BOUND_SLACK_MS = 5 * 60_000
/** A swarm that is not quiet for this long is skipped anyway (a problem: something never settles). */
const STUCK_MS = 20 * 60_000
/** Between quiet checks. */
const CHECK_EVERY_MS = 250
/**
 * Nothing is skipped before the swarm has formed (its connections made, every
 * roster full, and the executors' view trusted: two presence intervals), and
 * the first goal comes after that.
 */
export function formingMs(presenceIntervalMs: number): number {
  return Math.ceil(2 * presenceIntervalMs * (1 + PRESENCE_JITTER)) + 10_000
}

interface PlanLedger {
  readonly plan: PlanId
  readonly k: number
  readonly retainDays: number | null
  /** Every event id of the plan any node stored. */
  readonly ids: Set<string>
  /** Virtual ms (elapsed) the plan expires at by its rule, once it finished (node 0's record). */
  expiresAt: number | undefined
  /** Virtual ms some node first expired it, and which. */
  expiredAt: number | undefined
  expiredBy: number | undefined
}

type Appointment =
  | { readonly at: number; readonly kind: 'goal'; readonly k: number }
  | { readonly at: number; readonly kind: 'crash'; readonly slot: { node: number | undefined }; readonly long: boolean }
  | { readonly at: number; readonly kind: 'restart'; readonly slot: { node: number | undefined } }
  | { readonly at: number; readonly kind: 'join'; readonly node: number }
  | { readonly at: number; readonly kind: 'check'; readonly day: number }

/** What the swarm must be awake for (every roster full, as in a swarm that never stopped): goals, and nodes (re)joining. */
const needsWarm = (a: Appointment): boolean => a.kind === 'goal' || a.kind === 'restart' || a.kind === 'join'
const leadOf = (a: Appointment): number => (needsWarm(a) ? WARM_MS : a.kind === 'check' ? CHECK_LEAD_MS : 0)

export function longReplayCommand(o: LongRunOptions): string {
  const extra = [
    o.restarts === undefined ? '' : ` --restarts ${o.restarts}`,
    o.joins === undefined ? '' : ` --joins ${o.joins}`,
    o.maxDepth === undefined ? '' : ` --depth ${o.maxDepth}`,
    o.llmLatencyMs === undefined ? '' : ` --latency-ms ${o.llmLatencyMs}`,
    o.maxPeers === undefined ? '' : ` --max-peers ${o.maxPeers}`
  ].join('')
  return `npm run sim -- --seed ${o.seed} --nodes ${o.nodes} --plans ${o.plans} --days ${o.days}${extra}`
}

/** Run one long run to its last day and check it. */
export async function runLong(opts: LongRunOptions): Promise<LongRunReport> {
  const t0 = performance.now()
  const days = opts.days
  const endMs = days * DAY_MS
  const rnd = seededRandom(opts.seed ^ 0x10e6)
  const restarts = opts.restarts ?? Math.max(1, Math.round(days / 3))
  const joins = opts.joins ?? Math.max(1, Math.round(days / 10))
  const initial = Math.max(4, opts.nodes)
  const problems: string[] = []
  // Traced as found, too: a run of hours shows its first failure when it happens, not at its end.
  const problem = (p: string): void => {
    if (problems.length < 200) problems.push(p)
    if (problems.length <= 20) opts.trace?.(`problem: ${p}`)
  }

  // What every store takes in and lets go, across the run.
  const ledger = new Map<string, PlanLedger>()
  const byK: PlanLedger[] = []
  const expiredEver = new Map<string, PlanLedger>()
  /** Per node: tombstones held, by plan; plans it expired itself, and when (elapsed ms). */
  const tombstones: Array<Map<string, number>> = []
  const expiredHere: Array<Map<string, number>> = []
  let returned = 0
  const unknownIds = new Map<string, Set<string>>()
  const idsOf = (plan: string): Set<string> => {
    const l = ledger.get(plan)
    if (l !== undefined) return l.ids
    // A plan's events can be stored before its goal's publish resolves here: kept aside until it does.
    let s = unknownIds.get(plan)
    if (s === undefined) {
      s = new Set()
      unknownIds.set(plan, s)
    }
    return s
  }
  // The stores are watched from before the world exists (it creates them): its clock is read through this.
  const clock = { elapsed: (): number => 0 }
  const nowDay = (): string => (clock.elapsed() / DAY_MS).toFixed(2)
  const took = (index: number, row: EventRow, isNew: boolean): void => {
    if (!isNew) return
    idsOf(row.plan).add(row.id)
    const gone = expiredEver.get(row.plan)
    if (gone !== undefined) {
      returned++
      problem(
        `node ${index} stored an event of plan ${row.plan.slice(0, 12)} at day ${nowDay()}, after node ` +
          `${gone.expiredBy} expired it at day ${((gone.expiredAt ?? 0) / DAY_MS).toFixed(2)}`
      )
    }
  }
  const watch = (index: number, store: EventStore): EventStore => {
    tombstones[index] = new Map()
    expiredHere[index] = new Map()
    return {
      ...store,
      put: row => {
        const isNew = store.put(row)
        took(index, row, isNew)
        return isNew
      },
      putMany: rows => {
        const list = [...rows]
        const fresh = list.map(r => !store.has(r.id))
        const n = store.putMany(list)
        list.forEach((r, i) => {
          took(index, r, fresh[i] === true)
        })
        return n
      },
      expirePlan: (plan, nowMs) => {
        const ids = store.expirePlan(plan, nowMs)
        tombstones[index]?.set(plan, ids.length)
        expiredHere[index]?.set(plan, clock.elapsed())
        const l = ledger.get(plan)
        if (l !== undefined && l.expiredAt === undefined) {
          l.expiredAt = clock.elapsed()
          l.expiredBy = index
          expiredEver.set(plan, l)
        }
        return ids
      },
      purgeExpired: beforeMs => {
        const n = store.purgeExpired(beforeMs)
        if (n > 0) {
          const listed = new Set(store.expiredPlans())
          const held = tombstones[index]
          for (const p of [...(held?.keys() ?? [])]) if (!listed.has(p)) held?.delete(p)
        }
        return n
      }
    }
  }

  const world = await World.create({
    seed: opts.seed,
    nodes: initial,
    faults: [],
    plans: Math.max(2, opts.plans),
    joins,
    maxDepth: opts.maxDepth ?? 1,
    topology: 'neighbours',
    until: 'plan',
    wrapStore: watch,
    ...(opts.llmLatencyMs === undefined ? {} : { llmLatencyMs: opts.llmLatencyMs }),
    ...(opts.llmLatency === undefined ? {} : { llmLatency: opts.llmLatency }),
    ...(opts.linkMs === undefined ? {} : { linkMs: opts.linkMs }),
    ...(opts.maxPeers === undefined ? {} : { maxPeers: opts.maxPeers })
  })
  clock.elapsed = () => world.time.elapsed
  const time = world.time
  const nodes = world.nodes

  // The run's schedule, drawn up front from its own stream.
  const appointments: Appointment[] = []
  const tailMs = Math.min(DAY_MS, endMs / 4)
  const formedAt = formingMs(world.presenceIntervalMs)
  const firstGoalAt = formedAt + WARM_MS
  const spanMs = Math.max(1, endMs - tailMs - firstGoalAt)
  const goalTimes = Array.from({ length: opts.plans }, () => firstGoalAt + Math.floor(rnd() * spanMs)).sort(
    (a, b) => a - b
  )
  const shortShare = opts.shortShare ?? 0.25
  const [lo, hi] = opts.shortRetainDays ?? [1, 7]
  const retainOf = goalTimes.map(() => (rnd() < shortShare ? lo + Math.floor(rnd() * (hi - lo + 1)) : null))
  goalTimes.forEach((at, k) => appointments.push({ at, kind: 'goal', k }))
  const lifeFrom = Math.min(DAY_MS / 10, endMs / 10)
  const lifeTo = Math.max(lifeFrom + 1, endMs - Math.min(DAY_MS / 2, endMs / 5))
  const backBy = endMs - Math.min(DAY_MS / 4, endMs / 8)
  for (let i = 0; i < restarts; i++) {
    const at = lifeFrom + Math.floor(rnd() * (lifeTo - lifeFrom))
    // Every third down long enough that its peers forgot the tombstones of what expired meanwhile.
    const long = i % 3 === 2
    const down = long
      ? TOMBSTONE_KEEP_MS + DAY_MS + Math.floor(rnd() * 2 * DAY_MS)
      : 60_000 + Math.floor(rnd() * 6 * 3_600_000)
    const slot: { node: number | undefined } = { node: undefined }
    appointments.push({ at, kind: 'crash', slot, long })
    appointments.push({ at: Math.min(backBy, at + down), kind: 'restart', slot })
  }
  for (let j = 0; j < joins; j++)
    appointments.push({ at: lifeFrom + Math.floor(rnd() * (lifeTo - lifeFrom)), kind: 'join', node: initial + j })
  for (let d = 1; d <= days; d++) appointments.push({ at: d * DAY_MS, kind: 'check', day: d })
  // Stable: at one instant, a crash before its restart, a check last.
  const order = { crash: 0, restart: 1, join: 2, goal: 3, check: 4 }
  appointments.sort((a, b) => a.at - b.at || order[a.kind] - order[b.kind])

  // Up time per node, for bytes per node per day.
  const upSince = new Map<number, number>()
  let upMs = 0
  const down = (i: number): void => {
    const s = upSince.get(i)
    if (s !== undefined) upMs += time.elapsed - s
    upSince.delete(i)
  }
  const live = (): number[] => nodes.filter(n => n.runtime !== undefined).map(n => n.index)

  const open = new Set<PlanLedger>()
  let publishing = 0
  const watchFolds = (i: number): void => {
    nodes[i]?.runtime?.view.onFolded(events => {
      for (const e of events) {
        const plan = planOf(e) as string
        const gone = expiredEver.get(plan)
        if (gone === undefined) continue
        returned++
        problem(
          `node ${i} folded an event of plan ${plan.slice(0, 12)} at day ${nowDay()}, after node ` +
            `${gone.expiredBy} expired it at day ${((gone.expiredAt ?? 0) / DAY_MS).toFixed(2)}`
        )
      }
    })
  }
  const start = async (i: number): Promise<void> => {
    await world.startNode(i)
    upSince.set(i, time.elapsed)
    startedAt.set(i, time.elapsed)
    watchFolds(i)
  }
  const startedAt = new Map<number, number>()

  const submit = (k: number): void => {
    const up = live()
    const author = nodes[k % initial]?.runtime !== undefined ? k % initial : (up[k % up.length] as number)
    const view = nodes[author]?.runtime?.view
    if (view === undefined) return
    const retainDays = retainOf[k] ?? null
    // The committee is the scorers the author sees (itself too, if it is one), as `submit` picks it: one pinned
    // while it is down would hold the plan until it restarts (with two scorers, a quorum of both).
    const seen = scorersInSight(view)
    const params = seen.length > 0 ? world.params(seen) : world.params()
    publishing++
    void view
      .publish('goal-submitted', '', [], {
        text: world.goalText(k),
        params: { ...params, ...(retainDays === null ? {} : { retainDays }) }
      })
      .then(
        r => {
          const plan = r.event.id as string as PlanId
          const l: PlanLedger = {
            plan,
            k,
            retainDays,
            ids: unknownIds.get(plan) ?? new Set([plan]),
            expiresAt: undefined,
            expiredAt: undefined,
            expiredBy: undefined
          }
          unknownIds.delete(plan)
          ledger.set(plan, l)
          byK.push(l)
          open.add(l)
        },
        (err: Error) => {
          problem(`goal ${k} could not be published: ${err.message}`)
        }
      )
      .finally(() => {
        publishing--
      })
  }

  /** Node 0's view of when a finished plan expires (elapsed ms), or undefined. */
  const expiryOf = (plan: PlanId): number | undefined => {
    const r = nodes[0]?.runtime?.replica.fold.facts(plan)
    const at = r === undefined ? null : expiresAtMs(r)
    return at === null ? undefined : at - SIM_EPOCH_MS
  }

  /** Why the swarm is not quiet now, or null when it is (see the file's comment). */
  const unquiet = (): string | null => {
    if (publishing > 0) return 'a goal is being published'
    if (world.network.inFlight() > 0) return 'messages or dials on their way'
    let size: number | undefined
    for (const n of nodes) {
      const rt = n.runtime
      if (rt === undefined) continue
      if (n.transport?.busy() === true) return `node ${n.index} is in a sync session`
      if (n.roleIdle !== undefined && !n.roleIdle()) return `node ${n.index} is acting`
      if (rt.replica.fold.events.parkedCount > 0) return `node ${n.index} parks events`
      if (size === undefined) size = rt.replica.ids.size
      else if (rt.replica.ids.size !== size)
        return `node ${n.index} holds ${rt.replica.ids.size} events, another ${size}`
    }
    let fp: string | undefined
    for (const n of nodes) {
      const rt = n.runtime
      if (rt === undefined) continue
      const f = Buffer.from(rt.replica.ids.fingerprint('', null)).toString('hex')
      if (fp === undefined) fp = f
      else if (f !== fp) return `node ${n.index} holds other events than another`
    }
    for (const l of open) {
      for (const n of nodes) {
        const fold = n.runtime?.replica.fold
        if (fold === undefined) continue
        const t = fold.tree(l.plan)
        if (t === undefined ? !fold.isEvicted(l.plan) : !isFinished(t))
          return `plan ${l.plan.slice(0, 12)} is under way on node ${n.index}`
      }
    }
    for (const l of [...open]) {
      l.expiresAt = expiryOf(l.plan)
      open.delete(l)
    }
    // A node restarted after a long time down works off its backlog (25 plans a pass) before the swarm is quiet.
    for (const n of nodes)
      if ((n.runtime?.replica.expiredBy(SIM_EPOCH_MS + time.elapsed).length ?? 0) > 0)
        return `plans are due to expire on node ${n.index}`
    return null
  }

  /** The first plan expiry after now that the swarm has not reached, as a landing time (elapsed), or Infinity. */
  const nextExpiryLanding = (): number => {
    const now = time.elapsed
    let first = Infinity
    const fold = nodes[0]?.runtime?.replica.fold
    for (const plan of fold?.plansUnsorted() ?? []) {
      const at = expiryOf(plan)
      if (at !== undefined && at > now && at < first) first = at
    }
    return first === Infinity ? Infinity : first + EXPIRY_COALESCE_MS
  }

  // The bound, from the plans' own events.
  let boundChecks = 0
  let boundFailures = 0
  let maxStore = 0
  let maxStoreNode = 0
  let maxStoreAt = 0
  let boundAtMaxStore = 0
  let maxBound = 0
  let maxIdSet = 0
  let maxTombstones = 0
  let maxTombstoneBound = 0
  /**
   * The bound on what a node holds now: the events of every plan not yet
   * expired by its rule BOUND_SLACK_MS ago (plans under way, and finished
   * plans within their retention window), each plan counted with every event
   * any node ever stored of it.
   */
  const storeBound = (): number => {
    const now = time.elapsed
    let store = 0
    for (const l of byK) {
      if (!open.has(l) && l.expiredAt === undefined) l.expiresAt = expiryOf(l.plan) ?? l.expiresAt
      const at = l.expiresAt
      if (at === undefined || at + BOUND_SLACK_MS > now) store += l.ids.size
    }
    for (const s of unknownIds.values()) store += s.size
    return store
  }
  /**
   * The bound on a node's tombstones now: the events of the plans it expired
   * less than TOMBSTONE_KEEP_MS + BOUND_SLACK_MS ago (a node that was down
   * when a plan expired by its rule expires it, and keeps its tombstones a
   * week, from its restart).
   */
  const tombstoneBound = (index: number): number => {
    const now = time.elapsed
    let n = 0
    for (const [plan, at] of expiredHere[index] ?? [])
      if (at + TOMBSTONE_KEEP_MS + BOUND_SLACK_MS > now) n += ledger.get(plan)?.ids.size ?? 0
    return n
  }
  const checkBounds = (): void => {
    const b = { store: storeBound(), tombstones: 0 }
    boundChecks++
    maxBound = Math.max(maxBound, b.store)
    const now = time.elapsed
    for (const n of nodes) {
      const rt = n.runtime
      if (rt === undefined) continue
      const count = n.store.count()
      const ids = rt.replica.ids.size
      let tomb = 0
      for (const c of tombstones[n.index]?.values() ?? []) tomb += c
      // Just (re)started: held to the bound once its passes had their time.
      if (now - (startedAt.get(n.index) ?? 0) < BOUND_SLACK_MS) continue
      b.tombstones = tombstoneBound(n.index)
      maxTombstoneBound = Math.max(maxTombstoneBound, b.tombstones)
      if (count > maxStore) {
        maxStore = count
        maxStoreNode = n.index
        maxStoreAt = now
        boundAtMaxStore = b.store
      }
      maxIdSet = Math.max(maxIdSet, ids)
      maxTombstones = Math.max(maxTombstones, tomb)
      if (count > b.store || ids > b.store || tomb > b.tombstones) {
        boundFailures++
        problem(
          `node ${n.index} at day ${nowDay()} holds ${count} events, an id set of ${ids} and ${tomb} tombstones; ` +
            `bound ${b.store} events, ${b.tombstones} tombstones`
        )
      }
      // A plan this node expired is not back in its store or fold.
      for (const plan of expiredHere[n.index]?.keys() ?? []) {
        if (n.store.countByPlan(plan) > 0 || rt.replica.fold.facts(plan as PlanId) !== undefined) {
          returned++
          problem(`node ${n.index} holds plan ${plan.slice(0, 12)} at day ${nowDay()}, which it expired before`)
        }
      }
    }
  }

  // Traffic, and idle windows measured.
  const received = (): { all: number; events: number; presence: number; sync: number } => {
    let all = 0
    let events = 0
    let presence = 0
    let sync = 0
    for (const t of world.network.traffic.values()) {
      all += t.bytesReceived
      events += t.eventBytesReceived
      presence += t.presenceBytesReceived
      sync += t.syncBytesReceived
    }
    return { all, events, presence, sync }
  }
  const idleWindowMs = Math.max(60_000, formingMs(world.presenceIntervalMs))
  const idleDays = new Set([1, Math.max(1, Math.floor(days / 2))])
  let idleWanted = false
  let idleFrom: { at: number; bytes: number; live: number } | undefined
  let idleBytes = 0
  let idleNodeMs = 0
  let idleMs = 0
  let skippedMs = 0
  let skippedNodeMs = 0
  let skips = 0
  let lastSkipAt = -Infinity
  let stale = false
  let lastQuiet = 0

  type Decision = { readonly kind: 'skip'; readonly to: number; readonly wake: boolean } | { readonly kind: 'wake' }
  let decision: Decision | null = null
  let ptr = 0
  const decide = (): Decision | null => {
    const now = time.elapsed
    const next = appointments[ptr]
    if (next === undefined) return null
    if (idleFrom !== undefined) {
      if (now - idleFrom.at < idleWindowMs) return null
      idleBytes += received().all - idleFrom.bytes
      idleNodeMs += (now - idleFrom.at) * idleFrom.live
      idleMs += now - idleFrom.at
      idleFrom = undefined
    }
    if (now < formedAt || now - lastSkipAt < DWELL_MS) return null
    const why = unquiet()
    if (why !== null) {
      if (now - lastQuiet > STUCK_MS) {
        problem(`the swarm was not quiet from day ${(lastQuiet / DAY_MS).toFixed(2)} to ${nowDay()}: ${why}`)
        lastQuiet = now
        const to = next.at - leadOf(next)
        if (to - now >= MIN_SKIP_MS) return { kind: 'skip', to, wake: needsWarm(next) }
      }
      return null
    }
    lastQuiet = now
    const landing = next.at - leadOf(next)
    const expiry = nextExpiryLanding()
    let warmAt = Infinity
    for (let i = ptr; i < appointments.length; i++) {
      const a = appointments[i] as Appointment
      if (needsWarm(a)) {
        warmAt = a.at
        break
      }
    }
    // An idle window measured: nothing but checks in it, and the next goal or node not within it.
    if (idleWanted && warmAt - now > idleWindowMs + WARM_MS + MIN_SKIP_MS && expiry - now > idleWindowMs) {
      const other = appointments.slice(ptr).find(a => a.kind !== 'check')
      if (other === undefined || other.at - now > idleWindowMs) {
        idleWanted = false
        idleFrom = { at: now, bytes: received().all, live: live().length }
        return null
      }
    }
    const to = Math.min(landing, expiry)
    if (to - now >= MIN_SKIP_MS) return { kind: 'skip', to, wake: to === landing && needsWarm(next) }
    if (stale && warmAt - now <= WARM_MS + MIN_SKIP_MS) return { kind: 'wake' }
    return null
  }
  // Every node announces at once while all its other timers are held (wakeHoldMs, several flood hops): no role looks
  // at its roster before it lists every live node again, so no executor sees its view change (VIEW_UNCHANGED_MS).
  const wakeHoldMs = 10 * (opts.linkMs?.maxMs ?? 5) + 50
  const wake = (): void => {
    stale = false
    time.holdNodes(wakeHoldMs)
    for (const n of nodes) {
      const transport = n.transport
      if (n.runtime === undefined || transport === undefined) continue
      n.clock.scheduler.after(0, () => {
        transport.announceNow()
      })
    }
  }
  const quietCheck = (): void => {
    if (decision === null) decision = decide()
    time.schedule(CHECK_EVERY_MS, quietCheck)
  }

  const dayLine = (day: number): string => {
    const b = { store: storeBound() }
    let store = 0
    for (const n of nodes) if (n.runtime !== undefined) store = Math.max(store, n.store.count())
    const r = received()
    return (
      `day ${day}: ${live().length} nodes up, ${byK.length} plans, ${expiredEver.size} expired; ` +
      `largest store ${store} (bound ${b.store}); ` +
      `${Math.round(r.all / Math.max(1, live().length))} bytes per node so far; simulated ` +
      `${Math.round((time.elapsed - skippedMs) / 1000)} s, skipped ${Math.round(skippedMs / 1000)} s; ` +
      `wall ${Math.round((performance.now() - t0) / 1000)} s`
    )
  }

  const perform = async (a: Appointment): Promise<void> => {
    switch (a.kind) {
      case 'goal': {
        submit(a.k)
        return
      }
      case 'crash': {
        const candidates = live().filter(i => i !== 0 && i < initial)
        const i = candidates[Math.floor(rnd() * candidates.length)]
        if (i === undefined) return
        a.slot.node = i
        down(i)
        world.crashNode(i)
        opts.trace?.(`day ${nowDay()}: node ${i} crashes${a.long ? ', down for more than a week' : ''}`)
        return
      }
      case 'restart': {
        const i = a.slot.node
        if (i === undefined) return
        const held = nodes[i]?.store.count() ?? 0
        await start(i)
        opts.trace?.(
          `day ${nowDay()}: node ${i} restarts on its store (${held} events, ${nodes[i]?.store.count()} after expiry)`
        )
        return
      }
      case 'join': {
        await start(a.node)
        opts.trace?.(`day ${nowDay()}: node ${a.node} joins on an empty store`)
        return
      }
      case 'check': {
        await opts.onDay?.(a.day, world)
        checkBounds()
        if (idleDays.has(a.day)) idleWanted = true
        opts.trace?.(dayLine(a.day))
        return
      }
      default: {
        const never: never = a
        throw new Error(`unknown appointment ${JSON.stringify(never)}`)
      }
    }
  }

  let outcomeProblem: string | undefined
  try {
    for (let i = 0; i < initial; i++) await start(i)
    world.network.changed()
    time.schedule(CHECK_EVERY_MS, quietCheck)
    while (ptr < appointments.length) {
      const a = appointments[ptr] as Appointment
      decision = null
      const outcome = await time.run(a.at, () => decision !== null)
      if (outcome === 'done') {
        const d = decision as Decision | null
        decision = null
        if (d === null) continue
        if (d.kind === 'wake') {
          wake()
          continue
        }
        for (const n of nodes) n.runtime?.replica.flush()
        checkBounds()
        const span = d.to - time.elapsed
        skippedMs += span
        skippedNodeMs += span * live().length
        skips++
        time.skip(span)
        lastSkipAt = time.elapsed
        lastQuiet = time.elapsed
        stale = true
        if (d.wake) wake()
        continue
      }
      if (outcome === 'idle') {
        outcomeProblem = `the run ran out of timers at day ${nowDay()}`
        break
      }
      await perform(a)
      ptr++
    }
  } finally {
    for (const i of [...upSince.keys()]) down(i)
  }
  if (outcomeProblem !== undefined) problem(outcomeProblem)

  // The end: every plan finished (or expired), and one treeHash per plan on every node that holds it.
  const liveNodes = nodes.filter(n => n.runtime !== undefined)
  if (byK.length < opts.plans) problem(`${opts.plans - byK.length} goals were never published`)
  for (const l of byK) {
    const hashes = new Map<string, number[]>()
    let unfinished = 0
    for (const n of liveNodes) {
      const fold = n.runtime?.replica.fold
      if (fold === undefined) continue
      const h = fold.treeHash(l.plan)
      if (h === undefined) continue
      const t = fold.tree(l.plan)
      if (t !== undefined && !isFinished(t)) unfinished++
      hashes.set(h, [...(hashes.get(h) ?? []), n.index])
    }
    if (unfinished > 0) problem(`plan ${l.plan.slice(0, 12)} (goal ${l.k}) is still under way on ${unfinished} nodes`)
    if (hashes.size > 1)
      problem(
        `plan ${l.plan.slice(0, 12)} has ${hashes.size} treeHashes: ` +
          [...hashes].map(([h, ns]) => `${h.slice(0, 12)} on ${ns.length} nodes`).join(', ')
      )
    if (hashes.size === 0 && l.expiredAt === undefined)
      problem(`plan ${l.plan.slice(0, 12)} (goal ${l.k}) is held by no node, and none expired it`)
  }
  const sizes = new Set(liveNodes.map(n => n.runtime?.replica.ids.size))
  if (sizes.size > 1) problem(`at the end the live nodes hold ${[...sizes].join(', ')} events`)
  await world.stop()

  const r = received()
  const nodeDays = upMs / DAY_MS
  const perDay = (x: number): number => (nodeDays === 0 ? 0 : Math.round(x / nodeDays))
  const idleRate = idleNodeMs === 0 ? null : idleBytes / idleNodeMs
  let events = 0
  for (const l of byK) events += l.ids.size
  return {
    seed: opts.seed,
    nodes: initial,
    joins,
    restarts,
    days,
    plans: byK.length,
    shortPlans: byK.filter(l => l.retainDays !== null).length,
    expiredPlans: expiredEver.size,
    events,
    ok: problems.length === 0,
    problems,
    returned,
    boundChecks,
    boundFailures,
    maxStore,
    maxStoreNode,
    maxStoreDay: Math.round((maxStoreAt / DAY_MS) * 100) / 100,
    boundAtMaxStore,
    maxBound,
    maxIdSet,
    maxTombstones,
    maxTombstoneBound,
    bytesPerNodePerDay: perDay(r.all),
    eventBytesPerNodePerDay: perDay(r.events),
    presenceBytesPerNodePerDay: perDay(r.presence),
    syncBytesPerNodePerDay: perDay(r.sync),
    idleBytesPerNodePerHour: idleRate === null ? null : Math.round(idleRate * 3_600_000),
    idleWindowMs: Math.round(idleMs),
    bytesPerNodePerDayWithIdle: idleRate === null ? null : perDay(r.all + idleRate * skippedNodeMs),
    simulatedMs: Math.round(time.elapsed - skippedMs),
    skippedMs: Math.round(skippedMs),
    skips,
    steps: time.steps,
    wallMs: Math.round(performance.now() - t0),
    heapMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    replay: longReplayCommand(opts)
  }
}
