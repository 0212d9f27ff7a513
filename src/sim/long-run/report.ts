import { DAY_MS } from '../../core/retention.js'
import { longReplayCommand } from './options.js'
import { received } from './traffic.js'
import type { LongRunOptions } from './options.js'
import type { BoundCheck } from './check.js'
import type { Fleet } from './fleet.js'
import type { Ledger } from './ledger.js'
import type { Problems } from './problems.js'
import type { Skipper } from './skipper.js'
import type { IdleMeter } from './traffic.js'
import type { World } from '../world.js'

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
  /** The bound at that check (see `Ledger.storeBound`), and the largest bound of the run. */
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

/** Everything a long run's report and trace lines are drawn from. */
export interface RunState {
  readonly opts: LongRunOptions
  readonly world: World
  readonly initial: number
  readonly joins: number
  readonly restarts: number
  readonly ledger: Ledger
  readonly problems: Problems
  readonly fleet: Fleet
  readonly check: BoundCheck
  readonly idle: IdleMeter
  readonly skipper: Skipper
  /** performance.now() at the start of the run. */
  readonly t0: number
}

/** The trace line of day `day`: nodes up, plans, the largest store against its bound, bytes so far, and time. */
export function dayLine(s: RunState, day: number): string {
  const { world, fleet, ledger, skipper } = s
  const time = world.time
  const b = { store: s.check.storeBound() }
  let store = 0
  for (const n of world.nodes) if (n.runtime !== undefined) store = Math.max(store, n.store.count())
  const r = received(world)
  return (
    `day ${day}: ${fleet.live().length} nodes up, ${ledger.byK.length} plans, ${ledger.expiredEver.size} expired; ` +
    `largest store ${store} (bound ${b.store}); ` +
    `${Math.round(r.all / Math.max(1, fleet.live().length))} bytes per node so far; simulated ` +
    `${Math.round((time.elapsed - skipper.skippedMs) / 1000)} s, skipped ${Math.round(skipper.skippedMs / 1000)} s; ` +
    `wall ${Math.round((performance.now() - s.t0) / 1000)} s`
  )
}

/** The report of a run that has ended (its world stopped). */
export function longRunReport(s: RunState): LongRunReport {
  const { opts, world, ledger, check, idle, skipper } = s
  const time = world.time
  const r = received(world)
  const nodeDays = s.fleet.upMs / DAY_MS
  const perDay = (x: number): number => (nodeDays === 0 ? 0 : Math.round(x / nodeDays))
  const idleRate = idle.rate
  let events = 0
  for (const l of ledger.byK) events += l.ids.size
  return {
    seed: opts.seed,
    nodes: s.initial,
    joins: s.joins,
    restarts: s.restarts,
    days: opts.days,
    plans: ledger.byK.length,
    shortPlans: ledger.byK.filter(l => l.retainDays !== null).length,
    expiredPlans: ledger.expiredEver.size,
    events,
    ok: s.problems.list.length === 0,
    problems: s.problems.list,
    returned: ledger.returned,
    boundChecks: check.checks,
    boundFailures: check.failures,
    maxStore: check.maxStore,
    maxStoreNode: check.maxStoreNode,
    maxStoreDay: Math.round((check.maxStoreAt / DAY_MS) * 100) / 100,
    boundAtMaxStore: check.boundAtMaxStore,
    maxBound: check.maxBound,
    maxIdSet: check.maxIdSet,
    maxTombstones: check.maxTombstones,
    maxTombstoneBound: check.maxTombstoneBound,
    bytesPerNodePerDay: perDay(r.all),
    eventBytesPerNodePerDay: perDay(r.events),
    presenceBytesPerNodePerDay: perDay(r.presence),
    syncBytesPerNodePerDay: perDay(r.sync),
    idleBytesPerNodePerHour: idleRate === null ? null : Math.round(idleRate * 3_600_000),
    idleWindowMs: Math.round(idle.ms),
    bytesPerNodePerDayWithIdle: idleRate === null ? null : perDay(r.all + idleRate * skipper.skippedNodeMs),
    simulatedMs: Math.round(time.elapsed - skipper.skippedMs),
    skippedMs: Math.round(skipper.skippedMs),
    skips: skipper.skips,
    steps: time.steps,
    wallMs: Math.round(performance.now() - s.t0),
    heapMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    replay: longReplayCommand(opts)
  }
}
