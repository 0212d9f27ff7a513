/**
 * Counters of what gossip did with each topic's messages, for `/metrics` and
 * tests. Every inbound message that reaches our validator is counted once as
 * received and once under exactly one outcome.
 */

/** Throttled-message counts kept for at most this many peers (the busiest stay). */
export const MAX_THROTTLED_PEERS_TRACKED = 1024

export interface TopicStats {
  /** Messages this node published. */
  published: number
  /** Inbound messages that reached the validator (gossipsub drops duplicates before it). */
  received: number
  accepted: number
  /** Provably bad: the sender's gossip score is penalised. */
  rejected: number
  /** Not folded now (parked, stale, or a validator error); no penalty. */
  ignored: number
  /** Dropped because the sending peer was over its rate limit. */
  throttled: number
  /** Of the rejected: signed by a key not on the allow-list (presence; events are judged by the application). */
  notAllowed: number
}

/** A snapshot of the counters. */
export interface GossipStats {
  readonly events: Readonly<TopicStats>
  readonly presence: Readonly<TopicStats>
  /** Throttled messages by the peer that sent them (events and presence together). */
  readonly throttledByPeer: Readonly<Record<string, number>>
}

/** The live counters behind {@link GossipStats}. */
export interface GossipCounters {
  readonly events: TopicStats
  readonly presence: TopicStats
  throttle(peer: string): void
  snapshot(): GossipStats
}

function zero(): TopicStats {
  return { published: 0, received: 0, accepted: 0, rejected: 0, ignored: 0, throttled: 0, notAllowed: 0 }
}

export function createGossipCounters(): GossipCounters {
  const events = zero()
  const presence = zero()
  const byPeer = new Map<string, number>()
  return {
    events,
    presence,
    throttle(peer) {
      const n = byPeer.get(peer)
      if (n === undefined && byPeer.size >= MAX_THROTTLED_PEERS_TRACKED) {
        // Make room by dropping the least-throttled peer.
        let least: string | undefined
        let leastN = Infinity
        for (const [p, c] of byPeer) {
          if (c < leastN) {
            least = p
            leastN = c
          }
        }
        if (least !== undefined) byPeer.delete(least)
      }
      byPeer.set(peer, (n ?? 0) + 1)
    },
    snapshot() {
      return { events: { ...events }, presence: { ...presence }, throttledByPeer: Object.fromEntries(byPeer) }
    }
  }
}
