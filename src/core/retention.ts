/**
 * How long a finished plan is kept (protocol 4's `retainDays`, ADR-0040).
 *
 * Every node reads the same number from the same signed goal and the same
 * last stamp from the same set of events, so every node that holds a plan
 * works out the same moment for it to go; nodes differ only by how far
 * their clocks are apart when they compare that moment with the time. A
 * plan under way never expires, however old: it is somebody's work.
 */
import { isFinished } from './view.js'
import type { PlanStatus } from './tree.js'

/** Days a finished plan is kept when its goal does not say (every goal before protocol 4). */
export const DEFAULT_RETAIN_DAYS = 30

export const DAY_MS = 86_400_000

/** What the rule reads of a plan: all of it a function of the plan's set of events. */
export interface RetentionFacts {
  readonly status: PlanStatus
  /** The latest wall-clock part of any of its events' stamps. */
  readonly lastStampMs: number
  /** The goal's `retainDays`, or null for the default. */
  readonly retainDays: number | null
}

/** The wall time at which a finished plan expires; null for a plan under way. */
export function expiresAtMs(f: RetentionFacts): number | null {
  if (!isFinished(f)) return null
  return f.lastStampMs + (f.retainDays ?? DEFAULT_RETAIN_DAYS) * DAY_MS
}

/** Whether the plan has expired at `nowMs` (this node's wall clock). */
export function isExpired(f: RetentionFacts, nowMs: number): boolean {
  const at = expiresAtMs(f)
  return at !== null && nowMs >= at
}
