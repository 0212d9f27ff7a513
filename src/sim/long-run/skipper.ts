import { leadOf, needsWarm } from './appointments.js'
import { dayText } from './problems.js'
import { nextExpiryLanding, unquiet } from './quiet.js'
import { CHECK_EVERY_MS, DWELL_MS, MIN_SKIP_MS, STUCK_MS, WARM_MS } from './timing.js'
import type { Agenda } from './appointments.js'
import type { BoundCheck } from './check.js'
import type { Fleet } from './fleet.js'
import type { Ledger } from './ledger.js'
import type { Problems } from './problems.js'
import type { IdleMeter } from './traffic.js'
import type { World } from '../world.js'

/** What the quiet check decided: skip to `to` (and wake the swarm there), or wake it now. */
export type Decision =
  { readonly kind: 'skip'; readonly to: number; readonly wake: boolean } | { readonly kind: 'wake' }

/**
 * Idle time is skipped, not simulated: once the swarm is quiet (`unquiet`),
 * the clock and every queued timer move on together to the next thing that
 * happens (a goal, a crash, a restart, a newcomer, a day's check, or the
 * moment plans are due to expire: VirtualTime.skip). To every node that is
 * the whole world frozen for the span. What it would have done meanwhile
 * (announce itself every presence interval, a sync session every 10 s that
 * finds nothing to fetch, retention passes with nothing due) is not run,
 * and its traffic is not in the simulated bytes (IdleMeter measures it).
 * After a skip the nodes' rosters have expired; before a goal arrives every
 * node announces itself at the landing and the swarm runs WARM_MS, so the
 * executors' view is as stable as in a swarm that never stopped.
 *
 * A quiet check runs every CHECK_EVERY_MS of virtual time and leaves its
 * decision for the run's loop, which stops the clock on it and carries it out.
 */
export class Skipper {
  private decision: Decision | null = null
  /** Virtual ms skipped, node-ms skipped (live nodes times span), and how many skips. */
  skippedMs = 0
  skippedNodeMs = 0
  skips = 0
  private lastSkipAt = -Infinity
  /** The rosters may have expired in a skip, and no wake has refreshed them since. */
  private stale = false
  private lastQuiet = 0
  /** Every node announces while its other timers are held this long (several flood hops). */
  private readonly wakeHoldMs: number

  constructor(
    private readonly world: World,
    private readonly agenda: Agenda,
    private readonly fleet: Fleet,
    private readonly ledger: Ledger,
    private readonly check: BoundCheck,
    private readonly idle: IdleMeter,
    private readonly problems: Problems,
    /** Nothing is skipped before this (formingMs). */
    private readonly formedAt: number,
    linkMaxMs: number
  ) {
    this.wakeHoldMs = 10 * linkMaxMs + 50
  }

  /** Start the quiet checks, every CHECK_EVERY_MS from now on. */
  watch(): void {
    const quietCheck = (): void => {
      if (this.decision === null) this.decision = this.decide()
      this.world.time.schedule(CHECK_EVERY_MS, quietCheck)
    }
    this.world.time.schedule(CHECK_EVERY_MS, quietCheck)
  }

  /** Forget any decision: the loop runs the clock on until the next one. */
  clear(): void {
    this.decision = null
  }

  /** A decision is waiting for the loop. */
  get decided(): boolean {
    return this.decision !== null
  }

  /** Carry out the decision waiting, if any: a wake, or a skip (the bounds checked before it). */
  carryOut(): void {
    const d = this.decision
    this.decision = null
    if (d === null) return
    if (d.kind === 'wake') {
      this.wake()
      return
    }
    const time = this.world.time
    for (const n of this.world.nodes) n.runtime?.replica.flush()
    this.check.run()
    const span = d.to - time.elapsed
    this.skippedMs += span
    this.skippedNodeMs += span * this.fleet.live().length
    this.skips++
    time.skip(span)
    this.lastSkipAt = time.elapsed
    this.lastQuiet = time.elapsed
    this.stale = true
    if (d.wake) this.wake()
  }

  private decide(): Decision | null {
    const now = this.world.time.elapsed
    const next = this.agenda.next
    if (next === undefined) return null
    if (this.idle.measuring(now)) return null
    if (now < this.formedAt || now - this.lastSkipAt < DWELL_MS) return null
    const why = unquiet(this.world, this.ledger, this.fleet.publishing)
    if (why !== null) {
      if (now - this.lastQuiet > STUCK_MS) {
        this.problems.add(`the swarm was not quiet from day ${dayText(this.lastQuiet)} to ${dayText(now)}: ${why}`)
        this.lastQuiet = now
        const to = next.at - leadOf(next)
        if (to - now >= MIN_SKIP_MS) return { kind: 'skip', to, wake: needsWarm(next) }
      }
      return null
    }
    this.lastQuiet = now
    const landing = next.at - leadOf(next)
    const expiry = nextExpiryLanding(this.world)
    const warmAt = this.agenda.nextWarmAt()
    if (this.idle.open(now, warmAt, expiry, this.agenda)) return null
    const to = Math.min(landing, expiry)
    if (to - now >= MIN_SKIP_MS) return { kind: 'skip', to, wake: to === landing && needsWarm(next) }
    if (this.stale && warmAt - now <= WARM_MS + MIN_SKIP_MS) return { kind: 'wake' }
    return null
  }

  /**
   * Every node announces at once while all its other timers are held
   * (wakeHoldMs): no role looks at its roster before it lists every live
   * node again, so no executor sees its view change (VIEW_UNCHANGED_MS).
   */
  private wake(): void {
    this.stale = false
    this.world.time.holdNodes(this.wakeHoldMs)
    for (const n of this.world.nodes) {
      const transport = n.transport
      if (n.runtime === undefined || transport === undefined) continue
      n.clock.scheduler.after(0, () => {
        transport.announceNow()
      })
    }
  }
}
