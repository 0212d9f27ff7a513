/**
 * A swarm of real node processes for the resilience scenarios: each
 * node is `node dist/src/cli.js --role <role>` with its own data dir,
 * `--http 127.0.0.1:0`, `--no-mdns`, `--json`, and `--bootstrap` to the seed
 * (the first node, an observer unless told otherwise); models come from the
 * fake Messages API server in this test process, each node asking for its own
 * model name (`fake-<node name>`), so the request log says who asked.
 *
 * Nodes are killed (SIGKILL to the process group), stopped and restarted on
 * their data dir; every store a node ever had is kept for the invariants
 * (./invariants.ts), which `checkInvariants()` here runs over all of them.
 */
import { loadavg } from 'node:os'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  EXIT,
  cliEnv,
  parseJsonLine,
  removeTempDirs,
  runCli,
  spawnCli,
  stopCliChildren,
  tempDir
} from './cli-process.js'
import { waitUntil } from './wait.js'
import { startFakeLlm } from './fake-llm.js'
import { checkInvariants, snapshotIds } from './invariants.js'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import type { CliChild, Finished } from './cli-process.js'
import type { FakeLlm, FakeLlmOptions } from './fake-llm.js'
import type { InvariantInput, InvariantReport, Snapshot } from './invariants.js'
import type { PlanTree } from '../../src/core/tree.js'

export type NodeRole = 'decomposer' | 'scorer' | 'executor' | 'observer'

/** A node start-up on a busy 2-core machine. */
export const START_MS = 120_000
/** Client commands: start a peer, find the swarm, publish, confirm. */
export const CLIENT_MS = 120_000

export interface NodeSpec {
  readonly role: NodeRole
  /** Unique in the swarm; default `<role>-<n>`. */
  readonly name?: string
  /** Extra environment (e.g. PLAN_SWARM_CLOCK_OFFSET_MS). */
  readonly env?: Record<string, string | undefined>
  readonly args?: readonly string[]
}

export interface SwarmNode {
  readonly name: string
  readonly role: NodeRole
  readonly dataDir: string
  readonly spec: NodeSpec
  child: CliChild | undefined
  /** `http://127.0.0.1:<port>` of the current run. */
  http: string
  peerId: string
  addresses: string[]
  alive: boolean
  /** Stopped or killed by the test since its last start. */
  stopped?: boolean
  /** How many times it was started. */
  starts: number
}

export interface ResilienceSwarmOptions {
  /** Names the swarm and the temp dir. */
  readonly label: string
  /** Started in order: the first is the seed everyone bootstraps to. Default one observer, then the rest. */
  readonly nodes: readonly NodeSpec[]
  readonly fake?: FakeLlmOptions
  /**
   * Run every process with `--allow-peers`: a list of every node's key, the client's and these extra peer ids (a
   * process the test starts itself). The keys are made in the nodes' data dirs before they start.
   */
  readonly allowPeers?: readonly string[]
}

export interface PlanBody {
  treeHash: string
  tree: PlanTree
}

/** What the scenarios read of a node's `GET /status`. */
export interface NodeStatus {
  peerId: string
  peers: number
  roster: Array<{ peerId: string; role: string }>
  plans: Array<{ id: string; status: string; treeHash: string }>
  events: { held: number; parked: number }
}

/** A running node as the HTTP helpers below need it (both swarms' nodes are). */
interface HttpNode {
  readonly name: string
  readonly http: string
}

export async function fetchStatus(node: HttpNode): Promise<NodeStatus> {
  const r = await fetch(`${node.http}/status`, { signal: AbortSignal.timeout(10_000) })
  return (await r.json()) as NodeStatus
}

export async function fetchPlan(node: HttpNode, plan: string): Promise<PlanBody | undefined> {
  const r = await fetch(`${node.http}/plans/${plan}`, { signal: AbortSignal.timeout(10_000) })
  return r.ok ? ((await r.json()) as PlanBody) : undefined
}

/** Until `node`'s roster lists every peer id. */
export async function waitForRoster(node: HttpNode, peerIds: readonly string[], timeoutMs = START_MS): Promise<void> {
  await waitUntil(
    `${node.name} to see ${peerIds.length} peers in its roster`,
    async () => {
      const seen = new Set((await fetchStatus(node)).roster.map(r => r.peerId))
      return peerIds.every(p => seen.has(p)) ? true : undefined
    },
    timeoutMs
  )
}

/** Until `pred` holds for the plan as `node` folds it; returns that tree. */
export async function waitForPlan(
  node: HttpNode,
  plan: string,
  what: string,
  pred: (t: PlanTree) => boolean,
  timeoutMs: number
): Promise<PlanTree> {
  return await waitUntil(
    `${what} (on ${node.name})`,
    async () => {
      const b = await fetchPlan(node, plan)
      return b !== undefined && pred(b.tree) ? b.tree : undefined
    },
    timeoutMs
  )
}

/** A moment of the scenario, for the measured times. */
export class Stopwatch {
  private readonly t0 = Date.now()
  readonly marks: Record<string, number> = {}
  mark(name: string): number {
    const ms = Date.now() - this.t0
    this.marks[name] = ms
    return ms
  }

  since(name: string): number {
    return Date.now() - this.t0 - (this.marks[name] ?? 0)
  }
}

/** Prints the scenario's figures as one JSON line. */
export function printMeasured(scenario: string, figures: Record<string, unknown>): void {
  const load = loadavg().map(x => Number(x.toFixed(2)))
  console.log(JSON.stringify({ resilience: scenario, date: new Date().toISOString(), loadavg: load, ...figures }))
}

/** The figures every scenario reports from its invariant check. */
export function invariantFigures(report: InvariantReport): Record<string, unknown> {
  return {
    convergedMs: report.convergedMs,
    events: report.unionEvents,
    deadOnly: report.deadOnly,
    duplicates: report.plans.map(p => p.duplicates),
    rssMB: Object.fromEntries(Object.entries(report.rssBytes).map(([k, v]) => [k, Math.round(v / 2 ** 20)]))
  }
}

export class ResilienceSwarm {
  readonly swarm: string
  readonly home: string
  readonly env: NodeJS.ProcessEnv
  readonly nodes: SwarmNode[] = []
  readonly snapshots: Snapshot[] = []
  /** The client's data dir (submit and the author commands sign with its key). */
  readonly clientDir: string
  private seedAddr = ''
  private allowFile: string | undefined

  private constructor(
    readonly fake: FakeLlm,
    label: string
  ) {
    this.swarm = `res-${label}`.slice(0, 64)
    this.home = tempDir(`res-${label}`)
    this.env = cliEnv(this.home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: fake.url })
    this.clientDir = join(this.home, 'client')
  }

  static async start(opts: ResilienceSwarmOptions): Promise<ResilienceSwarm> {
    const fake = await startFakeLlm({ latencyMs: 50, ...opts.fake })
    const s = new ResilienceSwarm(fake, opts.label)
    const [seed, ...rest] = opts.nodes
    if (seed === undefined) throw new Error('a swarm needs nodes')
    try {
      if (opts.allowPeers !== undefined) await s.writeAllowList(opts.nodes, opts.allowPeers)
      const first = await s.add(seed)
      s.seedAddr = first.addresses[0] as string
      await Promise.all(rest.map(async spec => await s.add(spec)))
      await s.waitRoster(
        first,
        s.nodes.filter(n => n !== first).map(n => n.peerId)
      )
      return s
    } catch (err) {
      // Leave nothing behind: the caller never gets the swarm to close.
      await s.close()
      throw err
    }
  }

  /** The allow-list of `allowPeers`: each node's key made in its data dir (named as `spawn` will name it). */
  private async writeAllowList(specs: readonly NodeSpec[], extra: readonly string[]): Promise<void> {
    const ids: string[] = [...extra, (await loadOrCreateIdentity(this.clientDir)).peerId.toString()]
    const seen: NodeSpec[] = []
    for (const spec of specs) {
      const name = spec.name ?? `${spec.role}-${seen.filter(n => n.role === spec.role).length + 1}`
      seen.push(spec)
      ids.push((await loadOrCreateIdentity(join(this.home, name))).peerId.toString())
    }
    this.allowFile = join(this.home, 'allow-peers.txt')
    writeFileSync(this.allowFile, `${ids.join('\n')}\n`)
  }

  /** The `--allow-peers` file every process of this swarm was given, if any. */
  get allowPeersFile(): string | undefined {
    return this.allowFile
  }

  get seed(): SwarmNode {
    return this.nodes[0] as SwarmNode
  }

  /** The common flags of every process of this swarm. */
  common(): string[] {
    return [
      '--swarm',
      this.swarm,
      '--no-mdns',
      '--listen',
      '/ip4/127.0.0.1/tcp/0',
      ...(this.seedAddr === '' ? [] : ['--bootstrap', this.seedAddr]),
      ...(this.allowFile === undefined ? [] : ['--allow-peers', this.allowFile])
    ]
  }

  byName(name: string): SwarmNode {
    const n = this.nodes.find(x => x.name === name)
    if (n === undefined) throw new Error(`no node ${name}`)
    return n
  }

  ofRole(role: NodeRole, alive = true): SwarmNode[] {
    return this.nodes.filter(n => n.role === role && (!alive || n.alive))
  }

  /** Start a new node and wait for its `started` line. */
  async add(spec: NodeSpec): Promise<SwarmNode> {
    const node = this.spawn(spec)
    await node.ready
    return node
  }

  /**
   * Start a new node without waiting: `ready` resolves once it has said
   * `started` (or once it is gone, if the test stops it before that); it
   * rejects only when the node fails to start on its own.
   */
  spawn(spec: NodeSpec): SwarmNode & { ready: Promise<void> } {
    const name = spec.name ?? `${spec.role}-${this.nodes.filter(n => n.role === spec.role).length + 1}`
    const node: SwarmNode = {
      name,
      role: spec.role,
      dataDir: join(this.home, name),
      spec,
      child: undefined,
      http: '',
      peerId: '',
      addresses: [],
      alive: false,
      starts: 0
    }
    this.nodes.push(node)
    const started = this.launch(node)
    const ready = started.catch(err => {
      if (node.child !== undefined && !node.stopped) throw err
    })
    // A node stopped before it started is not a failure; anything else surfaces through `ready`.
    ready.catch(() => {})
    return Object.assign(node, { ready })
  }

  private async launch(node: SwarmNode): Promise<void> {
    const args = [
      '--role',
      node.role,
      ...this.common(),
      '--data-dir',
      node.dataDir,
      '--http',
      '127.0.0.1:0',
      '--json',
      '--model',
      `fake-${node.name}`,
      ...(node.spec.args ?? [])
    ]
    const child = spawnCli(args, { env: { ...this.env, ...node.spec.env }, name: node.name })
    node.child = child
    node.starts++
    node.stopped = false
    const started = await child.waitForJson(o => o.event === 'started', START_MS)
    node.http = started.http as string
    node.peerId = started.peerId as string
    node.addresses = started.addresses as string[]
    if (!node.stopped) node.alive = true
  }

  /** SIGKILL to the node's process group; resolves once it is gone. */
  async kill9(node: SwarmNode): Promise<void> {
    if (node.child === undefined) return
    node.alive = false
    node.stopped = true
    await node.child.stop(1_000, 'SIGKILL')
  }

  /** SIGTERM: a clean stop. */
  async stop(node: SwarmNode): Promise<void> {
    if (node.child === undefined) return
    node.alive = false
    node.stopped = true
    await node.child.stop(10_000)
  }

  /** Start a stopped or killed node again on its data dir. */
  async restart(node: SwarmNode): Promise<void> {
    if (node.alive) throw new Error(`${node.name} is running`)
    await this.launch(node)
  }

  /** Record what a node's store holds now, for invariant (a). */
  snapshot(node: SwarmNode, label?: string): Snapshot {
    const s: Snapshot = { dataDir: node.dataDir, ids: snapshotIds(node.dataDir), label }
    this.snapshots.push(s)
    return s
  }

  async status(node: SwarmNode): Promise<NodeStatus> {
    return await fetchStatus(node)
  }

  async plan(node: SwarmNode, plan: string): Promise<PlanBody | undefined> {
    return await fetchPlan(node, plan)
  }

  async waitRoster(node: SwarmNode, peerIds: readonly string[], timeoutMs = START_MS): Promise<void> {
    await waitForRoster(node, peerIds, timeoutMs)
  }

  async waitPlan(
    node: SwarmNode,
    plan: string,
    what: string,
    pred: (t: PlanTree) => boolean,
    timeoutMs: number
  ): Promise<PlanTree> {
    return await waitForPlan(node, plan, what, pred, timeoutMs)
  }

  private async client(args: readonly string[]): Promise<Finished> {
    return await runCli(
      [...args, ...this.common(), '--data-dir', this.clientDir, '--json'],
      { env: this.env, name: args[0] },
      CLIENT_MS
    )
  }

  /** `submit "<goal>" [args]` as the author in `clientDir`; returns the plan id and committee. */
  async submit(
    goal: string,
    args: readonly string[] = []
  ): Promise<{ plan: string; committee: string[]; quorum: number }> {
    const r = await this.client(['submit', goal, ...args])
    if (r.code !== EXIT.OK) throw new Error(`submit exited ${r.code} (${r.signal}): ${r.stderr.slice(-2000)}`)
    const line = r.stdout
      .split('\n')
      .map(parseJsonLine)
      .find(o => o?.plan !== undefined)
    if (line === undefined) throw new Error(`submit printed no plan: ${r.stdout}`)
    return { plan: line.plan as string, committee: line.committee as string[], quorum: line.quorum as number }
  }

  /** `amend <plan> --committee ...` as the author. */
  async amend(plan: string, committee: readonly string[], quorum?: number): Promise<Finished> {
    const r = await this.client([
      'amend',
      plan,
      '--committee',
      committee.join(','),
      ...(quorum === undefined ? [] : ['--quorum', String(quorum)])
    ])
    if (r.code !== EXIT.OK) throw new Error(`amend exited ${r.code} (${r.signal}): ${r.stderr.slice(-2000)}`)
    return r
  }

  /** The five invariants over every store this swarm ever had and every live node. */
  async checkInvariants(extra: Partial<InvariantInput> = {}): Promise<InvariantReport> {
    return await checkInvariants({
      swarm: this.swarm,
      stores: [
        ...this.nodes.map(n => ({ name: n.name, dataDir: n.dataDir, live: n.alive })),
        { name: 'client', dataDir: this.clientDir, live: false }
      ],
      live: this.nodes.filter(n => n.alive).map(n => ({ name: n.name, http: n.http, pid: n.child?.pid })),
      snapshots: this.snapshots,
      ...extra
    })
  }

  /** The last lines of every node, for failure messages. */
  tails(chars = 600): string {
    return this.nodes.map(n => n.child?.tail(chars) ?? `[${n.name}] not started`).join('\n')
  }

  async close(): Promise<void> {
    await stopCliChildren()
    await this.fake.close()
    removeTempDirs()
  }
}
