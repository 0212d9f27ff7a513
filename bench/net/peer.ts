/**
 * The full peer for the network benchmark: exactly what `npm start` runs
 * (startPeer: replica + libp2p node + sync + presence), with the CLI's
 * defaults, as an observer (no role logic, so nothing publishes by itself).
 */
import { parseNodeArgs } from '../../src/runtime/config.js'
import { startPeer } from '../../src/app/peer.js'
import { multiaddr } from '@multiformats/multiaddr'
import type { Connection } from '@libp2p/interface'
import type { ChildCfg, NetImpl } from './proto.js'

export async function startFullPeer(cfg: ChildCfg): Promise<NetImpl> {
  if (cfg.dataDir === undefined) throw new Error('a full peer needs cfg.dataDir')
  const args = [
    '--role',
    'observer',
    '--swarm',
    cfg.swarm,
    '--no-mdns',
    '--listen',
    cfg.listen,
    '--data-dir',
    cfg.dataDir
  ]
  for (const b of cfg.bootstrap ?? []) args.push('--bootstrap', b)
  const peer = await startPeer(parseNodeArgs(args, {}))
  const { node, replica } = peer
  let firstOpen: number | undefined
  const seen = (t: number | undefined): void => {
    if (t !== undefined && (firstOpen === undefined || t < firstOpen)) firstOpen = t
  }
  node.libp2p.addEventListener('connection:open', (evt: CustomEvent<Connection>) => {
    seen(evt.detail.timeline.open)
  })
  for (const c of node.libp2p.getConnections()) seen(c.timeline.open)

  return {
    peerId: node.peerId,
    addrs: () => node.addresses(),
    state: () => ({
      connected: node.connectedPeers().length,
      topicPeers: node.eventTopicPeers().length,
      // Connected peers we do not know as events-topic subscribers (last 6 chars of their ids).
      noTopic: node
        .connectedPeers()
        .filter(p => !node.eventTopicPeers().includes(p))
        .map(p => p.slice(-6)),
      self: node.peerId.slice(-6),
      connections: node.libp2p.getConnections().length,
      meshPeers: node.eventMeshPeers().length,
      held: replica.ids.size,
      parked: replica.fold.events.parkedCount,
      hash: replica.fold.swarmHash(),
      gossip: node.stats(),
      sync: peer.sync.stats()
    }),
    async dial(addr) {
      await node.libp2p.dial(multiaddr(addr))
    },
    async publish(id, bytes) {
      // Stands in for authoring (`replica.author`): the publisher folds and commits what it
      // publishes first, without checking a signature it has just made.
      const r = replica.ingest(bytes, 'local', { signedHere: true })
      replica.flush()
      if (r.verdict !== 'accept') throw new Error(`publisher did not fold ${id}: ${r.why ?? ''} ${r.detail ?? ''}`)
      await node.publishEvent(id, bytes)
    },
    load(frames) {
      let accepted = 0
      for (const f of frames) if (replica.ingest(f, 'local').verdict === 'accept') accepted++
      return { n: frames.length, accepted }
    },
    onDeliver(cb) {
      replica.onFolded(events => {
        cb(events.map(e => e.id))
      })
    },
    held: () => replica.ids.size,
    hash: () => replica.fold.swarmHash(),
    firstConnOpen: () => {
      for (const c of node.libp2p.getConnections()) seen(c.timeline.open)
      return firstOpen
    },
    stop: async () => {
      await peer.stop()
    }
  }
}
