/**
 * A local swarm of real processes for the e2e, scale, load and history benchmarks: CLI children
 * (`--role <role>`, built or through tsx: `CliMode`) on 127.0.0.1, each with its own data
 * dir, `--http` for /status, and the fake LLM as its Anthropic base URL; plus
 * this process as the goal's author (an in-process peer, like `submit`, that
 * every child bootstraps to and that folds every event, so it sees the plan
 * finish and holds the events to measure).
 */
import { availableParallelism } from 'node:os'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseNodeArgs } from '../../src/runtime/config.js'
import { startPeer, type Peer } from '../../src/app/peer.js'
import { DEFAULT_PARAMS, majority } from '../../src/core/events.js'
import { encodeEnvelope, SIGNATURE_BYTES } from '../../src/wire/codec.js'
import {
  BUILT_CLI,
  CLI,
  cliEnv,
  spawnCommand,
  stopCliChildren,
  tempDir,
  type CliChild
} from '../../test/helpers/cli-process.js'
import { waitUntil } from '../../test/helpers/wait.js'
import { bytesBetween, socketSnapshot, tcpPortOf } from './socket-bytes.js'
import { isFinished } from '../../src/core/view.js'
import type { EventId, PeerIdString, PlanEvent, PlanId, PlanParams } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { CliMode } from './util.js'

export const SWARM = 'bench-e2e'
const TICKS_PER_S = 100

export type Role = 'decomposer' | 'scorer' | 'executor'

export interface SwarmNode {
  readonly name: string
  readonly role: Role
  readonly child: CliChild
  readonly peerId: PeerIdString
  readonly http: string
  /** Its libp2p TCP port. */
  readonly port: number | undefined
}

export type { CliMode }

/** The command line of a child of either CliMode: `node dist/src/cli.js`, or `npm start`'s `node --import tsx src/cli.ts`. */
export function cliCommand(mode: CliMode): readonly string[] {
  // E2E_CPU_PROF=DIR: every child writes a V8 CPU profile into DIR when it exits (open it in Chrome's DevTools).
  const prof = process.env.E2E_CPU_PROF
  const flags = prof === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${prof}`]
  return mode === 'tsx' ? [CLI[0] as string, ...flags, ...CLI.slice(1)] : [process.execPath, ...flags, BUILT_CLI]
}

/** How many of each role a swarm of `n` processes runs: 30% decomposers, 30% scorers, the rest executors (1/1/1 at 3). */
export function rolesFor(n: number): Record<Role, number> {
  const d = Math.max(1, Math.floor(n * 0.3))
  const s = Math.max(1, Math.floor(n * 0.3))
  return { decomposer: d, scorer: s, executor: n - d - s }
}

export interface ProcSample {
  readonly cpuMs: number
  readonly rssMb: number
  readonly hwmMb: number
}

/** CPU time (user + system) and resident memory of a process, from /proc. */
export function sampleProc(pid: number): ProcSample | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 'NaN')
    return { cpuMs, rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 }
  } catch {
    return null
  }
}

export interface PlanRun {
  readonly plan: PlanId
  readonly status: string
  /** Publish of the goal to the author peer folding the completed plan. */
  readonly makespanMs: number
  /** Goal stamp to the first task-claimed stamp. */
  readonly firstClaimMs: number
  /** Goal stamp to the root roll-up's result stamp. */
  readonly stampMakespanMs: number
  /** The plan's completion (as the author saw it) to every process reporting the same treeHash, completed. */
  readonly convergenceMs: number | null
  readonly events: number
  readonly eventBytes: number
  /**
   * TCP payload bytes among the swarm's processes from submit to convergence (all traffic: events, gossip control,
   * presence, sync, pings).
   */
  readonly wireBytes: number
  /** Sockets that closed during the plan (their bytes are not counted). */
  readonly wireSocketsClosed: number
  readonly eventsByType: Record<string, number>
  /** The critical path of the plan, split into LLM time and the overheads between calls (ms). */
  readonly criticalPath: CriticalPath
  readonly taskDuplicates: number
}

export interface CriticalPath {
  readonly calls: number
  readonly llmMs: number
  /** Node ready -> proposal stamped, less the call. */
  readonly proposeMs: number
  /** Last cited proposal -> deciding ballot, less the call: ballot windows and propagation. */
  readonly ballotMs: number
  /** Task ready -> claim stamped: claim waits (stagger) and propagation. */
  readonly claimMs: number
  /** Claim -> result, less the call: the confirm wait and the rest of the executor's work. */
  readonly executeMs: number
  /** Publish of the goal -> its stamp, and the root's result stamp -> folded at the author. */
  readonly edgesMs: number
}

export class BenchSwarm {
  readonly nodes: SwarmNode[] = []
  client!: Peer
  /** At start: the smallest share of the other processes that any process listed in its roster (1 = full mesh). */
  rosterShare = 0
  /** Ms from the first spawn until every process listed every other (null: not within the deadline). */
  rosterFullMs: number | null = null
  /** Ms from the first spawn until every process had printed that it started. */
  allStartedMs = 0
  /**
   * CPU the swarm's processes and this one (the bootstrap peer) used while the
   * rosters filled, as a share of the machine's cores: near 1 means the wait
   * was for CPU, well below it that it was for timers and the network.
   */
  fillCpuShare: number | null = null
  /** The same for this process alone, as a share of one core (it serves every newcomer's first dial). */
  fillBootstrapCpuShare: number | null = null
  /**
   * Presence announcements this process (the bootstrap peer) took in from the start until the rosters were full: about
   * every one the swarm sent.
   */
  fillPresenceAccepted: number | null = null
  private readonly home = tempDir('bench-e2e')

  static async start(
    n: number,
    llmUrl: string,
    log: (s: string) => void,
    cli: CliMode = 'built',
    meshTimeoutMs = 240_000,
    /** More options for every process (e.g. `--open-plans-per-author 0`). */
    extraArgs: readonly string[] = [],
    /** Node's own flags for the process of this name (e.g. `--cpu-prof` for one of each role). */
    nodeFlags: (name: string) => readonly string[] = () => []
  ): Promise<BenchSwarm> {
    const s = new BenchSwarm()
    const spawnedAt = Date.now()
    const config = {
      ...parseNodeArgs(
        [
          '--role',
          'observer',
          '--swarm',
          SWARM,
          '--no-mdns',
          '--listen',
          '/ip4/127.0.0.1/tcp/0',
          '--data-dir',
          join(s.home, 'client')
        ],
        {}
      ),
      role: 'client' as const
    }
    s.client = await startPeer(config)
    const seed = s.client.node.addresses()[0] as string
    const env = cliEnv(s.home, {
      ANTHROPIC_API_KEY: 'bench',
      ...(process.env.E2E_TRACE !== undefined ? { DEBUG: process.env.E2E_DEBUG ?? 'plan-swarm:executor' } : {})
    })
    const counts = rolesFor(n)
    const starting: Array<Promise<void>> = []
    for (const role of ['decomposer', 'scorer', 'executor'] as const) {
      for (let i = 1; i <= counts[role]; i++) {
        const name = `${role[0] as string}${i}`
        const [node, ...cli0] = cliCommand(cli)
        const child = spawnCommand(
          [
            node as string,
            ...nodeFlags(name),
            ...cli0,
            '--role',
            role,
            '--swarm',
            SWARM,
            '--no-mdns',
            '--listen',
            '/ip4/127.0.0.1/tcp/0',
            '--data-dir',
            join(s.home, name),
            '--bootstrap',
            seed,
            '--http',
            '127.0.0.1:0',
            '--json',
            '--provider',
            'anthropic',
            '--base-url',
            llmUrl,
            '--model',
            `fake-${name}`,
            ...extraArgs
          ],
          { env, name }
        )
        starting.push(
          child
            .waitForJson(o => o.event === 'started', 300_000)
            .then(o => {
              s.nodes.push({
                name,
                role,
                child,
                peerId: o.peerId as PeerIdString,
                http: o.http as string,
                port: tcpPortOf(String((o.addresses as string[] | undefined)?.[0] ?? ''))
              })
            })
        )
      }
    }
    try {
      await Promise.all(starting)
    } catch (err) {
      await s.stop()
      throw err
    }
    s.allStartedMs = Date.now() - spawnedAt
    log(`  ${n} processes started in ${s.allStartedMs} ms; waiting until every one lists every other in its roster`)
    const ownCpu = (): number => {
      const u = process.cpuUsage()
      return (u.user + u.system) / 1000
    }
    const cpuAt = (): number => s.pids().reduce((sum, pid) => sum + (sampleProc(pid)?.cpuMs ?? 0), 0) + ownCpu()
    const fillStart = { wall: Date.now(), cpu: cpuAt(), own: ownCpu() }
    // Full rosters matter (executors rank tasks among the executors they list, scorers wait for the
    // decomposers they list); a swarm that does not get there within the deadline runs anyway, and
    // the smallest share of the others any process lists is reported.
    const deadline = Date.now() + meshTimeoutMs
    let toldAt = Date.now()
    for (;;) {
      let worst = 1
      let short = 0
      let silent = 0
      let worstAnswering = 1
      // All at once: one process at a time would measure the polling more than the rosters.
      await Promise.all(
        s.nodes.map(async node => {
          try {
            const st = (await (await fetch(`${node.http}/status`, { signal: AbortSignal.timeout(5_000) })).json()) as {
              roster: Array<{ peerId: string }>
            }
            const listed = new Set(st.roster.map(r => r.peerId))
            const share = s.nodes.filter(o => o !== node && listed.has(o.peerId)).length / Math.max(1, n - 1)
            if (share < 1) short++
            worstAnswering = Math.min(worstAnswering, share)
          } catch {
            silent++
          }
        })
      )
      const mine = new Set(s.client.roster.list(s.client.now()).map(r => r.peerId as string))
      const clientShare = s.nodes.filter(o => mine.has(o.peerId)).length / n
      worst = silent > 0 ? 0 : Math.min(worstAnswering, clientShare)
      s.rosterShare = worst
      if (worst >= 1) {
        s.rosterFullMs = Date.now() - spawnedAt
        const wall = Math.max(1, Date.now() - fillStart.wall)
        s.fillCpuShare = (cpuAt() - fillStart.cpu) / wall / availableParallelism()
        s.fillBootstrapCpuShare = (ownCpu() - fillStart.own) / wall
        s.fillPresenceAccepted = s.client.node.stats().presence.accepted
      }
      if (worst >= 1 || Date.now() > deadline) break
      if (Date.now() - toldAt >= 5_000) {
        toldAt = Date.now()
        log(
          `  ${Math.round((Date.now() - spawnedAt) / 1000)} s: ${short} of ${n} rosters not ` +
            `full, ${silent} not answering /status within 5 s; the emptiest that answered ` +
            `lists ${Math.round(worstAnswering * 100)}% of the others, the author's ` +
            `peer ${Math.round(clientShare * 100)}%`
        )
      }
      await new Promise(resolve => setTimeout(resolve, 1_000))
    }
    return s
  }

  pids(): number[] {
    return this.nodes.map(n => n.child.pid)
  }

  /** The libp2p ports of the children and of the author peer in this process. */
  ports(): Set<number> {
    const ports = [...this.nodes.map(n => n.port), ...this.client.node.addresses().map(tcpPortOf)]
    return new Set(ports.filter((p): p is number => p !== undefined))
  }

  /** Bytes per second among the swarm's processes while no plan runs (presence, gossip heartbeats, sync rounds, pings). */
  async idleWireBytesPerS(ms: number): Promise<number> {
    const before = socketSnapshot(this.ports())
    await new Promise(resolve => setTimeout(resolve, ms))
    return Math.round((bytesBetween(before, socketSnapshot(this.ports())).bytes * 1000) / ms)
  }

  /** Publish a goal as its author and wait for the plan to finish; then measure it. */
  async runPlan(goal: string, latencyMs: number, params: Partial<PlanParams>, timeoutMs: number): Promise<PlanRun> {
    const committee = this.nodes
      .filter(n => n.role === 'scorer')
      .map(n => n.peerId)
      .sort()
    const full: PlanParams = { ...DEFAULT_PARAMS, quorum: majority(committee.length), ...params, committee }
    const finished = (t: PlanTree | undefined): boolean =>
      t !== undefined && (isFinished(t) || t.status === 'budget-exhausted')
    const watch: { plan?: PlanId; done?: () => void } = {}
    const over = new Promise<void>(resolve => {
      watch.done = resolve
    })
    const off = this.client.replica.onFolded(() => {
      if (watch.plan !== undefined && finished(this.client.replica.tree(watch.plan))) watch.done?.()
    })
    const wire0 = socketSnapshot(this.ports())
    const t0 = Date.now()
    const { event: goalEvent } = await this.client.publish('goal-submitted', '', [], { text: goal, params: full })
    const plan = goalEvent.id as string as PlanId
    watch.plan = plan
    if (finished(this.client.replica.tree(plan))) watch.done?.()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      over,
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`plan ${plan} not finished within ${timeoutMs} ms`)), timeoutMs)
      })
    ]).finally(() => {
      off()
      clearTimeout(timer)
    })
    const t1 = Date.now()
    const tree = this.client.replica.tree(plan) as PlanTree
    const hash = this.client.replica.fold.treeHash(plan)
    // Convergence: every process reports the plan completed with the author's treeHash.
    let convergenceMs: number | null = null
    try {
      await waitUntil(
        'every process to hold the finished plan',
        async () => {
          const sts = await Promise.all(
            this.nodes.map(
              async n =>
                (await (await fetch(`${n.http}/status`, { signal: AbortSignal.timeout(5_000) })).json()) as {
                  plans: Array<{ id: string; treeHash: string }>
                }
            )
          )
          return sts.every(st => st.plans.some(p => p.id === plan && p.treeHash === hash)) ? true : undefined
        },
        60_000,
        50
      )
      convergenceMs = Date.now() - t1
    } catch {
      convergenceMs = null
    }
    const wire = bytesBetween(wire0, socketSnapshot(this.ports()))
    const events = this.client.replica.planEvents(plan) ?? []
    const byType: Record<string, number> = {}
    let bytes = 0
    for (const e of events) {
      byType[e.env.type] = (byType[e.env.type] ?? 0) + 1
      bytes += encodeEnvelope(e.env).length + SIGNATURE_BYTES
    }
    const goalMs = goalEvent.env.hlc.ms
    const claims = events.filter(e => e.env.type === 'task-claimed').map(e => e.env.hlc.ms)
    const rootTask = tree.tasks.find(t => t.node === tree.nodes.find(n => n.parent === null)?.id)
    const rootResult = rootTask?.results.find(r => r.accepted)
    return {
      plan,
      status: tree.status,
      makespanMs: t1 - t0,
      firstClaimMs: claims.length === 0 ? NaN : Math.min(...claims) - goalMs,
      stampMakespanMs: rootResult === undefined ? NaN : rootResult.at.ms - goalMs,
      convergenceMs,
      events: events.length,
      eventBytes: bytes,
      wireBytes: wire.bytes,
      wireSocketsClosed: wire.closed,
      eventsByType: byType,
      criticalPath: criticalPath(tree, new Map(events.map(e => [e.id, e])), latencyMs, t0, t1),
      taskDuplicates: tree.tasks.reduce((s, t) => s + t.duplicates, 0)
    }
  }

  /** The plan's events and the model requests, in time order, relative to the goal's stamp (for E2E_TRACE). */
  trace(plan: PlanId, reqs: ReadonlyArray<{ at: number; tool: string | null; body: unknown }>): string[] {
    const events = this.client.replica.planEvents(plan) ?? []
    const goal = events.find(e => e.env.type === 'goal-submitted')
    const t0 = goal?.env.hlc.ms ?? 0
    const who = new Map(this.nodes.map(n => [n.peerId as string, n.name]))
    const rows: Array<[number, string]> = events.map(e => [
      e.env.hlc.ms - t0,
      `${who.get(e.env.author) ?? 'client'} ${e.env.type} ${e.id.slice(0, 6)} deps ${e.env.deps.map(d => d.slice(0, 6)).join(',')}`
    ])
    for (const r of reqs)
      rows.push([r.at - t0, `llm ${r.tool ?? ''} ${String((r.body as { model?: string }).model ?? '')}`])
    return rows.sort((a, b) => a[0] - b[0]).map(([t, s]) => `${t} ${s}`)
  }

  async stop(): Promise<void> {
    if (process.env.E2E_TRACE !== undefined)
      for (const n of this.nodes)
        writeFileSync(`${process.env.E2E_TRACE}-${this.nodes.length}p-${n.name}.stderr`, n.child.stderr())
    await stopCliChildren(10_000)
    await this.client.stop()
  }
}

/**
 * Walks the plan back from the root's result to the goal along the events
 * that made each step possible, and splits the time into LLM calls and the
 * gaps between them.
 */
export function criticalPath(
  tree: PlanTree,
  events: ReadonlyMap<EventId, PlanEvent>,
  latencyMs: number,
  t0: number,
  t1: number
): CriticalPath {
  const ms = (id: EventId | undefined): number => events.get(id as EventId)?.env.hlc.ms ?? NaN
  const latest = (ids: readonly EventId[], pred: (e: PlanEvent) => boolean = () => true): PlanEvent | undefined => {
    let best: PlanEvent | undefined
    for (const id of ids) {
      const e = events.get(id)
      if (e === undefined || !pred(e)) continue
      if (
        best === undefined ||
        e.env.hlc.ms > best.env.hlc.ms ||
        (e.env.hlc.ms === best.env.hlc.ms && e.env.hlc.c > best.env.hlc.c)
      )
        best = e
    }
    return best
  }
  const out = { calls: 0, llmMs: 0, proposeMs: 0, ballotMs: 0, claimMs: 0, executeMs: 0, edgesMs: 0 }
  const goal = events.get(tree.plan as string as EventId)
  const rootNode = tree.nodes.find(n => n.parent === null)
  let task = tree.tasks.find(t => t.node === rootNode?.id)
  let result = task?.results.find(r => r.accepted)
  if (goal === undefined || task === undefined || result === undefined) return out
  out.edgesMs = goal.env.hlc.ms - t0 + (t1 - result.at.ms)
  let cursor: PlanEvent | undefined
  for (let guard = 0; guard < 100 && task !== undefined && result !== undefined; guard++) {
    const claimMs = ms(result.claim)
    out.calls++
    out.llmMs += latencyMs
    out.executeMs += result.at.ms - claimMs - latencyMs
    out.claimMs += claimMs - (task.readyAt?.ms ?? claimMs)
    cursor = latest(task.evidence, e => e.env.type !== 'split-proposed')
    if (cursor?.env.type !== 'result-reported') break
    const body = (cursor as PlanEvent<'result-reported'>).env.body
    task = tree.tasks.find(t => t.id === body.task)
    result = task?.results.find(r => r.id === cursor?.id)
  }
  // Then splits back to the goal: deciding ballot <- latest proposal it cites <- what made the node.
  for (let guard = 0; guard < 100 && cursor?.env.type === 'ballot-cast'; guard++) {
    const ballot = cursor
    const proposal = latest(ballot.env.deps, e => e.env.type === 'split-proposed')
    if (proposal === undefined) break
    out.calls += 2
    out.llmMs += 2 * latencyMs
    out.ballotMs += ballot.env.hlc.ms - proposal.env.hlc.ms - latencyMs
    const made = latest(proposal.env.deps)
    out.proposeMs += proposal.env.hlc.ms - (made?.env.hlc.ms ?? proposal.env.hlc.ms) - latencyMs
    cursor = made
  }
  return out
}
