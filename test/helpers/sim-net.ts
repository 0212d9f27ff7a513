/**
 * A seeded, discrete-event network simulator for the plan core.
 *
 * Replicas each hold their own store, id set and Fold. Simulated roles at
 * the replicas (the same `Roles` the plan generator uses) read
 * `view(tree, now)` of their own tree, with their own skewed clock, and
 * publish events. Events spread by gossip (a random flood with fanout, with
 * random delay, reordering spikes, duplication and loss), and gaps are
 * repaired only by periodic pairwise reconciliation: two replicas run the
 * core's reconcile sessions over a simulated stream, each pulls the ids its
 * session says it needs, and the peer sends those events from its store.
 * Partitions cut the network into groups for a while; a crashed replica and
 * a late joiner are offline for part of the run. No replica is ever handed
 * another's store: the union is computed only by the test, to compare.
 *
 * Deterministic in the seed: one PRNG, one event queue ordered by (time,
 * sequence), no wall clock.
 */
import { Fold } from '../../src/core/fold.js'
import { derivePlan } from '../../src/core/derive.js'
import { HybridClock } from '../../src/core/hlc.js'
import { view } from '../../src/core/view.js'
import { majority } from '../../src/core/events.js'
import { IdSet, createReconcileSession } from '../../src/sync/reconcile/index.js'
import { makeEvent } from './plan-builder.js'
import { RoleMemory, Roles, Rng } from './plan-gen.js'
import type { ReconcileSession } from '../../src/sync/reconcile/index.js'
import type { EventId, PeerIdString, PlanEvent, PlanId, PlanParams } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { Actor, Emit, Knowledge, PlanCtx, Temperament } from './plan-gen.js'

// ------------------------------------------------------------------ scheduler

interface Job { readonly at: number, readonly seq: number, readonly run: () => void }

/** A binary min-heap of jobs by (at, seq): the simulation's only notion of time. */
class Scheduler {
  private readonly heap: Job[] = []
  private seq = 0
  now = 0

  at (time: number, run: () => void): void {
    const job = { at: Math.max(time, this.now), seq: this.seq++, run }
    const h = this.heap
    h.push(job)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!this.less(h[i] as Job, h[p] as Job)) break
      ;[h[i], h[p]] = [h[p] as Job, h[i] as Job]
      i = p
    }
  }

  after (delay: number, run: () => void): void {
    this.at(this.now + delay, run)
  }

  /** Run jobs until `until` (inclusive) or `stop()` says so. */
  runUntil (until: number, stop: () => boolean = () => false): void {
    while (this.heap.length > 0 && (this.heap[0] as Job).at <= until) {
      const job = this.pop()
      this.now = job.at
      job.run()
      if (stop()) return
    }
    this.now = Math.max(this.now, until)
  }

  private less (a: Job, b: Job): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq)
  }

  private pop (): Job {
    const h = this.heap
    const top = h[0] as Job
    const last = h.pop() as Job
    if (h.length > 0) {
      h[0] = last
      let i = 0
      while (true) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < h.length && this.less(h[l] as Job, h[m] as Job)) m = l
        if (r < h.length && this.less(h[r] as Job, h[m] as Job)) m = r
        if (m === i) break
        ;[h[i], h[m]] = [h[m] as Job, h[i] as Job]
        i = m
      }
    }
    return top
  }
}

// ------------------------------------------------------------------ options and report

export type Role = 'author' | 'decomposer' | 'scorer' | 'executor' | 'observer'

export interface SimOptions {
  readonly seed: number
  /** Peer ids, one per replica (at least 20 for the convergence test). */
  readonly peers: readonly PeerIdString[]
  /** Gossip fanout per hop. */
  readonly fanout?: number
  readonly lossRate?: number
  readonly dupRate?: number
  /** Chance that a gossip message takes a long detour (reordering). */
  readonly spikeRate?: number
  /** Chance that a sync stream message is lost with its connection (the session dies). */
  readonly resetRate?: number
  /** Mean period of each replica's reconciliation with a random peer (ms). 0 disables reconciliation. */
  readonly syncEveryMs?: number
  /** Roles act until then (ms of simulated time). */
  readonly activeMs?: number
  /** Give up waiting for convergence then. */
  readonly deadlineMs?: number
  /** Number of partitions during the active phase (each splits the replicas in two, then heals). */
  readonly partitions?: number
  /** Goals submitted (alternating between the two author replicas, spread over the first half of the run). Default 3. */
  readonly plans?: number
}

export interface SimStats {
  gossipSent: number
  gossipLost: number
  gossipDuplicated: number
  gossipCut: number
  deliveredDuplicates: number
  syncSessions: number
  syncRefused: number
  syncErrors: number
  syncMessages: number
  syncBytes: number
  streamResets: number
  pulledBySync: number
  parkedOnArrival: number
  rejected: number
  roleTicks: number
}

export interface SimReport {
  readonly seed: number
  readonly replicas: readonly Replica[]
  /** Every event any role created (ground truth for the test; never given to a replica). */
  readonly created: ReadonlyMap<EventId, PlanEvent>
  readonly plans: readonly PlanId[]
  readonly stats: SimStats
  /** Simulated ms at which every online replica held every created event (null: never). */
  readonly convergedAt: number | null
  readonly partitions: ReadonlyArray<{ start: number, end: number, sizes: [number, number] }>
  readonly timeline: readonly string[]
}

// ------------------------------------------------------------------ replicas

export class Replica {
  readonly fold = new Fold()
  readonly store = new Map<EventId, PlanEvent>()
  readonly ids = new IdSet()
  readonly actor: Actor
  readonly memory = new Map<PlanId, RoleMemory>()
  readonly roles = new Map<PlanId, Roles>()
  private readonly trees = new Map<PlanId, { version: number, tree: PlanTree }>()
  offlineUntil = 0
  crashedFrom = Infinity

  constructor (readonly index: number, readonly id: PeerIdString, readonly role: Role, readonly skew: number, private readonly sched: Scheduler) {
    this.actor = { id, skew, clock: new HybridClock(() => this.wall()) }
  }

  wall (): number {
    return this.sched.now + this.skew
  }

  online (): boolean {
    const now = this.sched.now
    return now >= this.offlineUntil && now < this.crashedFrom
  }

  /** The tree of a plan, derived (not hashed) and cached by the plan's version. */
  tree (plan: PlanId): PlanTree | undefined {
    const index = this.fold.events.plan(plan)
    if (index?.goal === undefined) return undefined
    const hit = this.trees.get(plan)
    if (hit !== undefined && hit.version === index.version) return hit.tree
    const tree = derivePlan(index)
    this.trees.set(plan, { version: index.version, tree })
    return tree
  }

  knowledge (plan: PlanId): Knowledge {
    return {
      isFolded: id => this.fold.events.isFolded(id),
      reviewsOf: result => this.fold.events.plan(plan)?.reviews.get(result) ?? []
    }
  }
}

// ------------------------------------------------------------------ the simulation

const GOSSIP_DELAY = [5, 150] as const
const SPIKE_DELAY = [400, 4_000] as const
const STREAM_DELAY = [2, 40] as const
const ROLE_TICK = [400, 900] as const

/** Layout of the swarm by replica index: 2 authors, 3 decomposers, 4 scorers (3 on the committee + a spare), 6 executors, observers. */
export function roleOf (i: number): Role {
  if (i < 2) return 'author'
  if (i < 5) return 'decomposer'
  if (i < 9) return 'scorer'
  if (i < 15) return 'executor'
  return 'observer'
}

export function simulate (opts: SimOptions): SimReport {
  const n = opts.peers.length
  if (n < 16) throw new Error('the simulated swarm needs at least 16 replicas (roles take 15)')
  const rng = new Rng(opts.seed)
  const fanout = opts.fanout ?? 4
  const lossRate = opts.lossRate ?? 0.15
  const dupRate = opts.dupRate ?? 0.05
  const spikeRate = opts.spikeRate ?? 0.05
  const resetRate = opts.resetRate ?? 0.02
  const syncEveryMs = opts.syncEveryMs ?? 2_500
  const activeMs = opts.activeMs ?? 80_000
  const deadlineMs = opts.deadlineMs ?? activeMs + 90_000
  const sched = new Scheduler()
  const timeline: string[] = []
  const log = (s: string): void => { timeline.push(`${(sched.now / 1000).toFixed(1)}s ${s}`) }
  const stats: SimStats = {
    gossipSent: 0, gossipLost: 0, gossipDuplicated: 0, gossipCut: 0, deliveredDuplicates: 0,
    syncSessions: 0, syncRefused: 0, syncErrors: 0, syncMessages: 0, syncBytes: 0, streamResets: 0,
    pulledBySync: 0, parkedOnArrival: 0, rejected: 0, roleTicks: 0
  }

  const replicas = opts.peers.map((id, i) => new Replica(i, id, roleOf(i), rng.int(-200, 200), sched))
  const byRole = (r: Role): Replica[] => replicas.filter(x => x.role === r)
  const created = new Map<EventId, PlanEvent>()
  const plans: PlanId[] = []
  const temperaments = new Map<PlanId, Temperament>()
  const ctxs = new Map<PlanId, PlanCtx>()

  // Faults: a late joiner, a crashed executor that comes back, partitions.
  const lateJoiner = replicas[n - 1] as Replica
  lateJoiner.offlineUntil = rng.int(Math.floor(activeMs * 0.4), Math.floor(activeMs * 0.7))
  log(`replica ${lateJoiner.index} (late joiner) offline until ${(lateJoiner.offlineUntil / 1000).toFixed(1)}s`)
  const crashed = rng.pick(byRole('executor'))
  const crashAt = rng.int(15_000, Math.floor(activeMs * 0.6))
  const crashFor = rng.int(8_000, 20_000)
  sched.at(crashAt, () => { crashed.crashedFrom = sched.now; log(`executor ${crashed.index} crashes`) })
  sched.at(crashAt + crashFor, () => { crashed.crashedFrom = Infinity; log(`executor ${crashed.index} restarts (store kept)`) })
  const group = new Int8Array(n)
  const partitions: Array<{ start: number, end: number, sizes: [number, number] }> = []
  let cursor = 10_000
  for (let k = 0; k < (opts.partitions ?? 1); k++) {
    const start = cursor + rng.int(2_000, 15_000)
    const end = start + rng.int(15_000, 30_000)
    if (end > activeMs) break
    cursor = end
    const sides = replicas.map(() => rng.int(0, 1))
    if (!sides.includes(0)) sides[0] = 0
    if (!sides.includes(1)) sides[1] = 1
    const sizes: [number, number] = [sides.filter(s => s === 0).length, sides.filter(s => s === 1).length]
    partitions.push({ start, end, sizes })
    sched.at(start, () => { sides.forEach((s, i) => { group[i] = s }); log(`partition ${sizes[0]} | ${sizes[1]}`) })
    sched.at(end, () => { group.fill(0); log('partition heals') })
  }

  const canTalk = (a: Replica, b: Replica): boolean => a.online() && b.online() && group[a.index] === group[b.index]

  // ---------------------------------------------------------------- delivery

  const receive = (r: Replica, e: PlanEvent, via: 'own' | 'gossip' | 'sync'): void => {
    if (r.store.has(e.id)) {
      stats.deliveredDuplicates++
      return
    }
    r.store.set(e.id, e)
    r.ids.add(e.id)
    const out = r.fold.add(e, r.wall())
    if (via === 'sync') stats.pulledBySync++
    if (out.status === 'parked') stats.parkedOnArrival++
    if (out.status === 'rejected') {
      stats.rejected++
      log(`replica ${r.index} rejected ${e.id}: ${out.reason} ${out.detail}`)
    }
    // Gossip validators ignore parked events (they are not forwarded); sync repairs those paths.
    if (out.status === 'folded' && via !== 'sync') forward(r, e)
  }

  const gossipTo = (from: Replica, to: Replica, e: PlanEvent): void => {
    stats.gossipSent++
    if (!canTalk(from, to)) { stats.gossipCut++; return }
    if (rng.chance(lossRate)) { stats.gossipLost++; return }
    const copies = rng.chance(dupRate) ? 2 : 1
    if (copies === 2) stats.gossipDuplicated++
    for (let c = 0; c < copies; c++) {
      const delay = rng.chance(spikeRate) ? rng.int(...SPIKE_DELAY) : rng.int(...GOSSIP_DELAY)
      sched.after(delay, () => {
        // A partition that started in flight cuts the message too.
        if (!canTalk(from, to)) { stats.gossipCut++; return }
        receive(to, e, 'gossip')
      })
    }
  }

  const forward = (from: Replica, e: PlanEvent): void => {
    const peers = replicas.filter(x => x !== from)
    for (let k = 0; k < fanout && peers.length > 0; k++) {
      const i = rng.int(0, peers.length - 1)
      const to = peers[i] as Replica
      peers[i] = peers[peers.length - 1] as Replica
      peers.pop()
      gossipTo(from, to, e)
    }
  }

  /** One message on a sync stream: ordered and reliable while the connection lives; a reset or a partition kills it. */
  const stream = (from: Replica, to: Replica, bytes: number, run: () => void): void => {
    stats.syncMessages++
    stats.syncBytes += bytes
    sched.after(rng.int(...STREAM_DELAY), () => {
      if (!canTalk(from, to)) return
      if (rng.chance(resetRate)) { stats.streamResets++; return }
      run()
    })
  }

  // ---------------------------------------------------------------- reconciliation

  const pull = (self: Replica, peer: Replica, need: readonly EventId[]): void => {
    stream(self, peer, 32 * need.length, () => {
      const events = need.flatMap(id => { const e = peer.store.get(id); return e === undefined ? [] : [e] })
      stream(peer, self, events.length * 600, () => { for (const e of events) receive(self, e, 'sync') })
    })
  }

  const handle = (self: Replica, peer: Replica, session: ReconcileSession, msg: Uint8Array, reply: (m: Uint8Array) => void): void => {
    const step = session.receive(msg)
    if ('error' in step) {
      stats.syncErrors++
      log(`sync error at replica ${self.index}: ${step.error}`)
      return
    }
    if (step.need.length > 0) pull(self, peer, step.need)
    if (step.reply !== null) reply(step.reply)
  }

  const reconcile = (a: Replica, b: Replica): void => {
    if (!canTalk(a, b)) { stats.syncRefused++; return }
    stats.syncSessions++
    const sa = createReconcileSession(a.ids)
    let sb: ReconcileSession | null = null
    const toB = (m: Uint8Array): void => stream(a, b, m.length, () => {
      sb ??= createReconcileSession(b.ids)
      handle(b, a, sb, m, toA)
    })
    const toA = (m: Uint8Array): void => stream(b, a, m.length, () => handle(a, b, sa, m, toB))
    toB(sa.initiate())
  }

  if (syncEveryMs > 0) {
    for (const r of replicas) {
      const loop = (): void => {
        if (r.online()) {
          const peer = rng.pick(replicas.filter(x => x !== r))
          reconcile(r, peer)
        }
        sched.after(rng.int(Math.floor(syncEveryMs / 2), Math.floor(syncEveryMs * 1.5)), loop)
      }
      sched.after(rng.int(0, syncEveryMs), loop)
    }
  }

  // ---------------------------------------------------------------- roles

  const emitFor = (r: Replica, plan: PlanId): Emit => (a, type, deps, body, late) => {
    const goal = ctxs.get(plan)?.goal
    if (goal === undefined) throw new Error('emit for an unknown plan')
    const all = [...new Set([goal.id, ...deps])]
    const hlc = a.clock.stamp(all.flatMap(d => { const e = r.store.get(d); return e === undefined ? [] : [e.env.hlc] }))
    const e = makeEvent({ type, plan, author: a.id, hlc, deps: all, body })
    created.set(e.id, e)
    if (late === true) {
      // Held back in transit: the replica publishes it only after a while.
      r.store.set(e.id, e)
      r.ids.add(e.id)
      r.fold.add(e, r.wall())
      sched.after(rng.int(5_000, 9_000), () => { if (r.online()) forward(r, e) })
    } else {
      receive(r, e, 'own')
    }
    return e
  }

  const params = (review: boolean): PlanParams => {
    const committee = byRole('scorer').slice(0, 3).map(s => s.id)
    return {
      committee, quorum: majority(committee.length), maxDepth: 2, minChildren: 2, maxChildren: 4, maxAttempts: 3,
      leaseMs: 3_000, maxClaimMs: 60_000, maxNodes: 30, budgetTokens: 1_000_000, maxTokensPerCall: 1_000, review, maxClaimsPerExecutor: 2
    }
  }

  const submit = (author: Replica, k: number): void => {
    if (!author.online()) return
    const p = params(k % 2 === 1)
    const goal = makeEvent({ type: 'goal-submitted', plan: '', author: author.id, hlc: author.actor.clock.stamp(), deps: [], body: { text: `simulated goal ${k}`, params: p } })
    const plan = goal.id as string as PlanId
    plans.push(plan)
    created.set(goal.id, goal)
    ctxs.set(plan, { plan, goal, params: p, spare: (byRole('scorer')[3] as Replica).id, decomposers: byRole('decomposer').length })
    temperaments.set(plan, {
      pSplit: 0.2, pRace: 0.3, pLazy: 0.05, pLateRenewal: 0.05, pFail: 0.05, pRelease: 0.02, pEquivocate: 0.02, pReject: 0.15,
      // The second plan has a silent committee member, so its author must amend the committee.
      silent: k === 1 ? 1 : -1, cancelAt: Infinity, amendments: true, authorActions: true
    })
    log(`replica ${author.index} submits plan ${k} ${plan.slice(0, 8)}`)
    receive(author, goal, 'own')
  }
  const authors = byRole('author')
  for (let k = 0; k < (opts.plans ?? 3); k++) {
    sched.at(k === 0 ? 1_000 : rng.int(2_000, Math.floor(activeMs / 2)), () => submit(authors[k % authors.length] as Replica, k))
  }

  const act = (r: Replica): void => {
    if (!r.online() || sched.now > activeMs) return
    stats.roleTicks++
    const wall = r.wall()
    for (const plan of r.fold.plans()) {
      const ctx = ctxs.get(plan)
      const temper = temperaments.get(plan)
      const tree = r.tree(plan)
      if (ctx === undefined || temper === undefined || tree === undefined) continue
      let roles = r.roles.get(plan)
      if (roles === undefined) {
        roles = new Roles(rng.fork(), temper, ctx, emitFor(r, plan))
        r.roles.set(plan, roles)
      }
      let m = r.memory.get(plan)
      if (m === undefined) {
        m = new RoleMemory()
        r.memory.set(plan, m)
      }
      const v = view(tree, wall)
      switch (r.role) {
        case 'author':
          if (ctx.goal.env.author === r.id) roles.author(r.actor, m, v, wall)
          break
        case 'decomposer':
          roles.decompose(r.actor, m, v)
          break
        case 'scorer': {
          const seat = ctx.params.committee.indexOf(r.id)
          if (seat >= 0 && seat === temper.silent) break
          roles.score(r.actor, m, v, wall)
          roles.review(r.actor, m, v)
          break
        }
        case 'executor':
          roles.execute(r.actor, m, v, wall, r.knowledge(plan))
          break
        case 'observer':
          break
      }
    }
  }
  for (const r of replicas) {
    if (r.role === 'observer') continue
    const loop = (): void => {
      act(r)
      if (sched.now <= activeMs) sched.after(rng.int(...ROLE_TICK), loop)
    }
    sched.after(rng.int(...ROLE_TICK), loop)
  }

  // ---------------------------------------------------------------- run

  /** Every replica online holds every created event and has nothing parked. */
  const converged = (): boolean => replicas.every(r => r.online() && r.store.size === created.size && r.fold.events.parkedCount === 0)
  sched.runUntil(activeMs)
  log(`roles stop: ${created.size} events created`)
  let convergedAt: number | null = null
  for (let t = activeMs; t <= deadlineMs && convergedAt === null; t += 500) {
    sched.runUntil(t)
    if (converged()) convergedAt = sched.now
  }
  log(convergedAt === null ? 'deadline: not converged' : 'every replica holds every event')
  return { seed: opts.seed, replicas, created, plans, stats, convergedAt, partitions, timeline }
}
