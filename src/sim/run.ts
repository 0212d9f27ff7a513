import { World } from './world.js'
import { checkRun } from './checks.js'
import type { RunChecks } from './checks.js'
import type { FaultKind } from './faults.js'
import type { RosterFill } from './swarm-sampler.js'
import type { SimHorizon, WorldOptions } from './world-options.js'
import { latencyWords } from './latency.js'

/** One simulated run, as `npm run sim` prints it and the tests check it. */
export interface RunReport {
  readonly seed: number
  readonly nodes: number
  readonly faults: readonly FaultKind[]
  readonly outcome: 'done' | 'deadline' | 'idle'
  readonly ok: boolean
  readonly checks: RunChecks
  /** Virtual ms from the goal(s) to node 0's tree of every plan finishing. */
  readonly completionMs: number | null
  /** Virtual ms from the last event signed to the last node folding anything. */
  readonly convergenceMs: number
  readonly events: number
  /** The plan's treeHash on node 0 at the end (with `steps`, a fingerprint of the run). */
  readonly treeHash: string | null
  readonly messagesPerNode: number
  /** All bytes a node received (events, presence, sync), on average. */
  readonly bytesPerNode: number
  /** Plan traffic (event gossip and sync, not presence) a node received per event of the plan. */
  readonly bytesPerNodePerEvent: number
  /** Presence bytes a node received, on average. */
  readonly presenceBytesPerNode: number
  readonly llmCalls: number
  readonly llmMinimum: number
  readonly executions: number
  readonly tasks: number
  readonly virtualMs: number
  readonly steps: number
  readonly wallMs: number
  readonly heapMb: number
  readonly rssMb: number
  /** Most connections a node held at any sample (neighbours topology; the fixed graph's largest degree otherwise). */
  readonly maxConnections: number
  /** Median connections per live node at the last sample (neighbours topology; the fixed graph's median degree otherwise). */
  readonly connectionsMedian: number
  /** Virtual ms until every roster listed every live node (neighbours topology), or null. */
  readonly rosterFullMs: number | null
  /** What the run waited for beyond the plan (WorldOptions.until). */
  readonly until: SimHorizon
  /** How full the live rosters were at the end: the emptiest's and the median's share of the other live nodes, and how many were full. */
  readonly rosterFill: RosterFill
  /**
   * Most heap in use during the run, sampled on the real clock every 100 ms (the process's, so a run after another sees
   * what that one left).
   */
  readonly peakHeapMb: number
  /** The process's peak resident set so far (getrusage maxrss). */
  readonly peakRssMb: number
  /** The command that replays this run. */
  readonly replay: string
}

/** Goals published at this virtual time by default (World.run, WorldOptions.goalAtMs). */
export const GOAL_AT_MS = 1_500

export function replayCommand(opts: WorldOptions): string {
  const extra = [
    opts.faultSpanMs === undefined ? '' : ` --fault-span-ms ${opts.faultSpanMs}`,
    opts.llmLatencyMs === undefined ? '' : ` --latency-ms ${opts.llmLatencyMs}`,
    opts.llmLatency === undefined ? '' : ` --llm-ms ${latencyWords(opts.llmLatency)}`,
    opts.linkMs === undefined ? '' : ` --link-ms ${opts.linkMs.minMs}-${opts.linkMs.maxMs}`,
    opts.plans === undefined ? '' : ` --plans ${opts.plans}`,
    opts.goalAtMs === undefined ? '' : ` --goal-at-ms ${opts.goalAtMs}`,
    opts.maxDepth === undefined ? '' : ` --depth ${opts.maxDepth}`,
    opts.degree === undefined ? '' : ` --degree ${opts.degree}`,
    opts.review === true ? ' --review' : '',
    opts.trust === true ? ' --trust' : '',
    opts.allowList === true ? ' --allow-list' : '',
    opts.topology === 'fixed' ? ' --topology fixed' : '',
    opts.maxPeers === undefined ? '' : ` --max-peers ${opts.maxPeers}`,
    opts.until === undefined ? '' : ` --until ${opts.until}`
  ].join('')
  return (
    `npm run sim -- --seed ${opts.seed} --nodes ${opts.nodes} ` +
    `--faults ${opts.faults.length === 0 ? 'none' : opts.faults.join(',')}${extra}`
  )
}

/** Run one seed to the end, check it, and report. */
export async function runSeed(opts: WorldOptions): Promise<RunReport> {
  return (await runWorld(opts)).report
}

/** Run one seed to the end and check it: the report, and the world as the run left it (its nodes stopped). */
export async function runWorld(opts: WorldOptions): Promise<{ report: RunReport; world: World }> {
  const t0 = performance.now()
  // On the real clock, beside the run: virtual time drains to setImmediate between timers, so this fires during it and
  // changes nothing in it.
  let peakHeap = process.memoryUsage().heapUsed
  const heapSampler = setInterval(() => {
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
  }, 100)
  const w = await World.create(opts)
  let outcome: RunReport['outcome']
  try {
    outcome = await w.run()
  } finally {
    await w.stop()
    clearInterval(heapSampler)
  }
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
  const checks = checkRun(w)
  const n = w.nodes.length
  let messages = 0
  let bytes = 0
  let planBytes = 0
  let presenceBytes = 0
  for (const t of w.network.traffic.values()) {
    messages += t.messagesReceived
    bytes += t.bytesReceived
    planBytes += t.eventBytesReceived + t.syncBytesReceived
    presenceBytes += t.presenceBytesReceived
  }
  const decomposers = w.nodes.filter(x => x.role === 'decomposer').length
  let tasks = 0
  let minimum = 0
  for (const plan of w.plans) {
    const tree = w.nodes[0]?.runtime?.view.loadTree(plan)
    const composites = tree?.nodes.filter(x => x.kind === 'composite').length ?? 0
    tasks += tree?.tasks.length ?? 0
    minimum += composites * (decomposers + (tree?.params.committee.length ?? 0)) + (tree?.tasks.length ?? 0)
  }
  const lastFold = Math.max(...w.nodes.map(x => x.lastFoldAt))
  const ok = outcome === 'done' && checks.problems.length === 0
  const degrees = w.nodes.map(x => w.network.linkCount(x.peerId)).sort((a, b) => a - b)
  const report: RunReport = {
    seed: opts.seed,
    nodes: n,
    faults: opts.faults,
    outcome,
    ok,
    checks,
    completionMs: w.finishedAt === undefined ? null : Math.round(w.finishedAt - (opts.goalAtMs ?? GOAL_AT_MS)),
    convergenceMs: Math.round(Math.max(0, lastFold - w.lastEventAt)),
    events: w.events,
    treeHash: w.plan === undefined ? null : (w.nodes[0]?.runtime?.view.treeHash(w.plan) ?? null),
    messagesPerNode: Math.round(messages / n),
    bytesPerNode: Math.round(bytes / n),
    bytesPerNodePerEvent: w.events === 0 ? 0 : Math.round(planBytes / n / w.events),
    presenceBytesPerNode: Math.round(presenceBytes / n),
    llmCalls: w.calls.decompose + w.calls.score + w.calls.execute + w.calls.review,
    llmMinimum: minimum,
    executions: w.calls.execute,
    tasks,
    virtualMs: Math.round(w.time.elapsed),
    steps: w.time.steps,
    wallMs: Math.round(performance.now() - t0),
    heapMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    rssMb: Math.round(process.memoryUsage().rss / 2 ** 20),
    maxConnections: w.topology === 'neighbours' ? w.connections.maxConnections : (degrees[degrees.length - 1] ?? 0),
    connectionsMedian:
      w.topology === 'neighbours' ? w.connections.medianAtEnd : (degrees[Math.floor((degrees.length - 1) / 2)] ?? 0),
    rosterFullMs: w.rosterFullMs ?? null,
    until: w.until,
    rosterFill: w.rosterFill ?? w.measureRosterFill(),
    peakHeapMb: Math.round(peakHeap / 2 ** 20),
    peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    replay: replayCommand(opts)
  }
  return { report, world: w }
}
