/**
 * A swarm node: libp2p 3 assembled for plan-swarm, with the gossip, discovery
 * and admission rules of the design, behind a small interface.
 *
 * The node never decides what an event means: the application's
 * `eventValidator` does. The node carries bytes (gossip), keeps connections
 * (redial), keeps strangers out (pnet, allowlist), throttles floods (per-peer
 * token buckets) and announces presence. Catch-up (the sync protocol) uses
 * `node.libp2p` to handle and dial its own stream protocol.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { bootstrap as bootstrapDiscovery } from '@libp2p/bootstrap'
import { gossipsub } from '@libp2p/gossipsub'
import type { GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Identify } from '@libp2p/identify'
import type { Libp2p, PeerDiscovery, PeerId, PeerInfo, PrivateKey } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import type { Ping } from '@libp2p/ping'
import { multiaddr } from '@multiformats/multiaddr'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { createLibp2p } from 'libp2p'
import type { Libp2pOptions } from 'libp2p'
import { MAX_EVENT_BYTES } from '../core/limits.js'
import { SIGNATURE_BYTES } from '../wire/codec.js'
import { eventsTopic, presenceTopic, validateSwarmName } from '../wire/topics.js'
import { createAddressSorter, dialTargets, presenceAddresses } from './addresses.js'
import { coalescedTcp } from './coalesced-tcp.js'
import { createAllowListGater } from './connection-gater.js'
import { InvalidPublishError, SwarmNodeConfigError, SwarmNodeStoppedError } from './errors.js'
import { DEFAULT_SIGNATURE_POLICY, gossipOptions } from './gossip-config.js'
import type { SignaturePolicy } from './gossip-config.js'
import { createGossipCounters } from './gossip-stats.js'
import { createGossipStreamRepair } from './gossip-stream-repair.js'
import type { GossipStreamRepair } from './gossip-stream-repair.js'
import type { GossipStats } from './gossip-stats.js'
import { createEventTopicValidator, createPresenceTopicValidator } from './gossip-validators.js'
import type { EventValidator } from './gossip-validators.js'
import {
  checkAnnounceAddress,
  describeConnection,
  logConnections,
  natAssembly,
  watchAnnouncedAddresses
} from './nat.js'
import type { NetworkOptions, SwarmConnection } from './nat.js'
import { createPresenceAnnouncer, PRESENCE_INTERVAL_MS } from './presence-announcer.js'
import { encodePresence } from './presence.js'
import { withInterval } from './presence-interval.js'
import type { Presence, PresenceInfo } from './presence.js'
import { createPeerRateLimiter, DEFAULT_EVENT_RATE_LIMIT, DEFAULT_PRESENCE_RATE_LIMIT } from './rate-limit.js'
import type { RateLimit } from './rate-limit.js'
import { createRedialer } from './redialer.js'
import { relayGaterHooks } from './relay.js'

import { createRosterExchange } from './roster-exchange.js'
import { swarmYamux } from './swarm-yamux.js'
import { realScheduler } from '../ports/scheduler.js'
const log = logger('plan-swarm:net:node')

/** Default listen address: every interface, a free TCP port. */
export const DEFAULT_LISTEN = ['/ip4/0.0.0.0/tcp/0']
/** How long one dial may take; a dial to a node with another swarm key can hang this long. */
export const DEFAULT_DIAL_TIMEOUT_MS = 10_000
/** How often mDNS asks the LAN who is there. */
export const DEFAULT_MDNS_INTERVAL_MS = 5_000
/** Many nodes of one swarm may share a host: allow this many inbound connections per second from one address. */
export const INBOUND_CONNECTIONS_PER_HOST_PER_SECOND = 100

export interface SwarmNodeInit {
  /** The node's Ed25519 identity (its peer id and the key presence is signed with). */
  readonly privateKey: PrivateKey
  /** Swarm name: picks the gossip topics and the mDNS service. */
  readonly swarm: string
  /** Multiaddrs to listen on (default DEFAULT_LISTEN; a fresh `/memory/<uuid>` with the memory transport). */
  readonly listen?: readonly string[]
  /** Multiaddrs to dial and keep dialing (with `/p2p/<id>`, or without to learn it on connect). */
  readonly bootstrap: readonly string[]
  /** Discover and dial peers on the LAN by mDNS. */
  readonly mdns: boolean
  /** pnet PSK file contents (see parseSwarmKey): only nodes with the same key can connect. */
  readonly swarmKey?: Uint8Array
  /** When set, only these peer ids may connect (either way). */
  readonly allowPeers?: ReadonlySet<string>
  /** Judges each new inbound event: 'reject' only for provably bad bytes, 'ignore' for parked ones. */
  readonly eventValidator: EventValidator
  /** A peer's standing penalty as an author (ADR-0048): gossipsub's application score (see standingScore). */
  readonly penalty?: (peer: string) => number
  /** Called with each verified, fresh presence announcement from another peer. */
  readonly onPresence?: (p: Presence) => void
  /** This node handed a peer that asked its roster (the roster exchange). */
  readonly onRosterServed?: (peerId: string) => void
  /** 'memory' for in-process tests. Default 'tcp'. */
  readonly transports?: 'tcp' | 'memory'
  /** Gossipsub signature policy; every node of a swarm must use the same one. Default StrictNoSign. */
  readonly signaturePolicy?: SignaturePolicy
  /** Per-peer budget for inbound events (default 200/s, burst 400). */
  readonly eventRateLimit?: RateLimit
  /** Per-peer budget for inbound presence messages. */
  readonly presenceRateLimit?: RateLimit
  /** What to announce; without it nothing is announced until publishPresence(info). */
  readonly presence?: PresenceInfo
  /** Between presence announcements (ms), or a function read before each (see presence-interval.ts). */
  readonly presenceIntervalMs?: number | (() => number)
  /** Connections kept at most (libp2p's connection manager closes the least valued beyond it). Default libp2p's. */
  readonly maxConnections?: number
  readonly dialTimeoutMs?: number
  readonly mdnsIntervalMs?: number
  /** Across NATs: announce addresses, relay (serve, reserve), UPnP, WebSockets (see nat.ts). TCP only. */
  readonly network?: NetworkOptions
  /** Redial backoff bounds (default 2 s .. 30 s). */
  readonly redial?: {
    readonly minBackoffMs?: number
    readonly maxBackoffMs?: number
    readonly recentPeerTtlMs?: number
    readonly dialUntil?: number
  }
}

/** The libp2p services every swarm node runs. */
export interface SwarmServices extends Record<string, unknown> {
  identify: Identify
  ping: Ping
  pubsub: GossipSub
}

export interface SwarmNode {
  readonly peerId: string
  readonly swarm: string
  /** The libp2p node, for protocols built on top (sync: `handle` / `dialProtocol`). */
  readonly libp2p: Libp2p<SwarmServices>
  /** Addresses peers can dial, each ending in `/p2p/<peerId>`. */
  addresses(): string[]
  /**
   * The addresses this node puts in its presence: libp2p's (public ones only
   * once AutoNAT confirmed them, or `--announce`), then without the LAN and
   * loopback ones when a public one is known, public and relayed first (see
   * addresses.ts).
   */
  presenceAddresses(): string[]
  /** Open connections: to whom, where, direct or through a relay. */
  connections(): SwarmConnection[]
  /**
   * Dials a peer at all the addresses it announced (its presence), in the
   * order that works best from here (same LAN, public, relayed, other
   * private; see addresses.ts), stopping at the first that connects.
   * Without usable addresses, dials it from the peer store.
   */
  /** `force`: a new connection even if one is open (a direct one beside a relayed one). */
  dialPeer(
    peerId: string,
    addresses: readonly string[],
    options?: { signal?: AbortSignal; force?: boolean }
  ): Promise<void>
  connectedPeers(): string[]
  /** Connected peers subscribed to the events topic: those a publish can reach now. */
  eventTopicPeers(): string[]
  /**
   * Our gossip mesh on the events topic: the peers we forward others' events
   * to. A peer joins it at a heartbeat (~1 s) after subscribing; events
   * relayed before then reach it only by gossip repair or sync.
   */
  eventMeshPeers(): string[]
  /**
   * Gossips an event's wire bytes. Never fails for lack of peers (the caller
   * has stored the event; sync delivers it later); publishing bytes already
   * seen is a no-op with 0 recipients.
   * @throws InvalidPublishError if `id` is not the event id of `bytes`, or the event is oversized.
   */
  publishEvent(id: string, bytes: Uint8Array): Promise<{ recipients: number }>
  /** Sets what this node announces (if given) and announces it now. */
  publishPresence(info?: PresenceInfo): Promise<void>
  /** Calls `cb` with the peer id of each newly connected peer; returns a function that stops it. */
  onPeerConnected(cb: (peerId: string) => void): () => void
  /** Calls `cb` when the last connection to a peer closes; returns a function that stops it. */
  onPeerDisconnected(cb: (peerId: string) => void): () => void
  /** Gossip counters (published, received, accepted, rejected, ignored, throttled by peer) and gossip streams reopened. */
  stats(): GossipStats & { readonly streamRepairs: number }
  /** This node's gossipsub score of a peer (negative after it sent rejected messages). */
  peerScore(peerId: string): number
  /** Stops everything the node started; it leaves no sockets or timers behind. */
  stop(): Promise<void>
}

/** The mDNS service name of a swarm: nodes of other swarms on the LAN are never reported. */
export function mdnsServiceTag(swarm: string): string {
  return `_plan-swarm-${bytesToHex(sha256(new TextEncoder().encode(swarm))).slice(0, 12)}._udp.local`
}

function checkInit(init: SwarmNodeInit): void {
  const problem = validateSwarmName(init.swarm)
  if (problem !== null) throw new SwarmNodeConfigError(problem)
  if (init.privateKey.type !== 'Ed25519')
    throw new SwarmNodeConfigError(`the node key must be Ed25519, got ${init.privateKey.type}`)
  const dialTimeout = init.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS
  if (!(dialTimeout > 0)) throw new SwarmNodeConfigError(`dialTimeoutMs must be > 0, got ${dialTimeout}`)
  const interval =
    typeof init.presenceIntervalMs === 'function'
      ? init.presenceIntervalMs()
      : (init.presenceIntervalMs ?? PRESENCE_INTERVAL_MS)
  if (!(interval >= 100)) throw new SwarmNodeConfigError(`presenceIntervalMs must be >= 100, got ${interval}`)
  for (const addr of init.network?.announce ?? []) {
    const problem = checkAnnounceAddress(addr)
    if (problem !== null) throw new SwarmNodeConfigError(problem)
  }
  for (const [what, list] of [
    ['listen', init.listen ?? []],
    ['bootstrap', init.bootstrap]
  ] as const) {
    for (const addr of list) {
      try {
        multiaddr(addr)
      } catch (err) {
        throw new SwarmNodeConfigError(
          `${what} address ${JSON.stringify(addr)} is not a multiaddr (${(err as Error).message}); ` +
            `write it like /ip4/192.168.1.10/tcp/4001/p2p/12D3KooW...`
        )
      }
    }
  }
}

/**
 * Builds and starts a swarm node.
 * @throws SwarmNodeConfigError for a bad swarm name, key or option; libp2p's own errors if it cannot listen.
 */
export async function createSwarmNode(init: SwarmNodeInit): Promise<SwarmNode> {
  checkInit(init)
  const swarm = init.swarm
  const selfId = peerIdFromPrivateKey(init.privateKey).toString()
  const topics = { events: eventsTopic(swarm), presence: presenceTopic(swarm) }
  const transport = init.transports ?? 'tcp'
  const listen = init.listen ?? (transport === 'memory' ? [`/memory/${crypto.randomUUID()}`] : DEFAULT_LISTEN)
  const dialTimeoutMs = init.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS
  const allow = init.allowPeers
  const mayDial = (id: string): boolean => allow === undefined || allow.has(id)

  let mdnsService: PeerDiscovery | undefined
  const peerDiscovery: NonNullable<Libp2pOptions['peerDiscovery']> = []
  // mDNS (a DNS packet codec and a multicast socket) and pnet (a cipher) load only for a node that uses them.
  if (init.mdns) {
    const { mdns: mdnsDiscovery } = await import('@libp2p/mdns')
    const factory = mdnsDiscovery({
      serviceTag: mdnsServiceTag(swarm),
      interval: init.mdnsIntervalMs ?? DEFAULT_MDNS_INTERVAL_MS
    })
    peerDiscovery.push(components => {
      mdnsService = factory(components)
      return mdnsService
    })
  }
  // libp2p's bootstrap module takes only addresses with a peer id; our own address (one list for a whole compose file) is left out.
  const withPeerId = init.bootstrap.filter(a => a.includes('/p2p/') && !a.endsWith(`/p2p/${selfId}`))
  if (withPeerId.length > 0) peerDiscovery.push(bootstrapDiscovery({ list: [...withPeerId], timeout: 1_000 }))

  // Across NATs (TCP only): AutoNAT, DCUtR, the relay transport and its /p2p-circuit listen address, --relay, --upnp, WebSockets.
  const nat = transport === 'tcp' ? await natAssembly(listen, init.bootstrap.length, init.network) : undefined
  const libp2p = await createLibp2p<SwarmServices>({
    start: false,
    privateKey: init.privateKey,
    nodeInfo: { name: 'plan-swarm' },
    addresses: {
      listen: nat?.listen ?? [...listen],
      ...(nat !== undefined && nat.announce.length > 0 ? { announce: nat.announce } : {})
    },
    // The memory transport serves in-process tests only: load it when asked for. TCP is @libp2p/tcp with each
    // connection's writes of one synchronous run sent in one writev (coalesced-tcp.ts).
    transports:
      transport === 'memory'
        ? [(await import('@libp2p/memory')).memory()]
        : [coalescedTcp(), ...(nat?.transports ?? [])],
    connectionEncrypters: [noise()],
    // yamux, a stream's window update sent once half its window is used rather than at every data frame
    // (swarm-yamux.ts); any yamux peer reads the same protocol.
    streamMuxers: [swarmYamux()],
    ...(init.swarmKey !== undefined
      ? { connectionProtector: (await import('@libp2p/pnet')).preSharedKey({ psk: init.swarmKey }) }
      : {}),
    connectionGater: { ...createAllowListGater(allow, selfId), ...relayGaterHooks(allow, selfId) },
    connectionManager: {
      // Same-LAN, then public, then relayed, then other private addresses (addresses.ts).
      ...(nat !== undefined ? { addressSorter: createAddressSorter() } : {}),
      dialTimeout: dialTimeoutMs,
      inboundUpgradeTimeout: dialTimeoutMs,
      inboundConnectionThreshold: INBOUND_CONNECTIONS_PER_HOST_PER_SECOND,
      ...(init.maxConnections === undefined ? {} : { maxConnections: init.maxConnections })
    },
    connectionMonitor: { abortConnectionOnPingFailure: false },
    peerDiscovery,
    services: {
      identify: identify(),
      ping: ping(),
      // runOnLimitedConnection: gossip also runs over relayed connections (limited by the relay), the only path between
      // two NATed peers when DCUtR fails.
      pubsub: gossipsub({
        ...gossipOptions(
          [topics.events, topics.presence],
          init.signaturePolicy ?? DEFAULT_SIGNATURE_POLICY,
          init.penalty
        ),
        runOnLimitedConnection: true
      }),
      ...(nat?.services ?? {})
    }
  })

  const pubsub = libp2p.services.pubsub
  const counters = createGossipCounters()
  const eventLimiter = createPeerRateLimiter(init.eventRateLimit ?? DEFAULT_EVENT_RATE_LIMIT)
  const presenceLimiter = createPeerRateLimiter(init.presenceRateLimit ?? DEFAULT_PRESENCE_RATE_LIMIT)
  const validatorComponents = {
    swarm,
    counters,
    eventLimiter,
    presenceLimiter,
    eventValidator: init.eventValidator,
    ...(allow === undefined ? {} : { presenceAllowed: (id: string) => id === selfId || allow.has(id) }),
    onPresence: (p: Presence, bytes: Uint8Array) => {
      rosterExchange.remember(p, bytes)
      init.onPresence?.(p)
    },
    now: Date.now
  }
  // Peer exchange of our own: a new neighbour hands over the signed announcements it holds.
  const rosterExchange = createRosterExchange({
    libp2p,
    swarm,
    scheduler: realScheduler(),
    // A neighbour's roster passes the allow-list too: it may hold announcements of keys this node does not admit.
    ...(allow === undefined ? {} : { presenceAllowed: (id: string) => allow.has(id) }),
    onPresence: p => {
      init.onPresence?.(p)
    },
    onServed: peer => {
      init.onRosterServed?.(peer)
    }
  })
  pubsub.topicValidators.set(topics.events, createEventTopicValidator(validatorComponents))
  pubsub.topicValidators.set(topics.presence, createPresenceTopicValidator(validatorComponents))

  const redialer = createRedialer(libp2p, { bootstrap: init.bootstrap, dialTimeoutMs, mayDial, ...init.redial })
  const onMdnsPeer = (evt: CustomEvent<PeerInfo>): void => {
    redialer.discovered(evt.detail)
  }

  const addresses = (): string[] => libp2p.getMultiaddrs().map(ma => ma.toString())
  const announced = (): string[] => presenceAddresses(addresses())
  let lastAnnounced = ''
  // A new address (a relay slot, a port forward, AutoNAT's confirmation) is told at once, not an interval later (500 s
  // at a thousand peers).
  const onSelfUpdate = (): void => {
    if (announced().join(' ') !== lastAnnounced) announcer.changed()
  }
  const announcer = createPresenceAnnouncer({
    intervalMs: init.presenceIntervalMs ?? PRESENCE_INTERVAL_MS,
    initial: init.presence,
    publish: async (given, intervalMs) => {
      if (libp2p.status !== 'started') return
      const sentMs = Date.now()
      const addrs = announced()
      lastAnnounced = addrs.join(' ')
      const info = withInterval(given, intervalMs)
      const bytes = await encodePresence(swarm, info, addrs, sentMs, init.privateKey)
      // Kept for the roster exchange too, which hands a new neighbour this node's own announcement first.
      rosterExchange.remember({ ...info, peerId: selfId, addresses: [], sentMs: Math.floor(sentMs) }, bytes)
      await pubsub.publish(topics.presence, bytes)
      counters.presence.published++
    }
  })
  const onSubscriptionChange = (
    evt: CustomEvent<{ subscriptions: Array<{ topic: string; subscribe: boolean }> }>
  ): void => {
    if (evt.detail.subscriptions.some(s => s.subscribe && s.topic === topics.presence))
      announcer.peerJoined(pubsub.getSubscribers(topics.presence).length)
  }

  try {
    await libp2p.start()
  } catch (err) {
    announcer.stop()
    try {
      await libp2p.stop()
    } catch {
      /* the start error is the one to report */
    }
    throw err
  }
  pubsub.subscribe(topics.events)
  pubsub.subscribe(topics.presence)
  pubsub.addEventListener('subscription-change', onSubscriptionChange)
  libp2p.addEventListener('self:peer:update', onSelfUpdate)
  mdnsService?.addEventListener('peer', onMdnsPeer)
  await rosterExchange.start()
  redialer.start()
  const repair: GossipStreamRepair = createGossipStreamRepair(libp2p, pubsub)
  void announcer.announce()
  const stopConnectionLog = logConnections(libp2p)
  // A new relay slot or a confirmed public address is announced at once, not at the next interval.
  const stopAddressWatch = watchAnnouncedAddresses(libp2p, announced, () => {
    void announcer.announce()
  })
  log('started %s in swarm %s on %s', selfId, swarm, addresses().join(' '))

  let stopped = false
  let stopping: Promise<void> | undefined
  const listeners = new Set<{ type: 'peer:connect' | 'peer:disconnect'; fn: (evt: CustomEvent<PeerId>) => void }>()
  const watch = (type: 'peer:connect' | 'peer:disconnect', cb: (peerId: string) => void): (() => void) => {
    const entry = {
      type,
      fn: (evt: CustomEvent<PeerId>) => {
        cb(evt.detail.toString())
      }
    }
    libp2p.addEventListener(type, entry.fn)
    listeners.add(entry)
    return () => {
      libp2p.removeEventListener(type, entry.fn)
      listeners.delete(entry)
    }
  }

  return {
    peerId: selfId,
    swarm,
    libp2p,
    addresses,
    presenceAddresses: announced,
    connections: () => libp2p.getConnections().map(describeConnection),
    async dialPeer(peerId, addrs, options) {
      const targets = dialTargets(peerId, addrs)
      await libp2p.dial(targets.length > 0 ? targets : peerIdFromString(peerId), options)
    },
    // Not libp2p.getPeers(): it parses every peer id back from its string (a key decode each), and this runs on every presence heard.
    connectedPeers: () => [...new Set(libp2p.getConnections().map(c => c.remotePeer.toString()))],
    eventTopicPeers: () => pubsub.getSubscribers(topics.events).map(p => p.toString()),
    eventMeshPeers: () => (pubsub as unknown as { getMeshPeers(topic: string): string[] }).getMeshPeers(topics.events),
    async publishEvent(id, bytes) {
      if (stopped) throw new SwarmNodeStoppedError('publish an event')
      checkPublish(id, bytes)
      try {
        const result = await pubsub.publish(topics.events, bytes)
        counters.events.published++
        return { recipients: result.recipients.length }
      } catch (err) {
        if ((err as Error).message === 'PublishError.NoPeersSubscribedToTopic') return { recipients: 0 }
        throw err
      }
    },
    async publishPresence(info) {
      if (stopped) throw new SwarmNodeStoppedError('announce presence')
      await announcer.announce(info)
    },
    onPeerConnected: cb => watch('peer:connect', cb),
    onPeerDisconnected: cb => watch('peer:disconnect', cb),
    stats: () => ({ ...counters.snapshot(), streamRepairs: repair.repaired() }),
    // getScore and getMeshPeers are on gossipsub's class but not on its exported interface.
    peerScore: peerId => (pubsub as unknown as { getScore(id: string): number }).getScore(peerId),
    async stop() {
      if (stopping !== undefined) return stopping
      stopped = true
      stopping = (async () => {
        announcer.stop()
        redialer.stop()
        repair.stop()
        await rosterExchange.stop()
        stopConnectionLog()
        stopAddressWatch()
        mdnsService?.removeEventListener('peer', onMdnsPeer)
        pubsub.removeEventListener('subscription-change', onSubscriptionChange)
        libp2p.removeEventListener('self:peer:update', onSelfUpdate)
        for (const l of listeners) libp2p.removeEventListener(l.type, l.fn)
        listeners.clear()
        await libp2p.stop()
        log('stopped %s', selfId)
      })()
      return stopping
    }
  }
}

const HEX_ID = /^[0-9a-f]{64}$/

function checkPublish(id: string, bytes: Uint8Array): void {
  if (bytes.length > MAX_EVENT_BYTES)
    throw new InvalidPublishError(`the event is ${bytes.length} bytes (max ${MAX_EVENT_BYTES})`)
  if (bytes.length <= SIGNATURE_BYTES)
    throw new InvalidPublishError(
      `${bytes.length} bytes cannot hold an envelope and a ${SIGNATURE_BYTES}-byte signature`
    )
  if (!HEX_ID.test(id))
    throw new InvalidPublishError(`id ${JSON.stringify(id.slice(0, 80))} is not 64 lowercase hex digits`)
  const actual = bytesToHex(sha256(bytes.subarray(0, bytes.length - SIGNATURE_BYTES)))
  if (actual !== id) throw new InvalidPublishError(`id ${id} is not the event id of these bytes (${actual})`)
}
