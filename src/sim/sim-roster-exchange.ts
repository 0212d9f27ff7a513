import { ROSTER_EXCHANGE_KEPT, ROSTER_EXCHANGE_MAX } from '../net/roster-exchange.js'
import { announcedInterval, PRESENCE_MIN_INTERVAL_MS, PRESENCE_TTL_INTERVALS } from '../net/presence-interval.js'
import type { Presence } from '../ports/transport.js'
import type { Scheduler } from '../ports/scheduler.js'

/** A new connection asks for the peer's roster this soon (src/net/roster-exchange.ts: after identify has run). */
export const SIM_ROSTER_ASK_AFTER_MS = 300

/**
 * The simulator's counterpart of src/net/roster-exchange.ts, whose protocol
 * half is bound to libp2p (a stream protocol, signed announcements): the
 * same bookkeeping (the latest announcement per peer, at most
 * ROSTER_EXCHANGE_KEPT, handed on only within the TTL its own interval
 * gives it, the node's own and a random sample of the rest, at most
 * ROSTER_EXCHANGE_MAX per exchange),
 * the stream and the signatures left out (presence is unsigned in the
 * simulator). The transport asks on every new connection, both ends, as
 * the real one does on `peer:connect`.
 */
export interface SimRosterExchange {
  /** An announcement this node accepted from gossip, learned from an exchange or published: kept to hand on (its own first). */
  remember: (p: Presence) => void
  /** What this node hands a peer that asks: a random sample of the fresh announcements it holds. */
  sample: () => Presence[]
  /** A peer's reply: the announcements still within their TTL and not about this node, remembered. */
  accept: (reply: readonly Presence[]) => Presence[]
}

const ttlOf = (p: Presence): number => PRESENCE_TTL_INTERVALS * (announcedInterval(p.capabilities) ?? PRESENCE_MIN_INTERVAL_MS)

export function createSimRosterExchange (self: string, scheduler: Scheduler): SimRosterExchange {
  const kept = new Map<string, Presence>()
  const remember = (p: Presence): void => {
    const prev = kept.get(p.peerId)
    if (prev !== undefined && prev.sentMs >= p.sentMs) return
    kept.delete(p.peerId)
    kept.set(p.peerId, p)
    if (kept.size > ROSTER_EXCHANGE_KEPT) kept.delete(kept.keys().next().value as string)
  }
  return {
    remember,
    sample: () => {
      const now = scheduler.now()
      const own = kept.get(self)
      const fresh = [...kept.values()].filter(p => p.peerId !== self && now - p.sentMs < ttlOf(p))
      for (let i = fresh.length - 1; i > 0; i--) {
        const j = Math.floor(scheduler.random() * (i + 1))
        ;[fresh[i], fresh[j]] = [fresh[j] as Presence, fresh[i] as Presence]
      }
      return [...(own === undefined ? [] : [own]), ...fresh].slice(0, ROSTER_EXCHANGE_MAX)
    },
    accept: reply => {
      const now = scheduler.now()
      const out: Presence[] = []
      for (const p of reply.slice(0, ROSTER_EXCHANGE_MAX)) {
        if (now - p.sentMs > ttlOf(p) || p.peerId === self) continue
        remember(p)
        out.push(p)
      }
      return out
    }
  }
}
