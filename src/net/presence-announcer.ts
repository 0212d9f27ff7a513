/**
 * Announces this node's presence: at once when told what to say, an
 * `intervalMs` after each announcement, and soon after its first peer joins the presence
 * topic (a message published before any peer has subscribed reaches nobody,
 * so "once connected" means "once a peer has subscribed").
 *
 * Only the first peer: a node that already has neighbours has its presence
 * spread through the mesh, and a new neighbour learns it from the roster
 * exchange (which hands over the node's own announcement first). Announcing
 * swarm-wide on every new connection cost n announcements per connection
 * opened, so a mass start of n nodes with trimming moved ~n² x degree
 * presence messages (the simulator's 1000-node runs never finished).
 */
import { logger } from '@libp2p/logger'
import { realScheduler } from '../ports/scheduler.js'
import type { Cancel, Scheduler } from '../ports/scheduler.js'
import type { PresenceInfo } from './presence.js'

const log = logger('plan-swarm:net:presence')

/** Default announcement interval; the roster's TTL is five of these. */
export const PRESENCE_INTERVAL_MS = 3_000
/**
 * Each wait between announcements is the interval times a random factor in
 * 1 +- this, so nodes started together (a compose file, a simulated mass
 * start) do not all announce in the same instant every interval.
 */
export const PRESENCE_JITTER = 0.1
/** Joins and address changes within this window share one announcement. */
export const PRESENCE_JOIN_DEBOUNCE_MS = 200

export interface PresenceAnnouncer {
  /** Sets what to announce (if given) and announces now; resolves once published. */
  announce(info?: PresenceInfo): Promise<void>
  /**
   * A peer subscribed to the presence topic, and `subscribed` peers are
   * subscribed now (the new one included): announce soon if it is the only
   * one, so the last announcement reached nobody.
   */
  peerJoined(subscribed: number): void
  /** What this node would announce changed (its addresses: a relay slot, a port forward, a confirmed public address): announce soon. */
  changed(): void
  stop(): void
}

export interface PresenceAnnouncerInit {
  /** Between announcements; a function is read again at each one (the interval grows with the swarm). */
  readonly intervalMs: number | (() => number)
  /**
   * Signs and publishes one announcement of `info`; `intervalMs` is how long
   * until the next one (give or take the jitter), for receivers to size
   * their TTL by.
   */
  readonly publish: (info: PresenceInfo, intervalMs: number) => Promise<void>
  readonly initial?: PresenceInfo
  /** Timers; default the real clock. */
  readonly scheduler?: Scheduler
}

export function createPresenceAnnouncer(init: PresenceAnnouncerInit): PresenceAnnouncer {
  let info = init.initial
  let stopped = false
  let debounce: Cancel | undefined
  const scheduler = init.scheduler ?? realScheduler()
  const intervalOf =
    typeof init.intervalMs === 'number'
      ? (
          (ms: number) => () =>
            ms
        )(init.intervalMs)
      : init.intervalMs
  let cancelNext: Cancel = () => {}

  // Every announcement, periodic or not, restarts the wait for the next one and
  // says how long it is: what a receiver hears always promises the next in time,
  // so a swarm that grows needs no announcement of its own to say so.
  const schedule = (intervalMs: number): void => {
    cancelNext()
    cancelNext = scheduler.after(
      Math.round(intervalMs * (1 - PRESENCE_JITTER + 2 * PRESENCE_JITTER * scheduler.random())),
      () => {
        void publishNow()
      }
    )
  }
  const publishNow = async (): Promise<void> => {
    if (stopped) return
    const intervalMs = intervalOf()
    schedule(intervalMs)
    if (info === undefined) return
    try {
      await init.publish(info, intervalMs)
    } catch (err) {
      log.error('could not announce presence - %e', err)
    }
  }
  schedule(intervalOf())
  const stopInterval = (): void => {
    cancelNext()
  }

  const soon = (): void => {
    if (stopped || debounce !== undefined) return
    debounce = scheduler.after(PRESENCE_JOIN_DEBOUNCE_MS, () => {
      debounce = undefined
      void publishNow()
    })
  }

  return {
    async announce(next) {
      if (next !== undefined) info = next
      await publishNow()
    },
    peerJoined(subscribed) {
      if (subscribed <= 1) soon()
    },
    changed: () => {
      soon()
    },
    stop() {
      stopped = true
      stopInterval()
      debounce?.()
    }
  }
}
