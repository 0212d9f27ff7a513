/**
 * Per-peer token buckets for inbound gossip.
 *
 * Each direct peer (the one that handed us a message, not its author) gets a
 * bucket of `burst` tokens refilled at `ratePerSecond`; a message costs one.
 * A peer over budget has its messages ignored (not rejected: an honest relay
 * of a busy swarm must not be penalised), so a flooding peer costs us a hash
 * and a map lookup per message and the node stays responsive. Pure: time is
 * passed in.
 */

/** How fast and how far one peer may send. */
export interface RateLimit {
  /** Sustained messages per second. */
  readonly ratePerSecond: number
  /** Messages a quiet peer may send at once. */
  readonly burst: number
}

/** Default for the events topic: well above a busy swarm, well below what floods a 2-core box. */
export const DEFAULT_EVENT_RATE_LIMIT: RateLimit = { ratePerSecond: 200, burst: 400 }
/** Default for the presence topic: a peer announces itself every few seconds, relays carry everyone's. */
export const DEFAULT_PRESENCE_RATE_LIMIT: RateLimit = { ratePerSecond: 20, burst: 60 }
/**
 * Buckets kept before the fullest (most idle) ones are dropped; a dropped bucket restarts full, which is what it would
 * have refilled to.
 */
export const MAX_RATE_LIMITED_PEERS = 4096

interface Bucket {
  tokens: number
  atMs: number
}

/** Token buckets keyed by peer id. */
export interface PeerRateLimiter {
  /** Takes one token from `peer`'s bucket; false when it is empty (the message should be ignored). */
  take(peer: string, nowMs: number): boolean
  /**
   * Forgets a peer; it starts again with a full bucket. Not called on
   * disconnect: a flooder must not earn a fresh burst by reconnecting.
   */
  forget(peer: string): void
  /** Peers with a bucket. */
  size(): number
}

/**
 * A limiter for one topic.
 * @throws RangeError if the rate or burst is not a positive number.
 */
export function createPeerRateLimiter(limit: RateLimit, maxPeers = MAX_RATE_LIMITED_PEERS): PeerRateLimiter {
  if (!(limit.ratePerSecond > 0) || !(limit.burst >= 1)) {
    throw new RangeError(
      `rate limit needs ratePerSecond > 0 and burst >= 1, got ${limit.ratePerSecond}/s burst ${limit.burst}`
    )
  }
  const perMs = limit.ratePerSecond / 1000
  const buckets = new Map<string, Bucket>()

  const refill = (b: Bucket, nowMs: number): void => {
    const elapsed = nowMs - b.atMs
    if (elapsed > 0) {
      b.tokens = Math.min(limit.burst, b.tokens + elapsed * perMs)
      b.atMs = nowMs
    }
  }

  const evict = (nowMs: number): void => {
    // Drop buckets that have refilled completely: they hold no state worth keeping.
    for (const [peer, b] of buckets) {
      refill(b, nowMs)
      if (b.tokens >= limit.burst) buckets.delete(peer)
    }
    // Still full of throttled peers: drop the oldest insertions.
    while (buckets.size >= maxPeers) {
      const first = buckets.keys().next()
      if (first.done === true) break
      buckets.delete(first.value)
    }
  }

  return {
    take(peer, nowMs) {
      let b = buckets.get(peer)
      if (b === undefined) {
        if (buckets.size >= maxPeers) evict(nowMs)
        b = { tokens: limit.burst, atMs: nowMs }
        buckets.set(peer, b)
      } else {
        refill(b, nowMs)
      }
      if (b.tokens < 1) return false
      b.tokens -= 1
      return true
    },
    forget(peer) {
      buckets.delete(peer)
    },
    size() {
      return buckets.size
    }
  }
}
