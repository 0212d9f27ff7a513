/**
 * A swarm of real node processes in network namespaces (./net-lab.ts), for
 * the scenarios that cut or slow the network: each node runs
 * `ip netns exec <ns> node dist/src/cli.js --role <role> ...` with its
 * own data dir, `--no-mdns`, `--json`, `--http <mgmt ip>:7070`, and the fake
 * Messages API server of this process as its model (through a plain
 * forwarder on the management link). Where a node listens and whom it
 * bootstraps to is the scenario's choice.
 *
 * The five invariants come from ./invariants.ts (checkInvariants) over every
 * node's store and every live node's /plans.
 */
import { join } from 'node:path'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
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
import { startFakeLlm } from './fake-llm.js'
import { checkInvariants } from './invariants.js'
import { startTcpProxy } from './tcp-proxy.js'
import { createLab } from './net-lab.js'
import { CLIENT_MS, START_MS, fetchPlan, fetchStatus, waitForPlan, waitForRoster } from './swarm.js'
import type { NodeStatus, PlanBody } from './swarm.js'
import type { CliChild, Finished } from './cli-process.js'
import type { FakeLlm, FakeLlmOptions } from './fake-llm.js'
import type { InvariantInput, InvariantReport } from './invariants.js'
import type { Lab, LabHost } from './net-lab.js'
import type { TcpProxy } from './tcp-proxy.js'
import type { PlanTree } from '../../src/core/tree.js'

export { START_MS, CLIENT_MS }
const HTTP_PORT = 7070

export interface NetNode {
  readonly name: string
  readonly role: string
  readonly host: LabHost
  readonly dataDir: string
  /** Known before start (the identity is made in the data dir first), so others can bootstrap to it. */
  readonly peerId: string
  readonly http: string
  child: CliChild | undefined
  alive: boolean
}

export interface NetSwarmOptions {
  readonly label: string
  readonly fake?: FakeLlmOptions
}

export class NetSwarm {
  readonly lab: Lab
  readonly swarm: string
  readonly home: string
  readonly nodes: NetNode[] = []
  private readonly forwarders: TcpProxy[] = []
  private readonly llmUrl = new Map<string, string>()

  private constructor(
    readonly fake: FakeLlm,
    label: string
  ) {
    this.lab = createLab()
    this.swarm = `res-${label}`
    this.home = tempDir(`res-${label}`)
  }

  static async create(opts: NetSwarmOptions): Promise<NetSwarm> {
    const fake = await startFakeLlm({ latencyMs: 50, ...opts.fake })
    return new NetSwarm(fake, opts.label)
  }

  /** A new host, with a forwarder to the fake LLM on its management link. */
  async host(side?: 'A' | 'B'): Promise<LabHost> {
    const h = this.lab.addHost(side)
    const port = Number(new URL(this.fake.url).port)
    const fwd = await startTcpProxy([
      { listenHost: h.rootIp, listenPort: 0, targetHost: '127.0.0.1', targetPort: port }
    ])
    this.forwarders.push(fwd)
    this.llmUrl.set(h.ns, `http://${h.rootIp}:${fwd.listening[0]?.port ?? 0}`)
    return h
  }

  env(h: LabHost, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    return cliEnv(this.home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: this.llmUrl.get(h.ns), ...extra })
  }

  /** Make a node's identity now (its peer id is needed for bootstrap addresses before it starts). */
  async prepare(name: string, role: string, h: LabHost): Promise<NetNode> {
    const dataDir = join(this.home, name)
    const id = await loadOrCreateIdentity(dataDir)
    const node: NetNode = {
      name,
      role,
      host: h,
      dataDir,
      peerId: id.peerId.toString(),
      http: `http://${h.mgmtIp}:${HTTP_PORT}`,
      child: undefined,
      alive: false
    }
    this.nodes.push(node)
    return node
  }

  /** Start a prepared node with these listen and bootstrap addresses; resolves once it printed `started`. */
  async start(
    node: NetNode,
    listen: string,
    bootstrap: readonly string[],
    extra: readonly string[] = []
  ): Promise<void> {
    const args = [
      '--role',
      node.role,
      '--swarm',
      this.swarm,
      '--no-mdns',
      '--listen',
      listen,
      ...bootstrap.flatMap(b => ['--bootstrap', b]),
      '--data-dir',
      node.dataDir,
      '--http',
      `${node.host.mgmtIp}:${HTTP_PORT}`,
      '--json',
      '--model',
      `fake-${node.name}`,
      ...extra
    ]
    const child = spawnCli(args, {
      env: this.env(node.host),
      name: node.name,
      wrap: ['ip', 'netns', 'exec', node.host.ns]
    })
    node.child = child
    await child.waitForJson(o => o.event === 'started', START_MS)
    node.alive = true
  }

  async status(node: NetNode): Promise<NodeStatus> {
    return await fetchStatus(node)
  }

  async plan(node: NetNode, plan: string): Promise<PlanBody | undefined> {
    return await fetchPlan(node, plan)
  }

  /** Until `node`'s roster lists every other node of these. */
  async waitRoster(node: NetNode, others: readonly NetNode[], timeoutMs = START_MS): Promise<void> {
    await waitForRoster(
      node,
      others.filter(o => o !== node).map(o => o.peerId),
      timeoutMs
    )
  }

  async waitPlan(
    node: NetNode,
    plan: string,
    what: string,
    pred: (t: PlanTree) => boolean,
    timeoutMs: number
  ): Promise<PlanTree> {
    return await waitForPlan(node, plan, what, pred, timeoutMs)
  }

  /** `submit` from a client on host `h` (its data dir is `<home>/client`). */
  async submit(
    h: LabHost,
    goal: string,
    listen: string,
    bootstrap: readonly string[],
    args: readonly string[] = []
  ): Promise<{ plan: string; run: Finished }> {
    const run = await runCli(
      [
        'submit',
        goal,
        '--swarm',
        this.swarm,
        '--no-mdns',
        '--listen',
        listen,
        ...bootstrap.flatMap(b => ['--bootstrap', b]),
        '--data-dir',
        join(this.home, 'client'),
        '--json',
        ...args
      ],
      { env: this.env(h), name: 'submit', wrap: ['ip', 'netns', 'exec', h.ns] },
      CLIENT_MS
    )
    if (run.code !== EXIT.OK)
      throw new Error(`submit exited ${run.code} (${run.signal}): ${run.stderr.slice(-2000)}\n${this.tails()}`)
    const line = run.stdout
      .split('\n')
      .map(parseJsonLine)
      .find(o => o?.plan !== undefined)
    if (line === undefined) throw new Error(`submit printed no plan: ${run.stdout}`)
    return { plan: line.plan as string, run }
  }

  async checkInvariants(extra: Partial<InvariantInput> = {}): Promise<InvariantReport> {
    return await checkInvariants({
      swarm: this.swarm,
      stores: [
        ...this.nodes.map(n => ({ name: n.name, dataDir: n.dataDir, live: n.alive })),
        { name: 'client', dataDir: join(this.home, 'client'), live: false }
      ],
      live: this.nodes.filter(n => n.alive).map(n => ({ name: n.name, http: n.http, pid: n.child?.pid })),
      ...extra
    })
  }

  tails(chars = 600): string {
    return this.nodes.map(n => n.child?.tail(chars) ?? `[${n.name}] not started`).join('\n')
  }

  async close(): Promise<void> {
    await stopCliChildren()
    for (const n of this.nodes) n.alive = false
    await Promise.all(
      this.forwarders.splice(0).map(async f => {
        await f.close()
      })
    )
    await this.fake.close()
    this.lab.destroy()
    removeTempDirs()
  }
}
