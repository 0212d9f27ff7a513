import type { LatencySpec } from '../latency.js'
import type { World } from '../world.js'

/** What a long run is asked to do: one seed decides the rest, so the same options give the same run. */
export interface LongRunOptions {
  readonly seed: number
  /** Nodes at the start (the client, node 0, never crashes). */
  readonly nodes: number
  /** Virtual days the run lasts. */
  readonly days: number
  /** Goals submitted over the run (`--plans`), at times of a Poisson process over all but the last `tailDays`. */
  readonly plans: number
  /** Crashes, each followed by a restart on the node's store (default days / 3, at least 1). */
  readonly restarts?: number
  /** Newcomers that join on an empty store (executors; default days / 10, at least 1). */
  readonly joins?: number
  /** Share of goals with a short `retainDays` (default 0.25); the rest keep the default. */
  readonly shortShare?: number
  /** The short `retainDays`, drawn uniformly from [lo, hi] (default 1 to 7). */
  readonly shortRetainDays?: readonly [number, number]
  /** The plans' depth (default 1). */
  readonly maxDepth?: number
  readonly llmLatencyMs?: number
  readonly llmLatency?: LatencySpec
  readonly linkMs?: { readonly minMs: number; readonly maxMs: number }
  readonly maxPeers?: number
  /** Told one line at every simulated day, crash, restart and newcomer, and at each of the first 20 problems found. */
  readonly trace?: (line: string) => void
  /** Test hook: called at every day's check, before it looks (the canary in test/sim/long-run.test.ts meddles here). */
  readonly onDay?: (day: number, world: World) => void | Promise<void>
}

/** The command that replays a long run: every option that changes the run, so a failure can be run again as it was. */
export function longReplayCommand(o: LongRunOptions): string {
  const extra = [
    o.restarts === undefined ? '' : ` --restarts ${o.restarts}`,
    o.joins === undefined ? '' : ` --joins ${o.joins}`,
    o.maxDepth === undefined ? '' : ` --depth ${o.maxDepth}`,
    o.llmLatencyMs === undefined ? '' : ` --latency-ms ${o.llmLatencyMs}`,
    o.maxPeers === undefined ? '' : ` --max-peers ${o.maxPeers}`
  ].join('')
  return `npm run sim -- --seed ${o.seed} --nodes ${o.nodes} --plans ${o.plans} --days ${o.days}${extra}`
}
