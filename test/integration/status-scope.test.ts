/**
 * What a node lists of its plans: GET /plans every plan it holds; /status the
 * plans under way and the STATUS_FINISHED_MAX finished last (by their last
 * event), so a node that has kept thousands of finished plans does not
 * answer megabytes (a node's --json lines list the same). A replica holding more finished plans than /status lists, some
 * of them out of memory, and one plan under way.
 */
import { describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { foldAll } from '../../src/core/fold.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { EVICT_QUIET_MS, Replica, STATUS_FINISHED_MAX } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import { signEvent } from '../../src/wire/sign.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PlanEvent, PlanId } from '../../src/core/events.js'

const FINISHED = STATUS_FINISHED_MAX + 5

describe('which plans a node lists', () => {
  it('/status lists the plans under way and the last to finish, GET /plans every plan', async () => {
    const store = openEventStore({ memory: true })
    const first = await generatePlan({ fanout: 2, depth: 1, renewals: 0 })
    // Past every stamp the generator makes (plan i is stamped from i seconds on).
    let clock = 200_000
    const replica = new Replica({
      swarm: 'test',
      key: first.peers[0]?.key as PrivateKey,
      peerId: first.builder.author,
      store,
      metrics: new NodeMetrics(),
      now: () => clock
    })
    const wire = async (events: readonly PlanEvent[], keys: ReadonlyMap<string, PrivateKey>): Promise<Uint8Array[]> =>
      await Promise.all(events.map(async e => (await signEvent(e.env, keys.get(e.env.author) as PrivateKey)).bytes))
    try {
      // Finished plans, each a second after the one before; the first ones leave memory once quiet.
      const finished: PlanId[] = []
      const all: PlanEvent[] = []
      for (let i = 0; i < FINISHED; i++) {
        const g = i === 0 ? first : await generatePlan({ fanout: 2, depth: 1, renewals: 0, startMs: i * 1_000 })
        const keys = new Map(g.peers.map(p => [p.id as string, p.key]))
        for (const bytes of await wire(g.events, keys)) expect(replica.ingest(bytes, 'gossip').verdict).toBe('accept')
        finished.push(g.builder.plan)
        all.push(...g.events)
        if (i === 10) {
          clock += EVICT_QUIET_MS
          replica.tick()
        }
      }
      expect(replica.fold.evictedCount).toBeGreaterThan(0)
      // One plan under way, older than every finished one: its goal and proposals, nothing decided yet.
      const open = await generatePlan({ fanout: 2, depth: 1, renewals: 0, startMs: 0 })
      const openKeys = new Map(open.peers.map(p => [p.id as string, p.key]))
      const begun = open.events.filter(e => e.env.type === 'goal-submitted' || e.env.type === 'split-proposed')
      for (const bytes of await wire(begun, openKeys)) replica.ingest(bytes, 'gossip')
      all.push(...begun)
      replica.tick()

      const ids = (scope: 'all' | 'recent'): string[] =>
        replica
          .planSummaries([], scope)
          .map(l => l.id)
          .sort()
      const ref = foldAll(all)
      expect(ids('all')).toStrictEqual(ref.plans())
      // The finished plans with the latest last events: all but the first five.
      expect(ids('recent')).toStrictEqual([open.builder.plan, ...finished.slice(FINISHED - STATUS_FINISHED_MAX)].sort())
      for (const l of replica.planSummaries([], 'recent')) expect(l.treeHash).toBe(ref.treeHash(l.id as PlanId))
    } finally {
      replica.flush()
      await replica.verifyPool.close()
      store.close()
    }
  })
})
