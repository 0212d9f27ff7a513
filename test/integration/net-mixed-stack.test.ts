/**
 * Old and new nodes in one swarm, over TCP on 127.0.0.1: two swarm nodes
 * (createSwarmNode: IDONTWANT only from IDONTWANT_MIN_DATA_BYTES, 16 KiB;
 * yamux with half-window updates, swarm-yamux.ts) and two nodes as a swarm
 * node was before (gossipsub's IDONTWANT threshold of 512 bytes, plain
 * yamux), all connected to all. Every node gets every event of every other,
 * small and large; the old nodes send IDONTWANTs, and a burst of large
 * events, longer than a yamux window, goes both ways between the two muxers.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { gossipsub, TopicValidatorResult } from '@libp2p/gossipsub'
import type { GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Libp2p } from '@libp2p/interface'
import { tcp } from '@libp2p/tcp'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { afterEach, describe, expect, it } from 'vitest'
import { gossipOptions } from '../../src/net/gossip-config.js'
import { eventsTopic, presenceTopic } from '../../src/wire/topics.js'
import { createNodePool, fakeEvent, idOf } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

/** Large events each of two nodes publishes back to back: 12 x 60 KB, nearly three yamux windows (256 KiB) a connection. */
const BURST = 12

const pool = createNodePool()
const old: Libp2p<{ pubsub: GossipSub }>[] = []
afterEach(async () => {
  await pool.stopAll()
  await Promise.all(old.splice(0).map(async n => await n.stop()))
})

/** A node as a swarm node was before IDONTWANT_MIN_DATA_BYTES: the ids it validated. */
async function oldNode(): Promise<{
  node: Libp2p<{ pubsub: GossipSub }>
  ids: string[]
  idontwantsSent: () => number
}> {
  const topic = eventsTopic('test')
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: {
      identify: identify(),
      pubsub: gossipsub({ ...gossipOptions([topic, presenceTopic('test')], 'StrictNoSign'), idontwantMinDataSize: 512 })
    }
  })
  old.push(node)
  const ids: string[] = []
  node.services.pubsub.topicValidators.set(topic, (_from, msg) => {
    ids.push(idOf(msg.data))
    return TopicValidatorResult.Accept
  })
  node.services.pubsub.subscribe(topic)
  let idontwants = 0
  const inside = node.services.pubsub as unknown as {
    sendRpcInBatch: (to: Set<string>, rpc: { control?: { idontwant?: unknown[] } }) => void
  }
  const batch = inside.sendRpcInBatch.bind(node.services.pubsub)
  inside.sendRpcInBatch = (to, rpc) => {
    if ((rpc.control?.idontwant?.length ?? 0) > 0) idontwants += to.size
    batch(to, rpc)
  }
  return { node, ids, idontwantsSent: () => idontwants }
}

describe('old and new nodes in one swarm', () => {
  it('deliver every event, small and large, to each other', async () => {
    const a = await pool.start()
    const b = await pool.start({ bootstrap: [a.addresses()[0] as string] })
    const c = await oldNode()
    const d = await oldNode()
    const addrOf = (s: string): ReturnType<typeof multiaddr> => multiaddr(s)
    for (const o of [c, d]) {
      await o.node.dial(addrOf(a.addresses()[0] as string))
      await o.node.dial(addrOf(b.addresses()[0] as string))
    }
    await d.node.dial(c.node.getMultiaddrs()[0] as ReturnType<typeof multiaddr>)
    const topic = eventsTopic('test')
    await waitUntil(
      'every node to see the three others subscribed',
      () =>
        a.eventTopicPeers().length === 3 &&
        b.eventTopicPeers().length === 3 &&
        c.node.services.pubsub.getSubscribers(topic).length === 3 &&
        d.node.services.pubsub.getSubscribers(topic).length === 3,
      20_000
    )

    // From each node a small event (under both thresholds) and a large one (over both), then a burst of large ones
    // from a new node and from an old one.
    const sent: string[] = []
    for (const [i, who] of ['a', 'b', 'c', 'd'].entries()) {
      for (const size of [700, 40_000]) {
        const ev = fakeEvent(`${who}-${size}`, size)
        sent.push(ev.id)
        if (i < 2) await (i === 0 ? a : b).publishEvent(ev.id, ev.bytes)
        else await (i === 2 ? c : d).node.services.pubsub.publish(topic, ev.bytes)
      }
    }
    for (let k = 0; k < BURST; k++) {
      const fromNew = fakeEvent(`burst-a-${k}`, 60_000)
      const fromOld = fakeEvent(`burst-c-${k}`, 60_000)
      sent.push(fromNew.id, fromOld.id)
      await a.publishEvent(fromNew.id, fromNew.bytes)
      await c.node.services.pubsub.publish(topic, fromOld.bytes)
    }
    // The ids each node authored, worked out once: making a 60 KB fake event hashes it 32 bytes at a time, and the
    // check below runs every 100 ms in the nodes' own process. Made afresh at each check (168 events of a 40-event
    // burst), it took most of that process's CPU and starved the nodes it waited for.
    const authored = (prefix: string): Set<string> =>
      new Set(
        [700, 40_000]
          .map(size => fakeEvent(`${prefix}-${size}`, size).id)
          .concat(Array.from({ length: BURST }, (_, k) => fakeEvent(`burst-${prefix}-${k}`, 60_000).id))
      )
    const own = { a: authored('a'), b: authored('b'), c: authored('c'), d: authored('d') }
    const heldBy = (ids: readonly string[], mine: ReadonlySet<string>): number => {
      const have = new Set(ids)
      return sent.filter(id => mine.has(id) || have.has(id)).length
    }
    await waitUntil(
      'every node to hold every event',
      () => {
        const counts = [
          heldBy(a.seen.ids, own.a),
          heldBy(b.seen.ids, own.b),
          heldBy(c.ids, own.c),
          heldBy(d.ids, own.d)
        ]
        return counts.every(n => n === sent.length) ? counts : false
      },
      60_000
    )
    // The old nodes sent IDONTWANTs (for every event of 512 bytes or more) to the new ones, which took them.
    expect(c.idontwantsSent() + d.idontwantsSent()).toBeGreaterThan(0)
  })
})
