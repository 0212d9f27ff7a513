/**
 * Keeps the node connected: dials bootstrap addresses, peers that mDNS
 * reports, and peers we were recently connected to, again and again with
 * backoff, so a peer that starts later or restarts is found again.
 *
 * libp2p's own bootstrap module dials once, about a second after start, and
 * never again; mDNS only reports peers. Backoff runs per target from
 * `minBackoffMs` doubling to `maxBackoffMs` (with jitter), and resets when the
 * target connects. A dropped connection is redialed no sooner than
 * REDIAL_AFTER_CLOSE_MS later: redialing a peer within ~100 ms of a close
 * often fails the encryption handshake.
 */
import type { Libp2p, PeerId, PeerInfo } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import type { Multiaddr } from '@multiformats/multiaddr'
import { peerIdOf } from './connection-gater.js'

import { realScheduler } from '../ports/scheduler.js'
import type { Cancel, Scheduler } from '../ports/scheduler.js'

const log = logger('plan-swarm:net:redial')

export const DEFAULT_MIN_BACKOFF_MS = 2_000
export const DEFAULT_MAX_BACKOFF_MS = 30_000
/** Never redial a peer sooner than this after its connection closed. */
export const REDIAL_AFTER_CLOSE_MS = 1_000
/** Forget a non-bootstrap peer after this long without a connection (mDNS reports it again if it is still around). */
export const DEFAULT_RECENT_PEER_TTL_MS = 10 * 60_000
/** Non-bootstrap peers tracked at most; the longest-disconnected are forgotten first. */
export const MAX_RECENT_PEERS = 128
/** Dials in flight at once, so a long list does not flood the dial queue. */
export const MAX_PARALLEL_REDIALS = 4
/** How often due targets are checked. */
export const REDIAL_TICK_MS = 500
/** The peer-store tag of bootstrap peers (a value for the connection manager's pruning order). */
export const BOOTSTRAP_TAG = 'plan-swarm-bootstrap'

export interface RedialerInit {
  /** Multiaddrs to keep connected to; with or without `/p2p/<id>`. */
  readonly bootstrap: readonly string[]
  readonly minBackoffMs?: number
  readonly maxBackoffMs?: number
  readonly recentPeerTtlMs?: number
  readonly dialTimeoutMs: number
  /** Whether we may dial a peer at all (the allowlist). */
  readonly mayDial: (peerId: string) => boolean
  /** Clock and timers; default the real ones. */
  readonly scheduler?: Scheduler
  /**
   * Peers (bootstrap ones, found by mDNS, or met before) are dialed and
   * redialed only while this node has fewer connections than this (default:
   * no bound), so a node with enough neighbours stops holding on to its
   * bootstrap peer, which every newcomer dials.
   */
  readonly dialUntil?: number
}

export interface Redialer {
  start(): void
  stop(): void
  /** A discovery report (mDNS): dial it now if not connected, and keep it as a recent peer. */
  discovered(peer: PeerInfo): void
  /** Peer ids of the bootstrap targets known so far (learned on first connect for addresses without one). */
  bootstrapPeers(): string[]
}

interface Target {
  /** Known peer id (always for recent peers; for bootstrap addresses once learned or given). */
  peerId: string | undefined
  /** For bootstrap targets: the address to dial. Recent peers are dialed by id from the peer store. */
  readonly addr: Multiaddr | undefined
  readonly bootstrap: boolean
  failures: number
  nextAtMs: number
  /** Last time it was connected, connecting or reported by mDNS: recent peers are forgotten recentPeerTtlMs after it. */
  lastSeenMs: number
  inFlight: boolean
}

function isLoopback(ma: Multiaddr): boolean {
  const first = ma.getComponents()[0]
  return (
    (first?.name === 'ip4' && first.value?.startsWith('127.') === true) ||
    (first?.name === 'ip6' && first.value === '::1')
  )
}

function backoffMs(failures: number, min: number, max: number): number {
  const base = Math.min(max, min * 2 ** Math.max(0, failures - 1))
  return Math.round(base * (0.8 + Math.random() * 0.4))
}

/** A redialer for `libp2p`; call `start()` after libp2p has started. */
export function createRedialer(libp2p: Libp2p, init: RedialerInit): Redialer {
  const minBackoff = init.minBackoffMs ?? DEFAULT_MIN_BACKOFF_MS
  const maxBackoff = init.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS
  const recentTtl = init.recentPeerTtlMs ?? DEFAULT_RECENT_PEER_TTL_MS
  const self = libp2p.peerId.toString()
  const bootstrap: Target[] = []
  const recent = new Map<string, Target>()
  const scheduler = init.scheduler ?? realScheduler({ ref: true })
  let timer: Cancel | undefined
  let abort = new AbortController()
  let inFlight = 0

  for (const str of init.bootstrap) {
    const addr = multiaddr(str)
    bootstrap.push({
      peerId: peerIdOf(addr),
      addr,
      bootstrap: true,
      failures: 0,
      nextAtMs: 0,
      lastSeenMs: 0,
      inFlight: false
    })
  }

  const dialUntil = init.dialUntil ?? Infinity
  // Bootstrap peers too: a node with enough neighbours lets its bootstrap peer go (it is everyone's first hop).
  const roomFor = (_t: Target): boolean => libp2p.getConnections().length < dialUntil
  const targetOf = (peerId: string): Target | undefined =>
    bootstrap.find(t => t.peerId === peerId) ?? recent.get(peerId)
  // The peers connected now, by their strings: asking libp2p per peer id means parsing each string back into a key.
  const connectedNow = (): Set<string> => new Set(libp2p.getConnections().map(c => c.remotePeer.toString()))

  // A bootstrap peer is pruned last by libp2p's connection manager. Not KEEP_ALIVE: libp2p would
  // reconnect it on its own, whatever our bound says; this redialer does the redialing.
  const tagKeepAlive = (peerId: PeerId): void => {
    libp2p.peerStore.merge(peerId, { tags: { [BOOTSTRAP_TAG]: { value: 50 } } }).catch((err: unknown) => {
      log.error('could not tag %p as a bootstrap peer - %e', peerId, err)
    })
  }

  const onConnect = (evt: CustomEvent<PeerId>): void => {
    const id = evt.detail.toString()
    const now = scheduler.now()
    const t = targetOf(id)
    if (t !== undefined) {
      t.failures = 0
      t.lastSeenMs = now
      if (t.bootstrap) tagKeepAlive(evt.detail)
      return
    }
    if (!init.mayDial(id)) return
    recent.set(id, {
      peerId: id,
      addr: undefined,
      bootstrap: false,
      failures: 0,
      nextAtMs: 0,
      lastSeenMs: now,
      inFlight: false
    })
    trimRecent()
  }

  const onDisconnect = (evt: CustomEvent<PeerId>): void => {
    const t = targetOf(evt.detail.toString())
    if (t === undefined) return
    t.lastSeenMs = scheduler.now()
    t.nextAtMs = Math.max(t.nextAtMs, scheduler.now() + Math.max(REDIAL_AFTER_CLOSE_MS, minBackoff))
  }

  const trimRecent = (): void => {
    if (recent.size <= MAX_RECENT_PEERS) return
    const connected = connectedNow()
    while (recent.size > MAX_RECENT_PEERS) {
      let oldest: string | undefined
      let oldestMs = Infinity
      for (const [id, t] of recent) {
        if (!connected.has(id) && t.lastSeenMs < oldestMs) {
          oldest = id
          oldestMs = t.lastSeenMs
        }
      }
      if (oldest === undefined) return
      recent.delete(oldest)
    }
  }

  const dial = (t: Target, addrs?: Multiaddr[]): void => {
    t.inFlight = true
    inFlight++
    const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(init.dialTimeoutMs)])
    const target = addrs ?? t.addr ?? peerIdFromString(t.peerId ?? '')
    libp2p
      .dial(target, { signal })
      .then(conn => {
        const id = conn.remotePeer.toString()
        if (t.peerId === undefined) {
          t.peerId = id
          log('bootstrap address %a is peer %s', t.addr, id)
        }
        t.failures = 0
        t.lastSeenMs = scheduler.now()
        if (t.bootstrap) tagKeepAlive(conn.remotePeer)
      })
      .catch((err: Error) => {
        if (abort.signal.aborted) return
        if (!t.bootstrap && err.name === 'NoValidAddressesError' && t.peerId !== undefined) {
          // Nothing to dial (it left before identify told us where it listens); mDNS may report it again.
          log('forgetting %s: no known address', t.peerId)
          recent.delete(t.peerId)
          return
        }
        t.failures++
        // A node with no connection at all has nothing else to reach the swarm by: it keeps the shortest backoff
        // (a bootstrap peer that many newcomers dial at once refuses most of them, and frees slots every few seconds).
        const alone = libp2p.getConnections().length === 0
        t.nextAtMs = scheduler.now() + backoffMs(alone ? 1 : t.failures, minBackoff, maxBackoff)
        log(
          'dial %s failed (%d in a row), next in %d ms - %s',
          t.peerId ?? t.addr?.toString(),
          t.failures,
          t.nextAtMs - scheduler.now(),
          err.message
        )
      })
      .finally(() => {
        t.inFlight = false
        inFlight--
      })
  }

  const tick = (): void => {
    const now = scheduler.now()
    const connected = connectedNow()
    for (const [id, t] of recent) {
      if (!t.inFlight && !connected.has(id) && now - t.lastSeenMs > recentTtl) {
        log('forgetting %s: not connected for %d ms', id, now - t.lastSeenMs)
        recent.delete(id)
      }
    }
    for (const t of [...bootstrap, ...recent.values()]) {
      if (inFlight >= MAX_PARALLEL_REDIALS) return
      if (t.inFlight || t.nextAtMs > now || t.peerId === self) continue
      if (t.peerId !== undefined && connected.has(t.peerId)) continue
      if (t.peerId !== undefined && !init.mayDial(t.peerId)) continue
      if (!roomFor(t)) continue
      // Until a dial settles it, assume it fails: a target is never dialed twice at once.
      t.nextAtMs = now + backoffMs(t.failures + 1, minBackoff, maxBackoff)
      dial(t)
    }
  }

  return {
    start() {
      if (timer !== undefined) return
      abort = new AbortController()
      libp2p.addEventListener('peer:connect', onConnect)
      libp2p.addEventListener('peer:disconnect', onDisconnect)
      timer = scheduler.every(REDIAL_TICK_MS, tick)
      tick()
    },
    stop() {
      if (timer === undefined) return
      timer()
      timer = undefined
      abort.abort()
      libp2p.removeEventListener('peer:connect', onConnect)
      libp2p.removeEventListener('peer:disconnect', onDisconnect)
    },
    discovered(peer) {
      const id = peer.id.toString()
      if (id === self || !init.mayDial(id)) return
      const now = scheduler.now()
      let t = targetOf(id)
      if (t === undefined) {
        t = {
          peerId: id,
          addr: undefined,
          bootstrap: false,
          failures: 0,
          nextAtMs: 0,
          lastSeenMs: now,
          inFlight: false
        }
        recent.set(id, t)
        trimRecent()
      }
      t.lastSeenMs = now
      // In backoff (it keeps failing, e.g. another swarm key): the tick redials it in time, from the peer store.
      if (timer === undefined || t.inFlight || connectedNow().has(id) || t.nextAtMs > now || !roomFor(t)) return
      t.nextAtMs = now + backoffMs(t.failures + 1, minBackoff, maxBackoff)
      // A LAN peer's loopback address is our own loopback: dial its other addresses when it has some.
      const lan = peer.multiaddrs.filter(ma => !isLoopback(ma))
      const p2p = `/p2p/${id}`
      dial(
        t,
        (lan.length > 0 ? lan : peer.multiaddrs).map(ma => (peerIdOf(ma) === undefined ? ma.encapsulate(p2p) : ma))
      )
    },
    bootstrapPeers() {
      return bootstrap.flatMap(t => (t.peerId === undefined ? [] : [t.peerId]))
    }
  }
}
