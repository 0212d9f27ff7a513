import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { startNodeRuntime } from '../runtime/node-runtime.js'
import { createMemoryStore } from '../store/memory-store.js'
import { startRole } from '../../roles/driver.js'
import { createDecomposer } from '../../roles/decomposer.js'
import { createScorer } from '../../roles/scorer.js'
import { createExecutor } from '../../roles/executor.js'
import { DEFAULT_PARAMS, DEFAULT_TRUST, majority } from '../core/events.js'
import { isFinished } from '../core/view.js'
import { seededRandom } from '../ports/scheduler.js'
import { CLEAN_LINKS, SimNetwork } from './network.js'
import { DEFAULT_MAX_PEERS, NEWCOMER_HEADROOM } from '../net/neighbours.js'
import { SimTransport } from './sim-transport.js'
import { NodeClock, VirtualTime, drainMicrotasks } from './virtual-time.js'
import { createSimProvider, emptyLlmCalls } from './sim-llm.js'
import { latencyOf } from './latency.js'
import { SimRecord } from './record.js'
import { planOf } from '../core/event-set.js'
import { drawFaults } from './faults.js'
import { presenceIntervalFor } from '../net/presence-interval.js'
import { memoizedVerifier } from './memo-verifier.js'
import { scheduleFaults } from './fault-schedule.js'
import { ROSTER_WAIT_MAX_NODES, bootstrapOf, rolesFor, rosterFullBoundMs } from './swarm-shape.js'
import { SwarmSampler } from './swarm-sampler.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString, PlanEvent, PlanId, PlanParams } from '../core/events.js'
import type { RoleContext, RoleHandler } from '../../roles/driver.js'
import type { SignatureVerifier } from '../wire/decode.js'
import type { FaultPlan } from './faults.js'
import type { LlmCalls, SimLatency } from './sim-llm.js'
import type { LinkFaults, SimTopology } from './network.js'
import type { SimNode } from './sim-node.js'
import type { ConnectionSamples, RosterFill } from './swarm-sampler.js'
import type { SimHorizon, WorldOptions } from './world-options.js'

const HANDLERS: Record<'decomposer' | 'scorer' | 'executor', (ctx: RoleContext) => RoleHandler> = {
  decomposer: createDecomposer,
  scorer: createScorer,
  executor: createExecutor
}

const GOALS = [
  'plan a two-week trip to Japan',
  'organise a neighbourhood book swap',
  'write a grant proposal for a community solar project',
  'launch a small open-source library',
  'move a family of four to another city'
]

/**
 * A whole swarm in one process on virtual time: every node is the real
 * node runtime (Replica on a memory store, the real sync sessions) with the
 * real role drivers and roles, over a simulated network; one seed decides
 * the topology, the keys, the faults and every delay.
 */
export class World {
  readonly time = new VirtualTime()
  readonly random: () => number
  readonly network: SimNetwork
  readonly nodes: SimNode[] = []
  readonly calls: LlmCalls = emptyLlmCalls()
  readonly faults: FaultPlan
  readonly registry = new Map<string, SimTransport>()
  readonly verifier: SignatureVerifier
  readonly presenceIntervalMs: number
  /** The first plan (the only one unless WorldOptions.plans). */
  plan: PlanId | undefined
  /** Every plan, in the order submitted. */
  readonly plans: PlanId[] = []
  /** Virtual ms when the last event of the run was signed. */
  lastEventAt = 0
  /** Virtual ms when node 0's tree of every plan first reached a final status (the last of them). */
  finishedAt: number | undefined
  /** Per plan, virtual ms when node 0's tree of it first reached a final status. */
  readonly finishedAtByPlan = new Map<PlanId, number>()
  /** What WorldOptions.record keeps, or undefined. */
  readonly record: SimRecord | undefined
  /** With WorldOptions.allowList: every node's key, the authors each node takes events from. */
  private readonly admitted: ReadonlySet<string> | undefined
  /** Links when no fault is on them (WorldOptions.linkMs, or CLEAN_LINKS). */
  private readonly baseLinks: LinkFaults
  private readonly latency: SimLatency
  events = 0
  readonly topology: SimTopology
  readonly maxPeers: number
  /** What the run waits for beyond the plan (WorldOptions.until, or its default for the size). */
  readonly until: SimHorizon
  /** The roster check's bound (WorldOptions.rosterBoundMs, or rosterFullBoundMs(nodes)). */
  readonly rosterBoundMs: number
  /** How full the rosters were when the run ended (set by run()). */
  rosterFill: RosterFill | undefined
  /** What the run sees of its swarm: connections, rosters, the `--trace` view. */
  private readonly sampler: SwarmSampler

  private constructor(
    readonly opts: WorldOptions,
    keys: PrivateKey[]
  ) {
    this.random = seededRandom(opts.seed)
    const roles = rolesFor(opts.nodes)
    const joins = opts.joins ?? 0
    const twinsOf = opts.dishonest?.twinsOf ?? []
    const peers = keys.map(k => peerIdFromPrivateKey(k).toString())
    const base = peers.length - twinsOf.length
    this.topology = opts.topology ?? 'neighbours'
    this.maxPeers = opts.maxPeers ?? DEFAULT_MAX_PEERS
    this.network = new SimNetwork(
      this.time,
      seededRandom(opts.seed ^ 0x5eed),
      peers,
      opts.degree ?? 6,
      this.topology,
      this.maxPeers + NEWCOMER_HEADROOM
    )
    this.faults = drawFaults(
      seededRandom(opts.seed ^ 0xfa17),
      base - joins,
      opts.faults,
      2_000,
      opts.faultSpanMs ?? 20_000
    )
    this.verifier = memoizedVerifier()
    const links = opts.linkMs
    this.baseLinks =
      links === undefined
        ? CLEAN_LINKS
        : { delayMs: links.minMs, jitterMs: Math.max(0, links.maxMs - links.minMs), loss: 0, duplicate: 0 }
    this.network.faults = this.baseLinks
    const spec = opts.llmLatency
    this.latency =
      spec === undefined
        ? (opts.llmLatencyMs ?? 300)
        : spec.kind === 'fixed'
          ? spec.ms
          : (_kind, key) => latencyOf(spec, opts.seed, key)
    this.record = opts.record === true ? new SimRecord() : undefined
    this.presenceIntervalMs = presenceIntervalFor(peers.length)
    this.until = opts.until ?? (peers.length <= ROSTER_WAIT_MAX_NODES ? 'rosters' : 'plan')
    this.rosterBoundMs = opts.rosterBoundMs ?? rosterFullBoundMs(peers.length)
    this.sampler = new SwarmSampler(this, opts.trace)
    keys.forEach((key, i) => {
      const twin = i >= base ? (twinsOf[i - base] as number) : undefined
      const role = i >= base - joins ? 'executor' : (roles[i] ?? 'observer')
      this.nodes.push({
        index: i,
        role: twin === undefined ? role : (roles[twin] ?? 'observer'),
        key,
        peerId: peers[i] as PeerIdString,
        ...(twin === undefined
          ? {}
          : { twinOf: twin, author: { key: keys[twin] as PrivateKey, peerId: peers[twin] as PeerIdString } }),
        store: opts.wrapStore === undefined ? createMemoryStore() : opts.wrapStore(i, createMemoryStore()),
        clock: new NodeClock(this.time, this.faults.skewMs[i] ?? 0, opts.seed * 7919 + i),
        transport: undefined,
        runtime: undefined,
        stopRole: undefined,
        roleIdle: undefined,
        lastFoldAt: 0,
        crashes: 0,
        resumedAt: 0
      })
    })
    this.admitted = opts.allowList === true ? new Set(this.nodes.map(n => n.peerId)) : undefined
  }

  static async create(opts: WorldOptions): Promise<World> {
    const rnd = seededRandom(opts.seed ^ 0x6b65)
    const n = Math.max(opts.nodes, 4) + (opts.joins ?? 0) + (opts.dishonest?.twinsOf?.length ?? 0)
    const keys: PrivateKey[] = []
    for (let i = 0; i < n; i++) {
      const seed = new Uint8Array(32)
      for (let b = 0; b < 32; b++) seed[b] = Math.floor(rnd() * 256)
      keys.push(await generateKeyPairFromSeed('Ed25519', seed))
    }
    return new World(opts, keys)
  }

  private async boot(node: SimNode): Promise<void> {
    const transport = new SimTransport({
      peerId: node.peerId,
      network: this.network,
      time: this.time,
      clock: node.clock,
      presence: { role: node.role, capabilities: [], load: 0, version: 'plan-swarm/sim' },
      presenceIntervalMs: this.presenceIntervalMs,
      registry: this.registry,
      sync: this.opts.withoutSync !== true,
      ...(this.topology === 'neighbours'
        ? {
            neighbours: {
              bootstrap: bootstrapOf(node.index, this.nodes.length).map(j => this.nodes[j]?.peerId as string),
              maxPeers: this.maxPeers
            }
          }
        : {})
    })
    const runtime = await startNodeRuntime({
      swarm: 'sim',
      role: node.role,
      key: node.author?.key ?? node.key,
      peerId: node.author?.peerId ?? node.peerId,
      dataDir: ':memory:',
      store: node.store,
      transport,
      scheduler: node.clock.scheduler,
      verifier: this.verifier,
      inlineVerify: true,
      ...(this.admitted === undefined ? {} : { allowAuthors: this.admitted })
    })
    node.transport = transport
    node.runtime = runtime
    this.opts.dishonest?.booted?.(node, runtime)
    const record = this.record
    const watched = record !== undefined && (node.index === 0 || node.role !== 'observer')
    runtime.view.onFolded(events => {
      node.lastFoldAt = this.time.elapsed
      for (const e of events) {
        if (e.env.author === node.peerId && node.twinOf === undefined) {
          this.events++
          this.lastEventAt = Math.max(this.lastEventAt, this.time.elapsed)
          record?.published(e, node.index, this.time.elapsed)
        }
        if (watched) record?.folded(e.id, node.index, this.time.elapsed)
      }
      if (this.finishedAt === undefined && node.index === 0 && this.plans.length > 0) this.noteFinished(events)
    })
    if (node.role === 'decomposer' || node.role === 'scorer' || node.role === 'executor') {
      const model = createSimProvider(
        node.clock.scheduler,
        this.latency,
        this.calls,
        node.peerId,
        record === undefined
          ? undefined
          : { now: () => this.time.elapsed, add: call => record.called(node.index, call) }
      )
      const ctx: RoleContext = {
        view: runtime.view,
        provider: this.opts.dishonest?.provider?.(model) ?? model,
        say: line => {
          this.opts.say?.(node.index, node.role, Math.round(this.time.elapsed), line)
        }
      }
      const role = this.opts.dishonest?.start?.(node, ctx, runtime) ?? startRole(ctx, HANDLERS[node.role](ctx))
      node.stopRole = role.stop
      node.roleIdle = role.idle
    }
  }

  /** Node 0 folded `events`: note the plans they finished there, and when the last one did. */
  private noteFinished(events: readonly PlanEvent[]): void {
    const view = this.nodes[0]?.runtime?.view
    if (view === undefined) return
    const touched = new Set<PlanId>()
    for (const e of events) touched.add(planOf(e))
    for (const plan of touched) {
      if (this.finishedAtByPlan.has(plan) || !this.plans.includes(plan)) continue
      const t = view.tree(plan)
      if (t !== undefined && isFinished(t)) this.finishedAtByPlan.set(plan, this.time.elapsed)
    }
    if (this.finishedAtByPlan.size === this.plans.length && this.plans.length === this.planCount)
      this.finishedAt = this.time.elapsed
  }

  /** Goals this run submits (WorldOptions.plans). */
  get planCount(): number {
    return Math.max(1, this.opts.plans ?? 1)
  }

  /** The text of plan k's goal: the seed's built-in goal alone, or each goal of several its own. */
  goalText(k: number): string {
    const n = this.planCount
    const seed = this.opts.seed
    return n === 1
      ? (GOALS[seed % GOALS.length] as string)
      : `${GOALS[(seed + k) % GOALS.length] as string} (goal ${k + 1} of ${n})`
  }

  /** Kill a node where it stands: its timers die, its streams are cut, its store keeps what was committed. */
  private crash(node: SimNode): void {
    if (node.runtime === undefined) return
    node.clock.kill()
    node.transport?.cutStreams()
    void node.transport?.stop()
    node.transport = undefined
    node.runtime = undefined
    node.stopRole = undefined
    node.roleIdle = undefined
    node.crashes++
  }

  /** Start node `index` (a long run): a newcomer the first time, a restart on its store after `crashNode`. */
  async startNode(index: number): Promise<void> {
    const node = this.nodes[index]
    if (node === undefined || node.runtime !== undefined) return
    if (node.crashes > 0) await this.restart(node)
    else {
      await this.boot(node)
      this.network.changed()
    }
  }

  /** Crash node `index` where it stands (a long run): its store keeps what it committed. */
  crashNode(index: number): void {
    const node = this.nodes[index]
    if (node !== undefined) this.crash(node)
  }

  private async restart(node: SimNode): Promise<void> {
    node.clock = new NodeClock(
      this.time,
      node.clock.skewMs,
      this.opts.seed * 7919 + node.index + 104_729 * (node.crashes + 1)
    )
    await this.boot(node)
    this.network.changed()
  }

  /** Where rosterFullMs and its bound count from: the start, or the end of the faults in a run with faults. */
  get rosterOriginMs(): number {
    return this.faults.kinds.length > 0 ? this.faults.endMs : 0
  }

  /** What the connection sampler saw (neighbours topology), once a virtual second. */
  get connections(): ConnectionSamples {
    return this.sampler.connections
  }

  /**
   * Virtual ms from the start (from the end of the faults in a run with
   * faults) until every live node's roster first listed every other live
   * node (neighbours topology; sampled once a virtual second).
   */
  get rosterFullMs(): number | undefined {
    return this.sampler.rosterFullMs
  }

  /** Every live node's roster lists every other live node. */
  rostersFull(): boolean {
    return this.sampler.rostersFull()
  }

  /** How full every live roster is now (one pass over every roster: n² at the end of a run, not every second). */
  measureRosterFill(): RosterFill {
    return this.sampler.measureRosterFill()
  }

  /** The plan's parameters: `committee` (default every scorer, at most 5 by rolesFor), majority quorum; version 5 with `trust`. */
  params(
    committee: readonly PeerIdString[] = this.nodes
      .filter(n => n.role === 'scorer' && n.twinOf === undefined)
      .map(n => n.peerId)
      .sort()
  ): PlanParams {
    return {
      ...DEFAULT_PARAMS,
      ...this.opts.dishonest?.params,
      maxDepth: this.opts.maxDepth ?? 2,
      review: this.opts.review === true,
      ...(this.opts.trust === true
        ? {
            trust:
              this.opts.reviewOneIn === undefined
                ? DEFAULT_TRUST
                : { ...DEFAULT_TRUST, reviewOneIn: this.opts.reviewOneIn }
          }
        : {}),
      committee,
      quorum: majority(committee.length)
    }
  }

  /** Boot every node, submit the goal from node 0 at 1.5 s, run faults, stop once every live node holds the same finished tree. */
  async run(): Promise<'done' | 'deadline' | 'idle'> {
    for (const n of this.nodes) await this.boot(n)
    this.network.changed()
    scheduleFaults(this.faults, {
      time: this.time,
      network: this.network,
      nodes: this.nodes,
      seed: this.opts.seed,
      baseLinks: this.baseLinks,
      crash: node => {
        this.crash(node)
      },
      restart: node => this.restart(node)
    })
    this.time.schedule(this.opts.goalAtMs ?? 1_500, () => {
      for (let k = 0; k < this.planCount; k++) {
        const author = this.nodes[k % this.nodes.length]?.runtime
        if (author === undefined) continue
        void author.view
          .publish('goal-submitted', '', [], { text: this.goalText(k), params: this.params() })
          .then(r => {
            const plan = r.event.id as string as PlanId
            this.plans.push(plan)
            this.plan ??= plan
          })
      }
    })
    let settled = false
    const check = (): void => {
      settled = this.settled()
      if (!settled) this.time.schedule(250, check)
    }
    this.time.schedule(2_000, check)
    if (this.topology === 'neighbours') {
      const sample = (): void => {
        this.sampler.sampleConnections()
        if (!settled) this.time.schedule(1_000, sample)
      }
      this.time.schedule(1_000, sample)
    } else if (this.opts.trace !== undefined) {
      const sample = (): void => {
        this.sampler.traceSample()
        if (!settled) this.time.schedule(1_000, sample)
      }
      this.time.schedule(1_000, sample)
    }
    const outcome = await this.time.run(this.opts.deadlineMs ?? 15 * 60_000, () => settled)
    this.rosterFill = this.measureRosterFill()
    return outcome
  }

  /**
   * Faults over, every node up, every node's tree of the plan finished with
   * one treeHash, and (neighbours topology, `until: 'rosters'`) the rosters
   * full once or their bound passed (the roster check then fails: waiting on
   * to the deadline would only make the failure slower).
   */
  settled(): boolean {
    if (this.plans.length < this.planCount || this.time.elapsed < this.faults.endMs) return false
    if (this.opts.dishonest?.pending?.(this.plans) === true) return false
    if (
      this.topology === 'neighbours' &&
      this.until === 'rosters' &&
      this.rosterFullMs === undefined &&
      this.time.elapsed - this.rosterOriginMs <= this.rosterBoundMs
    )
      return false
    for (const plan of this.plans) {
      let hash: string | undefined
      for (const n of this.nodes) {
        const v = n.runtime?.view
        if (v === undefined) return false
        const h = v.treeHash(plan)
        const t = v.tree(plan)
        if (h === undefined || (t !== undefined && !isFinished(t)) || (t === undefined && !v.isEvicted(plan)))
          return false
        if (hash === undefined) hash = h
        else if (h !== hash) return false
      }
    }
    return true
  }

  /**
   * Stop every node (roles, then the runtime). Virtual time no longer runs
   * here, so an act still in flight (a model call behind its virtual
   * latency) never finishes: a role's stop is not waited for past the
   * promises that can settle now, or the run would hang with nothing left to
   * run (seed 1105 at 6 nodes, kept in test/sim/regressions.json).
   */
  async stop(): Promise<void> {
    for (const n of this.nodes) {
      await Promise.race([n.stopRole?.(), drainMicrotasks()])
      await n.runtime?.stop()
    }
  }
}
