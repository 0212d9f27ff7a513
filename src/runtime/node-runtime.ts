import { OFFER_PREFIX, executorOffers } from '../core/needs.js'
import { logger } from '@libp2p/logger'
import { createRoster } from '../net/roster.js'
import { summarizeTree } from '../core/fold.js'
import { NodeMetrics } from './metrics.js'
import { Replica } from './replica.js'
import { startRetention } from './retention.js'
import { StandingTracker, statusStanding } from './standing.js'
import type { RetentionOptions } from './retention.js'
import type { PrivateKey } from '@libp2p/interface'
import type { SignatureVerifier } from '../wire/decode.js'
import type { PeerIdString, PlanId } from '../core/events.js'
import type { EventStore } from '../ports/event-store.js'
import type { NodeView, StatusBody } from '../ports/node-view.js'
import type { Scheduler } from '../ports/scheduler.js'
import type { PlanSummaryAnswer, Transport } from '../ports/transport.js'
import type { Roster } from '../net/roster.js'
import type { LoopSlices } from '../ports/loop-slices.js'
import { VERSION } from './version.js'

const log = logger('plan-swarm:runtime')

export { VERSION }

/** How often the replica folds what came due, expires parked events and evicts quiet plans. */
export const TICK_MS = 1_000
/** For this long after it starts (and while it catches up), a node asks each new peer for its plans under way first. */
export const ASK_OPEN_IDS_MS = 120_000

export interface NodeRuntimeInit {
  readonly swarm: string
  /** What this node announces and /status says it is. */
  readonly role: string
  readonly key: PrivateKey
  readonly peerId: PeerIdString
  /** Where the store lives, for /status (":memory:" in the simulator). */
  readonly dataDir: string
  /** The node's events; the caller owns it (opens and closes it). */
  readonly store: EventStore
  readonly transport: Transport
  readonly scheduler: Scheduler
  readonly metrics?: NodeMetrics
  readonly verifier?: SignatureVerifier
  readonly inlineVerify?: boolean
  readonly evictQuietMs?: number
  /** Open plans one author may have under way before their next goal waits (0: no limit); default 20. */
  readonly openPlansPerAuthor?: number
  /** `--allow-peers`: the only authors whose events and presence are taken from the network (this node aside). */
  readonly allowAuthors?: ReadonlySet<string>
  /** Where expired plans are archived, and for how long (src/runtime/retention.ts). */
  readonly retention?: RetentionOptions
  /** `--history`, for /status: 'open' when sync pulls only the plans under way (the transport does it). */
  readonly history?: 'all' | 'open'
  /** Slices of the event loop a sync batch is ingested in (ReplicaInit.slices); the transport's gossip shares them. */
  readonly slices?: LoopSlices
}

/** A node without its roles: the replica, wired to a transport, seen through a NodeView. */
export interface NodeRuntime {
  readonly view: NodeView
  /** For the composition roots and tests only: everything above sees `view`. */
  readonly replica: Replica
  readonly roster: Roster
  readonly metrics: NodeMetrics
  readonly transport: Transport
  /** Stops the ticks and the transport and commits the write queue (the store stays open). */
  stop: () => Promise<void>
}

/** This node's summary of a plan it holds (what a `--history open` peer is told), or undefined. */
function summaryOf(replica: Replica, plan: string): PlanSummaryAnswer | undefined {
  if (!/^[0-9a-f]{64}$/.test(plan)) return undefined
  const t = replica.loadTree(plan as PlanId)
  if (t === undefined) return undefined
  const s = summarizeTree(t)
  return {
    plan,
    goal: s.goal,
    status: s.status,
    treeHash: replica.fold.treeHash(plan as PlanId) ?? '',
    nodes: s.nodes,
    done: s.done,
    deliverable: t.deliverable?.output ?? null
  }
}

/**
 * The one wiring of a node, shared by the libp2p peer (src/app/peer.ts) and
 * the simulator (src/sim): load the store into the replica, hand the
 * transport what the replica offers (verdicts for gossip, the id set and
 * bytes for sync, the roster for presence), tick, and serve the view.
 */
export async function startNodeRuntime(init: NodeRuntimeInit): Promise<NodeRuntime> {
  const { scheduler, transport } = init
  const startedAt = scheduler.now()
  const metrics = init.metrics ?? new NodeMetrics()
  const replica = new Replica({
    swarm: init.swarm,
    key: init.key,
    peerId: init.peerId,
    store: init.store,
    metrics,
    scheduler,
    verifier: init.verifier,
    inlineVerify: init.inlineVerify,
    evictQuietMs: init.evictQuietMs,
    openPlansPerAuthor: init.openPlansPerAuthor,
    allowAuthors: init.allowAuthors,
    slices: init.slices
  })
  const loaded = replica.load()
  log(
    'loaded %d events (%d damaged rows skipped); %d finished plans known from their records',
    loaded.loaded,
    loaded.damaged,
    loaded.restored
  )
  // Plans that expired while the node was down leave the sync id set before the transport starts (the retention
  // passes, from a second on, take them out of the store): offered in the first sync, they were taken back by peers
  // that had forgotten their tombstones (the simulator's long run, src/sim/long-run/).
  for (const plan of replica.expiredBy(scheduler.now())) {
    const ids: string[] = []
    init.store.loadPlan(plan, row => ids.push(row.id))
    replica.ids.removeMany(ids)
  }
  const roster = createRoster()
  // Standing across plans (ADR-0048): a plan's part is read again when it changes, and feeds gossipsub's score.
  const standing = new StandingTracker(replica.fold)
  standing.markAll()
  replica.onFolded(events => {
    standing.folded(events)
  })
  await transport.start({
    receive: bytes => replica.ingest(bytes, 'gossip').verdict,
    ids: replica.ids,
    has: id => replica.has(id),
    getBytes: id => replica.getBytes(id),
    ingestMany: async batch => await replica.ingestMany(batch, 'sync'),
    openIds: max => replica.openIds(max),
    summaryOf: plan => summaryOf(replica, plan),
    penalty: peer => standing.penalty(peer),
    wantsOpenIds: () => scheduler.now() - startedAt < ASK_OPEN_IDS_MS || replica.catchUp.active(scheduler.now()),
    presence: (p, source) => {
      roster.update(p, scheduler.now(), source)
    },
    synced: s => {
      metrics.syncRounds.inc({ outcome: s.ok ? 'ok' : 'failed' })
      metrics.syncEvents.inc(s.eventsReceived)
      if (s.quotaLeft !== undefined) metrics.syncQuotaLeft.inc(s.quotaLeft)
    }
  })
  const stopTick = scheduler.every(TICK_MS, () => {
    replica.tick()
    standing.refresh()
    metrics.peers.set(transport.connectedPeers().length)
  })
  const stopRetention = startRetention(replica, scheduler, init.retention)
  const view = createNodeView(init, replica, roster, metrics, transport, scheduler, standing)
  let stopped = false
  return {
    view,
    replica,
    roster,
    metrics,
    transport,
    stop: async () => {
      if (stopped) return
      stopped = true
      stopTick()
      stopRetention()
      try {
        await transport.stop()
      } finally {
        replica.flush()
      }
    }
  }
}

function createNodeView(
  init: NodeRuntimeInit,
  replica: Replica,
  roster: Roster,
  metrics: NodeMetrics,
  transport: Transport,
  scheduler: Scheduler,
  standing: StandingTracker
): NodeView {
  const fold = replica.fold
  // What this node offers (an executor's tools, protocol 3), as it last announced it.
  let offers: readonly string[] = []
  /** What each live executor offers (this one included, when it is one): for what waits on needs. */
  const offersInSight = (): ReadonlySet<string>[] => {
    const sets = executorOffers(roster.list(scheduler.now()))
    if (init.role === 'executor') sets.push(new Set(offers))
    return sets
  }
  const planLines: NodeView['planLines'] = scope => replica.planSummaries(offersInSight(), scope)
  const view: NodeView = {
    me: init.peerId,
    history: init.history ?? 'all',
    swarm: init.swarm,
    role: init.role,
    scheduler,
    now: scheduler.now,
    plans: () => fold.plans(),
    tree: plan => replica.tree(plan),
    loadTree: plan => replica.loadTree(plan),
    isEvicted: plan => fold.isEvicted(plan),
    held: plan => replica.heldReason(plan),
    catchingUp: () => replica.catchUp.active(scheduler.now()),
    treeHash: plan => fold.treeHash(plan),
    summary: plan => {
      const t = replica.tree(plan)
      return t === undefined ? fold.summary(plan) : summarizeTree(t)
    },
    planLines,
    planSummary: async plan => {
      const own = summaryOf(replica, plan)
      if (own !== undefined) return { from: init.peerId, summary: own }
      return (await transport.planSummary?.(plan)) ?? null
    },
    planEvents: plan => replica.planEvents(plan),
    event: id => fold.events.get(id),
    reviewsOf: (plan, result) => fold.events.plan(plan)?.reviews.get(result) ?? [],
    roster: () => roster.list(scheduler.now()),
    presenceIntervalMs: () => transport.presenceIntervalMs(),
    lagMs: () => replica.lagMs,
    health: () => ({
      peers: transport.connectedPeers().length,
      topicPeers: transport.topicPeers().length,
      held: replica.ids.size,
      parked: fold.events.parkedCount,
      rejected: Object.fromEntries(metrics.rejectedByReason)
    }),
    status: (scope = 'recent'): StatusBody => {
      const plans = planLines(scope)
      return {
        peerId: init.peerId,
        role: init.role,
        swarm: init.swarm,
        version: VERSION,
        dataDir: init.dataDir,
        addresses: transport.addresses(),
        peers: transport.connectedPeers().length,
        roster: roster.list(scheduler.now()),
        offers: [...offers],
        plans,
        plansOlder: fold.planCount() - plans.length,
        events: {
          held: replica.ids.size,
          parked: fold.events.parkedCount,
          expired: replica.retention.expired,
          refusedLate: replica.retention.refused
        },
        history:
          init.history === 'open'
            ? {
                mode: 'open',
                says:
                  'this node holds the plans under way and those it saw finish; finished plans from before stay ' +
                  'with peers that fetched them, and GET /plans/<id>/summary asks them (--history open)'
              }
            : { mode: 'all', says: 'this node fetches every plan its peers hold' },
        standing: statusStanding(standing.records())
      }
    },
    standing: () => standing.records(),
    onFolded: fn => replica.onFolded(fn),
    offer: next => {
      offers = [...next]
      transport.announce?.(offers.map(o => `${OFFER_PREFIX}${o}`))
    },
    publish: async (type, plan, cites, body) => {
      const signed = await replica.author(type, plan, cites, body)
      await transport.publish(signed.event.id, signed.bytes)
      return signed
    },
    syncOnce: async () => {
      for (const other of transport.connectedPeers()) {
        if ((await transport.syncWith(other, { fresh: true })).ok) return other
      }
      return null
    },
    metricsText: async () => await metrics.text()
  }
  return view
}
