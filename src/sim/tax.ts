import { runWorld } from './run.js'
import { DRIVER_CONCURRENCY, runCentral } from './central.js'
import { PATH_PARTS, criticalPath } from './critical-path.js'
import { latencyOf } from './latency.js'
import type { CentralResult } from './central.js'
import type { CriticalPath, PathParts } from './critical-path.js'
import type { CallKind } from './latency.js'
import type { RunReport } from './run.js'
import type { World } from './world.js'
import type { WorldOptions } from './world-options.js'
import type { PlanTree } from '../core/tree.js'

export { parseLinkMs } from './latency.js'

/** One run of the swarm against the central scheduler with the same calls (bench/tax/index.ts). */
export interface TaxRun {
  readonly report: RunReport
  /** The swarm's makespan: the goals to node 0 seeing every plan finished (virtual ms). */
  readonly swarmMs: number
  /** The central scheduler's, under the swarm's limits, and with no limit at all (the calls' critical path). */
  readonly central: CentralResult
  readonly unlimited: CentralResult
  /** swarmMs / central.makespanMs. */
  readonly tax: number
  /** A lower bound on any schedule of these calls under these limits (CentralResult.floorMs), and swarmMs over it. */
  readonly floorMs: number
  readonly overFloor: number
  /** The critical path of the plan that finished last on node 0. */
  readonly path: CriticalPath
  /** Model calls the swarm made beyond those the central scheduler replays (second attempts, lost races). */
  readonly extraCalls: number
}

/** The latency the world's calls had, as a function of the call (the same the swarm's sim provider used). */
export function latencyFor(opts: WorldOptions): (kind: CallKind, key: string) => number {
  const spec = opts.llmLatency ?? { kind: 'fixed' as const, ms: opts.llmLatencyMs ?? 300 }
  return (_kind, key) => latencyOf(spec, opts.seed, key)
}

/** The plans' final trees on node 0, in the order submitted. */
export function finalTrees(w: World): PlanTree[] {
  return w.plans.map(p => {
    const t = w.nodes[0]?.runtime?.view.loadTree(p)
    if (t === undefined) throw new Error(`plan ${p} is not on node 0`)
    return t
  })
}

/** Run the swarm (recorded), then the central scheduler on the same calls, and compare. */
export async function runTax(opts: WorldOptions): Promise<TaxRun> {
  const { report, world } = await runWorld({ ...opts, record: true })
  if (!report.ok || report.completionMs === null)
    throw new Error(`the swarm's run failed: ${report.checks.problems.slice(0, 5).join('; ')} (${report.replay})`)
  const trees = finalTrees(world)
  const latency = latencyFor(opts)
  const executors = world.nodes.filter(n => n.role === 'executor').length
  const rec = world.record
  if (rec === undefined) throw new Error('runTax: the run was not recorded')
  // The central scheduler replays the swarm's calls: each must be one the swarm made (same identity, so same latency).
  const made = new Set<string>()
  for (const list of rec.calls.values()) for (const c of list) made.add(c.key)
  // A ballot waits for the proposals it scored, as the swarm's did (the rest came after its scorer's window).
  const depsOf = (id: string): readonly string[] | undefined => rec.events.get(id)?.event.env.deps
  const central = runCentral(
    trees.map(tree => ({ tree, depsOf })),
    latency,
    { roleConcurrency: DRIVER_CONCURRENCY, executors, executorConcurrency: DRIVER_CONCURRENCY }
  )
  const unlimited = runCentral(
    trees.map(tree => ({ tree, depsOf })),
    latency,
    { roleConcurrency: Infinity, executors: Infinity, executorConcurrency: Infinity, perPlanClaims: Infinity }
  )
  const strangers = central.keys.filter(k => !made.has(k))
  if (strangers.length > 0)
    throw new Error(
      `runTax: the central scheduler made ${strangers.length} calls the swarm never made, e.g. ${JSON.stringify(strangers[0])}`
    )
  let lastPlan = world.plans[0]
  for (const [p, at] of world.finishedAtByPlan)
    if (lastPlan === undefined || at > (world.finishedAtByPlan.get(lastPlan) ?? -Infinity)) lastPlan = p
  if (lastPlan === undefined) throw new Error('no plan')
  const path = criticalPath(world, lastPlan, DRIVER_CONCURRENCY)
  return {
    report,
    swarmMs: report.completionMs,
    central,
    unlimited,
    tax: report.completionMs / central.makespanMs,
    floorMs: central.floorMs(unlimited.makespanMs),
    overFloor: report.completionMs / central.floorMs(unlimited.makespanMs),
    path,
    extraCalls: report.llmCalls - central.calls
  }
}

/** The fixed waits of the protocol, as the critical path names them: each one's part of the tax. */
export const FIXED_WAITS = ['gossip', 'confirm', 'stagger', 'ballotWindow', 'driver', 'publish', 'other'] as const

/** A tax run as bench/tax/index.ts reports it: seconds, ratios, and where the swarm's extra time went. */
export interface TaxFigures {
  readonly nodes: number
  readonly plans: number
  readonly swarmS: number
  readonly centralS: number
  /** The central scheduler with no limits at all: the longest chain of the calls alone. */
  readonly unlimitedS: number
  readonly tax: number
  /** A lower bound on any schedule under the limits (the chain, or the busiest resource's work over its slots). */
  readonly floorS: number
  readonly overFloor: number
  /** The critical path of the last plan to finish, in s, part by part (they add up to swarmS). */
  readonly pathS: Readonly<Record<keyof PathParts, number>>
  /**
   * Each fixed wait's share of the tax (its ms on the path / the central makespan), and the remainder: what the
   * path's calls and slot waits add (or save) against the central makespan. tax - 1 = the shares + remainder.
   */
  readonly taxParts: Readonly<Record<(typeof FIXED_WAITS)[number] | 'remainder', number>>
  /** Events and model calls on the path, and its hops (events that came from another node). */
  readonly pathEvents: number
  readonly pathCalls: number
  readonly hops: number
  /** Model calls the central scheduler made, and those the swarm made beyond them (lost races, retries). */
  readonly calls: number
  readonly extraCalls: number
  /** Executions beyond one a task; backups: claims on another member's chain (RunChecks.claimsOnOthersChains). */
  readonly duplicateExecutions: number
  readonly backups: number
  readonly events: number
  readonly virtualS: number
  readonly wallS: number
  readonly peakRssMb: number
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000
const r4 = (x: number): number => Math.round(x * 10_000) / 10_000

/** The figures of one run (`wallS` the run's wall time, measured by the caller). */
export function taxFigures(run: TaxRun, wallS: number): TaxFigures {
  const central = run.central.makespanMs
  const p = run.path.parts
  const pathS = Object.fromEntries(PATH_PARTS.map(k => [k, r3(p[k] / 1000)])) as Record<keyof PathParts, number>
  const shares = Object.fromEntries(FIXED_WAITS.map(k => [k, r4(p[k] / central)])) as Record<
    (typeof FIXED_WAITS)[number],
    number
  >
  return {
    nodes: run.report.nodes,
    plans: run.central.finishMs.size,
    swarmS: r3(run.swarmMs / 1000),
    centralS: r3(central / 1000),
    unlimitedS: r3(run.unlimited.makespanMs / 1000),
    tax: r4(run.tax),
    floorS: r3(run.floorMs / 1000),
    overFloor: r4(run.overFloor),
    pathS,
    taxParts: { ...shares, remainder: r4((p.llm + p.slot - central) / central) },
    pathEvents: run.path.events,
    pathCalls: run.path.calls,
    hops: run.path.hops,
    calls: run.central.calls,
    extraCalls: run.extraCalls,
    duplicateExecutions: run.report.checks.duplicateExecutions,
    backups: run.report.checks.claimsOnOthersChains,
    events: run.report.events,
    virtualS: r3(run.report.virtualMs / 1000),
    wallS: r3(wallS),
    peakRssMb: run.report.peakRssMb
  }
}
