/**
 * The two Transport implementations as contract setups: the libp2p shell
 * with real nodes in this process (TCP on 127.0.0.1, an allowlist that keeps
 * each node to the links it is given), and the simulator's transport over a
 * simulated network on virtual time. A wrapper setup hands the checks
 * transports altered on purpose, while the network underneath stays the
 * same.
 */
import { randomBytes } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createLibp2pTransport } from '../../src/net/libp2p-transport.js'
import type { Libp2pTransport } from '../../src/net/libp2p-transport.js'
import { seededRandom } from '../../src/ports/scheduler.js'
import { SimNetwork } from '../../src/sim/network.js'
import { SimTransport } from '../../src/sim/sim-transport.js'
import { NodeClock, VirtualTime } from '../../src/sim/virtual-time.js'
import type { Transport } from '../../src/ports/transport.js'
import { waitUntil } from '../helpers/wait.js'
import type { ContractNet, Links, TransportSetup } from './transport-contract.js'

const PRESENCE = { role: 'observer', capabilities: [], load: 0, version: 'plan-swarm/contract' }
/** Presence often enough that a check hears it within its deadline. */
const PRESENCE_INTERVAL_MS = 1_000

async function stopAll(transports: readonly Transport[]): Promise<void> {
  await Promise.allSettled(transports.map(async t => await t.stop()))
}

/** Who each node may connect to. */
function linkedTo(count: number, links: Links): Array<Set<number>> {
  const out = Array.from({ length: count }, () => new Set<number>())
  for (const [a, b] of links) {
    out[a]?.add(b)
    out[b]?.add(a)
  }
  return out
}

/**
 * Real libp2p nodes: each listens on 127.0.0.1, discovers no one by itself
 * (no mDNS, no bootstrap) and lets through only the peers it is linked to,
 * so a line stays a line even when presence names the far end. Periodic
 * sync is off (a check's sessions are its own); standing is the gossipsub
 * score.
 */
export function libp2pSetup(): TransportSetup {
  return {
    scoresPeers: true,
    create: async (count, links) => {
      const keys = await Promise.all(Array.from({ length: count }, async () => await generateKeyPair('Ed25519')))
      const ids = keys.map(k => peerIdFromPrivateKey(k).toString())
      const swarm = `contract-${randomBytes(4).toString('hex')}`
      const linked = linkedTo(count, links)
      const transports: Libp2pTransport[] = keys.map((privateKey, i) =>
        createLibp2pTransport({
          peerId: ids[i] as string,
          privateKey,
          swarm,
          listen: ['/ip4/127.0.0.1/tcp/0'],
          bootstrap: [],
          mdns: false,
          allowPeers: new Set([...(linked[i] ?? [])].map(j => ids[j] as string)),
          presence: PRESENCE,
          presenceIntervalMs: PRESENCE_INTERVAL_MS,
          syncIntervalMs: 0
        })
      )
      const within = async <T>(what: string, p: Promise<T>, ms: number): Promise<T> => {
        let timer: NodeJS.Timeout | undefined
        const deadline = new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => {
            reject(new Error(`timed out after ${ms} ms waiting for ${what}`))
          }, ms)
        })
        try {
          return await Promise.race([p, deadline])
        } finally {
          clearTimeout(timer)
        }
      }
      const net: ContractNet = {
        transports,
        connect: async () => {
          for (const [a, b] of links) {
            const ta = transports[a] as Libp2pTransport
            const tb = transports[b] as Libp2pTransport
            await within(`node ${a} to dial node ${b}`, ta.node.dialPeer(tb.peerId, tb.addresses()), 10_000)
          }
          // Gossip flows both ways once each end is subscribed and in the other's mesh (the next heartbeat, ~1 s).
          await waitUntil(
            'every link to carry gossip both ways',
            () =>
              links.every(([a, b]) =>
                [
                  [a, b],
                  [b, a]
                ].every(([x, y]) => {
                  const node = (transports[x as number] as Libp2pTransport).node
                  const peer = ids[y as number] as string
                  return node.eventTopicPeers().includes(peer) && node.eventMeshPeers().includes(peer)
                })
              ),
            10_000,
            50
          )
        },
        waitFor: async (what, check, ms) => {
          await waitUntil(what, check, ms, 20)
        },
        settle: within,
        idle: async ms => {
          await new Promise(resolve => setTimeout(resolve, ms))
        },
        standing: (observer, peer) => (transports[observer] as Libp2pTransport).node.peerScore(ids[peer] as string),
        stop: async () => {
          await stopAll(transports)
        }
      }
      return net
    }
  }
}

/**
 * The simulator's transports on a simulated network with connections and
 * clean links (2-5 ms a hop), on virtual time: a wait runs the virtual
 * clock, never the real one. No dial policy runs (SimTransport without
 * `neighbours`): the network has exactly the links given, opened by
 * `connect`.
 */
export function simSetup(seed = 1): TransportSetup {
  return {
    scoresPeers: false,
    create: async (count, links) => {
      const time = new VirtualTime()
      const ids = Array.from({ length: count }, (_, i) => `sim-node-${i}`)
      const network = new SimNetwork(time, seededRandom(seed), ids, 0, 'neighbours')
      const registry = new Map<string, SimTransport>()
      const transports = ids.map(
        (peerId, i) =>
          new SimTransport({
            peerId,
            network,
            time,
            clock: new NodeClock(time, 0, seed * 7919 + i),
            presence: PRESENCE,
            presenceIntervalMs: PRESENCE_INTERVAL_MS,
            registry
          })
      )
      const run = async (ms: number, done: () => boolean): Promise<void> => {
        await time.run(time.elapsed + ms, done)
      }
      const settle = async <T>(what: string, p: Promise<T>, ms: number): Promise<T> => {
        let outcome: { value: T } | { error: unknown } | undefined
        p.then(
          value => (outcome = { value }),
          (error: unknown) => (outcome = { error })
        )
        await run(ms, () => outcome !== undefined)
        if (outcome === undefined) throw new Error(`timed out after ${ms} virtual ms waiting for ${what}`)
        if ('error' in outcome) throw outcome.error
        return outcome.value
      }
      const net: ContractNet = {
        transports,
        connect: async () => {
          await settle(
            'the links to open',
            Promise.all(links.map(async ([a, b]) => await network.dial(ids[a] as string, ids[b] as string))),
            10_000
          )
          // Without a dial policy, a transport learns of new links from the network's change signal.
          network.changed()
        },
        waitFor: async (what, check, ms) => {
          await run(ms, check)
          if (!check()) throw new Error(`timed out after ${ms} virtual ms waiting for ${what}`)
        },
        settle,
        idle: async ms => {
          await run(ms, () => false)
        },
        stop: async () => {
          await stopAll(transports)
        }
      }
      return net
    }
  }
}

/** The same networks as `setup`, with every transport handed to the checks passed through `wrap`. */
export function wrappedSetup(setup: TransportSetup, wrap: (t: Transport) => Transport): TransportSetup {
  return {
    scoresPeers: setup.scoresPeers,
    create: async (count, links) => {
      const net = await setup.create(count, links)
      return { ...net, transports: net.transports.map(wrap) }
    }
  }
}
