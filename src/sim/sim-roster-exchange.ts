import { handOver, ROSTER_EXCHANGE_KEPT, ROSTER_EXCHANGE_MAX } from '../net/roster-exchange.js'
import { announcedTtl } from '../net/presence-interval.js'
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

const ttlOf = (p: Presence): number => announcedTtl(p.capabilities)

export function createSimRosterExchange(self: string, scheduler: Scheduler): SimRosterExchange {
  // Each announcement with the time it stops being fresh (its TTL parsed once, not at every exchange).
  const kept = new Map<string, { readonly p: Presence; readonly freshUntil: number }>()
  const remember = (p: Presence): void => {
    const prev = kept.get(p.peerId)
    if (prev !== undefined && prev.p.sentMs >= p.sentMs) return
    kept.delete(p.peerId)
    kept.set(p.peerId, { p, freshUntil: p.sentMs + ttlOf(p) })
    if (kept.size > ROSTER_EXCHANGE_KEPT) kept.delete(kept.keys().next().value as string)
  }
  return {
    remember,
    sample: () => {
      const now = scheduler.now()
      const fresh: Presence[] = []
      for (const k of kept.values()) if (k.p.peerId !== self && now < k.freshUntil) fresh.push(k.p)
      return handOver(kept.get(self)?.p, fresh, scheduler.random)
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
