/**
 * While history streams in by sync, the roles leave alone the plans with no
 * recent event (src/runtime/catch-up.ts): a newcomer holding part of a plan
 * that finished long ago must not claim, propose or vote in it. A plan with
 * recent events is left to the roles, and once the stream stops every plan
 * is theirs again.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { openEventStore } from '../../src/store/event-store.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { CATCH_UP_EVENTS, CATCH_UP_WINDOW_MS, CatchUp, HISTORY_QUIET_MS } from '../../src/runtime/catch-up.js'
import { signEventSync } from '../../src/wire/sign.js'
import { eventIdOfWire } from '../../src/wire/codec.js'
import { shuffle } from '../helpers/random.js'
import { makePeers } from '../helpers/plan-builder.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString, PlanId } from '../../src/core/events.js'

const replicas: Replica[] = []
afterAll(async () => {
  for (const r of replicas) await r.verifyPool.close()
})

async function signedPlan(startMs: number): Promise<{ plan: PlanId; wires: Uint8Array[] }> {
  const { events, peers, builder } = await generatePlan({ fanout: 4, depth: 3, renewals: 12, startMs })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  const wires = events.map(e => signEventSync(e.env, keys.get(e.env.author) as PrivateKey).bytes)
  return { plan: builder.plan, wires }
}

describe('catching up on history', () => {
  it('the rate: events taken in by sync over two windows, and nothing after two quiet windows', () => {
    const c = new CatchUp()
    const t = 1_000_000
    c.note(CATCH_UP_EVENTS - 1, t)
    expect(c.active(t)).toBe(false)
    c.note(1, t + CATCH_UP_WINDOW_MS + 1)
    expect(c.active(t + CATCH_UP_WINDOW_MS + 1)).toBe(true)
    expect(c.active(t + 2 * CATCH_UP_WINDOW_MS + 1)).toBe(false)
    expect(c.heldReason(t - HISTORY_QUIET_MS - 1, t + CATCH_UP_WINDOW_MS + 1)).toBeNull()
    c.note(CATCH_UP_EVENTS, t + 3 * CATCH_UP_WINDOW_MS)
    const now = t + 3 * CATCH_UP_WINDOW_MS
    expect(c.heldReason(now - HISTORY_QUIET_MS - 1, now)).toMatch(/catches up on the swarm's history/)
    expect(c.heldReason(now - HISTORY_QUIET_MS + 1_000, now)).toBeNull()
    expect(c.heldReason(undefined, now)).toBeNull()
  })

  it('a replica taking a long history by sync holds the old plan, not the live one, and frees both once it stops', async () => {
    const wall = Date.now()
    const old = await signedPlan(wall - 3_600_000)
    const live = await signedPlan(wall - 5_000)
    expect(old.wires.length).toBeGreaterThan(CATCH_UP_EVENTS)
    let now = wall
    const [me] = await makePeers(1)
    const r = new Replica({
      swarm: 'test',
      key: me?.key as PrivateKey,
      peerId: me?.id as PeerIdString,
      store: openEventStore({ memory: true }),
      metrics: new NodeMetrics(),
      now: () => now
    })
    replicas.push(r)
    // The old plan but its last events (a newcomer part way through), and the live plan whole.
    const oldPart = shuffle(old.wires.slice(0, -10), 7)
    for (let i = 0; i < oldPart.length; i += 500) await r.ingestMany(oldPart.slice(i, i + 500), 'sync')
    await r.ingestMany(live.wires, 'gossip')
    expect(r.fold.tree(old.plan)?.status).toBe('executing')

    expect(r.catchUp.active(now)).toBe(true)
    expect(r.heldReason(old.plan)).toMatch(/catches up/)
    expect(r.heldReason(live.plan)).toBeNull()

    now += 2 * CATCH_UP_WINDOW_MS + 1
    expect(r.catchUp.active(now)).toBe(false)
    expect(r.heldReason(old.plan)).toBeNull()
  })

  it('names for a newcomer the plans under way and those finished in the last 2 minutes, in memory or not', async () => {
    const wall = Date.now()
    const open = await signedPlan(wall - 20_000)
    const recent = await signedPlan(wall - 60_000)
    const old = await signedPlan(wall - 3_600_000)
    let now = wall
    const [me] = await makePeers(1)
    const r = new Replica({
      swarm: 'test',
      key: me?.key as PrivateKey,
      peerId: me?.id as PeerIdString,
      store: openEventStore({ memory: true }),
      metrics: new NodeMetrics(),
      now: () => now,
      evictQuietMs: 1_000
    })
    replicas.push(r)
    await r.ingestMany(open.wires.slice(0, -10), 'gossip')
    await r.ingestMany(recent.wires, 'gossip')
    await r.ingestMany(old.wires, 'gossip')
    expect(r.fold.tree(recent.plan)?.status).toBe('completed')
    expect(now - (r.fold.facts(recent.plan)?.lastStampMs ?? 0)).toBeLessThan(HISTORY_QUIET_MS)
    const named = (): Set<string> => new Set(r.openIds(1_000_000))
    const expectNamed = (): void => {
      const ids = named()
      expect(open.wires.slice(0, -10).every(w => ids.has(eventIdOfWire(w) as string))).toBe(true)
      expect(recent.wires.every(w => ids.has(eventIdOfWire(w) as string))).toBe(true)
      expect(old.wires.some(w => ids.has(eventIdOfWire(w) as string))).toBe(false)
    }
    expectNamed()
    // Quiet for longer than evictQuietMs: the finished plans leave memory, and the recent one is still named.
    now += 5_000
    r.tick()
    expect(r.fold.isEvicted(recent.plan)).toBe(true)
    expectNamed()
    // The plan under way first (heard of last), each plan's events in stamp order: a goal before its split.
    expect(r.openIds(1)).toEqual([eventIdOfWire(open.wires[0] as Uint8Array)])
    expect(r.openIds(5)).toHaveLength(5)
  })
})
