/**
 * The replica commits folded events to the store when the event loop turns,
 * not inside `ingest` (so a gossiped event is relayed a commit sooner), and
 * answers for them from its queue meanwhile. An event authored here is
 * folded without checking the signature just made. Either way, the sync id
 * set the store keeps counts every event once.
 */
import { describe, expect, it } from 'vitest'
import { setImmediate as turn } from 'node:timers/promises'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { DEFAULT_PARAMS } from '../../src/core/events.js'
import type { PeerIdString, PlanId } from '../../src/core/events.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import { IdSet } from '../../src/core/id-set.js'
import { createReconcileSession, reconcileInMemory } from '../../src/sync/reconcile/index.js'
import type { EventStore } from '../../src/store/event-store.js'
import { tempDir } from '../helpers/cli-process.js'

const SWARM = 'test'

async function replicaOn(store: EventStore): Promise<{ replica: Replica; me: PeerIdString }> {
  const key = await generateKeyPair('Ed25519')
  const me = peerIdFromPrivateKey(key).toString() as PeerIdString
  return {
    replica: new Replica({ swarm: SWARM, key, peerId: me, store, metrics: new NodeMetrics(), now: Date.now }),
    me
  }
}

async function submit(replica: Replica, me: PeerIdString): Promise<{ id: string; bytes: Uint8Array }> {
  const { event, bytes } = await replica.author('goal-submitted', '', [], {
    text: 'plan a picnic',
    params: { ...DEFAULT_PARAMS, committee: [me], quorum: 1 }
  })
  return { id: event.id, bytes }
}

describe('replica: store writes', () => {
  it("commits another's gossiped event when the event loop turns, and serves its bytes from the queue until then", async () => {
    const source = await replicaOn(openEventStore({ memory: true }))
    const { id, bytes } = await submit(source.replica, source.me)
    const store = openEventStore({ memory: true })
    const { replica: b } = await replicaOn(store)
    expect(b.ingest(bytes, 'gossip').verdict).toBe('accept')
    expect(store.has(id)).toBe(false)
    expect(b.getBytes(id)).toStrictEqual(bytes)
    await turn()
    expect(new Uint8Array(store.get(id) as Uint8Array)).toStrictEqual(bytes)
    const { replica: again } = await replicaOn(store)
    again.load()
    expect(again.fold.treeHash(id as PlanId)).toBe(b.fold.treeHash(id as PlanId))
  })

  it('commits an event authored here before author() returns, so before it can be published', async () => {
    const store = openEventStore({ memory: true })
    const { replica: a, me } = await replicaOn(store)
    const { id } = await submit(a, me)
    expect(store.has(id)).toBe(true)
  })

  it('keeps rows it could not commit and commits them with the next flush', async () => {
    const source = await replicaOn(openEventStore({ memory: true }))
    const { id, bytes } = await submit(source.replica, source.me)
    const store = openEventStore({ memory: true })
    const { replica: b } = await replicaOn(store)
    const putMany = store.putMany.bind(store)
    let refuse = true
    store.putMany = rows => {
      if (refuse) throw new Error('SQLITE_FULL: database or disk is full')
      return putMany(rows)
    }
    b.ingest(bytes, 'gossip')
    b.flush()
    expect(store.has(id)).toBe(false)
    expect(b.getBytes(id)).toBeDefined()
    refuse = false
    b.flush()
    expect(store.has(id)).toBe(true)
  })

  it('a peer stopped right after folding a gossiped event has it on disk', async () => {
    const { startPeer } = await import('../../src/app/peer.js')
    const { parseNodeArgs } = await import('../../src/runtime/config.js')
    const source = await replicaOn(openEventStore({ memory: true }))
    const { id, bytes } = await submit(source.replica, source.me)
    const dir = tempDir('replica-writes-')
    const args = [
      '--role',
      'observer',
      '--swarm',
      SWARM,
      '--no-mdns',
      '--listen',
      '/ip4/127.0.0.1/tcp/0',
      '--data-dir',
      dir
    ]
    const peer = await startPeer(parseNodeArgs(args, {}))
    expect(peer.replica.ingest(bytes, 'gossip').verdict).toBe('accept')
    await peer.stop()
    const store = openEventStore({ dir })
    try {
      expect(store.has(id)).toBe(true)
    } finally {
      store.close()
    }
  })

  it("keeps the store's sync id set exact for its own events and others', and after a restart", async () => {
    const store = openEventStore({ memory: true })
    const { replica, me } = await replicaOn(store)
    replica.load()
    const other = await replicaOn(openEventStore({ memory: true }))
    for (let i = 0; i < 5; i++) {
      await submit(replica, me)
      const theirs = await submit(other.replica, other.me)
      expect(replica.ingest(theirs.bytes, 'gossip').verdict).toBe('accept')
    }
    const check = (): void => {
      const ids = store.ids()
      expect(replica.ids.size).toBe(ids.length)
      const model = IdSet.from(ids)
      expect(replica.ids.fingerprint('', null)).toEqual(model.fingerprint('', null))
      const out = reconcileInMemory(createReconcileSession(replica.ids), createReconcileSession(model))
      if ('error' in out) throw new Error(out.error)
      expect([...out.a.need, ...out.b.need]).toEqual([])
    }
    await turn()
    check()
    // After a restart the set is built from the rows: the same set.
    const again = new Replica({
      swarm: SWARM,
      key: await generateKeyPair('Ed25519'),
      peerId: me,
      store,
      metrics: new NodeMetrics(),
      now: Date.now
    })
    again.load()
    expect(again.ids.fingerprint('', null)).toEqual(replica.ids.fingerprint('', null))
    check()
  })
})
