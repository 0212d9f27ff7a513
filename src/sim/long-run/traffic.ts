import type { World } from '../world.js'
import type { Agenda } from './appointments.js'
import { MIN_SKIP_MS, WARM_MS, formingMs } from './timing.js'

/** Bytes all nodes received so far, all told and by kind. */
export interface Received {
  readonly all: number
  readonly events: number
  readonly presence: number
  readonly sync: number
}

/** What every node received so far, summed: gossip of events and presence, and sync. */
export function received(world: World): Received {
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

/**
 * Idle traffic measured in windows the run simulates instead of skipping:
 * one on day 1 and one on the middle day, each a few presence intervals of
 * a quiet swarm with nothing but checks in it. Its rate is what a skipped
 * span is charged in the report's estimate.
 */
export class IdleMeter {
  readonly windowMs: number
  private readonly days: Set<number>
  private wanted = false
  private from: { at: number; bytes: number; live: number } | undefined
  /** Bytes received in the windows, node-ms and ms they lasted. */
  bytes = 0
  nodeMs = 0
  ms = 0

  constructor(
    private readonly world: World,
    days: number
  ) {
    this.windowMs = Math.max(60_000, formingMs(world.presenceIntervalMs))
    this.days = new Set([1, Math.max(1, Math.floor(days / 2))])
  }

  /** A day's check was made: the next window that fits is measured, if the day is one of the windows' days. */
  dayChecked(day: number): void {
    if (this.days.has(day)) this.wanted = true
  }

  /** Whether a window is under way at `now` (nothing may be skipped); one that has run its length is closed and counted. */
  measuring(now: number): boolean {
    const from = this.from
    if (from === undefined) return false
    if (now - from.at < this.windowMs) return true
    this.bytes += received(this.world).all - from.bytes
    this.nodeMs += (now - from.at) * from.live
    this.ms += now - from.at
    this.from = undefined
    return false
  }

  /**
   * Open a window at `now` if one is wanted and fits: nothing but checks in
   * it, and the next goal or node (`warmAt`) and the next expiry not within it.
   */
  open(now: number, warmAt: number, expiry: number, agenda: Agenda): boolean {
    if (!this.wanted || warmAt - now <= this.windowMs + WARM_MS + MIN_SKIP_MS || expiry - now <= this.windowMs)
      return false
    const other = agenda.nextNotCheck()
    if (other !== undefined && other.at - now <= this.windowMs) return false
    this.wanted = false
    const live = this.world.nodes.filter(n => n.runtime !== undefined).length
    this.from = { at: now, bytes: received(this.world).all, live }
    return true
  }

  /** Bytes a node received per ms in the windows, or null if none fitted. */
  get rate(): number | null {
    return this.nodeMs === 0 ? null : this.bytes / this.nodeMs
  }
}
