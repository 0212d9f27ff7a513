/**
 * The roster: which peers announced themselves recently, and as what.
 *
 * Entries are keyed by peer id and expire after the last announcement we
 * received: `ttlMs`, or five of the presence intervals the peer announced
 * (a capability, see presence-interval.ts), whichever is longer, so a node that leaves drops out without saying
 * goodbye. An announcement older (by its sender's clock) than the one held is
 * a replay or a late copy and does not refresh the entry; an expired entry is
 * remembered (unlisted) until such copies would be too old to pass the
 * presence check, so a replay cannot bring a departed peer back. Pure: time is
 * passed in, and "last seen" is our receive time, never the sender's clock.
 */
import { MAX_PRESENCE_AGE_MS } from './presence.js'
import { PRESENCE_TTL_INTERVALS, announcedInterval } from './presence-interval.js'
import type { Presence } from './presence.js'
import type { RosterEntry } from '../ports/node-view.js'

/** How long a peer stays listed after its last announcement (five default announcement intervals). */
export const ROSTER_TTL_MS = 15_000
/** Entries kept at most; beyond it the least recently seen is dropped. */
export const MAX_ROSTER_ENTRIES = 10_000

export type { RosterEntry }

export interface Roster {
  /**
   * Records an announcement received at `nowMs`; false when it is older than
   * the one held (nothing changes). `source`: where the peer connects from
   * here, when known (it replaces the one held; an unknown one keeps it).
   */
  update(p: Presence, nowMs: number, source?: string): boolean
  /** Drops a peer at once (e.g. it was found misbehaving). */
  remove(peerId: string): void
  /** The live entries (not expired at `nowMs`), most recently seen first. */
  list(nowMs: number): RosterEntry[]
  /** One live entry, or undefined. */
  get(peerId: string, nowMs: number): RosterEntry | undefined
}

interface Held {
  readonly presence: Presence
  readonly seenAtMs: number
  /** When this roster first heard of the peer (kept while it is remembered, expired or not). */
  readonly firstSeenAtMs: number
  readonly source: string | undefined
  /** How long it lives without news, from the interval it announced (read once, on update). */
  readonly ttlMs: number
}

export interface RosterInit {
  readonly ttlMs?: number
  readonly maxEntries?: number
}

/** An empty roster. */
export function createRoster(init: RosterInit = {}): Roster {
  const ttlMs = init.ttlMs ?? ROSTER_TTL_MS
  const maxEntries = init.maxEntries ?? MAX_ROSTER_ENTRIES
  if (!(ttlMs > 0) || !(maxEntries >= 1))
    throw new RangeError(`roster needs ttlMs > 0 and maxEntries >= 1, got ${ttlMs} and ${maxEntries}`)
  // Insertion order = last-seen order: an update deletes and re-inserts.
  const held = new Map<string, Held>()

  // An entry lives PRESENCE_TTL_INTERVALS of the interval its peer announced (it grows with the swarm), and at least ttlMs.
  const ttlOf = (p: Presence): number =>
    Math.max(ttlMs, PRESENCE_TTL_INTERVALS * (announcedInterval(p.capabilities) ?? 0))
  const live = (h: Held, nowMs: number): boolean => nowMs - h.seenAtMs < h.ttlMs
  const forgotten = (h: Held, nowMs: number): boolean => nowMs - h.seenAtMs >= h.ttlMs + MAX_PRESENCE_AGE_MS
  const entry = (h: Held, nowMs: number): RosterEntry => ({
    peerId: h.presence.peerId,
    role: h.presence.role,
    capabilities: h.presence.capabilities,
    lastSeenMs: Math.max(0, nowMs - h.seenAtMs),
    firstSeenMs: Math.max(0, nowMs - h.firstSeenAtMs),
    ...(h.source === undefined ? {} : { source: h.source }),
    load: h.presence.load,
    version: h.presence.version,
    addresses: h.presence.addresses
  })

  return {
    update(p, nowMs, source) {
      const prev = held.get(p.peerId)
      const remembered = prev !== undefined && !forgotten(prev, nowMs)
      if (remembered && p.sentMs <= prev.presence.sentMs) {
        if (source !== undefined && live(prev, nowMs)) held.set(p.peerId, { ...prev, source })
        return false
      }
      held.delete(p.peerId)
      held.set(p.peerId, {
        presence: p,
        seenAtMs: nowMs,
        firstSeenAtMs: remembered ? prev.firstSeenAtMs : nowMs,
        source: source ?? (remembered ? prev.source : undefined),
        ttlMs: ttlOf(p)
      })
      while (held.size > maxEntries) {
        const oldest = held.keys().next()
        if (oldest.done === true) break
        held.delete(oldest.value)
      }
      return true
    },
    remove(peerId) {
      held.delete(peerId)
    },
    list(nowMs) {
      const out: RosterEntry[] = []
      for (const [peerId, h] of held) {
        if (live(h, nowMs)) out.push(entry(h, nowMs))
        else if (forgotten(h, nowMs)) held.delete(peerId)
      }
      return out.reverse()
    },
    get(peerId, nowMs) {
      const h = held.get(peerId)
      return h !== undefined && live(h, nowMs) ? entry(h, nowMs) : undefined
    }
  }
}
