/**
 * Finished plans leave memory and stay on disk, loaded again on demand
 * (ADR-0012).
 *
 * Many finished plans pass through one replica, one every 10 s of its
 * clock: the events it holds in memory stay bounded by the plans finished
 * within the quiet period, while its store and its sync id set hold them
 * all, and swarmHash, plans and treeHashes stay those of foldAll of every
 * event. An event that arrives for an evicted plan (a late duplicate result
 * by gossip, a cancel by sync, the author's own event) brings the plan back
 * from the store and folds; a copy of an event it holds does not bring it
 * back. GET /plans/<id> of an evicted plan still answers. Rows still queued
 * when a plan is evicted are not lost, even when the store refuses them. A
 * restart on the data dir holds the same set and the same hashes, and
 * evicts the finished plans again once they are quiet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { foldAll } from '../../src/core/fold.js'
import { planOf } from '../../src/core/event-set.js'
import { startHttpServer } from '../../src/http/server.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { EVICT_QUIET_MS, Replica } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import { signEvent } from '../../src/wire/sign.js'
import { realScheduler } from '../../src/ports/scheduler.js'
import { removeTempDirs, tempDir } from '../helpers/cli-process.js'
import type { PrivateKey } from '@libp2p/interface'
import type { EventId, PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { PlanBuilder } from '../helpers/plan-builder.js'
import type { EventStore } from '../../src/store/event-store.js'
import type { ObserverView } from '../../roles/observer.js'

const PLANS = 14
/** One plan finishes every this many ms of the replica's clock. */
const EVERY_MS = 10_000
/** Plans in memory at most: those whose last event is less than a quiet period old, and the one arriving. */
const MAX_LIVE = Math.ceil(EVICT_QUIET_MS / EVERY_MS) + 1

interface Plan {
  readonly plan: PlanId
  readonly events: PlanEvent[]
  readonly wire: Uint8Array[]
  readonly builder: PlanBuilder
  readonly keys: Map<string, PrivateKey>
}

const plans: Plan[] = []
/** Every event of every plan, and the events added later in the test. */
const all = new Map<EventId, PlanEvent>()

async function sign(e: PlanEvent, keys: Map<string, PrivateKey>): Promise<Uint8Array> {
  return (await signEvent(e.env, keys.get(e.env.author) as PrivateKey)).bytes
}

beforeAll(async () => {
  for (let i = 0; i < PLANS; i++) {
    const { events, peers, builder } = await generatePlan({ fanout: 2, depth: 2, renewals: 1 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const wire = await Promise.all(events.map(async e => await sign(e, keys)))
    plans.push({ plan: builder.plan, events, wire, builder, keys })
    for (const e of events) all.set(e.id, e)
  }
})

afterAll(() => {
  removeTempDirs()
})

/** A replica whose clock the test moves; it starts past every stamp the generator made. */
function replicaOn(
  store: EventStore,
  key: PrivateKey,
  peerId: PeerIdString,
  startMs = 1_000_000
): { replica: Replica; clock: { ms: number }; metrics: NodeMetrics } {
  const clock = { ms: startMs }
  const metrics = new NodeMetrics()
  const replica = new Replica({ swarm: 'test', key, peerId, store, metrics, now: () => clock.ms })
  return { replica, clock, metrics }
}

function expectSameAsFoldAll(replica: Replica, label: string): void {
  const ref = foldAll(all.values())
  expect(replica.fold.plans(), label).toStrictEqual(ref.plans())
  for (const p of ref.plans()) expect(replica.fold.treeHash(p), `${label}: plan ${p}`).toBe(ref.treeHash(p))
  expect(replica.fold.swarmHash(), label).toBe(ref.swarmHash())
}

/** Events in memory per plan in memory. */
function inMemory(replica: Replica): { events: number; plans: number } {
  const live = replica.fold.plans().filter(p => !replica.fold.isEvicted(p))
  return { events: replica.fold.events.size, plans: live.length }
}

describe('replica: finished plans leave memory', () => {
  it(
    'holds in memory only the plans finished within the quiet period, and brings an evicted ' +
      'plan back for an event or a read',
    async () => {
      const dir = tempDir('replica-evict')
      const store = openEventStore({ dir })
      const first = plans[0] as Plan
      // The replica signs as the first plan's author, so that it may cancel that plan itself.
      const authorKey = first.keys.get(first.builder.author) as PrivateKey
      const { replica, clock, metrics } = replicaOn(store, authorKey, first.builder.author)
      const biggest = Math.max(...plans.map(p => p.events.length))
      let peak = 0
      try {
        for (const p of plans) {
          for (const bytes of p.wire) expect(replica.ingest(bytes, 'gossip').verdict).toBe('accept')
          expect(replica.tree(p.plan)?.status).toBe('completed')
          clock.ms += EVERY_MS
          replica.tick()
          const m = inMemory(replica)
          peak = Math.max(peak, m.events)
          expect(m.plans, 'plans in memory').toBeLessThanOrEqual(MAX_LIVE)
          expect(m.events).toBeLessThanOrEqual(MAX_LIVE * biggest)
        }
        const total = plans.reduce((n, p) => n + p.events.length, 0)
        // Memory follows the plans under way; the store and the sync set hold every event.
        expect(replica.fold.evictedCount).toBeGreaterThanOrEqual(PLANS - MAX_LIVE)
        expect(peak).toBeLessThan(total / 2)
        expect(store.count()).toBe(total)
        expect(replica.ids.size).toBe(total)
        for (const e of all.values()) expect(replica.has(e.id)).toBe(true)
        expectSameAsFoldAll(replica, 'after many plans')
        // /metrics says how many plans are out of memory.
        const text = await metrics.text()
        expect(Number(/^plan_swarm_plans\{where="disk"\} (\d+)$/m.exec(text)?.[1])).toBe(replica.fold.evictedCount)
        expect(Number(/^plan_swarm_plans\{where="memory"\} (\d+)$/m.exec(text)?.[1])).toBe(
          PLANS - replica.fold.evictedCount
        )

        // /status answers for evicted plans from their summaries, as it did from their trees.
        const ref = foldAll(all.values())
        const summaries = replica.planSummaries()
        expect(summaries).toHaveLength(PLANS)
        for (const s of summaries) {
          const t = ref.tree(s.id) as PlanTree
          expect(s).toMatchObject({
            goal: t.goal,
            status: 'completed',
            treeHash: ref.treeHash(s.id),
            nodes: t.nodes.length,
            done: t.nodes.length,
            spentTokens: t.spentTokens,
            budgetTokens: t.budgetTokens,
            waiting: []
          })
        }

        expect(replica.fold.isEvicted(first.plan)).toBe(true)
        expect(replica.tree(first.plan)).toBeUndefined()

        // A copy of an event it holds is a duplicate, and leaves the plan on disk.
        const reloads = replica.evictions.reloaded
        expect(replica.ingest(first.wire[first.wire.length - 1] as Uint8Array, 'gossip').why).toBe('duplicate')
        expect(replica.fold.isEvicted(first.plan)).toBe(true)
        expect(replica.evictions.reloaded).toBe(reloads)

        // A late duplicate execution by gossip: the plan comes back, and the result folds as a duplicate.
        const leafClaim = first.events.find(
          e =>
            e.env.type === 'task-claimed' &&
            first.events.some(
              r => r.env.type === 'claim-renewed' && (r as PlanEvent<'claim-renewed'>).env.body.claim === e.id
            )
        ) as PlanEvent<'task-claimed'>
        const late = first.builder.result(leafClaim, { ms: 900_000, c: 0 }, 'a late second run')
        all.set(late.id, late)
        expect(replica.ingest(await sign(late, first.keys), 'gossip').verdict).toBe('accept')
        expect(replica.evictions.reloaded).toBe(reloads + 1)
        expect(replica.fold.isEvicted(first.plan)).toBe(false)
        expect(replica.tree(first.plan)?.tasks.find(t => t.id === leafClaim.env.body.task)?.duplicates).toBe(1)
        expectSameAsFoldAll(replica, 'after a late result')

        // Quiet again: it leaves again.
        clock.ms += EVICT_QUIET_MS
        replica.tick()
        expect(replica.fold.isEvicted(first.plan)).toBe(true)

        // A cancel by sync (a batch), for another evicted plan: comes back, folds (completion came first, so it stays completed).
        const second = plans[1] as Plan
        expect(replica.fold.isEvicted(second.plan)).toBe(true)
        const cancel = second.builder.cancel({ ms: 900_000, c: 0 }, 'too late')
        all.set(cancel.id, cancel)
        const [r] = await replica.ingestMany([await sign(cancel, second.keys)], 'sync')
        expect(r?.verdict).toBe('accept')
        expect(replica.tree(second.plan)?.status).toBe('completed')
        expectSameAsFoldAll(replica, 'after a cancel by sync')

        // The node's own event, on a plan out of memory: it is brought back to cite the goal.
        expect(replica.fold.isEvicted(first.plan)).toBe(true)
        const own = await replica.author('budget-raised', first.plan, [], { budgetTokens: 3_000_000 })
        all.set(own.event.id, own.event)
        expect(replica.tree(first.plan)?.budgetTokens).toBe(3_000_000)
        expect(store.has(own.event.id)).toBe(true)
        expectSameAsFoldAll(replica, 'after an own event')

        // GET /plans/<id> and its events answer for an evicted plan, loading it back.
        const third = plans[2] as Plan
        expect(replica.fold.isEvicted(third.plan)).toBe(true)
        const http = await startHttpServer('127.0.0.1', 0, {
          status: () => {
            throw new Error('GET /status is not read here')
          },
          planLines: () => replica.planSummaries(),
          loadTree: plan => replica.loadTree(plan),
          treeHash: plan => replica.fold.treeHash(plan),
          planEvents: plan => replica.planEvents(plan),
          metricsText: async () => await new NodeMetrics().text(),
          planSummary: async () => await Promise.resolve(null),
          me: replica.peerId,
          history: 'all'
        })
        try {
          const res = await fetch(`${http.url}/plans/${third.plan}`)
          expect(res.status).toBe(200)
          const body = (await res.json()) as { treeHash: string; tree: PlanTree }
          expect(body.treeHash).toBe(ref.treeHash(third.plan))
          expect(body.tree).toStrictEqual(JSON.parse(JSON.stringify(ref.tree(third.plan))))
          const events = (await (await fetch(`${http.url}/plans/${third.plan}/events`)).json()) as unknown[]
          expect(events).toHaveLength(third.events.length)
          const list = (await (await fetch(`${http.url}/plans`)).json()) as Array<{ id: string; status: string }>
          expect(list.map(l => l.id).sort()).toStrictEqual(ref.plans())
        } finally {
          await http.close()
        }
        expectSameAsFoldAll(replica, 'after reads')
        // Everything quiet: only finished plans, so all leave.
        clock.ms += EVICT_QUIET_MS
        replica.tick()
        expect(inMemory(replica)).toStrictEqual({ events: 0, plans: 0 })
        expectSameAsFoldAll(replica, 'all evicted')
      } finally {
        replica.flush()
        await replica.verifyPool.close()
        store.close()
      }

      // A restart on the data dir: the same set, the same hashes; the finished plans leave once quiet.
      const reopened = openEventStore({ dir })
      const again = replicaOn(reopened, authorKey, first.builder.author, clock.ms + 1_000)
      try {
        again.replica.load()
        expect(again.replica.ids.size).toBe(all.size)
        expectSameAsFoldAll(again.replica, 'after a restart')
        again.clock.ms += EVICT_QUIET_MS
        again.replica.tick()
        expect(again.replica.fold.evictedCount).toBe(PLANS)
        expect(again.replica.fold.events.size).toBe(0)
        expectSameAsFoldAll(again.replica, 'after a restart, evicted')
        for (const e of all.values()) expect(again.replica.has(e.id)).toBe(true)
      } finally {
        await again.replica.verifyPool.close()
        reopened.close()
      }
    }
  )

  it(
    'loses no queued row: a plan evicted in the turn its last events folded, or while the ' +
      'store refuses them, comes back whole',
    async () => {
      const store = openEventStore({ memory: true })
      const p = plans[3] as Plan
      const { replica, clock } = replicaOn(store, p.keys.get(p.builder.author) as PrivateKey, p.builder.author)
      const ref = foldAll(p.events)
      // The store refuses every commit for a while (disk full): folded rows stay queued.
      const putMany = store.putMany.bind(store)
      let refuse = true
      store.putMany = rows => {
        if (refuse) throw new Error('SQLITE_FULL: database or disk is full')
        return putMany(rows)
      }
      const half = Math.floor(p.wire.length / 2)
      for (const bytes of p.wire.slice(0, half)) replica.ingest(bytes, 'gossip')
      replica.flush()
      refuse = false
      // The rest folds and, in the same turn (before the queue commits itself), the plan goes quiet and is evicted.
      for (const bytes of p.wire.slice(half)) replica.ingest(bytes, 'gossip')
      clock.ms += EVICT_QUIET_MS
      replica.tick()
      expect(replica.fold.isEvicted(p.plan)).toBe(true)
      expect(store.countByPlan(p.plan)).toBe(p.events.length)
      expect(replica.loadTree(p.plan)).toStrictEqual(ref.tree(p.plan))

      // Refused again, then evicted with rows still queued: it comes back from the store and the queue.
      const leafClaim = p.events.find(e => e.env.type === 'task-claimed') as PlanEvent<'task-claimed'>
      const late = p.builder.result(leafClaim, { ms: 900_000, c: 0 }, 'late')
      refuse = true
      expect(replica.ingest(await sign(late, p.keys), 'gossip').verdict).toBe('accept')
      clock.ms += EVICT_QUIET_MS
      replica.tick()
      expect(replica.fold.isEvicted(p.plan)).toBe(true)
      expect(store.has(late.id)).toBe(false)
      const want = foldAll([...p.events, late])
      expect(replica.loadTree(p.plan)).toStrictEqual(want.tree(p.plan))
      expect(replica.fold.treeHash(p.plan)).toBe(want.treeHash(p.plan))
      refuse = false
      replica.flush()
      expect(store.has(late.id)).toBe(true)
      expect(planOf(late)).toBe(p.plan)
      store.close()
    }
  )

  it("reads an evicted plan's line from its stored record, and folds the plan again when that record is an older one", async () => {
    const store = openEventStore({ memory: true })
    const p = plans[4] as Plan
    const { replica, clock } = replicaOn(store, p.keys.get(p.builder.author) as PrivateKey, p.builder.author)
    let reads = 0
    const record = store.record.bind(store)
    store.record = plan => {
      reads++
      return record(plan)
    }
    const line = (): unknown => replica.planSummaries().find(l => l.id === p.plan)
    const lineOf = (ref: ReturnType<typeof foldAll>): unknown => {
      const t = ref.tree(p.plan) as PlanTree
      return {
        id: p.plan,
        goal: t.goal,
        status: t.status,
        treeHash: ref.treeHash(p.plan),
        budgetTokens: t.budgetTokens
      }
    }
    try {
      for (const bytes of p.wire) replica.ingest(bytes, 'gossip')
      clock.ms += EVICT_QUIET_MS
      replica.tick()
      expect(replica.fold.isEvicted(p.plan)).toBe(true)
      // The summary is not in memory: the line comes from the record in the store, and the plan stays on disk.
      expect(line()).toMatchObject(lineOf(foldAll(p.events)) as object)
      expect(reads).toBe(1)
      expect(replica.fold.isEvicted(p.plan)).toBe(true)

      // The author raises the budget: the plan comes back, and leaves again, but its new record cannot be written.
      const raised = await replica.author('budget-raised', p.plan, [], { budgetTokens: 3_000_000 })
      store.putRecord = () => {
        throw new Error('SQLITE_FULL: database or disk is full')
      }
      clock.ms += EVICT_QUIET_MS
      replica.tick()
      expect(replica.fold.isEvicted(p.plan)).toBe(true)
      // The stored record is the first eviction's: its treeHash is not the plan's, so the plan folds again for its line.
      expect(line()).toMatchObject(lineOf(foldAll([...p.events, raised.event])) as object)
      expect(replica.fold.isEvicted(p.plan)).toBe(false)
    } finally {
      replica.flush()
      await replica.verifyPool.close()
      store.close()
    }
  })

  it("the observer's view shows an evicted plan as one line from its summary, and exports it from disk", async () => {
    const { startObserver } = await import('../../roles/observer.js')
    const store = openEventStore({ memory: true })
    const [a, b] = plans as [Plan, Plan]
    const { replica, clock } = replicaOn(store, a.keys.get(a.builder.author) as PrivateKey, a.builder.author)
    for (const bytes of a.wire) replica.ingest(bytes, 'gossip')
    clock.ms += EVICT_QUIET_MS + 1_000
    replica.tick()
    for (const bytes of b.wire) replica.ingest(bytes, 'gossip')
    expect(replica.fold.isEvicted(a.plan)).toBe(true)
    const nodeView: ObserverView = {
      roster: () => [],
      plans: () => replica.fold.plans(),
      tree: plan => replica.tree(plan),
      loadTree: plan => replica.loadTree(plan),
      isEvicted: plan => replica.fold.isEvicted(plan),
      treeHash: plan => replica.fold.treeHash(plan),
      summary: plan => replica.fold.summary(plan),
      held: plan => replica.heldReason(plan),
      now: () => clock.ms,
      scheduler: realScheduler(),
      health: () => ({
        peers: 0,
        topicPeers: 0,
        held: replica.ids.size,
        parked: replica.fold.events.parkedCount,
        rejected: {}
      })
    }
    const view = startObserver(nodeView, { json: false, tty: false, write: () => {} })
    view.stop()
    const screen = view.render()
    expect(screen).toContain(`plan …${a.plan.slice(-6)}`)
    expect(screen).toContain('out of memory, on disk')
    expect(screen).toContain(`treeHash ${(replica.fold.treeHash(a.plan) as string).slice(0, 12)}`)
    // The live plan is drawn as a tree.
    expect(screen.split('out of memory').length).toBe(2)
    // Exporting loads the evicted plan back once; both finished plans are written.
    const out: string[] = []
    const exporter = startObserver(nodeView, {
      json: false,
      tty: false,
      write: t => out.push(t),
      markdown: `${tempDir('observer-evict')}/plan.md`
    })
    exporter.stop()
    expect(out.filter(t => t.startsWith('wrote '))).toHaveLength(2)
  })
})
