/**
 * The upgrade to protocol 2 changes nothing about a v1 plan: a data dir
 * written before it (the golden fixture's events, signed by their authors'
 * fixed test keys and stored as an old node stored them) loads into a new
 * replica with the golden treeHash and swarmHash, and events of a version
 * the node does not fold, held in the same store, are kept and not folded.
 * (test/property/fold-golden.test.ts holds the fold of the same set without
 * the store; ADR-0024 says why v1 hashes cannot move.)
 */
import { readFileSync } from 'node:fs'
import * as dagCbor from '@ipld/dag-cbor'
import { afterAll, describe, expect, it } from 'vitest'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import { signEventSync, signRawSync } from '../../src/wire/sign.js'
import { eventIdOfWire } from '../../src/wire/codec.js'
import { peerIdOf, testKeys } from '../helpers/arbitraries.js'
import { removeTempDirs, tempDir } from '../helpers/cli-process.js'
import type { PrivateKey } from '@libp2p/interface'
import type { Envelope, PeerIdString, PlanId } from '../../src/core/events.js'

interface Golden {
  readonly plan: PlanId
  readonly treeHash: string
  readonly swarmHash: string
  readonly ids: readonly string[]
  readonly envelopes: readonly Envelope[]
}

const golden = JSON.parse(readFileSync(new URL('../fixtures/golden-plan.json', import.meta.url), 'utf8')) as Golden

afterAll(removeTempDirs)

describe('upgrade: a v1 data dir folds to the hashes it had', () => {
  it('the golden plan, signed and stored as an old node stored it, loads with the golden treeHash', async () => {
    const keys = new Map<PeerIdString, PrivateKey>()
    for (const k of await testKeys(11)) keys.set(peerIdOf(k), k)
    const dir = tempDir('upgrade')
    const old = openEventStore({ dir })
    const rows = golden.envelopes.map(env => {
      expect(env.v).toBe(1)
      const key = keys.get(env.author)
      if (key === undefined) throw new Error(`no test key for ${env.author}`)
      const { event, bytes } = signEventSync(env, key)
      return { id: event.id as string, plan: golden.plan as string, bytes, receivedMs: 0 }
    })
    expect(rows.map(r => r.id)).toStrictEqual(golden.ids)
    // A v99 event an old node held for a newer peer: stored, relayed, never folded.
    const author = golden.envelopes[0]?.author as PeerIdString
    const future = signRawSync(
      'test',
      dagCbor.encode({ ...golden.envelopes[1], v: 99, type: 'something-new' }),
      keys.get(author) as PrivateKey
    )
    old.putMany([...rows, { id: eventIdOfWire(future) as string, plan: golden.plan, bytes: future, receivedMs: 0 }])
    old.close()

    const store = openEventStore({ dir })
    const me = peerIdOf(keys.get(author) as PrivateKey)
    const replica = new Replica({
      swarm: 'test',
      key: keys.get(author) as PrivateKey,
      peerId: me,
      store,
      metrics: new NodeMetrics(),
      now: () => Date.now(),
      evictQuietMs: Infinity
    })
    const loaded = replica.load()
    expect(loaded.rejected).toBe(0)
    expect(replica.fold.events.size).toBe(golden.envelopes.length)
    expect(replica.fold.treeHash(golden.plan)).toBe(golden.treeHash)
    expect(replica.fold.swarmHash()).toBe(golden.swarmHash)
    expect(replica.ids.size).toBe(golden.envelopes.length + 1)
    const tree = replica.tree(golden.plan)
    expect(tree?.params).toMatchObject({ approvers: null, executors: 'model' })
    store.close()
  })
})
