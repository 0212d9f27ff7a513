/**
 * How many signatures a replica checks (plan_swarm_signature_checks_total,
 * which the load benchmark divides by the events held): one per event taken
 * from gossip, none for an event this node signed, and in a sync batch one
 * per event not held yet, on worker threads or inline.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { openEventStore } from '../../src/store/event-store.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { MIN_POOL_BATCH } from '../../src/runtime/verify.js'
import { signEventSync } from '../../src/wire/sign.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString } from '../../src/core/events.js'

const replicas: Replica[] = []

function replica(key: PrivateKey, peerId: PeerIdString, inlineVerify = false): { r: Replica; metrics: NodeMetrics } {
  const metrics = new NodeMetrics()
  const store = openEventStore({ memory: true })
  const r = new Replica({ swarm: 'test', key, peerId, store, metrics, now: () => Date.now(), inlineVerify })
  replicas.push(r)
  return { r, metrics }
}

async function checks(metrics: NodeMetrics): Promise<number> {
  return (await metrics.signatureChecks.get()).values.reduce((s, v) => s + v.value, 0)
}

afterAll(async () => {
  for (const r of replicas) await r.verifyPool.close()
})

describe('signature checks per event', () => {
  it('one per event from gossip; none for its own; a sync batch checks only what is not held', async () => {
    const { events, peers } = await generatePlan({ fanout: 3, depth: 3, renewals: 2 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wires = events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes)
    expect(wires.length).toBeGreaterThan(2 * MIN_POOL_BATCH)
    const me = peers[0] as { id: PeerIdString; key: PrivateKey }
    const half = Math.floor(wires.length / 2)

    for (const inline of [false, true]) {
      const { r, metrics } = replica(me.key, me.id, inline)
      for (const w of wires.slice(0, half)) expect(r.ingest(w, 'gossip').verdict).toBe('accept')
      expect(await checks(metrics)).toBe(half)
      // The whole set by sync: the half held is skipped before its signatures are checked.
      const results = await r.ingestMany(wires, 'sync')
      expect(results.filter(x => x.why === 'duplicate')).toHaveLength(half)
      expect(await checks(metrics), inline ? 'inline' : 'on worker threads').toBe(wires.length)
      expect(r.ids.size).toBe(wires.length)
    }

    const { r, metrics } = replica(me.key, me.id)
    const goal = events[0] as (typeof events)[number]
    await r.author('goal-submitted', '', [], goal.env.body as never)
    expect(await checks(metrics), 'an event this node signed').toBe(0)
  })
})
