/**
 * Repairs gossipsub's per-peer streams while the connection stays up.
 *
 * @libp2p/gossipsub 17.1.1 opens one outbound stream per peer when the peer
 * connects, and never again while the connection lasts:
 * - if a connection closes while the stream on it is being opened (a peer
 *   restarting while we redial it does exactly that), the stream can be
 *   registered after it closed; when the peer reconnects gossipsub sees that
 *   dead entry and opens nothing, so we cannot send the peer anything, not
 *   even our subscriptions;
 * - if a stream is reset (its connection still open), the sender forgets its
 *   outbound stream and the receiver forgets the peer altogether.
 * Either way two connected peers stop gossiping for as long as the
 * connection lasts, and sync alone carries the events.
 *
 * It also opens outbound streams one at a time, for all peers, from one
 * queue (`outboundInflightQueue`, whose worker awaits `createOutboundStream`).
 * A connection that stalls (open, but no bytes get through; seen behind a
 * resetting proxy for ~35 s) holds that queue for the 10 s protocol
 * negotiation timeout per queued open, and each reconnect or repair of that
 * peer queues another: the queue never drains, so no peer gets an outbound
 * stream (no subscriptions, no presence, no events) while it lasts. So we
 * replace `createOutboundStream` on the instance: the worker no longer
 * waits, each open starts at once, still one at a time per peer (the
 * queue's purpose: no duplicate streams to a peer), with the latest request
 * for a peer kept for when its open in flight ends.
 *
 * Once a tick this looks for connected gossip peers without a live outbound
 * stream (for two ticks in a row, and none being opened) and
 * reopens it the way gossipsub's own topology does. It reaches into
 * gossipsub's internals (the version is pinned); if they are not there it
 * logs once and does nothing.
 */
import type { Connection, Libp2p, PeerId } from '@libp2p/interface'
import { logger } from '@libp2p/logger'

const log = logger('plan-swarm:net:gossip-repair')

/** How often the streams are checked. */
export const GOSSIP_REPAIR_INTERVAL_MS = 1_000

interface GossipInternals {
  readonly peers: Map<string, PeerId>
  readonly streamsOutbound: Map<string, { readonly rawStream?: { readonly status?: string } }>
  readonly protocols: string[]
  /** What gossipsub's topology calls when a peer with the protocol connects: adds the peer, queues an outbound stream. */
  onPeerConnected(peerId: PeerId, connection: Connection): void
  /** What the queue's worker awaits for each queued open; never throws. */
  createOutboundStream(peerId: PeerId, connection: Connection): Promise<void>
}

function internalsOf(pubsub: unknown): GossipInternals | undefined {
  const p = pubsub as Partial<GossipInternals>
  if (
    p.peers instanceof Map &&
    p.streamsOutbound instanceof Map &&
    Array.isArray(p.protocols) &&
    typeof p.onPeerConnected === 'function' &&
    typeof p.createOutboundStream === 'function'
  ) {
    return p as GossipInternals
  }
  return undefined
}

export interface GossipStreamRepair {
  stop(): void
  /** Streams reopened so far. */
  repaired(): number
}

/** Starts checking at once; `stop()` ends it. */
export function createGossipStreamRepair(
  libp2p: Libp2p,
  pubsub: unknown,
  intervalMs = GOSSIP_REPAIR_INTERVAL_MS
): GossipStreamRepair {
  const internals = internalsOf(pubsub)
  if (internals === undefined) {
    log.error('gossipsub internals not found (not @libp2p/gossipsub 17.1.x?): stream repair is off')
    return { stop() {}, repaired: () => 0 }
  }
  let count = 0
  let suspects = new Set<string>()
  let checking = false

  // Outbound opens per peer: the one in flight, and the latest request that came in meanwhile.
  const inFlight = new Set<string>()
  const next = new Map<string, { peerId: PeerId; connection: Connection }>()
  const createOutboundStream = internals.createOutboundStream.bind(internals)
  const open = (peerId: PeerId, connection: Connection): void => {
    const id = peerId.toString()
    if (inFlight.has(id)) {
      next.set(id, { peerId, connection })
      return
    }
    inFlight.add(id)
    void createOutboundStream(peerId, connection).finally(() => {
      inFlight.delete(id)
      const queued = next.get(id)
      next.delete(id)
      if (queued !== undefined) open(queued.peerId, queued.connection)
    })
  }
  // gossipsub's queue worker calls `this.createOutboundStream` and awaits it: return at once.
  const own = pubsub as { createOutboundStream: GossipInternals['createOutboundStream'] }
  own.createOutboundStream = async (peerId, connection) => {
    open(peerId, connection)
  }

  const speaksGossip = async (peerId: PeerId): Promise<boolean> => {
    try {
      const peer = await libp2p.peerStore.get(peerId)
      return peer.protocols.some(p => internals.protocols.includes(p))
    } catch {
      return false
    }
  }

  const check = async (): Promise<void> => {
    const found = new Set<string>()
    for (const conn of libp2p.getConnections()) {
      if (conn.status !== 'open') continue
      const id = conn.remotePeer.toString()
      if (found.has(id) || inFlight.has(id)) continue
      const stream = internals.streamsOutbound.get(id)
      if (internals.peers.has(id) && stream?.rawStream?.status === 'open') continue
      if (!internals.peers.has(id) && !(await speaksGossip(conn.remotePeer))) continue
      found.add(id)
      if (!suspects.has(id)) continue
      log(
        'no live outbound gossip stream to connected peer %s (%s): reopening it',
        id,
        stream === undefined ? 'none' : stream.rawStream?.status
      )
      if (stream !== undefined) internals.streamsOutbound.delete(id)
      count++
      found.delete(id)
      internals.onPeerConnected(conn.remotePeer, conn)
    }
    suspects = found
  }

  const timer = setInterval(() => {
    if (checking) return
    checking = true
    check()
      .catch((err: unknown) => {
        log.error('gossip stream check failed - %e', err)
      })
      .finally(() => {
        checking = false
      })
  }, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      next.clear()
    },
    repaired: () => count
  }
}
