import { logger } from '@libp2p/logger'
import { createPresenceAnnouncer } from '../net/presence-announcer.js'
import { createMemoryStreamPair } from '../sync/memory-stream.js'
import { runSyncSession, InflightIds, DEFAULT_SYNC_LIMITS } from '../sync/index.js'
import { createNeighbourhood, TARGET_PEERS } from '../net/neighbours.js'
import {
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_MIN_BACKOFF_MS,
  REDIAL_AFTER_CLOSE_MS,
  REDIAL_TICK_MS
} from '../net/redialer.js'
import { STRANGER_SYNC_MS } from '../net/libp2p-transport.js'
import { withInterval } from '../net/presence-interval.js'
import { createSimRosterExchange, SIM_ROSTER_ASK_AFTER_MS } from './sim-roster-exchange.js'
import type { Neighbourhood } from '../net/neighbours.js'
import type { SimRosterExchange } from './sim-roster-exchange.js'
import type { Cancel, Scheduler } from '../ports/scheduler.js'
import type { EventId } from '../core/events.js'
import type { Presence, PresenceInfo, SyncOutcome, Transport, TransportHost } from '../ports/transport.js'
import { GOSSIP_OVERHEAD_BYTES } from './network.js'
import type { SimNetwork } from './network.js'
import { NOTHING_QUEUED } from './virtual-time.js'
import type { NodeClock, VirtualTime } from './virtual-time.js'

const log = logger('plan-swarm:sim:transport')

/** Periodic sync with a random neighbour, as the libp2p sync service does (jittered ±20 %). */
export const SIM_SYNC_INTERVAL_MS = 10_000
/** After a link comes up, sync over it this soon (the libp2p service: 100 ms after connect). */
export const SIM_ON_CONNECT_SYNC_MS = 100

export interface SimTransportInit {
  readonly peerId: string
  readonly network: SimNetwork
  readonly time: VirtualTime
  readonly clock: NodeClock
  readonly presence: PresenceInfo
  readonly presenceIntervalMs: number
  /** Every live transport by peer id, to run the other end of a sync session. */
  readonly registry: Map<string, SimTransport>
  /** False: no sync sessions at all (the canary that shows the checks can fail). Default true. */
  readonly sync?: boolean
  /**
   * With the `neighbours` topology: the dial policy of a libp2p node. The
   * peers it dials first and redials (the redialer's bootstrap list), and
   * its --max-peers.
   */
  readonly neighbours?: { readonly bootstrap: readonly string[]; readonly maxPeers: number }
}

/** Presence bytes per announcement (the sim does not encode presence; about what a signed one weighs). */
const PRESENCE_BYTES = 200

/**
 * A node's Transport in the simulator: gossip as flood-and-forward over the
 * simulated topology (a message id is handled once, forwarded to every other
 * neighbour only when the replica accepted it, as gossipsub's mesh does),
 * presence on its own topic through the real presence announcer, and the
 * real sync sessions over in-memory streams, on connect and every
 * SIM_SYNC_INTERVAL_MS with a random neighbour.
 */
export class SimTransport implements Transport {
  readonly peerId: string
  host: TransportHost | undefined
  private readonly seen = new Set<string>()
  private readonly inflight = new InflightIds()
  private readonly streams = new Map<{ cut: () => void }, string>()
  private readonly sessions = new Map<string, Promise<SyncOutcome>>()
  private known = new Set<string>()
  private readonly stops: Cancel[] = []
  private readonly scheduler: Scheduler
  private stopped = false
  private presenceSeq = 0
  /** The real dial policy (`neighbours` topology only). */
  neighbourhood: Neighbourhood | undefined
  private rosterExchange: SimRosterExchange | undefined
  private announcer: ReturnType<typeof createPresenceAnnouncer> | undefined

  constructor(private readonly init: SimTransportInit) {
    this.peerId = init.peerId
    this.scheduler = init.clock.scheduler
  }

  async start(host: TransportHost): Promise<void> {
    this.host = host
    const net = this.init.network
    this.init.registry.set(this.peerId, this)
    net.attach({
      peerId: this.peerId,
      clock: this.init.clock,
      seen: id => this.seen.has(id),
      deliver: (topic, from, id, payload, size) => this.deliver(topic, from, id, payload, size)
    })
    const dynamic = this.init.neighbours !== undefined
    const announcer = createPresenceAnnouncer({
      intervalMs: this.init.presenceIntervalMs,
      scheduler: this.scheduler,
      initial: this.init.presence,
      publish: async (given, intervalMs) => {
        // With connections, presence is what the neighbourhood dials from: it carries an address and (as the libp2p
        // node's) the interval, which sizes the roster TTL.
        const info = dynamic ? withInterval(given, intervalMs) : given
        const p = {
          ...info,
          peerId: this.peerId,
          addresses: dynamic ? this.addresses() : [],
          sentMs: this.scheduler.now()
        }
        const id = `${this.peerId}:${this.presenceSeq++}`
        this.seen.add(id)
        this.rosterExchange?.remember(p)
        this.flood('presence', null, id, p, PRESENCE_BYTES)
      }
    })
    this.announcer = announcer
    this.stops.push(() => {
      announcer.stop()
    })
    // The fixed graph: announce once every neighbour is attached, nodes spread over the first second (as processes starting together are).
    // With connections the node announces as it starts, before its first dial (startNeighbourhood), as the libp2p node does.
    if (!dynamic)
      this.stops.push(
        this.scheduler.after(1 + Math.floor(this.scheduler.random() * 1_000), () => {
          void announcer.announce()
        })
      )
    const jitter = (): number => SIM_SYNC_INTERVAL_MS * (0.8 + 0.4 * this.scheduler.random())
    const periodic = (): void => {
      const peers = this.connectedPeers()
      if (peers.length > 0) void this.syncWith(peers[Math.floor(this.scheduler.random() * peers.length)] as string)
      this.stops.push(this.scheduler.after(jitter(), periodic))
    }
    this.stops.push(this.scheduler.after(jitter(), periodic))
    if (this.init.neighbours !== undefined) {
      this.startNeighbourhood(this.init.neighbours)
      return
    }
    this.stops.push(
      net.onChange(() => {
        this.linksChanged()
      })
    )
    this.linksChanged()
  }

  /**
   * The libp2p node's dial policy on simulated connections: the real
   * neighbourhood (src/net/neighbours.ts) on this node's clock, dialing from
   * the presence it hears and hanging up to come back to maxPeers; a
   * redialer for the bootstrap peers (src/net/redialer.ts: while below the
   * target, with its backoff); the roster exchange on every new connection;
   * an announcement soon after the first peer joins (the presence
   * announcer's peerJoined); sync on connect, and now and then with a stranger.
   */
  private startNeighbourhood(opts: NonNullable<SimTransportInit['neighbours']>): void {
    const net = this.init.network
    const neighbours = createNeighbourhood({
      self: this.peerId,
      maxPeers: opts.maxPeers,
      scheduler: this.scheduler,
      connected: () => this.connectedPeers(),
      dial: async peer => {
        await this.dialPeer(peer)
      },
      mayDial: () => true,
      hangUp: async peer => {
        net.hangUp(this.peerId, peer)
      },
      inbound: peer => net.dialedBy(this.peerId, peer),
      connectedForMs: peer => net.linkAgeMs(this.peerId, peer)
    })
    this.neighbourhood = neighbours
    const exchange = createSimRosterExchange(this.peerId, this.scheduler)
    this.rosterExchange = exchange
    net.onLink(this.peerId, (peer, up) => {
      this.linkChanged(peer, up)
    })
    // As src/net/node.ts: the first announcement goes out as the node starts, while its dials are under way, so it
    // reaches nobody (nobody has subscribed yet) but is the node's own entry for the roster exchange; the swarm hears
    // of the node from the one its first peer triggers (peerJoined). Announcing again a moment later, when the node
    // is already connected, sent every node's presence to the whole swarm twice at a mass start (n² x degree copies).
    void this.announcer?.announce()
    neighbours.start()
    this.stops.push(() => {
      neighbours.stop()
    })

    // The redialer's part for bootstrap peers: dial them while below the target, with backoff after a failure.
    const dialUntil = Math.min(opts.maxPeers, TARGET_PEERS)
    const targets = opts.bootstrap
      .filter(b => b !== this.peerId)
      .map(peer => ({ peer, failures: 0, nextAt: 0, inFlight: false }))
    this.bootstrapTargets = targets
    const redial = (): void => {
      const now = this.scheduler.now()
      for (const t of targets) {
        if (
          t.inFlight ||
          t.nextAt > now ||
          this.connectedPeers().length >= dialUntil ||
          net.neighbours.get(this.peerId)?.has(t.peer) === true
        )
          continue
        t.inFlight = true
        this.dialPeer(t.peer)
          .then(
            () => {
              t.failures = 0
            },
            () => {
              t.failures++
              // As the redialer: a node with no connection keeps the shortest backoff.
              const failures = this.connectedPeers().length === 0 ? 1 : t.failures
              const base = Math.min(DEFAULT_MAX_BACKOFF_MS, DEFAULT_MIN_BACKOFF_MS * 2 ** Math.max(0, failures - 1))
              t.nextAt = this.scheduler.now() + Math.round(base * (0.8 + this.scheduler.random() * 0.4))
            }
          )
          .finally(() => {
            t.inFlight = false
          })
      }
    }
    redial()
    this.stops.push(this.scheduler.every(REDIAL_TICK_MS, redial))

    // As the libp2p transport: now and then sync with a peer this node has no connection to (which opens one).
    const strangers = (): void => {
      this.stops.push(
        this.scheduler.after(STRANGER_SYNC_MS * (0.8 + 0.4 * this.scheduler.random()), () => {
          const peer = neighbours.randomStranger()
          if (peer !== undefined)
            this.dialPeer(peer)
              .then(async () => await this.syncWith(peer))
              .catch(() => {})
          strangers()
        })
      )
    }
    strangers()
  }

  private bootstrapTargets: Array<{ peer: string; failures: number; nextAt: number; inFlight: boolean }> = []

  /** Open a connection (one round trip; fails across a partition, to a node down, or at the connection cap). */
  async dialPeer(peer: string): Promise<void> {
    if (this.stopped) throw new Error('stopped')
    await this.init.network.dial(this.peerId, peer)
  }

  /** A connection of this node opened or closed (`neighbours` topology). */
  private linkChanged(peer: string, up: boolean): void {
    if (this.stopped) return
    if (!up) {
      for (const [s, p] of [...this.streams]) if (p === peer) s.cut()
      const t = this.bootstrapTargets.find(b => b.peer === peer)
      if (t !== undefined)
        t.nextAt = Math.max(t.nextAt, this.scheduler.now() + Math.max(REDIAL_AFTER_CLOSE_MS, DEFAULT_MIN_BACKOFF_MS))
      return
    }
    // Like the libp2p service, only the side with the smaller id opens the on-connect session.
    if (this.peerId < peer)
      this.stops.push(
        this.scheduler.after(SIM_ON_CONNECT_SYNC_MS, () => {
          void this.syncWith(peer)
        })
      )
    this.announcer?.peerJoined(this.connectedPeers().length)
    this.stops.push(
      this.scheduler.after(SIM_ROSTER_ASK_AFTER_MS, () => {
        this.askRoster(peer)
      })
    )
  }

  /** The roster exchange: ask a new neighbour for the announcements it holds; the reply comes one round trip later. */
  private askRoster(peer: string): void {
    const net = this.init.network
    if (this.stopped || net.neighbours.get(this.peerId)?.has(peer) !== true) return
    const rtt = net.delay() + net.delay()
    this.stops.push(
      this.scheduler.after(rtt, () => {
        const other = this.init.registry.get(peer)
        if (
          this.stopped ||
          other?.rosterExchange === undefined ||
          other.init.clock.isPaused ||
          net.neighbours.get(this.peerId)?.has(peer) !== true
        )
          return
        const reply = other.rosterExchange.sample()
        const bytes = reply.length * PRESENCE_BYTES + GOSSIP_OVERHEAD_BYTES
        net.countStream(peer, 'sent', bytes)
        net.countPresence(this.peerId, bytes)
        for (const p of this.rosterExchange?.accept(reply) ?? []) this.heard(p)
      })
    )
  }

  /** A presence, gossiped or from a roster exchange: to the roster and (with connections) the neighbourhood. */
  private heard(p: Presence): void {
    this.host?.presence(p)
    this.neighbourhood?.heard(p)
  }

  /** Links came or went: cut streams that no longer have a path; sync with neighbours newly in reach. */
  private linksChanged(): void {
    if (this.stopped) return
    const now = new Set(this.connectedPeers())
    for (const p of now) {
      // Like the libp2p service, only the side with the smaller id opens the on-connect session.
      if (!this.known.has(p) && this.peerId < p)
        this.scheduler.after(SIM_ON_CONNECT_SYNC_MS, () => {
          void this.syncWith(p)
        })
    }
    this.known = now
  }

  private deliver(
    topic: 'events' | 'presence',
    from: string,
    id: string,
    payload: Uint8Array | object,
    size: number
  ): void | typeof NOTHING_QUEUED {
    if (this.stopped || this.host === undefined) return NOTHING_QUEUED
    if (this.seen.has(id)) {
      const t = this.init.network.traffic.get(this.peerId)
      if (t !== undefined) t.duplicatesDropped++
      return NOTHING_QUEUED
    }
    this.seen.add(id)
    if (topic === 'presence') {
      this.rosterExchange?.remember(payload as Presence)
      this.heard(payload as Presence)
      this.flood('presence', from, id, payload, size)
      return
    }
    const verdict = this.host.receive(payload as Uint8Array, from)
    if (verdict === 'accept') this.flood('events', from, id, payload, size)
  }

  private flood(
    topic: 'events' | 'presence',
    except: string | null,
    id: string,
    payload: Uint8Array | object,
    size: number
  ): void {
    for (const n of this.init.network.neighbours.get(this.peerId) ?? []) {
      if (n !== except) this.init.network.send(this.peerId, n, topic, id, payload, size)
    }
  }

  async publish(id: EventId, bytes: Uint8Array): Promise<void> {
    if (this.stopped) return
    this.seen.add(id)
    this.flood('events', null, id, bytes, bytes.length)
  }

  /** One real sync session, this side outbound, the peer's side inbound, over an in-memory stream pair. */
  async syncWith(peer: string, options: { readonly fresh?: boolean } = {}): Promise<SyncOutcome> {
    const running = this.sessions.get(peer)
    if (running !== undefined) {
      const joined = await running
      return options.fresh === true ? await this.syncWith(peer) : joined
    }
    const p = this.runSession(peer).finally(() => {
      this.sessions.delete(peer)
    })
    this.sessions.set(peer, p)
    return await p
  }

  private async runSession(peer: string): Promise<SyncOutcome> {
    const other = this.init.registry.get(peer)
    const net = this.init.network
    if (
      this.init.sync === false ||
      this.stopped ||
      other === undefined ||
      other.host === undefined ||
      this.host === undefined ||
      !net.reachable(this.peerId, peer) ||
      this.init.clock.isPaused ||
      other.init.clock.isPaused
    ) {
      return { peer, ok: false, eventsReceived: 0, error: 'no path to the peer' }
    }
    const pair = createMemoryStreamPair(worldScheduler(this.init.time, this.scheduler), {
      delayMs: () => net.delay(),
      onBytes: (n, direction) => {
        net.countStream(direction === 'a-to-b' ? this.peerId : peer, 'sent', n)
        net.countStream(direction === 'a-to-b' ? peer : this.peerId, 'received', n)
      }
    })
    const handle = {
      cut: () => {
        pair.cut()
      }
    }
    this.streams.set(handle, peer)
    other.streams.set(handle, this.peerId)
    try {
      const [mine] = await Promise.all([
        runSyncSession(this.sessionHost(), pair.a, peer, 'outbound', this.scheduler),
        runSyncSession(other.sessionHost(), pair.b, this.peerId, 'inbound', other.scheduler)
      ])
      const outcome: SyncOutcome = { peer, ok: mine.ok, eventsReceived: mine.eventsReceived, error: mine.error }
      this.host.synced?.(outcome)
      return outcome
    } finally {
      this.streams.delete(handle)
      other.streams.delete(handle)
    }
  }

  private sessionHost(): Parameters<typeof runSyncSession>[0] {
    const h = this.host as TransportHost
    return {
      ids: h.ids,
      has: h.has,
      getBytes: h.getBytes,
      ingest: async (bytes: Uint8Array, from: string) => await h.ingestMany([bytes], from),
      ingestMany: h.ingestMany,
      inflight: this.inflight,
      limits: DEFAULT_SYNC_LIMITS,
      log
    }
  }

  /** Cuts every sync stream of this node (a crash, a pause, a partition). */
  cutStreams(): void {
    for (const s of [...this.streams.keys()]) s.cut()
  }

  /** Cuts the sync streams to peers this node cannot reach any more (a partition began). */
  cutUnreachable(): void {
    for (const [s, peer] of [...this.streams]) if (!this.init.network.reachable(this.peerId, peer)) s.cut()
  }

  /** A sync session of this node is under way (a long run skips idle time only when none is). */
  busy(): boolean {
    return this.sessions.size > 0 || this.streams.size > 0
  }

  /** Announce this node's presence now (a long run's nodes after an idle span it skipped: see src/sim/long-run/skipper.ts). */
  announceNow(): void {
    if (!this.stopped) void this.announcer?.announce()
  }

  connectedPeers(): string[] {
    if (this.stopped) return []
    return this.init.network.connected(this.peerId)
  }

  topicPeers(): string[] {
    return this.connectedPeers()
  }
  addresses(): string[] {
    return [`/sim/${this.peerId}`]
  }
  presenceIntervalMs(): number {
    return this.init.presenceIntervalMs
  }

  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    for (const s of this.stops) s()
    this.cutStreams()
    if (this.init.registry.get(this.peerId) === this) this.init.registry.delete(this.peerId)
    this.init.network.detach(this.peerId)
  }
}

/**
 * Stream chunks travel on the world's clock (not a node's, which a pause
 * would hold), while the session's own timers stay on the node's.
 */
function worldScheduler(time: VirtualTime, node: Scheduler): Scheduler {
  return { ...node, after: (ms, fn) => time.schedule(ms, fn, null), soon: fn => time.schedule(0, fn, null) }
}
