import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createHash } from 'node:crypto'
import { startNodeRuntime } from '../runtime/node-runtime.js'
import { createNativeVerifier } from '../runtime/verify.js'
import { createMemoryStore } from '../store/memory-store.js'
import { startRole } from '../../roles/driver.js'
import { createDecomposer } from '../../roles/decomposer.js'
import { createScorer } from '../../roles/scorer.js'
import { createExecutor } from '../../roles/executor.js'
import { DEFAULT_PARAMS, majority } from '../core/events.js'
import { isFinished } from '../core/view.js'
import { seededRandom } from '../ports/scheduler.js'
import { CLEAN_LINKS, SimNetwork } from './network.js'
import { DEFAULT_MAX_PEERS, NEIGHBOUR_TICK_MS, NEWCOMER_HEADROOM, TRIM_AFTER_MS } from '../net/neighbours.js'
import { SimTransport } from './sim-transport.js'
import { NodeClock, VirtualTime, drainMicrotasks } from './virtual-time.js'
import { createSimProvider, emptyLlmCalls } from './sim-llm.js'
import { latencyOf } from './latency.js'
import { SimRecord } from './record.js'
import { planOf } from '../core/event-set.js'
import { drawFaults } from './faults.js'
import { presenceIntervalFor } from '../net/presence-interval.js'
import { PRESENCE_JITTER } from '../net/presence-announcer.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString, PlanEvent, PlanId, PlanParams } from '../core/events.js'
import type { EventStore } from '../ports/event-store.js'
import type { NodeRuntime } from '../runtime/node-runtime.js'
import type { RoleContext, RoleHandler } from '../../roles/driver.js'
import type { SignatureVerifier } from '../wire/decode.js'
import type { FaultKind, FaultPlan, PartitionShape } from './faults.js'
import type { LlmCalls, SimLatency } from './sim-llm.js'
import type { LinkFaults, SimTopology } from './network.js'
import type { LatencySpec } from './latency.js'

/**
 * How soon every roster must list every live node (from the start, or from
 * the end of the faults). After a mass start the rosters of a large swarm
 * fill only when every node announces again, one presence interval (n / 2 s)
 * later, and the next once-a-second sample sees it. So the bound is 120 s,
 * or (beyond about 200 nodes) one presence interval, stretched by the
 * announcer's jitter, plus ROSTER_SPREAD_MS. The fill times measured are in
 * BENCHMARKS.md (simulator).
 *
 * Checked in full where a run waits for the rosters (WorldOptions.until
 * `rosters`, the default up to ROSTER_WAIT_MAX_NODES = 200 nodes, where the
 * bound is the flat 120 s): a run that has not filled them by the bound ends
 * there and fails. Beyond (`plan`, the default at 300 and 1000 nodes, where
 * the bound is 175 s and 560 s), a run ends with the plan and the check
 * holds only what it saw: a fill by the end within the bound, or none past
 * it; otherwise the run reports how full the rosters were, unchecked
 * (`npm run sim -- --until rosters` checks it at any size).
 */
export function rosterFullBoundMs(nodes: number): number {
  return Math.max(120_000, Math.ceil(presenceIntervalFor(nodes) * (1 + PRESENCE_JITTER)) + ROSTER_SPREAD_MS)
}
/** Beyond the last periodic announcement, for it to cross the swarm and the next once-a-second sample to see it. */
const ROSTER_SPREAD_MS = 10_000

export type SimRole = 'client' | 'decomposer' | 'scorer' | 'executor' | 'observer'

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

export interface WorldOptions {
  readonly seed: number
  /** Nodes in all, the goal's author (a client) included. */
  readonly nodes: number
  readonly faults: readonly FaultKind[]
  /** Virtual ms the model takes for one call. Default 300. */
  readonly llmLatencyMs?: number
  /**
   * The model's latency as a distribution (`--llm-ms`, src/sim/latency.ts):
   * a call's latency drawn from the seed and the call's identity. Takes the
   * place of llmLatencyMs when given.
   */
  readonly llmLatency?: LatencySpec
  /**
   * One-way delay of every message on every link, uniform in [minMs, maxMs)
   * (`--link-ms 20-80`); default the quiet CLEAN_LINKS (2-5 ms). Faults on
   * links replace it while they last.
   */
  readonly linkMs?: { readonly minMs: number; readonly maxMs: number }
  /**
   * Goals submitted at once (default 1): plan k by node k mod n, so that no
   * author holds more than the open-plan limit per author with n >= 5 at 100
   * plans. Each plan a goal of its own text.
   */
  readonly plans?: number
  /** Virtual ms at which the goals are submitted (default 1,500). */
  readonly goalAtMs?: number
  /** Keep what the critical path and the central scheduler need (World.record): events, fold times, calls. */
  readonly record?: boolean
  /** The plan's depth (default 2: a root, its subgoals, their leaves). */
  readonly maxDepth?: number
  /** Links per node in the fixed topology (default 6). */
  readonly degree?: number
  /**
   * `neighbours` (default): connections opened and closed by each node's
   * real dial policy (src/net/neighbours.ts) from the presence it hears,
   * starting from its bootstrap peers. `fixed`: a fixed random graph of
   * `degree` links a node (a ring plus random chords, no dialing), which
   * replays seeds recorded on it as they ran (ADR-0022).
   */
  readonly topology?: SimTopology
  /** `--max-peers` of every node (neighbours topology; default DEFAULT_MAX_PEERS). */
  readonly maxPeers?: number
  /**
   * When a run ends, once its faults are over and the plan has finished on
   * every node with one treeHash (neighbours topology; the fixed graph always
   * ends there). `rosters`: not before every live roster lists every live
   * node, or the roster bound (`rosterBoundMs`) has passed, when the roster
   * check fails. `plan`: there and then, with how full the rosters were
   * (`rosterFill`); the roster check then holds the run to its bound only if
   * the rosters filled by the end or the bound had passed. Default:
   * `rosters` up to ROSTER_WAIT_MAX_NODES nodes, `plan` beyond, where rosters
   * fill only with the periodic announcements one presence interval (n / 2 s)
   * after the start and waiting for them costs minutes to hours of wall time.
   */
  readonly until?: SimHorizon
  /** How soon every roster must be full (default rosterFullBoundMs(nodes)); a test sets an impossible one to see the check fail. */
  readonly rosterBoundMs?: number
  /** Give up after this much virtual time (default 15 min). */
  readonly deadlineMs?: number
  /** The plan asks for review of every result by the committee (default false). */
  readonly review?: boolean
  /** Faults run from 2 s for this long (default 20 s); pauses, crashes and partitions last up to half of it. */
  readonly faultSpanMs?: number
  /** Where the roles' lines go (default: nowhere); with the virtual time in ms. */
  readonly say?: (node: number, role: SimRole, atMs: number, line: string) => void
  /** Run without sync sessions: gossip alone, as a canary that the checks catch what sync repairs. */
  readonly withoutSync?: boolean
  /**
   * Told once a virtual second what the swarm looks like (`npm run sim --
   * --trace`): a debug view of where a run spends its time. On the
   * neighbours topology it rides on the connection sampler, so the run is
   * the same with it or without; on the fixed graph it adds a timer.
   */
  readonly trace?: (s: TraceSample) => void
  /**
   * Nodes beyond `nodes` (executors) that `run` does not start: a long run
   * (src/sim/long-run/) starts them later, on empty stores, as newcomers.
   */
  readonly joins?: number
  /** Wraps each node's memory store (a long run watches what goes in and what expires). */
  readonly wrapStore?: (index: number, store: EventStore) => EventStore
}

/** What a run waits for beyond the plan (WorldOptions.until). */
export type SimHorizon = 'plan' | 'rosters'

/**
 * Up to this many nodes a run waits for the rosters by default. Their bound
 * (rosterFullBoundMs) is the flat 120 s up to about 200 nodes; beyond, it is
 * one presence interval (n / 2 s) and more, and a virtual second costs more
 * wall time the larger the swarm: on 2 cores, waiting for the rosters about
 * triples the wall time of a 300-node run, and at 1000 nodes, where the
 * rosters fill only with the periodic announcements 450-550 s virtual after
 * the start, it takes more than 16 minutes (BENCHMARKS.md, simulator).
 */
export const ROSTER_WAIT_MAX_NODES = 200

/** How full the live nodes' rosters were when a run ended: other live nodes listed, as a share of all of them. */
export interface RosterFill {
  readonly liveNodes: number
  /** The emptiest roster's share (0..1), and the median one's. */
  readonly emptiest: number
  readonly median: number
  /** Live nodes whose roster listed every other live node. */
  readonly full: number
}

/** One second of a run as `--trace` shows it. */
export interface TraceSample {
  readonly atMs: number
  /** Timers run so far, and timers queued now (cancelled ones included). */
  readonly steps: number
  readonly pendingTimers: number
  /** Gossip deliveries in the last second, all nodes together: plan events, presence. */
  readonly eventMessages: number
  readonly presenceMessages: number
  readonly liveNodes: number
  /** Live nodes with no connection at all. */
  readonly alone: number
  readonly connectionsMedian: number
  readonly connectionsMax: number
  /** Fewest other live nodes a live node's roster lists, and how many rosters list all of them. */
  readonly rosterMin: number
  readonly rostersFull: number
}

/** One simulated node: its clock, store (which survives a crash), and what runs on it now. */
interface SimNode {
  readonly index: number
  readonly role: SimRole
  readonly key: PrivateKey
  readonly peerId: PeerIdString
  readonly store: EventStore
  clock: NodeClock
  transport: SimTransport | undefined
  runtime: NodeRuntime | undefined
  stopRole: (() => Promise<void>) | undefined
  /** Whether the node's role has no act under way (true for a node without a role). */
  roleIdle: (() => boolean) | undefined
  /** Virtual ms of this node's last fold. */
  lastFoldAt: number
  crashes: number
  /** Virtual ms this node's clock last resumed from a pause (its neighbourhood ticks were held until then). */
  resumedAt: number
}

/** Bootstrap ("seed") nodes in a swarm of n: nodes 0 .. k-1, one per 50 nodes, so no seed is every newcomer's only way in. */
export function seedsFor(n: number): number {
  return Math.max(1, Math.ceil(n / 50))
}

/** The bootstrap peers of node i (indexes): two seeds (one when there is one), itself left out, as a compose file would give them. */
export function bootstrapOf(i: number, n: number): number[] {
  const k = seedsFor(n)
  return [...new Set([i % k, (i + 1) % k])].filter(j => j !== i)
}

/** What the connection sampler saw (neighbours topology), once a virtual second. */
export interface ConnectionSamples {
  /** Most connections any node held at a sample. */
  maxConnections: number
  /** Median over the run's last sample of connections per live node. */
  medianAtEnd: number
  /** Samples where a node held more than maxPeers + NEWCOMER_HEADROOM (libp2p's maxConnections). */
  overCap: string[]
  /** Samples where a node held more than maxPeers connections older than its grace (TRIM_AFTER_MS) plus two neighbour ticks. */
  overMaxPeers: string[]
}

/** What the roles in a swarm of n are: a few decomposers and scorers, executors, the rest observers. */
export function rolesFor(n: number): SimRole[] {
  const rest = n - 1
  const decomposers = Math.max(1, Math.min(5, Math.round(rest * 0.2)))
  const scorers = Math.max(1, Math.min(5, Math.round(rest * 0.2)))
  const executors = Math.max(1, Math.min(60, rest - decomposers - scorers))
  const roles: SimRole[] = ['client']
  for (let i = 0; i < decomposers; i++) roles.push('decomposer')
  for (let i = 0; i < scorers; i++) roles.push('scorer')
  for (let i = 0; i < executors; i++) roles.push('executor')
  while (roles.length < n) roles.push('observer')
  return roles.slice(0, Math.max(n, 4))
}

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
  /** Links when no fault is on them (WorldOptions.linkMs, or CLEAN_LINKS). */
  private readonly baseLinks: LinkFaults
  private readonly latency: SimLatency
  events = 0
  readonly topology: SimTopology
  readonly maxPeers: number
  readonly connections: ConnectionSamples = { maxConnections: 0, medianAtEnd: 0, overCap: [], overMaxPeers: [] }
  /**
   * Virtual ms from the start (from the end of the faults in a run with
   * faults) until every live node's roster first listed every other live
   * node (neighbours topology; sampled once a virtual second).
   */
  rosterFullMs: number | undefined
  /** What the run waits for beyond the plan (WorldOptions.until, or its default for the size). */
  readonly until: SimHorizon
  /** The roster check's bound (WorldOptions.rosterBoundMs, or rosterFullBoundMs(nodes)). */
  readonly rosterBoundMs: number
  /** How full the rosters were when the run ended (set by run()). */
  rosterFill: RosterFill | undefined
  /** Deliveries counted at the last trace sample (`trace` only): events, presence. */
  private traced = { events: 0, presence: 0 }

  private constructor(
    readonly opts: WorldOptions,
    keys: PrivateKey[]
  ) {
    this.random = seededRandom(opts.seed)
    const roles = rolesFor(opts.nodes)
    const joins = opts.joins ?? 0
    const peers = keys.map(k => peerIdFromPrivateKey(k).toString())
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
      peers.length - joins,
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
    keys.forEach((key, i) => {
      this.nodes.push({
        index: i,
        role: i >= peers.length - joins ? 'executor' : (roles[i] ?? 'observer'),
        key,
        peerId: peers[i] as PeerIdString,
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
  }

  static async create(opts: WorldOptions): Promise<World> {
    const rnd = seededRandom(opts.seed ^ 0x6b65)
    const n = Math.max(opts.nodes, 4) + (opts.joins ?? 0)
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
      key: node.key,
      peerId: node.peerId,
      dataDir: ':memory:',
      store: node.store,
      transport,
      scheduler: node.clock.scheduler,
      verifier: this.verifier,
      inlineVerify: true
    })
    node.transport = transport
    node.runtime = runtime
    const record = this.record
    const watched = record !== undefined && (node.index === 0 || node.role !== 'observer')
    runtime.view.onFolded(events => {
      node.lastFoldAt = this.time.elapsed
      for (const e of events) {
        if (e.env.author === node.peerId) {
          this.events++
          this.lastEventAt = Math.max(this.lastEventAt, this.time.elapsed)
          record?.published(e, node.index, this.time.elapsed)
        }
        if (watched) record?.folded(e.id, node.index, this.time.elapsed)
      }
      if (this.finishedAt === undefined && node.index === 0 && this.plans.length > 0) this.noteFinished(events)
    })
    if (node.role === 'decomposer' || node.role === 'scorer' || node.role === 'executor') {
      const ctx: RoleContext = {
        view: runtime.view,
        provider: createSimProvider(
          node.clock.scheduler,
          this.latency,
          this.calls,
          node.peerId,
          record === undefined
            ? undefined
            : { now: () => this.time.elapsed, add: call => record.called(node.index, call) }
        ),
        say: line => {
          this.opts.say?.(node.index, node.role, Math.round(this.time.elapsed), line)
        }
      }
      const role = startRole(ctx, HANDLERS[node.role](ctx))
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

  private partitionOf(shape: PartitionShape): (a: string, b: string) => boolean {
    const side = new Map<string, number>()
    const ids = this.nodes.map(n => n.peerId as string)
    const r = seededRandom(this.opts.seed ^ ids.length ^ this.time.elapsed)
    const bridge = shape === 'bridge' ? ids[1 + Math.floor(r() * (ids.length - 1))] : undefined
    for (const id of ids) side.set(id, shape === 'minority' ? (r() < 0.3 ? 1 : 0) : r() < 0.5 ? 1 : 0)
    return (a, b) => a !== bridge && b !== bridge && side.get(a) !== side.get(b)
  }

  private scheduleFaults(): void {
    const f = this.faults
    if (f.kinds.length === 0) return
    this.time.schedule(2_000, () => {
      this.network.faults = f.links
    })
    for (const step of f.steps) {
      this.time.schedule(step.at, () => {
        switch (step.kind) {
          case 'partition': {
            this.network.setPartition(this.partitionOf(step.shape))
            for (const n of this.nodes) n.transport?.cutUnreachable()
            this.time.schedule(step.forMs, () => {
              this.network.setPartition(null)
            })
            return
          }
          case 'crash': {
            const node = this.nodes[step.node]
            if (node === undefined || node.runtime === undefined) return
            this.crash(node)
            this.time.schedule(step.downMs, () => {
              void this.restart(node)
            })
            return
          }
          case 'pause': {
            const node = this.nodes[step.node]
            if (node === undefined || node.runtime === undefined) return
            node.clock.pause()
            node.transport?.cutStreams()
            this.time.schedule(step.forMs, () => {
              node.clock.resume()
              node.resumedAt = this.time.elapsed
            })
            return
          }
          default: {
            const never: never = step
            throw new Error(`unknown fault ${JSON.stringify(never)}`)
          }
        }
      })
    }
    this.time.schedule(f.endMs, () => {
      this.network.faults = this.baseLinks
      this.network.setPartition(null)
      for (const n of this.nodes) {
        if (n.clock.isPaused) n.resumedAt = this.time.elapsed
        n.clock.resume()
      }
    })
  }

  /**
   * Once a virtual second (neighbours topology): every node's connections
   * against its bounds, and whether every live node's roster lists every
   * other live node.
   */
  private sampleConnections(): void {
    const net = this.network
    const now = this.time.elapsed
    const grace = TRIM_AFTER_MS + 2 * NEIGHBOUR_TICK_MS
    const counts: number[] = []
    for (const n of this.nodes) {
      if (n.runtime === undefined) continue
      const links = [...(net.neighbours.get(n.peerId) ?? [])]
      counts.push(links.length)
      this.connections.maxConnections = Math.max(this.connections.maxConnections, links.length)
      if (links.length > net.connectionCap)
        this.connections.overCap.push(
          `node ${n.index} held ${links.length} connections at ${now} ms (cap ${net.connectionCap})`
        )
      // A paused node's trim did not run: its bound holds again two ticks after it resumed.
      if (n.clock.isPaused || now - n.resumedAt < 2 * NEIGHBOUR_TICK_MS) continue
      const old = links.filter(b => net.linkAgeMs(n.peerId, b) >= grace).length
      if (old > this.maxPeers)
        this.connections.overMaxPeers.push(
          `node ${n.index} held ${old} connections older than ${grace} ms at ${now} ms (max-peers ${this.maxPeers})`
        )
    }
    counts.sort((a, b) => a - b)
    this.connections.medianAtEnd = counts[Math.floor((counts.length - 1) / 2)] ?? 0
    const origin = this.rosterOriginMs
    if (this.rosterFullMs === undefined && now >= origin && this.rostersFull()) this.rosterFullMs = now - origin
    this.traceSample()
  }

  /** Hands `opts.trace` what the swarm looks like now (nothing without it). */
  private traceSample(): void {
    const trace = this.opts.trace
    if (trace === undefined) return
    let events = 0
    let presence = 0
    for (const t of this.network.traffic.values()) {
      events += t.eventMessagesReceived
      presence += t.presenceMessagesReceived
    }
    const live = new Set<string>()
    for (const n of this.nodes) if (n.runtime !== undefined) live.add(n.peerId)
    const counts: number[] = []
    let alone = 0
    let rosterMin = Infinity
    let full = 0
    for (const n of this.nodes) {
      const v = n.runtime?.view
      if (v === undefined) continue
      const c = this.network.linkCount(n.peerId)
      counts.push(c)
      if (c === 0) alone++
      let listed = 0
      for (const r of v.roster()) if (r.peerId !== n.peerId && live.has(r.peerId)) listed++
      rosterMin = Math.min(rosterMin, listed)
      if (listed >= live.size - 1) full++
    }
    counts.sort((a, b) => a - b)
    trace({
      atMs: this.time.elapsed,
      steps: this.time.steps,
      pendingTimers: this.time.pending,
      eventMessages: events - this.traced.events,
      presenceMessages: presence - this.traced.presence,
      liveNodes: live.size,
      alone,
      connectionsMedian: counts[Math.floor((counts.length - 1) / 2)] ?? 0,
      connectionsMax: counts[counts.length - 1] ?? 0,
      rosterMin: rosterMin === Infinity ? 0 : rosterMin,
      rostersFull: full
    })
    this.traced = { events, presence }
  }

  /** Every live node's roster lists every other live node. */
  rostersFull(): boolean {
    const live = new Set<string>()
    for (const n of this.nodes) if (n.runtime !== undefined) live.add(n.peerId)
    // Each roster lists up to n peers: checking them all every second cost n² a sample at 1000 nodes.
    // Start from the node found short last time (a full roster rarely loses an entry within its TTL),
    // so a sample is one roster until that one fills; true only after a pass over every node.
    const n = this.nodes.length
    for (let k = 0; k < n; k++) {
      const i = (this.rosterCursor + k) % n
      const node = this.nodes[i] as SimNode
      const v = node.runtime?.view
      if (v === undefined) continue
      let listed = 0
      for (const r of v.roster()) if (r.peerId !== node.peerId && live.has(r.peerId)) listed++
      if (listed < live.size - 1) {
        this.rosterCursor = i
        return false
      }
    }
    return true
  }

  /** Where rostersFull starts looking: the node whose roster was short at the last sample. */
  private rosterCursor = 0

  /** Where rosterFullMs and its bound count from: the start, or the end of the faults in a run with faults. */
  get rosterOriginMs(): number {
    return this.faults.kinds.length > 0 ? this.faults.endMs : 0
  }

  /** How full every live roster is now (one pass over every roster: n² at the end of a run, not every second). */
  measureRosterFill(): RosterFill {
    const live = new Set<string>()
    for (const n of this.nodes) if (n.runtime !== undefined) live.add(n.peerId)
    const others = Math.max(1, live.size - 1)
    const shares: number[] = []
    let full = 0
    for (const n of this.nodes) {
      const v = n.runtime?.view
      if (v === undefined) continue
      let listed = 0
      for (const r of v.roster()) if (r.peerId !== n.peerId && live.has(r.peerId)) listed++
      if (listed >= live.size - 1) full++
      shares.push(listed / others)
    }
    shares.sort((a, b) => a - b)
    return {
      liveNodes: live.size,
      emptiest: shares[0] ?? 0,
      median: shares[Math.floor((shares.length - 1) / 2)] ?? 0,
      full
    }
  }

  /** The plan's parameters: `committee` (default every scorer, at most 5 by rolesFor), majority quorum. */
  params(
    committee: readonly PeerIdString[] = this.nodes
      .filter(n => n.role === 'scorer')
      .map(n => n.peerId)
      .sort()
  ): PlanParams {
    return {
      ...DEFAULT_PARAMS,
      maxDepth: this.opts.maxDepth ?? 2,
      review: this.opts.review === true,
      committee,
      quorum: majority(committee.length)
    }
  }

  /** Boot every node, submit the goal from node 0 at 1.5 s, run faults, stop once every live node holds the same finished tree. */
  async run(): Promise<'done' | 'deadline' | 'idle'> {
    for (const n of this.nodes) await this.boot(n)
    this.network.changed()
    this.scheduleFaults()
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
        this.sampleConnections()
        if (!settled) this.time.schedule(1_000, sample)
      }
      this.time.schedule(1_000, sample)
    } else if (this.opts.trace !== undefined) {
      const sample = (): void => {
        this.traceSample()
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

/**
 * Signature checks shared by every node of a world: a signature is a pure
 * function of its bytes, so one check per distinct (author, message,
 * signature) serves all thousand replicas that receive the same event.
 */
function memoizedVerifier(): SignatureVerifier {
  const inner = createNativeVerifier()
  const memo = new Map<string, boolean>()
  return (author, publicKey, message, signature) => {
    const key = `${author}:${createHash('sha256').update(signature).update(message).digest('hex')}`
    let ok = memo.get(key)
    if (ok === undefined) {
      ok = inner(author, publicKey, message, signature)
      memo.set(key, ok)
    }
    return ok
  }
}
