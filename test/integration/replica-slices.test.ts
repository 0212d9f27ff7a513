/**
 * The event loop gets control while a node ingests: a sync batch handed to a
 * replica with LoopSlices (src/ports/loop-slices.ts) is decoded and folded a
 * chunk per turn of the loop, with the same verdicts and the same trees as in
 * one go; gossip's ingest goes through the same slices. Counted in turns of
 * the loop (setImmediate callbacks that ran while the batch was under way),
 * never in milliseconds.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { openEventStore } from '../../src/store/event-store.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { FOLD_CHUNK, SCREEN_CHUNK } from '../../src/runtime/batch-fold.js'
import { LoopSlices, MAX_SLICES_A_TURN } from '../../src/ports/loop-slices.js'
import { realScheduler } from '../../src/ports/scheduler.js'
import { signEventSync } from '../../src/wire/sign.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString } from '../../src/core/events.js'

const replicas: Replica[] = []

function replica(key: PrivateKey, peerId: PeerIdString, slices?: LoopSlices): Replica {
  const store = openEventStore({ memory: true })
  const metrics = new NodeMetrics()
  const r = new Replica({ swarm: 'test', key, peerId, store, metrics, inlineVerify: true, slices })
  replicas.push(r)
  return r
}

afterAll(async () => {
  for (const r of replicas) await r.verifyPool.close()
})

/** Runs `fn`, counting the turns of the event loop (setImmediate callbacks) that ran before it resolved. */
async function turnsDuring<T>(fn: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0
  let on = true
  const spin = (): void => {
    if (!on) return
    turns++
    setImmediate(spin)
  }
  setImmediate(spin)
  const value = await fn()
  on = false
  return { value, turns }
}

/** A fake scheduler: a monotonic clock moved by hand, and `soon` callbacks run when the test turns the loop. */
function fakeLoop(): {
  monotonic: () => number
  soon: (fn: () => void) => () => void
  advance: (ms: number) => void
  turn: () => number
} {
  let now = 0
  let queue: Array<() => void> = []
  return {
    monotonic: () => now,
    soon: fn => {
      queue.push(fn)
      return () => undefined
    },
    advance: ms => {
      now += ms
    },
    turn: () => {
      const due = queue
      queue = []
      for (const fn of due) fn()
      return due.length
    }
  }
}

describe('LoopSlices', () => {
  it('runs work at once until the slice is spent, then a slice a turn, in the order handed over', async () => {
    const loop = fakeLoop()
    const slices = new LoopSlices(loop, 10)
    const ran: number[] = []
    const all = Array.from(
      { length: 10 },
      async (_, i) =>
        await slices.run(() => {
          ran.push(i)
          loop.advance(4)
          return i * 2
        })
    )
    // 0, 4, 8 ms into the slice: three run at once, the fourth finds 12 ms spent.
    expect(ran).toEqual([0, 1, 2])
    expect(slices.waiting).toBe(7)
    loop.turn()
    expect(ran).toEqual([0, 1, 2, 3, 4, 5])
    loop.turn()
    loop.turn()
    expect(ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(await Promise.all(all)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18])
    // Once the loop turned with nothing queued, a new slice starts afresh.
    loop.turn()
    await slices.run(() => ran.push(10))
    expect(ran.at(-1)).toBe(10)
    expect(slices.counts.deferred).toBe(7)
  })

  it('queues new work behind what waits, even with budget left; rethrows what the work throws', async () => {
    const loop = fakeLoop()
    const slices = new LoopSlices(loop, 10)
    const ran: string[] = []
    void slices.run(() => {
      ran.push('a')
      loop.advance(20)
    })
    const b = slices.run(() => ran.push('b'))
    loop.turn()
    // A new slice (b ran in it, at no cost): c still goes behind anything queued, and here nothing is.
    const c = slices.run(() => {
      throw new Error('c failed')
    })
    await b
    await expect(c).rejects.toThrow('c failed')
    expect(ran).toEqual(['a', 'b'])
  })

  it('a turn after a long rest of the loop runs the queue for as long, up to MAX_SLICES_A_TURN slices', async () => {
    const loop = fakeLoop()
    const slices = new LoopSlices(loop, 10)
    const ran: number[] = []
    const all = Array.from(
      { length: 80 },
      async (_, i) =>
        await slices.run(() => {
          ran.push(i)
          loop.advance(2)
        })
    )
    expect(ran).toHaveLength(5)
    loop.turn()
    expect(ran).toHaveLength(10)
    // The rest of the loop took 30 ms: the next turn may take as long.
    loop.advance(30)
    loop.turn()
    expect(ran).toHaveLength(25)
    // And never more than MAX_SLICES_A_TURN slices.
    loop.advance(1_000)
    loop.turn()
    expect(ran).toHaveLength(25 + (MAX_SLICES_A_TURN * 10) / 2)
    // A turn right after the last: a slice again.
    loop.turn()
    expect(ran).toHaveLength(25 + (MAX_SLICES_A_TURN * 10) / 2 + 5)
    while (slices.waiting > 0) loop.turn()
    expect(ran).toEqual(Array.from({ length: 80 }, (_, i) => i))
    await Promise.all(all)
  })

  it('never puts work off while the clock does not move (the simulator)', async () => {
    const loop = fakeLoop()
    const slices = new LoopSlices(loop, 10)
    for (let i = 0; i < 1000; i++) await slices.run(() => i)
    expect(slices.counts.deferred).toBe(0)
  })
})

describe('a sync batch ingested in slices of the event loop', () => {
  it('gives the loop a turn between chunks, with the verdicts and trees of one go', async () => {
    const { events, peers } = await generatePlan({ fanout: 3, depth: 3, renewals: 2 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    // Shuffled (deterministically): the fold orders a batch by stamp, and so must the chunks.
    const wires = events
      .map((e, i) => ({ w: signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes, k: (i * 7919) % 1009 }))
      .sort((a, b) => a.k - b.k)
      .map(x => x.w)
    const batch = [...wires, ...wires.slice(0, 5)]
    expect(wires.length).toBeGreaterThan(4 * FOLD_CHUNK)
    const me = peers[0] as { id: PeerIdString; key: PrivateKey }
    const plan = events[0]?.id

    const whole = replica(me.key, me.id)
    const inOneGo = await turnsDuring(async () => await whole.ingestMany(batch, 'sync'))
    // Inline checks and no slices: nothing in it waits for the loop.
    expect(inOneGo.turns).toBe(0)

    // A budget of 0: every chunk after the first waits for a turn of the loop.
    const slices = new LoopSlices(realScheduler(), 0)
    const sliced = replica(me.key, me.id, slices)
    const inSlices = await turnsDuring(async () => await sliced.ingestMany(batch, 'sync'))
    const chunks = Math.ceil(batch.length / SCREEN_CHUNK) + Math.ceil(wires.length / FOLD_CHUNK)
    expect(slices.counts.deferred).toBe(chunks - 1)
    expect(inSlices.turns).toBeGreaterThanOrEqual(chunks - 1)
    // Whatever the chunk sizes: the loop turns at least once every 16 events folded.
    expect(inSlices.turns).toBeGreaterThanOrEqual(Math.floor(wires.length / 16))

    expect(inSlices.value).toEqual(inOneGo.value)
    expect(inSlices.value.filter(r => r.verdict === 'accept')).toHaveLength(wires.length)
    expect(sliced.fold.events.parkedCount).toBe(0)
    expect(sliced.fold.swarmHash()).toBe(whole.fold.swarmHash())
    expect(sliced.fold.treeHash(plan as never)).toBe(whole.fold.treeHash(plan as never))
    // Stored as they folded: a fresh replica on the same store would hold them (the store answers for every id).
    for (const w of wires.slice(0, 3)) expect(sliced.ingest(w, 'gossip').why).toBe('duplicate')
    expect(sliced.ids.size).toBe(wires.length)
  })

  it('gossip that comes in while the batch waits for its turns ends in the same state', async () => {
    const { events, peers } = await generatePlan({ fanout: 2, depth: 2, renewals: 1 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wires = events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes)
    const me = peers[0] as { id: PeerIdString; key: PrivateKey }
    const whole = replica(me.key, me.id)
    await whole.ingestMany(wires, 'sync')
    const r = replica(me.key, me.id, new LoopSlices(realScheduler(), 0))
    const pending = r.ingestMany(wires, 'sync')
    // Between the batch's turns, gossip brings its last events (parked or folded, whichever they find).
    for (const w of wires.slice(-3)) {
      await new Promise(resolve => setImmediate(resolve))
      expect(r.ingest(w, 'gossip').verdict).not.toBe('reject')
    }
    const results = await pending
    expect(results.filter(x => x.verdict === 'reject')).toEqual([])
    expect(r.fold.events.parkedCount).toBe(0)
    expect(r.ids.size).toBe(wires.length)
    expect(r.fold.swarmHash()).toBe(whole.fold.swarmHash())
  })
})
