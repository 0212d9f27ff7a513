/**
 * The long run (`npm run sim -- --days N`): a swarm that runs for weeks of
 * virtual time, with goals arriving all along (some kept only a few days,
 * most the default DEFAULT_RETAIN_DAYS), nodes that crash and restart on
 * their stores and newcomers that join on empty ones, and retention as every
 * node runs it (src/runtime/retention.ts, started by the node runtime).
 *
 * What it checks, at every simulated day and whenever it skips idle time:
 * every live node's store, sync id set and tombstones stay within the bound
 * the plans' own events give (ledger.ts, check.ts); no plan that any node
 * expired is ever stored or folded again by any node (every store is
 * watched as it takes rows); and at the end, every plan finished, and every
 * plan held has one treeHash on every node that holds it (end-check.ts).
 *
 * Idle time is skipped, not simulated (skipper.ts); the run measures that
 * idle traffic in windows it does simulate (traffic.ts) and reports bytes
 * per node per day both ways. The schedule is drawn up front from the seed
 * (appointments.ts), and run-long.ts works through it.
 */
export { runLong } from './run-long.js'
export { longReplayCommand } from './options.js'
export { BOUND_SLACK_MS, WARM_MS, formingMs } from './timing.js'
export type { LongRunOptions } from './options.js'
export type { LongRunReport } from './report.js'
