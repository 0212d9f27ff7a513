import { logger } from '@libp2p/logger'
import { createSwarmNode } from './node.js'
import { createSyncService } from '../sync/libp2p-service.js'
import { peerIdFromString } from '@libp2p/peer-id'
import { createNeighbourhood, DEFAULT_MAX_PEERS, NEWCOMER_HEADROOM, TARGET_PEERS } from './neighbours.js'
import { presenceIntervalFor } from './presence-interval.js'
import { realScheduler } from '../ports/scheduler.js'
import { addressKind, isRelayed } from './addresses.js'
import { peerIdOf } from './connection-gater.js'
import { tryGetNetConfig } from '@libp2p/utils'
import type { Connection } from '@libp2p/interface'
import type { SwarmNode, SwarmNodeInit } from './node.js'
import type { SyncService } from '../sync/libp2p-service.js'
import type { PresenceInfo, Transport, TransportHost } from '../ports/transport.js'

/** Now and then (this often, jittered) a node syncs with a peer it has no connection to, besides its neighbours. */
export const STRANGER_SYNC_MS = 60_000

/** The node's own options as createSwarmNode takes them, plus what the transport decides above it. */
export interface Libp2pTransportInit extends Pick<
  SwarmNodeInit,
  'privateKey' | 'swarm' | 'listen' | 'bootstrap' | 'mdns' | 'swarmKey' | 'allowPeers' | 'network'
> {
  readonly peerId: string
  readonly presence: PresenceInfo
  /** A fixed presence interval (tests); default `presenceIntervalFor(peers known)`, growing with the swarm. */
  readonly presenceIntervalMs?: number
  readonly syncIntervalMs?: number
  /** `--history open`: sync pulls only the peers' plans under way (see src/sync/session.ts). Default 'all'. */
  readonly history?: 'all' | 'open'
  /** Connections kept at most (`--max-peers`); default DEFAULT_MAX_PEERS. */
  readonly maxPeers?: number
}

/** The libp2p shell as a Transport, with its node and sync service exposed for the composition root and tests. */
export interface Libp2pTransport extends Transport {
  /** Set once started. */
  readonly node: SwarmNode
  readonly sync: SyncService
}

/**
 * The node's network on libp2p: gossipsub for events and presence, the sync
 * stream protocol for catch-up, mDNS/bootstrap for discovery. Presence names
 * peers this node has not met: it dials them, so events travel one hop
 * (gossipsub floods its own messages to every connected subscriber).
 */
export function createLibp2pTransport(init: Libp2pTransportInit): Libp2pTransport {
  const log = logger('plan-swarm:net:presence')
  let node: SwarmNode | undefined
  let presence: PresenceInfo = init.presence
  let sync: SyncService | undefined
  const scheduler = realScheduler()
  const maxPeers = init.maxPeers ?? DEFAULT_MAX_PEERS
  // When this node last handed each peer its roster (the roster exchange), so it lets go of a newcomer only once served.
  const servedAt = new Map<string, number>()
  const connectionsTo = (peer: string): Connection[] => node?.libp2p.getConnections(peerIdFromString(peer)) ?? []
  /** When the oldest open connection to the peer opened. */
  const openedAt = (peer: string): number | undefined => {
    const conns = connectionsTo(peer)
    return conns.length === 0 ? undefined : Math.min(...conns.map(c => c.timeline.open))
  }
  /**
   * Where a peer connects from here (RosterEntry.source): the address of a
   * direct connection, the relay of a relayed one; undefined when it is not
   * connected, or only over loopback (processes of one host: nothing to tell
   * them apart by).
   */
  const sourceOf = (peer: string): string | undefined => {
    const conns = connectionsTo(peer)
    const direct = conns.find(c => !isRelayed(c.remoteAddr))
    if (direct !== undefined) {
      const kind = addressKind(direct.remoteAddr)
      const host = tryGetNetConfig(direct.remoteAddr)?.host
      return kind === 'loopback' || host === undefined ? undefined : `ip:${host}`
    }
    const relay = conns[0] === undefined ? undefined : peerIdOf(conns[0].remoteAddr.decapsulate('/p2p-circuit'))
    return relay === undefined ? undefined : `relay:${relay}`
  }
  const neighbours = createNeighbourhood({
    self: init.peerId,
    maxPeers,
    scheduler,
    connected: () => node?.connectedPeers() ?? [],
    dial: async (peer, addresses) => {
      await started().dialPeer(peer, addresses)
    },
    mayDial: id => init.allowPeers === undefined || init.allowPeers.has(id),
    hangUp: async peer => {
      await started().libp2p.hangUp(peerIdFromString(peer))
    },
    served: peer => {
      const at = servedAt.get(peer)
      const opened = openedAt(peer)
      return at !== undefined && opened !== undefined && at >= opened
    },
    inbound: peer => {
      const conns = connectionsTo(peer)
      return conns.length > 0 && conns.every(c => c.direction === 'inbound')
    },
    relayedOnly: peer => {
      const conns = connectionsTo(peer)
      return conns.length > 0 && conns.every(c => isRelayed(c.remoteAddr))
    },
    dialDirect: async (peer, addresses) => {
      await started().dialPeer(peer, addresses, { force: true })
      for (const c of connectionsTo(peer)) if (isRelayed(c.remoteAddr)) await c.close().catch(() => {})
    },
    connectedForMs: peer => {
      const opened = openedAt(peer)
      return opened === undefined ? undefined : scheduler.now() - opened
    }
  })
  // Every node of a swarm of n hears about the same number of announcements a second, whatever n.
  const presenceIntervalMs = (): number => init.presenceIntervalMs ?? presenceIntervalFor(neighbours.known() + 1)
  let stopStrangers: (() => void) | undefined
  const started = (): SwarmNode => {
    if (node === undefined) throw new Error('the libp2p transport is not started')
    return node
  }

  return {
    peerId: init.peerId,
    get node() {
      return started()
    },
    get sync() {
      if (sync === undefined) throw new Error('the libp2p transport is not started')
      return sync
    },
    start: async (host: TransportHost) => {
      node = await createSwarmNode({
        privateKey: init.privateKey,
        swarm: init.swarm,
        listen: init.listen,
        bootstrap: init.bootstrap,
        mdns: init.mdns,
        swarmKey: init.swarmKey,
        allowPeers: init.allowPeers,
        eventValidator: (bytes, from) => host.receive(bytes, from),
        ...(host.penalty === undefined ? {} : { penalty: host.penalty }),
        onRosterServed: peer => {
          servedAt.delete(peer)
          servedAt.set(peer, scheduler.now())
          if (servedAt.size > 4_096) servedAt.delete(servedAt.keys().next().value as string)
        },
        onPresence: p => {
          host.presence(p, sourceOf(p.peerId))
          neighbours.heard(p)
        },
        // Each announcement carries the interval until the next (the node adds it): receivers size its TTL by it.
        presence,
        presenceIntervalMs,
        maxConnections: maxPeers + NEWCOMER_HEADROOM,
        network: init.network,
        redial: { dialUntil: Math.min(maxPeers, TARGET_PEERS) }
      })
      try {
        sync = createSyncService({
          libp2p: node.libp2p,
          ids: host.ids,
          has: host.has,
          getBytes: host.getBytes,
          ingest: async (bytes, from) => await host.ingestMany([bytes], from),
          ingestMany: host.ingestMany,
          openIds: host.openIds,
          wantsOpenIds: host.wantsOpenIds,
          intervalMs: init.syncIntervalMs,
          scope: init.history,
          summaryOf: host.summaryOf,
          onSession: s => {
            host.synced?.({
              peer: s.peer,
              ok: s.ok,
              eventsReceived: s.eventsReceived,
              error: s.error,
              ...(s.quotaLeft === undefined ? {} : { quotaLeft: s.quotaLeft })
            })
          }
        })
        await sync.start()
        neighbours.start()
        const strangers = (): void => {
          stopStrangers = scheduler.after(STRANGER_SYNC_MS * (0.8 + 0.4 * scheduler.random()), () => {
            const peer = neighbours.randomStranger()
            if (peer !== undefined) void sync?.syncWith(peer)
            strangers()
          })
        }
        strangers()
      } catch (err) {
        await node.stop()
        throw err
      }
    },
    publish: async (id, bytes) => {
      await started().publishEvent(id, bytes)
    },
    planSummary: async plan => (sync === undefined ? null : await sync.askSummary(plan)),
    syncWith: async (peer, options) => {
      if (sync === undefined) return { peer, ok: false, eventsReceived: 0, error: 'not started' }
      const s = await sync.syncWith(peer, options)
      return { peer: s.peer, ok: s.ok, eventsReceived: s.eventsReceived, error: s.error }
    },
    connectedPeers: () => node?.connectedPeers() ?? [],
    topicPeers: () => node?.eventTopicPeers() ?? [],
    addresses: () => node?.addresses() ?? [],
    presenceIntervalMs,
    announce: capabilities => {
      presence = { ...presence, capabilities: [...capabilities] }
      if (node !== undefined)
        node.publishPresence(presence).catch((err: Error) => {
          log.error('could not announce presence - %e', err)
        })
    },
    stop: async () => {
      neighbours.stop()
      stopStrangers?.()
      await sync?.stop()
      await node?.stop()
    }
  }
}
