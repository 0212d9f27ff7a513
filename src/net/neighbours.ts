import { logger } from '@libp2p/logger'
import type { Cancel, Scheduler } from '../ports/scheduler.js'
import type { Presence } from '../ports/transport.js'

const log = logger('plan-swarm:net:neighbours')

/** Connections a node keeps at most by default (`--max-peers`). */
export const DEFAULT_MAX_PEERS = 24
/** Connections a node dials towards; the rest of the budget is for peers that dial it. */
export const TARGET_PEERS = 8
/** How often a node checks whether it has enough neighbours. */
export const NEIGHBOUR_TICK_MS = 2_000
/** A peer is dialed again at most this often. */
export const REDIAL_PEER_MS = 10_000
/** A dial counts towards the target this long at most (libp2p's own dial timeout is far shorter). */
export const DIAL_COUNTS_MS = 30_000
/** New dials per tick at most, so a node that just started does not dial everyone it hears of at once. */
export const DIALS_PER_TICK = 2
/**
 * A connection is closed to bring a node back to --max-peers only once it is
 * this old: a newcomer whose only link is its bootstrap peer gets the time
 * to learn other peers from it (the roster exchange) before it is let go.
 */
export const TRIM_AFTER_MS = 10_000
/**
 * Over --max-peers, connections the peers opened are closed once they are
 * this old and have been handed this node's roster, newest first, until NEWCOMER_HEADROOM slots are free again
 * (never below the target): the roster exchange (300 ms after connecting)
 * has handed the peer our roster by then, so it can find neighbours of its
 * own. A bootstrap peer that many newcomers dial at once thus serves a
 * headroom's worth of them every tick, not every TRIM_AFTER_MS, and the
 * newcomers it refused get in on their next redial.
 */
export const SERVED_AFTER_MS = 1_000
/** Connections libp2p itself allows beyond --max-peers, for newcomers in their grace time. */
export const NEWCOMER_HEADROOM = 8
/** Peers heard of are forgotten after this long without news (a presence TTL of the largest swarms). */
const HEARD_TTL_MS = 30 * 60_000

export interface NeighbourhoodInit {
  readonly self: string
  /** Never more connections than this (the connection manager enforces it for inbound ones). */
  readonly maxPeers: number
  /** Dial until this many (at most maxPeers). */
  readonly targetPeers?: number
  readonly scheduler: Scheduler
  readonly connected: () => string[]
  /** Dial the peer at any of these addresses (the usable ones of its presence, in its order). */
  readonly dial: (peerId: string, addresses: readonly string[]) => Promise<void>
  /** The allowlist. */
  readonly mayDial: (peerId: string) => boolean
  /** Close every connection to a peer (to come back down to maxPeers). */
  readonly hangUp?: (peerId: string) => Promise<void>
  /** Addresses this node should not dial (its own, or ones known not to work); default none. */
  readonly usable?: (address: string) => boolean
  /** The peer opened the connection (and this node did not open one of its own to it); default never. */
  readonly inbound?: (peerId: string) => boolean
  /**
   * This node has handed the peer its roster on the connection open now (the roster exchange); default: assumed once
   * SERVED_AFTER_MS old.
   */
  readonly served?: (peerId: string) => boolean
  /** How long the connection to a peer has been open, if known (default: since a tick first saw it). */
  readonly connectedForMs?: (peerId: string) => number | undefined
  /** This node reaches the peer through a circuit relay only; default never. */
  readonly relayedOnly?: (peerId: string) => boolean
  /** Open a direct connection to a peer reached through a relay, at one of these addresses, and let the relayed one go. */
  readonly dialDirect?: (peerId: string, addresses: readonly string[]) => Promise<void>
}

const isRelayAddress = (a: string): boolean => a.includes('/p2p-circuit')

export interface Neighbourhood {
  /** A presence: remember the peer and its addresses. */
  heard: (p: Presence) => void
  /** Peers heard of and not forgotten (this node not included). */
  known: () => number
  /** A random peer heard of that this node is not connected to, or undefined. */
  randomStranger: () => string | undefined
  start: () => void
  stop: () => void
}

/**
 * Who a node keeps connections to: not every peer it hears of, only enough
 * of them (random peers from presence) to hold
 * `targetPeers` connections, and comes back down to `maxPeers` by closing
 * first the inbound connections older than SERVED_AFTER_MS, newest first,
 * then connections older than TRIM_AFTER_MS (libp2p allows
 * NEWCOMER_HEADROOM more meanwhile, so a newcomer is not cut off before it
 * learned of other peers). Gossipsub's
 * mesh, over these connections, carries events and presence to everyone;
 * sync runs with these neighbours and now and then with a stranger.
 */
export function createNeighbourhood(init: NeighbourhoodInit): Neighbourhood {
  const target = Math.min(init.maxPeers, init.targetPeers ?? TARGET_PEERS)
  const peers = new Map<string, { addresses: readonly string[]; heardAt: number; dialedAt: number }>()
  let stopTick: Cancel | undefined
  const usable = init.usable ?? (() => true)

  // Dials under way count towards the target: a roster exchange hands over up to 64 peers at once,
  // and dialing each of them before the first connection opens left nodes at about 22 connections, not 8.
  // A dial that never settles stops counting after DIAL_COUNTS_MS, so it cannot hold the node below its target for good.
  const dialing = new Map<string, number>()
  const dial = (id: string, addresses: readonly string[]): void => {
    const started = init.scheduler.now()
    dialing.set(id, started)
    init
      .dial(id, addresses)
      .catch((err: Error) => {
        log('could not dial %s: %s', id, err.message)
      })
      .finally(() => {
        if (dialing.get(id) === started) dialing.delete(id)
      })
  }
  /** Connections open or being opened. */
  const reaching = (connected: ReadonlySet<string>): number => {
    const now = init.scheduler.now()
    let n = connected.size
    for (const [id, at] of dialing) {
      if (now - at > DIAL_COUNTS_MS) dialing.delete(id)
      else if (!connected.has(id)) n++
    }
    return n
  }

  const since = new Map<string, number>()
  const trim = (connected: ReadonlySet<string>, now: number): void => {
    for (const id of since.keys()) if (!connected.has(id)) since.delete(id)
    for (const id of connected) if (!since.has(id)) since.set(id, now)
    let excess = connected.size - init.maxPeers
    if (excess <= 0 || init.hangUp === undefined) return
    const hangUp = init.hangUp
    const close = (id: string): void => {
      since.delete(id)
      excess--
      hangUp(id).catch((err: Error) => {
        log('could not close the connection to %s: %s', id, err.message)
      })
    }
    const age = (id: string): number => init.connectedForMs?.(id) ?? now - (since.get(id) ?? now)
    // First the peers that dialed this node and have been served its roster, newest first, until the headroom is free again.
    const served = [...connected]
      .filter(id => init.inbound?.(id) === true && (init.served?.(id) ?? true) && age(id) >= SERVED_AFTER_MS)
      .sort((a, b) => age(a) - age(b))
    for (const id of served) {
      if (excess <= -Math.min(NEWCOMER_HEADROOM, init.maxPeers - target)) break
      close(id)
    }
    if (excess <= 0) return
    const old = [...connected].filter(id => since.has(id) && age(id) >= TRIM_AFTER_MS)
    while (excess > 0 && old.length > 0)
      close(old.splice(Math.floor(init.scheduler.random() * old.length), 1)[0] as string)
  }

  const tick = (): void => {
    const now = init.scheduler.now()
    for (const [id, p] of peers) if (now - p.heardAt > HEARD_TTL_MS) peers.delete(id)
    const connected = new Set(init.connected())
    trim(connected, now)
    let missing = target - reaching(connected)
    if (missing <= 0) return
    const candidates = [...peers.entries()].filter(
      ([id, p]) =>
        !connected.has(id) &&
        !dialing.has(id) &&
        now - p.dialedAt >= REDIAL_PEER_MS &&
        init.mayDial(id) &&
        p.addresses.some(usable)
    )
    for (let dials = 0; dials < DIALS_PER_TICK && missing > 0 && candidates.length > 0; dials++, missing--) {
      const [id, p] = candidates.splice(Math.floor(init.scheduler.random() * candidates.length), 1)[0] as [
        string,
        { addresses: readonly string[]; heardAt: number; dialedAt: number }
      ]
      p.dialedAt = now
      dial(id, p.addresses.filter(usable))
    }
  }

  return {
    heard: p => {
      if (p.peerId === init.self) return
      const now = init.scheduler.now()
      const prev = peers.get(p.peerId)
      const entry = { addresses: p.addresses, heardAt: now, dialedAt: prev?.dialedAt ?? 0 }
      peers.set(p.peerId, entry)
      // Below the target, a peer heard of is dialed at once (a small swarm meshes fully within a presence round); the tick refills later.
      const addresses = p.addresses.filter(usable)
      if (
        dialing.has(p.peerId) ||
        addresses.length === 0 ||
        !init.mayDial(p.peerId) ||
        now - entry.dialedAt < REDIAL_PEER_MS
      )
        return
      const connected = new Set(init.connected())
      if (connected.has(p.peerId)) {
        // Reached through a relay, and it now announces an address of its own (a port forward, a public IP): go direct.
        // DCUtR upgrades only from the end that received the relayed connection, and only once; this covers the other
        // end and later addresses.
        const direct = addresses.filter(a => !isRelayAddress(a))
        if (direct.length === 0 || init.dialDirect === undefined || init.relayedOnly?.(p.peerId) !== true) return
        entry.dialedAt = now
        init.dialDirect(p.peerId, direct).catch((err: Error) => {
          log('could not reach %s directly: %s', p.peerId, err.message)
        })
        return
      }
      if (reaching(connected) >= target) return
      entry.dialedAt = now
      dial(p.peerId, addresses)
    },
    known: () => peers.size,
    randomStranger: () => {
      const connected = new Set(init.connected())
      const strangers = [...peers.keys()].filter(id => !connected.has(id) && init.mayDial(id))
      return strangers.length === 0 ? undefined : strangers[Math.floor(init.scheduler.random() * strangers.length)]
    },
    start: () => {
      stopTick ??= init.scheduler.every(NEIGHBOUR_TICK_MS, tick)
    },
    stop: () => {
      stopTick?.()
      stopTick = undefined
    }
  }
}
