import '../src/polyfill.js'
import { benchFold } from './fold/index.js'
import { benchNet } from './net/index.js'
import { benchE2e } from './e2e/index.js'
import { benchScale } from './scale/index.js'
import { benchToolCache } from './tool-cache/index.js'
import { benchLoad } from './load/index.js'
import { benchBigPlan } from './big-plan/index.js'
import { benchTax } from './tax/index.js'
import { benchIdSet } from './id-set/index.js'
import { benchHistory } from './history/index.js'
import { benchByzantine } from './byzantine/index.js'
import { benchQuick } from './quick/index.js'
import { BenchUnavailable } from './common/util.js'

/**
 * `npm run bench -- <name>`: runs one benchmark (or all), prints progress on
 * stderr and, as its last line on stdout, one JSON object with the figures.
 * `--help` lists the benchmarks and their options.
 */
const BENCHES: Record<string, () => Promise<Record<string, unknown>>> = {
  fold: benchFold,
  net: benchNet,
  e2e: benchE2e,
  scale: benchScale,
  'tool-cache': benchToolCache,
  load: benchLoad,
  'big-plan': benchBigPlan,
  tax: benchTax,
  'id-set': benchIdSet,
  history: benchHistory,
  byzantine: benchByzantine,
  quick: benchQuick
}

const HELP = `npm run bench -- [name ...] [options]    (no name: all of them but quick, in this order)

Each writes bench/results/<name>.json (created, ignored by git) and prints one JSON object as its last line.
BENCHMARKS.md has the current figures and how each is measured.

  fold    the pure fold: 99,999 events one at a time and as a batch, rebuild, decode, verify;
          then the memory part (bench/fold/memory.ts). BENCH_RUNS=5
  net     real processes on this machine against bare libp2p nodes. Parts: NET_PARTS=gossip,catchup,heal,footprint,policy
          (default all). The heal part needs root, iproute2 and nftables (installed with apt-get when missing).
          --cli=built|tsx (footprint). Other knobs (NET_SIZES, HEAL_TRIALS, NET_IDLE_S, ...): bench/net/index.ts
  e2e     a whole plan on a swarm of real processes against an ideal central scheduler (the leaderless tax).
          --quick --sizes=3,10,30 --latencies=50,300,2000 --repeats=3 --sensitivity-sizes=3,10 --cli=built|tsx
          E2E_TRACE=PREFIX E2E_DEBUG=NAMESPACES E2E_CPU_PROF=DIR. Needs ss (iproute2).
  scale   idle background and roster fill at 5-40 processes, then the simulator at 100-1000 nodes.
          --sizes=5,10,20,40 --idle-s=20 --mesh-wait-s=180 --sim-sizes=100,300,1000 --sim-seeds=3 --sim-until=plan|rosters
          (--sizes= skips the processes, --sim-sizes= the simulator). Needs ss (iproute2).
  tool-cache  a ten-step task with tools against the fake Messages API, with and without prompt-cache
          breakpoints: input tokens, cache reads and writes, billed-equivalent input (reads 0.1x, writes 1.25x)
          and the saving. Token counts are the fake's chars/4 approximation.
  load    10 real processes, many plans at once (stand-in API, 0.3 s): B's 5 goals alone, 1 goal, 100 at once,
          1000 at once, then A's flood of 500 beside B's 5 (fair shares). Makespan against the floor, duplicates,
          first claims, /status latency, CPU per event and RSS per process. --goals=1000 --flood=500 --few=5
          --cli=built|tsx; --few=0 and --flood=0 leave those phases out; --one=0 the one goal's; --cap-s=60 cuts
          each phase (quick's /status part: --goals=100 --few=0 --flood=0 --one=0 --cap-s=60). --profile: V8's CPU profiler on one
          process of each role, and its time per phase by group (gossipsub, decode, verify, SQLite, fold, roles,
          /status, ...; bench/load/profile-groups.ts) on stdout and in load-profile.json. About 35 minutes.
  big-plan  one plan of 101, 400 and 1,123 nodes (6x6x6x4), in process: CPU per event to fold, to derive the tree
          (and its treeHash) as the plan grows, and to print it, collapsed and expanded. BIG_PLAN_RUNS=5 BIG_PLAN_BATCH=50
  tax     the protocol's own tax in the simulator: 10/100/1000 nodes x 1/100 plans against a central scheduler.
          --nodes=10,100,1000 --plans=1,100 --seed=1 --seeds=1 --llm-ms=lognormal:4000:0.7 --link-ms=20-80 --goal-at-ms=1500
          --case-timeout-s=2400 --max-heap-mb=6144 --trust (version-5 plans) --review-one-in=N (their review sample)
  id-set  the sync id set at 1M ids, loaded from SELECT id ... ORDER BY id of an in-memory SQLite table: bytes an id
          it keeps, load, single adds and the next snapshot's merge, removing 300 ids, range fingerprints, has.
          ID_SET_N=1000000 ID_SET_RUNS=3 ID_SET_MODULE=path (another copy of src/core/id-set.ts, e.g. the code before)
  history a node with a long history: stores of about 100k and 1M signed events (about 100 a plan, a few plans under
          way; built once, cached in the temp dir) against an empty one, on real processes: ms until /status answers and
          until it claims in a new plan, RSS, the sync id set's heap, a sync between equal sets, and a newcomer's catch-up
          (until it claims, until it holds everything). HISTORY_SIZES=100k,1m HISTORY_TRIALS=3
          HISTORY_START_TIMEOUT_S=600 HISTORY_CATCHUP_TIMEOUT_S=1800 HISTORY_CPU_PROF=DIR HISTORY_NEWCOMER=0
          HISTORY_REBUILD=1 HISTORY_KEEP=1 --cli=built|tsx (more in bench/history/index.ts). Needs ss (iproute2). About 10
          minutes at 100k; at 1M the build takes 6 minutes once, and the rest an hour or more.
  byzantine  dishonest members in the simulator, before (versions 1-4) and after protocol version 5 (params.trust):
          per mode (backdate, hoard, late-rewrite, not-held, junk, equivocate-early/late, stuff, budget-drain,
          sybil, twins) and f = 1 and floor((n-1)/3), the dishonest share of tasks won against their fair share,
          the makespan over the same seed honest, junk accepted before / after its author's first rejection,
          finished plans changed afterwards. --nodes=10,100 --modes=all --f=1,max --versions=4,5 --seeds=1 --seed=1
          --llm-ms=300 --reviewer=judge|stand-in (who reviews junk: one that tells it from work, or the offline
          review) --allow-list (every node with an allow-list of the run's keys) (--nodes=10
          --modes=backdate,hoard --f=1 --versions=5 to scale down)
  quick   the headline ratios again, shortened, in about 6 minutes: fold batch, gossip hop over bare at 3 and 10
          processes, the leaderless tax at 10, rosters full at 24, /status while 100 plans run; each beside its goal
          and its row's last figure in BENCHMARKS.md. Its parts write bench/results/quick/, it quick.json.`

const argv = process.argv.slice(2)
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(HELP)
  process.exit(0)
}
const names = argv.filter(a => !a.startsWith('-'))
const unknown = names.filter(n => BENCHES[n] === undefined)
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(', ')}; choose from: ${Object.keys(BENCHES).join(', ')} (--help)`)
  process.exit(2)
}
const chosen = names.length > 0 ? names : Object.keys(BENCHES).filter(n => n !== 'quick')
const results: Record<string, unknown> = {}
try {
  for (const n of chosen) {
    console.error(`bench ${n}: running...`)
    results[n] = await (BENCHES[n] as () => Promise<Record<string, unknown>>)()
  }
} catch (err) {
  if (!(err instanceof BenchUnavailable)) throw err
  console.error(err.message)
  process.exit(3)
}
console.log(JSON.stringify(chosen.length === 1 ? results[chosen[0] as string] : results))
