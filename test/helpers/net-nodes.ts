/**
 * Helpers for the network shell's integration tests: nodes that are always
 * stopped, waits with deadlines, free ports and stand-in event bytes.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { createSwarmNode } from '../../src/net/node.js'
import type { SwarmNode, SwarmNodeInit } from '../../src/net/node.js'
import type { EventVerdict } from '../../src/net/gossip-validators.js'

/** Bytes shaped like a wire event (`envelope || 64-byte signature`) and their event id. The node never decodes them. */
export interface FakeEvent {
  readonly id: string
  readonly bytes: Uint8Array
}

/** A stand-in event: `size` bytes derived from `seed`, whose id is the SHA-256 of all but the last 64. */
export function fakeEvent(seed: string, size = 300): FakeEvent {
  const bytes = new Uint8Array(size)
  let block = createHash('sha256').update(seed).digest()
  for (let off = 0; off < size; off += block.length) {
    bytes.set(block.subarray(0, Math.min(block.length, size - off)), off)
    block = createHash('sha256').update(block).digest()
  }
  const id = createHash('sha256')
    .update(bytes.subarray(0, size - 64))
    .digest('hex')
  return { id, bytes }
}

/** The event id of wire bytes, computed as the node's message id function does. */
export function idOf(bytes: Uint8Array): string {
  return createHash('sha256')
    .update(bytes.subarray(0, bytes.length - 64))
    .digest('hex')
}

/** A TCP port that was free a moment ago (for a node that must start later at a known address). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      if (addr === null || typeof addr === 'string') {
        reject(new Error('no port'))
        return
      }
      srv.close(() => resolve(addr.port))
    })
  })
}

export async function newKey(): Promise<PrivateKey> {
  return generateKeyPair('Ed25519')
}

/** Every validator call a test node saw, in order. */
export interface Seen {
  readonly ids: string[]
  readonly froms: string[]
}

/** Fast redial for tests: the behaviour is the same as the defaults, on a shorter clock. */
export const TEST_REDIAL = { minBackoffMs: 500, maxBackoffMs: 2_000 }

/** Tracks nodes so an afterEach can stop every one of them. */
export interface NodePool {
  /**
   * Starts a node on 127.0.0.1 (TCP unless `transports` says otherwise).
   * Its validator records what it saw and answers `verdict(id)` (default accept).
   */
  start(init?: Partial<SwarmNodeInit> & { verdict?: (id: string) => EventVerdict }): Promise<SwarmNode & { seen: Seen }>
  stopAll(): Promise<void>
}

export function createNodePool(): NodePool {
  const nodes = new Set<SwarmNode>()
  return {
    async start(init = {}) {
      const seen: Seen = { ids: [], froms: [] }
      const { verdict, ...rest } = init
      const node = await createSwarmNode({
        privateKey: init.privateKey ?? (await newKey()),
        swarm: 'test',
        listen: ['/ip4/127.0.0.1/tcp/0'],
        bootstrap: [],
        mdns: false,
        redial: TEST_REDIAL,
        ...rest,
        eventValidator: (bytes, from) => {
          const id = idOf(bytes)
          seen.ids.push(id)
          seen.froms.push(from)
          return verdict?.(id) ?? 'accept'
        }
      })
      nodes.add(node)
      const stop = node.stop.bind(node)
      return Object.assign(node, {
        seen,
        stop: async () => {
          nodes.delete(node)
          await stop()
        }
      })
    },
    async stopAll() {
      const all = [...nodes]
      nodes.clear()
      await Promise.all(all.map(async n => n.stop()))
    }
  }
}

/** A random hex string, for unique names. */
export function nonce(): string {
  return randomBytes(4).toString('hex')
}
