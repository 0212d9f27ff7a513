/**
 * A whole swarm in one process, for the role integration tests: PeerFleet
 * peers started with `--role X`, each running its real role through
 * `startRole(ctx, createX(ctx))` (as run-node.ts wires them), an optional
 * observer, and a 'client' peer that acts as the goal's author (it publishes
 * the goal, amendments, budget raises and cancellations).
 *
 * Every model-backed peer gets its own provider; with the fake LLM each peer
 * asks for its own model name (`fake-<member name>`), so the fake server's
 * request log says which peer made each request.
 */
import { join } from 'node:path'
import { DEFAULT_PARAMS, majority } from '../../src/core/events.js'
import { treeHash } from '../../src/core/tree-hash.js'
import { foldAll } from '../../src/core/fold.js'
import { validateParams } from '../../src/wire/shape.js'
import { parseNodeArgs } from '../../src/runtime/config.js'
import { startPeer } from '../../src/app/peer.js'
import { createProvider } from '../../src/app/create-provider.js'
import { createOfflineProvider } from '../../src/offline/index.js'
import { startRole } from '../../roles/driver.js'
import { createDecomposer } from '../../roles/decomposer.js'
import { createScorer } from '../../roles/scorer.js'
import { createExecutor } from '../../roles/executor.js'
import { startObserver } from '../../roles/observer.js'
import { PeerFleet } from './peers.js'
import { waitUntil } from './wait.js'
import {
  autoInput,
  type AutoOptions,
  type FakeLlm,
  type FakeUsage,
  type RecordedRequest,
  type ScriptStep
} from './fake-llm.js'
import type { Peer } from '../../src/app/peer.js'
import type { LlmProvider } from '../../src/llm/types.js'
import type { PeerIdString, PlanEvent, PlanId, PlanParams } from '../../src/core/events.js'
import type { PlanStatus, PlanTree } from '../../src/core/tree.js'
import type { ExecutorTools, RoleContext, RoleHandler } from '../../roles/driver.js'

export type SwarmRole = 'decomposer' | 'scorer' | 'executor' | 'observer'

const HANDLERS: Record<Exclude<SwarmRole, 'observer'>, (ctx: RoleContext) => RoleHandler> = {
  decomposer: createDecomposer,
  scorer: createScorer,
  executor: createExecutor
}

export interface Member {
  readonly name: string
  readonly role: SwarmRole
  readonly peer: Peer
  readonly id: PeerIdString
  /** The model name this member asks for (fake LLM runs): `fake-<name>`. */
  readonly model: string
  /** What the role said (its `say` lines) or, for the observer, what it printed. */
  readonly lines: string[]
  /** The observer's current screen. */
  readonly render?: () => string
  stopped: boolean
  /** Stops the role (its driver, or the observer's timer); the peer is stopped separately. */
  readonly stopRole: () => Promise<void>
}

export interface SwarmOptions {
  readonly decomposers?: number
  readonly scorers?: number
  readonly executors?: number
  readonly observer?: boolean
  /** Where models come from: the fake LLM server (through the real Anthropic SDK), or the offline heuristics. */
  readonly llm: { readonly fake: FakeLlm } | 'offline'
  /** Print role lines as they come (set ROLES_DEBUG=1 to see them). */
  readonly echo?: boolean
  /**
   * Called after each event a role publishes, before the role's `publish`
   * returns (so before the role goes on): to make something happen at an
   * exact point of a role's work.
   */
  readonly afterPublish?: (
    member: { name: string; role: SwarmRole; peer: Peer },
    event: PlanEvent
  ) => Promise<void> | void
  /** Tools for the executors (as `--tools` gives them), by member name; none for the others. */
  readonly tools?: (name: string) => ExecutorTools | undefined
  /** Wrap a role's handler (to watch what it decides). */
  readonly wrap?: (member: { name: string; role: SwarmRole; peer: Peer }, handler: RoleHandler) => RoleHandler
}

/** A provider that talks to the fake Messages API through the real SDK, as `--provider anthropic --base-url` would. */
export function fakeProvider(fake: FakeLlm, model: string): LlmProvider {
  return createProvider({
    provider: 'anthropic',
    env: { ANTHROPIC_API_KEY: 'test' },
    baseUrl: fake.url,
    model,
    timeoutMs: 120_000,
    retry: { maxRetries: 2, baseDelayMs: 50, maxDelayMs: 200 }
  }).provider
}

/* eslint-disable @typescript-eslint/no-explicit-any */
/** The prompt (first user message) of a recorded Messages API request. */
export function promptOf(req: RecordedRequest): string {
  const first = (req.body?.messages ?? []).find((m: any) => m?.role === 'user')
  return typeof first?.content === 'string' ? first.content : JSON.stringify(first?.content ?? '')
}

/** The system prompt of a recorded request. */
export function systemOf(req: RecordedRequest): string {
  const s = req.body?.system
  return typeof s === 'string' ? s : JSON.stringify(s ?? '')
}

/** The model a recorded request asked for. */
export function modelOf(req: RecordedRequest): string {
  return String(req.body?.model ?? '')
}

/**
 * A script step that answers like auto mode, with per-request choices: other
 * auto options (e.g. dependencies only at the leaf level), a reported usage
 * (budget tests), or a delay.
 */
export function autoStep(
  req: RecordedRequest,
  opts: { auto?: AutoOptions; usage?: FakeUsage; delayMs?: number } = {}
): ScriptStep {
  const tool = req.tool
  if (tool === null) return { kind: 'auto', ...(opts.delayMs === undefined ? {} : { delayMs: opts.delayMs }) }
  const schema = (req.body?.tools ?? []).find((t: any) => t?.name === tool)?.input_schema
  const input = autoInput({ api: 'anthropic', tool, schema, prompt: promptOf(req), model: modelOf(req) }, opts.auto)
  return {
    kind: 'tool',
    input,
    ...(opts.usage === undefined ? {} : { usage: opts.usage }),
    ...(opts.delayMs === undefined ? {} : { delayMs: opts.delayMs })
  }
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** `<task title="...">` or `<node title="...">` of a prompt, unescaped. */
export function titleIn(prompt: string, tag: 'task' | 'node'): string | null {
  const m = new RegExp(`<${tag} title="([^"]*)"`).exec(prompt)
  return m === null
    ? null
    : (m[1] as string).replace(/&(lt|gt|quot|amp);/g, (_m, e: string) =>
        e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : '&'
      )
}

/** Execute requests (report_result) grouped by kind and task title: more than one per key is a duplicate execution. */
export function executionsByTask(fake: FakeLlm): Map<string, number> {
  const out = new Map<string, number>()
  for (const r of fake.calls('report_result')) {
    const p = promptOf(r)
    const key = `${p.startsWith('Role: executor (roll-up).') ? 'rollup' : 'leaf'}:${titleIn(p, 'task') ?? '?'}`
    out.set(key, (out.get(key) ?? 0) + 1)
  }
  return out
}

export class RoleSwarm {
  readonly fleet = new PeerFleet()
  readonly members: Member[] = []
  client!: Peer
  private readonly opts: SwarmOptions
  private counter = new Map<SwarmRole, number>()

  private constructor(opts: SwarmOptions) {
    this.opts = opts
  }

  /** Start the client (the hub every other peer bootstraps to), then the role peers, and wait until they all see each other. */
  static async start(opts: SwarmOptions): Promise<RoleSwarm> {
    const s = new RoleSwarm(opts)
    try {
      const dir = join(s.fleet.root, 'client')
      const config = {
        ...parseNodeArgs(
          ['--role', 'observer', '--swarm', 'test', '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0', '--data-dir', dir],
          {}
        ),
        role: 'client' as const
      }
      s.client = await startPeer(config, { syncIntervalMs: 2_000, presenceIntervalMs: 1_000 })
      s.fleet.peers.push(s.client)
      const starts: Array<Promise<Member>> = []
      for (let i = 0; i < (opts.decomposers ?? 0); i++) starts.push(s.add('decomposer'))
      for (let i = 0; i < (opts.scorers ?? 0); i++) starts.push(s.add('scorer'))
      for (let i = 0; i < (opts.executors ?? 0); i++) starts.push(s.add('executor'))
      if (opts.observer === true) starts.push(s.add('observer'))
      await Promise.all(starts)
      await s.waitMeshed()
      return s
    } catch (err) {
      await s.stop()
      throw err
    }
  }

  /** Start one more role peer (bootstrapping to the client); it runs its role at once. */
  async add(role: SwarmRole, name?: string): Promise<Member> {
    const n = (this.counter.get(role) ?? 0) + 1
    this.counter.set(role, n)
    const label = name ?? `${role}-${n}`
    const peer = await this.fleet.start(label, [
      '--role',
      role,
      '--bootstrap',
      this.client.node.addresses()[0] as string
    ])
    const lines: string[] = []
    const model = `fake-${label}`
    const say = (line: string): void => {
      lines.push(line)
      if (this.opts.echo === true || process.env.ROLES_DEBUG === '1')
        console.log(`${Date.now() % 100_000} [${label}] ${line}`)
    }
    let stopRole: () => Promise<void>
    let render: (() => string) | undefined
    if (role === 'observer') {
      const o = startObserver(peer.view, {
        json: false,
        tty: false,
        write: t => {
          say(t)
        }
      })
      stopRole = async () => {
        o.stop()
      }
      render = o.render
    } else {
      const provider = this.opts.llm === 'offline' ? createOfflineProvider() : fakeProvider(this.opts.llm.fake, model)
      const hook = this.opts.afterPublish
      const publish: Peer['publish'] = async (type, plan, cites, body) => {
        const r = await peer.publish(type, plan, cites, body)
        await hook?.({ name: label, role, peer }, r.event)
        return r
      }
      const tools = role === 'executor' ? this.opts.tools?.(label) : undefined
      if (tools !== undefined) peer.view.offer?.(tools.offers())
      const ctx: RoleContext = {
        view: hook === undefined ? peer.view : { ...peer.view, publish },
        provider,
        say,
        ...(tools === undefined ? {} : { tools })
      }
      const handler = HANDLERS[role](ctx)
      const handle = startRole(ctx, this.opts.wrap?.({ name: label, role, peer }, handler) ?? handler)
      stopRole = handle.stop
    }
    const m: Member = {
      name: label,
      role,
      peer,
      id: peer.replica.peerId,
      model,
      lines,
      stopped: false,
      stopRole,
      ...(render === undefined ? {} : { render })
    }
    this.members.push(m)
    return m
  }

  /** Stop a member: its role first (in-flight model calls are aborted), then its peer. It holds whatever it held, unreleased. */
  async stopMember(m: Member): Promise<void> {
    if (m.stopped) return
    m.stopped = true
    await m.stopRole()
    await this.fleet.stop(m.peer)
  }

  live(role?: SwarmRole): Member[] {
    return this.members.filter(m => !m.stopped && (role === undefined || m.role === role))
  }

  /** Every live peer, the client included. */
  peers(): Peer[] {
    return [this.client, ...this.live().map(m => m.peer)]
  }

  /**
   * Until every live peer lists every other in its roster (presence travels
   * by gossip, so this also means the events topic works end to end) and the
   * client, which every peer bootstrapped to, sees them all on the events
   * topic. Direct connections between the other peers keep forming after
   * this (peers dial the addresses presence announces); waiting for all of
   * them takes from seconds to most of a minute on a loaded machine.
   */
  async waitMeshed(ms = 60_000): Promise<void> {
    const peers = this.peers()
    await waitUntil(
      `${peers.length} peers to see each other`,
      () => {
        const topic = new Set(this.client.node.eventTopicPeers())
        return peers.every(p => {
          const listed = new Set(p.roster.list(p.now()).map(r => r.peerId))
          return (
            (p === this.client || topic.has(p.node.peerId)) && peers.every(q => q === p || listed.has(q.node.peerId))
          )
        })
      },
      ms,
      100
    )
  }

  /** Publish a goal as the client; the committee defaults to the live scorers. Returns the plan id. */
  async submit(goal: string, params: Partial<PlanParams> = {}): Promise<PlanId> {
    const committee =
      params.committee ??
      this.live('scorer')
        .map(m => m.id)
        .sort()
    const full: PlanParams = { ...DEFAULT_PARAMS, quorum: majority(committee.length), ...params, committee }
    const problem = validateParams(full)
    if (problem !== null) throw new Error(`bad test plan parameters: ${problem}`)
    const { event } = await this.client.publish('goal-submitted', '', [], { text: goal, params: full })
    return event.id as string as PlanId
  }

  tree(plan: PlanId, peer: Peer = this.client): PlanTree | undefined {
    return peer.replica.tree(plan)
  }

  /** Until every live peer shows one of the statuses for the plan; a timeout says where each peer stands. */
  async waitStatus(plan: PlanId, status: PlanStatus | readonly PlanStatus[], ms: number): Promise<void> {
    const want: readonly PlanStatus[] = typeof status === 'string' ? [status] : status
    const now = (): string =>
      this.peers()
        .map(p => {
          const t = p.replica.tree(plan)
          return t === undefined
            ? 'absent'
            : `${t.status} ${t.nodes.filter(n => n.status === 'done').length}/${t.nodes.length}`
        })
        .join(', ')
    try {
      await waitUntil(
        `plan ${plan.slice(0, 8)} to be ${want.join('|')} on every peer`,
        () => this.peers().every(p => want.includes(p.replica.tree(plan)?.status as PlanStatus)),
        ms,
        100
      )
    } catch (err) {
      throw new Error(`${(err as Error).message} (client first: ${now()})`)
    }
  }

  /**
   * Until every live peer holds the same event set (equal swarmHash and equal
   * treeHash for the plan), stable for half a second; returns that treeHash.
   */
  async waitConverged(plan: PlanId, ms = 30_000): Promise<string> {
    let last = ''
    let since = 0
    const hashOf = (p: Peer): string => `${p.replica.fold.swarmHash()}|${p.replica.fold.treeHash(plan) ?? ''}`
    try {
      await waitUntil(
        'every peer to show the same treeHash',
        () => {
          const hashes = new Set(this.peers().map(hashOf))
          if (hashes.size !== 1) {
            last = ''
            return false
          }
          const h = [...hashes][0] as string
          if (h !== last) {
            last = h
            since = Date.now()
            return false
          }
          return Date.now() - since >= 500
        },
        ms,
        100
      )
    } catch (err) {
      throw new Error(
        `${(err as Error).message} (${this.peers()
          .map(p => `${hashOf(p).slice(0, 8)}:${p.replica.ids.size} events`)
          .join(', ')})`
      )
    }
    return this.client.replica.fold.treeHash(plan) as string
  }

  /** Per live peer: swarmHash, the fold's treeHash and treeHash(tree) recomputed from the tree it serves. */
  hashes(plan: PlanId): Array<{ name: string; swarm: string; fold: string | undefined; tree: string | undefined }> {
    return [{ name: 'client', peer: this.client }, ...this.live().map(m => ({ name: m.name, peer: m.peer }))].map(
      ({ name, peer }) => {
        const t = peer.replica.tree(plan)
        return {
          name,
          swarm: peer.replica.fold.swarmHash(),
          fold: peer.replica.fold.treeHash(plan),
          tree: t === undefined ? undefined : treeHash(t)
        }
      }
    )
  }

  /** The plan folded from the union of every live peer's events, ignoring wall time: the referee's tree hash. */
  unionTreeHash(plan: PlanId): string | undefined {
    const all = new Map<string, PlanEvent>()
    for (const p of this.peers()) {
      for (const e of p.replica.planEvents(plan) ?? []) all.set(e.id, e)
    }
    return foldAll(all.values()).treeHash(plan)
  }

  /** Events of the plan authored by `author`, in a peer's fold. */
  eventsBy(plan: PlanId, author: string, peer: Peer = this.client): PlanEvent[] {
    return (peer.replica.planEvents(plan) ?? []).filter(e => e.env.author === author)
  }

  async stop(): Promise<void> {
    await Promise.allSettled(
      this.members
        .filter(m => !m.stopped)
        .map(async m => {
          m.stopped = true
          await m.stopRole()
        })
    )
    await this.fleet.stopAll()
  }
}
