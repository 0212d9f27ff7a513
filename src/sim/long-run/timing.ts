import { RETENTION_PASS_MS } from '../../runtime/retention.js'
import { PRESENCE_JITTER } from '../../net/presence-announcer.js'

/**
 * A goal arrives this long after the landing of the skip before it: every
 * node has announced itself (in the skipper's wake hold) and run its timers once.
 */
export const WARM_MS = 1_000
/** A day's check lands this early, so every node's retention pass has run after a skip. */
export const CHECK_LEAD_MS = 2_000
/** After a skip, the swarm runs at least this long (every node's retention tick, once a second, has run). */
export const DWELL_MS = 1_500
/** Shorter spans are simulated, not skipped. */
export const MIN_SKIP_MS = 2_000
/** Plans due to expire within this of the first are expired at one landing (a node's pass may run this late anyway). */
export const EXPIRY_COALESCE_MS = RETENTION_PASS_MS
/**
 * How late a node may expire a plan and still be within the bound: a pass
 * every RETENTION_PASS_MS, plans landed together EXPIRY_COALESCE_MS apart,
 * and a backlog worked off 25 plans a second; a node restarted less than
 * this ago is not held to the bound yet.
 */
export const BOUND_SLACK_MS = 5 * 60_000
/** A swarm that is not quiet for this long is skipped anyway (a problem: something never settles). */
export const STUCK_MS = 20 * 60_000
/** Between quiet checks. */
export const CHECK_EVERY_MS = 250

/**
 * Nothing is skipped before the swarm has formed (its connections made, every
 * roster full, and the executors' view trusted: two presence intervals), and
 * the first goal comes after that.
 */
export function formingMs(presenceIntervalMs: number): number {
  return Math.ceil(2 * presenceIntervalMs * (1 + PRESENCE_JITTER)) + 10_000
}
