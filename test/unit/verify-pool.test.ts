/**
 * VerifyPool: signatures checked on worker threads give exactly the flags the
 * main thread's check gives, one per job and in order, for good events and
 * for every way a signature can fail (a flipped bit in the signature or the
 * envelope, another author's key, another swarm's domain, no key, no room
 * for a signature); and a worker that dies in the middle of a batch costs
 * nothing but time: the batch is checked on the calling thread. Through
 * Replica.ingestMany, a forged event in a sync batch of several shares is
 * refused and every genuine one taken, each verdict at its event's place.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Worker } from 'node:worker_threads'
import { generatePlan } from '../../bench/common/gen-plan.js'
import {
  MIN_POOL_BATCH,
  STREAM_SHARE,
  VerifyPool,
  checkWireSignature,
  createNativeVerifier
} from '../../src/runtime/verify.js'
import type { VerifyJob } from '../../src/runtime/verify.js'
import { signEventSync } from '../../src/wire/sign.js'
import { eventIdOfWire } from '../../src/wire/codec.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import type { PeerIdString } from '../../src/core/events.js'
import { shuffle } from '../helpers/random.js'
import type { PrivateKey } from '@libp2p/interface'

const SWARM = 'test'
const pools: VerifyPool[] = []

function pool(size = 2): VerifyPool {
  const p = new VerifyPool(SWARM, size)
  pools.push(p)
  return p
}

afterEach(async () => {
  for (const p of pools.splice(0)) await p.close()
})

/** The pool's worker threads (started on first use), to break one. */
function threadsOf(p: VerifyPool): Worker[] {
  const workers = (p as unknown as { workers?: Array<{ worker: Worker }> }).workers
  return (workers ?? []).map(w => w.worker)
}

function flip(bytes: Uint8Array, at: number): Uint8Array {
  const out = Uint8Array.from(bytes)
  out[at] = (out[at] as number) ^ 1
  return out
}

/** A shuffled batch: good events, and each way of failing, several times over; `good` says which should pass. */
async function mixedBatch(): Promise<{ jobs: VerifyJob[]; good: boolean[] }> {
  const { events, peers } = await generatePlan({ fanout: 3, depth: 3, renewals: 3 })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  const signed = events.map(e => ({
    author: e.env.author as string,
    bytes: signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes,
    env: e.env
  }))
  const cases: Array<VerifyJob & { good: boolean }> = signed.map(s => ({
    author: s.author,
    bytes: s.bytes,
    good: true
  }))
  for (const [k, s] of signed.slice(0, 40).entries()) {
    const other = peers[(peers.findIndex(p => p.id === s.author) + 1) % peers.length] as { id: string; key: PrivateKey }
    const bad: VerifyJob[] = [
      // A bit of the signature, a bit of the envelope.
      { author: s.author, bytes: flip(s.bytes, s.bytes.length - 1 - (k % 64)) },
      { author: s.author, bytes: flip(s.bytes, k % (s.bytes.length - 64)) },
      // Claimed by someone else; signed by someone else for this author; signed for another swarm.
      { author: other.id, bytes: s.bytes },
      { author: s.author, bytes: signEventSync({ ...s.env, author: other.id as never }, other.key).bytes },
      {
        author: s.author,
        bytes: signEventSync({ ...s.env, swarm: 'elsewhere' }, keys.get(s.author) as PrivateKey).bytes
      },
      // No Ed25519 key in the author string; no room for an envelope and a signature.
      { author: 'not-a-peer-id', bytes: s.bytes },
      { author: s.author, bytes: s.bytes.subarray(s.bytes.length - 64) }
    ]
    for (const b of bad) cases.push({ ...b, good: false })
  }
  const mixed = shuffle(cases, 7)
  return { jobs: mixed.map(({ author, bytes }) => ({ author, bytes })), good: mixed.map(c => c.good) }
}

describe('VerifyPool', () => {
  it('flags a mixed batch on worker threads exactly as the main thread does, in order', async () => {
    const { jobs, good } = await mixedBatch()
    expect(jobs.length).toBeGreaterThan(2 * STREAM_SHARE)
    const inline = createNativeVerifier()
    const expected = jobs.map(j => checkWireSignature(inline, SWARM, j.author, j.bytes))
    expect(expected, 'the main thread passes exactly the good ones').toStrictEqual(good)

    const p = pool()
    expect(await p.verifyMany(jobs)).toStrictEqual(expected)
    expect(p.checked).toStrictEqual({ workers: jobs.length, inline: 0 })
    // Again, now that the workers hold their key objects.
    expect(await p.verifyMany(jobs)).toStrictEqual(expected)
  })

  it('keeps each batch to itself when several are fed at once, a job at a time', async () => {
    const { jobs, good } = await mixedBatch()
    const p = pool(3)
    const a = p.batch()
    const b = p.batch()
    const toA: boolean[] = []
    const toB: boolean[] = []
    jobs.forEach((j, i) => {
      if (i % 3 === 0) {
        b.add(j)
        toB.push(good[i] as boolean)
      } else {
        a.add(j)
        toA.push(good[i] as boolean)
      }
    })
    const [fa, fb] = await Promise.all([a.done(), b.done()])
    expect(fa).toStrictEqual(toA)
    expect(fb).toStrictEqual(toB)
    expect(p.checked.workers).toBe(jobs.length)
  })

  it('checks a batch too small for a round trip on the calling thread', async () => {
    const { jobs, good } = await mixedBatch()
    const p = pool()
    expect(await p.verifyMany(jobs.slice(0, MIN_POOL_BATCH - 1))).toStrictEqual(good.slice(0, MIN_POOL_BATCH - 1))
    expect(p.checked).toStrictEqual({ workers: 0, inline: MIN_POOL_BATCH - 1 })
    expect(threadsOf(p), 'no worker started').toHaveLength(0)
  })

  it('a worker that exits in the middle of a batch: the batch is checked on the calling thread, with the same flags', async () => {
    const { jobs, good } = await mixedBatch()
    const p = pool()
    const flags = p.verifyMany(jobs)
    const [first] = threadsOf(p)
    expect(first).toBeDefined()
    await first?.terminate()
    expect(await flags).toStrictEqual(good)
    expect(p.checked.inline).toBe(jobs.length)
    // And from then on, every batch is checked here.
    expect(await p.verifyMany(jobs.slice(0, 2 * MIN_POOL_BATCH))).toStrictEqual(good.slice(0, 2 * MIN_POOL_BATCH))
    expect(p.checked.inline).toBe(jobs.length + 2 * MIN_POOL_BATCH)
  })

  it('a worker that throws in the middle of a batch: the same, through its error event', async () => {
    const { jobs, good } = await mixedBatch()
    const p = pool()
    expect(await p.verifyMany(jobs.slice(0, MIN_POOL_BATCH))).toStrictEqual(good.slice(0, MIN_POOL_BATCH))
    // A message it cannot read, ahead of the batch's shares: the worker throws, uncaught, before it answers them.
    threadsOf(p)[1]?.postMessage({ id: -1 })
    const flags = p.verifyMany(jobs)
    expect(await flags).toStrictEqual(good)
    expect(p.checked).toStrictEqual({ workers: MIN_POOL_BATCH, inline: jobs.length })
  })

  it('through Replica.ingestMany: forgeries in a batch of several shares are refused, the rest taken, verdicts in order', async () => {
    const { events, peers } = await generatePlan({ fanout: 3, depth: 3, renewals: 14 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wires = events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes)
    const forged = new Set(shuffle([...wires.keys()].slice(1), 3).slice(0, 25))
    const batch = shuffle(
      wires.map((w, i) => (forged.has(i) ? flip(w, w.length - 1 - (i % 64)) : w)),
      11
    )
    expect(batch.length).toBeGreaterThan(2 * STREAM_SHARE)
    const me = peers[0] as { id: PeerIdString; key: PrivateKey }
    const replicaOf = (): Replica => {
      const r = new Replica({
        swarm: SWARM,
        ...me,
        peerId: me.id,
        store: openEventStore({ memory: true }),
        metrics: new NodeMetrics()
      })
      pools.push(r.verifyPool)
      return r
    }
    const one = replicaOf()
    const single = batch.map(b => one.ingest(b, 'sync'))
    const many = replicaOf()
    const batched = await many.ingestMany(batch, 'sync')

    expect(many.verifyPool.checked).toStrictEqual({ workers: batch.length, inline: 0 })
    expect(batched.map(r => r.id)).toStrictEqual(batch.map(b => eventIdOfWire(b)))
    const refused = (rs: typeof single): boolean[] => rs.map(r => r.verdict === 'reject')
    expect(refused(batched)).toStrictEqual(refused(single))
    expect(batched.filter(r => r.verdict === 'reject').map(r => r.why)).toStrictEqual(
      Array(forged.size).fill('bad-signature')
    )
    expect(many.fold.swarmHash()).toBe(one.fold.swarmHash())
    expect(many.ids.size).toBe(one.ids.size)
  })
})
