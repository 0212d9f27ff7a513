import { logger } from '@libp2p/logger'
import { multiaddr } from '@multiformats/multiaddr'
import { createSwarmNode } from './node.js'
import { createSyncService } from '../sync/libp2p-service.js'
import { PRESENCE_INTERVAL_MS } from './presence-announcer.js'
import type { PrivateKey } from '@libp2p/interface'
import type { SwarmNode } from './node.js'
import type { SyncService } from '../sync/libp2p-service.js'
import type { PresenceInfo, Transport, TransportHost } from '../ports/transport.js'

const log = logger('plan-swarm:net:transport')

/** A peer heard of by presence is dialed again at most this often. */
export const MEET_REDIAL_MS = 10_000

export interface Libp2pTransportInit {
  readonly privateKey: PrivateKey
  readonly peerId: string
  readonly swarm: string
  readonly listen?: readonly string[]
  readonly bootstrap: readonly string[]
  readonly mdns: boolean
  readonly swarmKey?: Uint8Array
  readonly allowPeers?: ReadonlySet<string>
  readonly presence: PresenceInfo
  readonly presenceIntervalMs?: number
  readonly syncIntervalMs?: number
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
export function createLibp2pTransport (init: Libp2pTransportInit): Libp2pTransport {
  let node: SwarmNode | undefined
  let sync: SyncService | undefined
  const lastDial = new Map<string, number>()
  const presenceIntervalMs = init.presenceIntervalMs ?? PRESENCE_INTERVAL_MS

  const meet = (peerId: string, addresses: readonly string[]): void => {
    const n = node
    if (n === undefined || peerId === n.peerId || n.connectedPeers().includes(peerId) || addresses.length === 0) return
    if (init.allowPeers !== undefined && !init.allowPeers.has(peerId)) return
    const t = Date.now()
    if (t - (lastDial.get(peerId) ?? 0) < MEET_REDIAL_MS) return
    lastDial.set(peerId, t)
    if (lastDial.size > 1_000) lastDial.delete(lastDial.keys().next().value as string)
    n.libp2p.dial(multiaddr(addresses[0] as string)).catch((err: Error) => { log('could not dial %s: %s', peerId, err.message) })
  }
  const started = (): SwarmNode => {
    if (node === undefined) throw new Error('the libp2p transport is not started')
    return node
  }

  return {
    peerId: init.peerId,
    get node () { return started() },
    get sync () { if (sync === undefined) throw new Error('the libp2p transport is not started'); return sync },
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
        onPresence: p => {
          host.presence(p)
          meet(p.peerId, p.addresses)
        },
        presence: init.presence,
        presenceIntervalMs
      })
      try {
        sync = createSyncService({
          libp2p: node.libp2p,
          ids: host.ids,
          has: host.has,
          getBytes: host.getBytes,
          ingest: async (bytes, from) => await host.ingestMany([bytes], from),
          ingestMany: host.ingestMany,
          intervalMs: init.syncIntervalMs,
          onSession: s => { host.synced?.({ peer: s.peer, ok: s.ok, eventsReceived: s.eventsReceived, error: s.error }) }
        })
        await sync.start()
      } catch (err) {
        await node.stop()
        throw err
      }
    },
    publish: async (id, bytes) => { await started().publishEvent(id, bytes) },
    syncWith: async peer => {
      if (sync === undefined) return { peer, ok: false, eventsReceived: 0, error: 'not started' }
      const s = await sync.syncWith(peer)
      return { peer: s.peer, ok: s.ok, eventsReceived: s.eventsReceived, error: s.error }
    },
    connectedPeers: () => node?.connectedPeers() ?? [],
    topicPeers: () => node?.eventTopicPeers() ?? [],
    addresses: () => node?.addresses() ?? [],
    presenceIntervalMs: () => presenceIntervalMs,
    stop: async () => {
      await sync?.stop()
      await node?.stop()
    }
  }
}
