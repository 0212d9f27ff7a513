/**
 * The baseline for the network benchmark: a bare libp2p node with the same
 * transport stack as a swarm node (tcp, noise, yamux, identify, ping, the
 * same connection manager and monitor settings) and gossipsub with the same
 * options (gossipOptions: message id = event id, scoring, allowed topics) and
 * the given signature policy, but no replica, store, sync, presence,
 * discovery, redial or rate limit. Its events-topic validator accepts
 * without looking at the bytes.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { gossipsub, TopicValidatorResult } from '@libp2p/gossipsub'
import type { GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import type { Connection } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { gossipOptions } from '../../src/net/gossip-config.js'
import { eventsTopic, presenceTopic } from '../../src/wire/topics.js'
import type { ChildCfg, NetImpl } from './proto.js'

export async function startBareNode(cfg: ChildCfg): Promise<NetImpl> {
  const topic = eventsTopic(cfg.swarm)
  const privateKey = await generateKeyPair('Ed25519')
  const libp2p = await createLibp2p({
    privateKey,
    addresses: { listen: [cfg.listen] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionManager: { dialTimeout: 10_000, inboundUpgradeTimeout: 10_000, inboundConnectionThreshold: 100 },
    connectionMonitor: { abortConnectionOnPingFailure: false },
    services: {
      identify: identify(),
      ping: ping(),
      pubsub: gossipsub(gossipOptions([topic, presenceTopic(cfg.swarm)], cfg.policy ?? 'StrictNoSign'))
    }
  })
  const pubsub = libp2p.services.pubsub as GossipSub
  pubsub.topicValidators.set(topic, () => TopicValidatorResult.Accept)
  pubsub.subscribe(topic)
  let delivered = 0
  let firstOpen: number | undefined
  libp2p.addEventListener('connection:open', (evt: CustomEvent<Connection>) => {
    const t = evt.detail.timeline.open
    if (firstOpen === undefined || t < firstOpen) firstOpen = t
  })
  return {
    peerId: libp2p.peerId.toString(),
    addrs: () => libp2p.getMultiaddrs().map(ma => ma.toString()),
    state: () => ({
      connected: libp2p.getPeers().length,
      topicPeers: pubsub.getSubscribers(topic).length,
      noTopic: libp2p
        .getPeers()
        .map(p => p.toString())
        .filter(p => !pubsub.getSubscribers(topic).some(q => q.toString() === p))
        .map(p => p.slice(-6)),
      self: libp2p.peerId.toString().slice(-6),
      connections: libp2p.getConnections().length,
      meshPeers: (pubsub as unknown as { getMeshPeers(t: string): string[] }).getMeshPeers(topic).length,
      held: delivered
    }),
    async dial(addr) {
      await libp2p.dial(multiaddr(addr))
    },
    async publish(_id, bytes) {
      try {
        await pubsub.publish(topic, bytes)
      } catch (err) {
        if ((err as Error).message !== 'PublishError.NoPeersSubscribedToTopic') throw err
      }
    },
    onDeliver(cb) {
      pubsub.addEventListener('gossipsub:message', evt => {
        if (evt.detail.msg.topic !== topic) return
        delivered++
        cb([evt.detail.msgId])
      })
    },
    held: () => delivered,
    hash: () => '',
    firstConnOpen: () => firstOpen,
    stop: async () => {
      await libp2p.stop()
    }
  }
}
