/**
 * Replica.ingestMany (how a sync round and the store at start are taken):
 * the same events, forgeries and garbage give the same set, the same trees,
 * the same rejections and the same store as ingesting them one at a time,
 * with the signatures checked on worker threads.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { openEventStore } from '../../src/store/event-store.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { MIN_POOL_BATCH } from '../../src/runtime/verify.js'
import { signEventSync } from '../../src/wire/sign.js'
import { shuffle } from '../helpers/random.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString } from '../../src/core/events.js'
import type { EventStore } from '../../src/store/event-store.js'

const replicas: Replica[] = []

function replica(key: PrivateKey, peerId: PeerIdString, store: EventStore = openEventStore({ memory: true })): Replica {
  const r = new Replica({ swarm: 'test', key, peerId, store, metrics: new NodeMetrics(), now: () => Date.now() })
  replicas.push(r)
  return r
}

afterAll(async () => {
  for (const r of replicas) await r.verifyPool.close()
})

describe('Replica.ingestMany', () => {
  it('folds, stores and rejects a shuffled batch exactly as one-at-a-time ingest does', async () => {
    const { events, peers } = await generatePlan({ fanout: 3, depth: 3, renewals: 2 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wires = events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes)
    const forged = Uint8Array.from(wires[5] as Uint8Array)
    forged[forged.length - 1] = (forged[forged.length - 1] as number) ^ 1
    const garbage = new Uint8Array([1, 2, 3])
    // A forgery of an event that is also in the batch genuinely, a copy, garbage: in a shuffled batch.
    const batch = shuffle([...wires.slice(1), forged, wires[3] as Uint8Array, garbage], 42)
    expect(batch.length).toBeGreaterThan(MIN_POOL_BATCH)
    const me = peers[0] as { id: PeerIdString; key: PrivateKey }

    const one = replica(me.key, me.id)
    one.ingest(wires[0] as Uint8Array, 'sync')
    const single = batch.map(b => one.ingest(b, 'sync'))

    const many = replica(me.key, me.id)
    many.ingest(wires[0] as Uint8Array, 'sync')
    const batched = await many.ingestMany(batch, 'sync')

    expect(batched).toHaveLength(batch.length)
    // All but the garbage (undecodable): the copy too, as neither copy was held when the batch came.
    expect(many.verifyPool.checked.workers, 'signatures checked on worker threads').toBe(batch.length - 1)
    expect(many.fold.swarmHash()).toBe(one.fold.swarmHash())
    expect(many.fold.events.size).toBe(events.length)
    expect(many.fold.events.parkedCount).toBe(0)
    expect(many.ids.size).toBe(one.ids.size)
    expect(
      events.every(e => many.getBytes(e.id) !== undefined),
      'every event stored'
    ).toBe(true)
    // Same rejections (the forgery, the garbage), whichever way they came.
    const rejected = (rs: typeof single): string[] =>
      rs
        .filter(r => r.verdict === 'reject')
        .map(r => r.why ?? '')
        .sort()
    expect(rejected(batched)).toStrictEqual(rejected(single))
    expect(rejected(batched)).toStrictEqual(['bad-signature', 'undecodable'])
    expect(batched.filter(r => r.why === 'duplicate')).toHaveLength(1)
  })

  it('a node restarted on the store of a batched replica loads the same trees', async () => {
    const { events, peers } = await generatePlan({ fanout: 3, depth: 2, renewals: 1 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wires = shuffle(
      events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes),
      7
    )
    const me = peers[0] as { id: PeerIdString; key: PrivateKey }
    const store = openEventStore({ memory: true })
    const first = replica(me.key, me.id, store)
    await first.ingestMany(wires, 'sync')
    expect(store.count()).toBe(events.length)
    const again = replica(me.key, me.id, store)
    const loaded = again.load()
    expect(loaded.rejected).toBe(0)
    expect(again.fold.swarmHash()).toBe(first.fold.swarmHash())
  })
})
