/**
 * Helpers for the sync protocol's integration tests: minimal real libp2p
 * nodes (tcp on 127.0.0.1, noise, yamux) and a fake replica whose "events"
 * are random envelope bytes plus a 64-byte zero signature (their id is
 * eventIdOfWire of those bytes; nothing checks the signature here).
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import type { Libp2p } from '@libp2p/interface'
import { tcp } from '@libp2p/tcp'
import { createLibp2p } from 'libp2p'
import { IdSet } from '../../src/core/id-set.js'
import type { SyncService, SyncServiceInit, SyncStats } from '../../src/sync/libp2p-service.js'
import { createSyncService } from '../../src/sync/libp2p-service.js'
import { SIGNATURE_BYTES, eventIdOfWire } from '../../src/wire/codec.js'
import { waitUntil } from './wait.js'

export async function createTestNode(): Promise<Libp2p> {
  return await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()]
  })
}

export async function connect(from: Libp2p, to: Libp2p): Promise<void> {
  const addr = to.getMultiaddrs()[0]
  if (addr === undefined) throw new Error('node has no listen address')
  await from.dial(addr, { signal: AbortSignal.timeout(5_000) })
  // Both ends must have registered the connection before either opens a stream over it.
  await waitUntil(
    'the connection to show up at the other end',
    () => to.getConnections(from.peerId).length > 0,
    5_000,
    10
  )
}

/** A fake event of `size` wire bytes: random envelope bytes + 64 zero "signature" bytes. */
export function fakeEvent(size = 300): { id: string; bytes: Uint8Array } {
  const bytes = new Uint8Array(size)
  crypto.getRandomValues(bytes.subarray(0, size - SIGNATURE_BYTES))
  const id = eventIdOfWire(bytes)
  if (id === null) throw new Error('fake event too short')
  return { id, bytes }
}

/** A random well-formed id (for sets whose members are never transferred). */
export function randomId(): string {
  const b = new Uint8Array(32)
  crypto.getRandomValues(b)
  let s = ''
  for (const x of b) s += x.toString(16).padStart(2, '0')
  return s
}

/** What a node holds: the IdSet that sync reconciles, the bytes it can serve, the ids it keeps parked. */
export class FakeReplica {
  readonly ids = new IdSet()
  readonly bytes = new Map<string, Uint8Array>()
  readonly parked = new Set<string>()
  /** Ids received through ingest, in arrival order (duplicates included). */
  readonly received: string[] = []
  readonly from = new Map<string, number>()

  add(event: { id: string; bytes: Uint8Array }): void {
    this.bytes.set(event.id, event.bytes)
    this.ids.add(event.id)
  }

  /** Holds an id without its bytes (never served: for large common sets). */
  addIdOnly(id: string): void {
    this.ids.add(id)
  }

  readonly has = (id: string): boolean => this.ids.has(id) || this.parked.has(id)

  readonly getBytes = (id: string): Uint8Array | undefined => this.bytes.get(id)

  readonly ingest = async (bytes: Uint8Array, from: string): Promise<unknown> => {
    const id = eventIdOfWire(bytes)
    if (id === null) throw new Error('ingest: bad bytes')
    this.received.push(id)
    this.from.set(from, (this.from.get(from) ?? 0) + 1)
    this.bytes.set(id, bytes)
    this.ids.add(id)
    return 'folded'
  }
}

export interface SyncPeer {
  readonly node: Libp2p
  readonly replica: FakeReplica
  readonly sync: SyncService
  readonly sessions: SyncStats[]
}

/** A node with a fake replica and a started sync service (options override the defaults given here). */
export async function createSyncPeer(
  options: Partial<SyncServiceInit> = {},
  replica = new FakeReplica()
): Promise<SyncPeer> {
  const node = await createTestNode()
  const sessions: SyncStats[] = []
  const sync = createSyncService({
    libp2p: node,
    ids: replica.ids,
    has: replica.has,
    getBytes: replica.getBytes,
    ingest: replica.ingest,
    intervalMs: 0,
    onConnectDelayMs: 0,
    ...options,
    onSession: stats => {
      sessions.push(stats)
      options.onSession?.(stats)
    }
  })
  await sync.start()
  return { node, replica, sync, sessions }
}

export async function stopPeers(peers: ReadonlyArray<SyncPeer | Libp2p | undefined>): Promise<void> {
  await Promise.allSettled(
    peers.map(async p => {
      if (p === undefined) return
      if ('sync' in p) {
        await p.sync.stop()
        await p.node.stop()
      } else {
        await p.stop()
      }
    })
  )
}
