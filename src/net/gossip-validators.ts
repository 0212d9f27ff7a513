/**
 * Gossipsub topic validators for the events and presence topics.
 *
 * Gossipsub calls a validator once per new message id (duplicates are
 * dropped before it) and then delivers and forwards only on Accept. Reject
 * penalises the peer that handed us the message; Ignore drops it silently.
 * Since validity depends only on the bytes (and their deps), an honest relay
 * never forwards what we would reject, so Reject lands on the source of a
 * bad message; events that are merely parked are ignored, never rejected.
 *
 * A message ignored here stays in gossipsub's seen-cache (two minutes), so
 * gossip will not deliver it again from another peer: whatever was ignored
 * (parked, throttled) reaches the store through sync, not gossip.
 */
import { TopicValidatorResult } from '@libp2p/gossipsub'
import type { TopicValidatorFn } from '@libp2p/gossipsub'
import { logger } from '@libp2p/logger'
import { MAX_EVENT_BYTES } from '../core/limits.js'
import type { GossipCounters, TopicStats } from './gossip-stats.js'
import { decodePresence } from './presence.js'
import type { Presence } from './presence.js'
import type { PeerRateLimiter } from './rate-limit.js'

import type { Verdict } from '../ports/transport.js'

const log = logger('plan-swarm:net:gossip')

/** What the application decides about an inbound event's bytes (the one Verdict of src/ports/transport.ts). */
export type EventVerdict = Verdict

/**
 * Judges an event's wire bytes (`envelope || signature`) from `from`, the
 * peer that handed it to us (not necessarily its author). Should answer
 * within ~100 ms, or gossipsub's scoring starts to count it as slow.
 */
export type EventValidator = (bytes: Uint8Array, from: string) => Promise<EventVerdict> | EventVerdict

export interface GossipValidatorComponents {
  readonly swarm: string
  readonly counters: GossipCounters
  readonly eventLimiter: PeerRateLimiter
  readonly presenceLimiter: PeerRateLimiter
  readonly eventValidator: EventValidator
  /**
   * With an allow-list: whether a presence's signer may be in the roster. The
   * list gates connections; without this an admitted member could relay the
   * presence of any number of fresh keys, which then stood for committees.
   */
  readonly presenceAllowed?: (peerId: string) => boolean
  /** A verified, fresh announcement, with its signed bytes as they came (to hand on in a roster exchange). */
  readonly onPresence?: (p: Presence, bytes: Uint8Array) => void
  /** Wall clock (ms since the epoch): for rate limits and presence freshness. */
  readonly now: () => number
}

const RESULT: Record<EventVerdict, TopicValidatorResult> = {
  accept: TopicValidatorResult.Accept,
  reject: TopicValidatorResult.Reject,
  ignore: TopicValidatorResult.Ignore
}

function count(stats: TopicStats, verdict: EventVerdict): TopicValidatorResult {
  if (verdict === 'accept') stats.accepted++
  else if (verdict === 'reject') stats.rejected++
  else stats.ignored++
  return RESULT[verdict]
}

/** The events topic's validator: rate limit, size cap, then the application's verdict. */
export function createEventTopicValidator(c: GossipValidatorComponents): TopicValidatorFn {
  const stats = c.counters.events
  return async (peer, msg) => {
    const from = peer.toString()
    stats.received++
    if (!c.eventLimiter.take(from, c.now())) {
      stats.throttled++
      c.counters.throttle(from)
      return TopicValidatorResult.Ignore
    }
    if (msg.data.length > MAX_EVENT_BYTES) {
      log('rejecting an event of %d bytes from %s (max %d)', msg.data.length, from, MAX_EVENT_BYTES)
      return count(stats, 'reject')
    }
    let verdict: EventVerdict
    try {
      verdict = await c.eventValidator(msg.data, from)
    } catch (err) {
      log.error('event validator threw on a message from %s, ignoring it - %e', from, err)
      return count(stats, 'ignore')
    }
    if (RESULT[verdict] === undefined) {
      log.error('event validator returned %s, ignoring the message', verdict)
      return count(stats, 'ignore')
    }
    return count(stats, verdict)
  }
}

/** The presence topic's validator: rate limit, signature, freshness and the allow-list, then hand it to `onPresence`. */
export function createPresenceTopicValidator(c: GossipValidatorComponents): TopicValidatorFn {
  const stats = c.counters.presence
  return async (peer, msg) => {
    const from = peer.toString()
    stats.received++
    if (!c.presenceLimiter.take(from, c.now())) {
      stats.throttled++
      c.counters.throttle(from)
      log('throttled presence from %s (%d so far)', from, stats.throttled)
      return TopicValidatorResult.Ignore
    }
    const result = await decodePresence(c.swarm, msg.data, c.now())
    if (!result.ok) {
      log('%s presence from %s: %s', result.verdict, from, result.reason)
      return count(stats, result.verdict)
    }
    if (c.presenceAllowed !== undefined && !c.presenceAllowed(result.presence.peerId)) {
      stats.notAllowed++
      log.error(
        'rejecting the presence of %s relayed by %s: %s is not on the allow-list (%d refused so far)',
        result.presence.peerId,
        from,
        result.presence.peerId,
        stats.notAllowed
      )
      return count(stats, 'reject')
    }
    try {
      c.onPresence?.(result.presence, msg.data)
    } catch (err) {
      log.error('onPresence threw - %e', err)
    }
    return count(stats, 'accept')
  }
}
