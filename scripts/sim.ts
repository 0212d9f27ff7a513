import '../src/polyfill.js'
import { parseArgs } from 'node:util'
import { runSeed } from '../src/sim/run.js'
import { parseFaultKinds } from '../src/sim/faults.js'
import { pct } from '../src/sim/checks.js'
import { parseLatencySpec, parseLinkMs } from '../src/sim/latency.js'
import { runLong } from '../src/sim/long-run/index.js'
import { mainByzantine } from '../src/sim/byzantine/main.js'
import { parseModes } from '../src/sim/byzantine/modes.js'
import type { RunReport } from '../src/sim/run.js'
import type { LongRunReport } from '../src/sim/long-run/index.js'
import type { LatencySpec } from '../src/sim/latency.js'
import type { TraceSample } from '../src/sim/swarm-sampler.js'
import type { WorldOptions } from '../src/sim/world-options.js'

/**
 * `npm run sim -- --nodes 1000 --seeds 20 [--seed 1] [--faults all|none|links,partition,crash,pause,skew]`
 *
 * Runs the real node (replica, sync sessions, role drivers and roles) in the
 * deterministic simulator, one seed after another, and prints a line per
 * run; a failing run prints its problems and the command that replays it.
 * The last line is one JSON object (medians over the runs).
 *
 * `--trace` prints, once a virtual second to stderr, what the swarm looks
 * like (timers run and queued, gossip deliveries of that second, nodes
 * alone, connections, the smallest roster and how many are full) and the
 * wall time so far: a debug view of where a long run spends its time. The
 * run itself is the same with it (on the fixed graph it adds one timer a
 * second, so the step count differs).
 *
 * `--until plan|rosters`: what a run waits for once the plan has finished
 * and converged on every node. `rosters` (the default up to 200 nodes) also
 * waits until every roster lists every live node, or their bound has passed
 * (src/sim/checks.ts, the run then fails); `plan` (the default beyond) ends
 * there and prints how full the rosters were. At 1000 nodes rosters fill
 * with the periodic announcements, 450-550 s virtual after the start, so
 * `--until rosters` there takes more than 16 minutes of wall time and over
 * 3 GB of memory on 2 cores.
 *
 * `--llm-ms 300|fixed:300|lognormal:MEDIAN[:SIGMA]`: the model's latency, a
 * distribution drawn per call from the seed and the call's identity (src/sim/
 * latency.ts; `--latency-ms` is the fixed form). `--link-ms MIN-MAX`: every
 * message's one-way delay, uniform (default 2-5 ms). `--plans K`: K goals at
 * once (plan k by node k mod n). `--goal-at-ms MS`: when they are submitted
 * (default 1500). bench/tax/index.ts runs these against a central scheduler.
 *
 * `--days N`: the long run instead (src/sim/long-run/): N virtual days,
 * `--plans K` goals arriving over them (default 10 a day), `--restarts K`
 * crashes with a restart on the same store, `--joins K` newcomers on empty
 * stores, retention at its default; idle spans are skipped. It prints a line
 * per run (and with `--trace` one per virtual day on stderr), then one JSON
 * object.
 *
 * `--trust`: every goal is a protocol-5 plan (params.trust, ADR-0047), folded by
 * the rules for members one need not trust; without it the goals fold by the
 * rules of versions 1-4. A run that fails prints `--trust` in its replay.
 * `--allow-list`: every node refuses events by authors outside the run's own
 * keys, as `--allow-peers` does (a sybil's extra identities among them).
 *
 * `--byzantine MODE,MODE|all [--f N|max]`: each seed run honest, then once per
 * mode with f dishonest members (src/sim/byzantine/; default f 1, `max` is
 * floor((n - 1) / 3)): a verdict line per run, then one JSON object.
 */
const USAGE =
  'usage: npm run sim -- [--nodes N] [--seeds K] [--seed FIRST] [--faults ' +
  'all|none|kind,kind] [--latency-ms MS] [--llm-ms MS|lognormal:MEDIAN[:SIGMA]] [--link-ms MIN-MAX] ' +
  '[--plans K] [--goal-at-ms MS] [--fault-span-ms MS] [--depth D] [--topology ' +
  'neighbours|fixed] [--max-peers N] [--degree D (fixed)] [--review] [--trust] [--allow-list] [--until plan|rosters] [--trace] ' +
  '[--days N [--restarts K] [--joins K]] [--byzantine MODE,MODE|all [--f N|max]]'

function wholeNumber(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} ${raw}: expected a whole number >= ${min}; ${USAGE}`)
  return n
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : (s[Math.floor((s.length - 1) / 2)] as number)
}

function traceLine(seed: number, s: TraceSample, wallMs: number): string {
  return (
    `trace seed ${seed} t=${(s.atMs / 1000).toFixed(0)}s wall=${(wallMs / 1000).toFixed(1)}s steps=${s.steps} queued=${s.pendingTimers} ` +
    `delivered events=${s.eventMessages} presence=${s.presenceMessages} live=${s.liveNodes} alone=${s.alone} ` +
    `connections median=${s.connectionsMedian} max=${s.connectionsMax} roster min=${s.rosterMin} full=${s.rostersFull}`
  )
}

/** The rosters as a run left them: when they filled, or how full they were at the end (and whether that was checked). */
function rosterWords(r: RunReport): string {
  if (r.rosterFullMs !== null) return `rosters full at ${r.rosterFullMs} ms`
  const f = r.rosterFill
  const checked = r.checks.rostersFull === null ? ', not checked' : ''
  return (
    `rosters at the end (${r.virtualMs} ms, until ${r.until}${checked}): ` +
    `emptiest ${pct(f.emptiest)}, median ${pct(f.median)} of the others, ${f.full} ` +
    `of ${f.liveNodes} full`
  )
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string' },
      seeds: { type: 'string' },
      seed: { type: 'string' },
      faults: { type: 'string' },
      'latency-ms': { type: 'string' },
      'llm-ms': { type: 'string' },
      'link-ms': { type: 'string' },
      plans: { type: 'string' },
      'goal-at-ms': { type: 'string' },
      'fault-span-ms': { type: 'string' },
      depth: { type: 'string' },
      review: { type: 'boolean' },
      trust: { type: 'boolean' },
      'allow-list': { type: 'boolean' },
      degree: { type: 'string' },
      topology: { type: 'string' },
      'max-peers': { type: 'string' },
      until: { type: 'string' },
      trace: { type: 'boolean' },
      days: { type: 'string' },
      restarts: { type: 'string' },
      joins: { type: 'string' },
      byzantine: { type: 'string' },
      f: { type: 'string' },
      help: { type: 'boolean' }
    }
  })
  if (values.help === true) {
    console.log(USAGE)
    return 0
  }
  const nodes = wholeNumber('nodes', values.nodes, 10, 4)
  const seeds = wholeNumber('seeds', values.seeds, 1)
  const first = wholeNumber('seed', values.seed, 1, 0)
  const faults = parseFaultKinds(values.faults ?? 'none')
  const llmLatencyMs = wholeNumber('latency-ms', values['latency-ms'], 300, 0)
  const maxDepth = wholeNumber('depth', values.depth, 2)
  const degree = wholeNumber('degree', values.degree, 6, 2)
  const faultSpanMs = wholeNumber('fault-span-ms', values['fault-span-ms'], 20_000, 1_000)
  const topology = values.topology ?? 'neighbours'
  if (topology !== 'neighbours' && topology !== 'fixed')
    throw new Error(`--topology ${topology}: expected neighbours or fixed; ${USAGE}`)
  const maxPeers = values['max-peers'] === undefined ? undefined : wholeNumber('max-peers', values['max-peers'], 24)
  const llmLatency = values['llm-ms'] === undefined ? undefined : parseLatencySpec(values['llm-ms'])
  const linkMs = values['link-ms'] === undefined ? undefined : parseLinkMs(values['link-ms'])
  const plans = values.plans === undefined ? undefined : wholeNumber('plans', values.plans, 1)
  const goalAtMs =
    values['goal-at-ms'] === undefined ? undefined : wholeNumber('goal-at-ms', values['goal-at-ms'], 0, 0)
  const until = values.until
  if (until !== undefined && until !== 'plan' && until !== 'rosters')
    throw new Error(`--until ${until}: expected plan or rosters; ${USAGE}`)
  if (values.days === undefined && (values.restarts !== undefined || values.joins !== undefined))
    throw new Error(`--restarts and --joins go with --days; ${USAGE}`)
  if (values.days !== undefined) {
    const shortOnly = (['goal-at-ms', 'fault-span-ms', 'review', 'trust', 'allow-list', 'degree', 'until'] as const)
      .filter(k => values[k] !== undefined)
      .map(k => `--${k}`)
    if (faults.length > 0) shortOnly.push('--faults')
    if (topology !== 'neighbours') shortOnly.push('--topology fixed')
    if (shortOnly.length > 0) throw new Error(`--days runs without ${shortOnly.join(', ')}; ${USAGE}`)
    return await mainLong({
      nodes,
      seeds,
      first,
      days: wholeNumber('days', values.days, 1),
      plans,
      restarts: values.restarts === undefined ? undefined : wholeNumber('restarts', values.restarts, 0, 0),
      joins: values.joins === undefined ? undefined : wholeNumber('joins', values.joins, 0, 0),
      maxDepth: values.depth === undefined ? undefined : maxDepth,
      llmLatencyMs: values['latency-ms'] === undefined ? undefined : llmLatencyMs,
      llmLatency,
      linkMs,
      maxPeers,
      trace: values.trace === true
    })
  }
  /** The world of one seed, as the flags give it (a run's `until` is added by each caller). */
  const worldOptions = (seed: number): WorldOptions => ({
    seed,
    nodes,
    faults,
    llmLatencyMs,
    maxDepth,
    faultSpanMs,
    review: values.review === true,
    ...(values.trust === true ? { trust: true } : {}),
    ...(values['allow-list'] === true ? { allowList: true } : {}),
    topology,
    ...(maxPeers === undefined ? {} : { maxPeers }),
    ...(llmLatency === undefined ? {} : { llmLatency }),
    ...(linkMs === undefined ? {} : { linkMs }),
    ...(plans === undefined ? {} : { plans }),
    ...(goalAtMs === undefined ? {} : { goalAtMs }),
    ...(topology === 'fixed' ? { degree } : {})
  })
  if (values.byzantine === undefined && values.f !== undefined) throw new Error(`--f goes with --byzantine; ${USAGE}`)
  if (values.byzantine !== undefined) {
    const f = values.f === 'max' ? 'max' : wholeNumber('f', values.f, 1)
    const world = (seed: number): WorldOptions => ({ ...worldOptions(seed), until: until ?? 'plan' })
    const list = Array.from({ length: seeds }, (_, i) => first + i)
    return await mainByzantine(world, list, parseModes(values.byzantine), f)
  }
  const reports: RunReport[] = []
  for (let seed = first; seed < first + seeds; seed++) {
    const t0 = performance.now()
    const trace =
      values.trace === true
        ? {
            trace: (s: TraceSample) => {
              console.error(traceLine(seed, s, performance.now() - t0))
            }
          }
        : {}
    const r = await runSeed({ ...worldOptions(seed), ...(until === undefined ? {} : { until }), ...trace })
    reports.push(r)
    console.log(
      `seed ${seed}: ${r.ok ? 'ok' : 'FAILED'} ${r.nodes} nodes, completed ` +
        `in ${r.completionMs ?? '-'} ms virtual, converged ${r.convergenceMs} ms after the last event; ` +
        (`${r.events} events, ${r.messagesPerNode} messages and ${r.bytesPerNode} bytes per node ` +
          `(plan traffic ${r.bytesPerNodePerEvent} per event, presence ${r.presenceBytesPerNode}); `) +
        `LLM calls ${r.llmCalls} (minimum ${r.llmMinimum}), ${r.checks.duplicateExecutions} duplicate executions` +
        `${r.checks.claimsOnOthersChains === 0 ? '' : ` (${r.checks.claimsOnOthersChains} backups or takeovers)`}; ` +
        (`connections per node ${r.connectionsMedian} (max ${r.maxConnections}), ${rosterWords(r)}; ` +
          `wall ${r.wallMs} ms, heap ${r.heapMb} MB (peak ${r.peakHeapMb}), RSS ${r.rssMb} MB ` +
          `(peak ${r.peakRssMb})`)
    )
    if (!r.ok) {
      for (const p of r.checks.problems.slice(0, 10)) console.log(`  - ${p}`)
      if (r.outcome !== 'done') console.log(`  - the run ended by ${r.outcome} at ${r.virtualMs} ms virtual`)
      console.log(`  replay: ${r.replay}`)
    }
  }
  const failed = reports.filter(r => !r.ok)
  console.log(
    JSON.stringify({
      nodes,
      seeds,
      faults,
      topology,
      failed: failed.map(r => r.seed),
      completionMsMedian: median(reports.map(r => r.completionMs ?? Infinity)),
      convergenceMsMedian: median(reports.map(r => r.convergenceMs)),
      convergenceMsMax: Math.max(...reports.map(r => r.convergenceMs)),
      eventsMedian: median(reports.map(r => r.events)),
      messagesPerNodeMedian: median(reports.map(r => r.messagesPerNode)),
      bytesPerNodeMedian: median(reports.map(r => r.bytesPerNode)),
      bytesPerNodePerEventMedian: median(reports.map(r => r.bytesPerNodePerEvent)),
      presenceBytesPerNodeMedian: median(reports.map(r => r.presenceBytesPerNode)),
      llmCallsMedian: median(reports.map(r => r.llmCalls)),
      llmMinimumMedian: median(reports.map(r => r.llmMinimum)),
      duplicateExecutions: reports.reduce((a, r) => a + r.checks.duplicateExecutions, 0),
      claimsOnOthersChains: reports.reduce((a, r) => a + r.checks.claimsOnOthersChains, 0),
      maxConnections: Math.max(...reports.map(r => r.maxConnections)),
      connectionsMedian: median(reports.map(r => r.connectionsMedian)),
      until: reports[0]?.until,
      rosterFullMsMedian: median(reports.map(r => r.rosterFullMs ?? Infinity)),
      rostersFullRuns: reports.filter(r => r.rosterFullMs !== null).length,
      rosterFillEmptiestMedian: median(reports.map(r => r.rosterFill.emptiest)),
      rosterFillMedianMedian: median(reports.map(r => r.rosterFill.median)),
      virtualMsMedian: median(reports.map(r => r.virtualMs)),
      wallMsMedian: median(reports.map(r => r.wallMs)),
      heapMbMax: Math.max(...reports.map(r => r.heapMb)),
      rssMbMax: Math.max(...reports.map(r => r.rssMb)),
      peakHeapMbMax: Math.max(...reports.map(r => r.peakHeapMb)),
      peakRssMb: Math.max(...reports.map(r => r.peakRssMb))
    })
  )
  return failed.length === 0 ? 0 : 1
}

interface LongArgs {
  readonly nodes: number
  readonly seeds: number
  readonly first: number
  readonly days: number
  readonly plans: number | undefined
  readonly restarts: number | undefined
  readonly joins: number | undefined
  readonly maxDepth: number | undefined
  readonly llmLatencyMs: number | undefined
  readonly llmLatency: LatencySpec | undefined
  readonly linkMs: { readonly minMs: number; readonly maxMs: number } | undefined
  readonly maxPeers: number | undefined
  readonly trace: boolean
}

const kb = (bytes: number): string => `${Math.round(bytes / 1024)} KB`

/** `--days N`: one long run per seed (src/sim/long-run/), a line each, then one JSON object. */
async function mainLong(a: LongArgs): Promise<number> {
  const reports: LongRunReport[] = []
  for (let seed = a.first; seed < a.first + a.seeds; seed++) {
    const t0 = performance.now()
    const r = await runLong({
      seed,
      nodes: a.nodes,
      days: a.days,
      plans: a.plans ?? 10 * a.days,
      ...(a.restarts === undefined ? {} : { restarts: a.restarts }),
      ...(a.joins === undefined ? {} : { joins: a.joins }),
      ...(a.maxDepth === undefined ? {} : { maxDepth: a.maxDepth }),
      ...(a.llmLatencyMs === undefined ? {} : { llmLatencyMs: a.llmLatencyMs }),
      ...(a.llmLatency === undefined ? {} : { llmLatency: a.llmLatency }),
      ...(a.linkMs === undefined ? {} : { linkMs: a.linkMs }),
      ...(a.maxPeers === undefined ? {} : { maxPeers: a.maxPeers }),
      ...(a.trace
        ? {
            trace: (line: string) => {
              console.error(`trace seed ${seed} ${line} (wall ${((performance.now() - t0) / 1000).toFixed(1)} s)`)
            }
          }
        : {
            // A long run takes minutes to hours of wall time: say how far it is, a line a virtual day.
            onDay: (day: number) => {
              console.error(
                `sim: seed ${seed}: day ${day} of ${a.days} (wall ${((performance.now() - t0) / 1000).toFixed(0)} s)`
              )
            }
          })
    })
    reports.push(r)
    const idle =
      r.idleBytesPerNodePerHour === null || r.bytesPerNodePerDayWithIdle === null
        ? 'no idle window fitted'
        : `idle ${kb(r.idleBytesPerNodePerHour)} an hour (measured over ${Math.round(r.idleWindowMs / 1000)} s), so ` +
          `${kb(r.bytesPerNodePerDayWithIdle)} a day with the idle spans`
    console.log(
      `seed ${seed}: ${r.ok ? 'ok' : 'FAILED'} ${r.nodes} nodes (+${r.joins} joined, ${r.restarts} restarts), ` +
        `${r.days} days virtual (${Math.round(r.simulatedMs / 1000)} s simulated, the rest skipped idle in ${r.skips} skips); ` +
        `${r.plans} plans (${r.shortPlans} kept 1-7 days), ${r.expiredPlans} expired, ${r.events} events, ` +
        `${r.returned} returned after expiry; largest store ${r.maxStore} events (node ${r.maxStoreNode}, day ` +
        `${r.maxStoreDay}; bound then ${r.boundAtMaxStore}, largest bound ${r.maxBound}), largest id set ${r.maxIdSet}, ` +
        `most tombstones ${r.maxTombstones} (bound ${r.maxTombstoneBound}), ${r.boundFailures} of ${r.boundChecks} ` +
        `bound checks failed; bytes per node per day ${kb(r.bytesPerNodePerDay)} simulated (plan gossip ` +
        `${kb(r.eventBytesPerNodePerDay)}, presence ${kb(r.presenceBytesPerNodePerDay)}, sync ` +
        `${kb(r.syncBytesPerNodePerDay)}); ${idle}; wall ${r.wallMs} ms, heap ${r.heapMb} MB, peak RSS ${r.peakRssMb} MB`
    )
    if (!r.ok) {
      for (const p of r.problems.slice(0, 10)) console.log(`  - ${p}`)
      console.log(`  replay: ${r.replay}`)
    }
  }
  const failed = reports.filter(r => !r.ok)
  const med = (f: (r: LongRunReport) => number): number => median(reports.map(f))
  const medOrNull = (f: (r: LongRunReport) => number | null): number | null => {
    const xs = reports.map(f).filter((x): x is number => x !== null)
    return xs.length === 0 ? null : median(xs)
  }
  console.log(
    JSON.stringify({
      nodes: a.nodes,
      days: a.days,
      seeds: a.seeds,
      failed: failed.map(r => r.seed),
      plansMedian: med(r => r.plans),
      expiredPlansMedian: med(r => r.expiredPlans),
      eventsMedian: med(r => r.events),
      returned: reports.reduce((x, r) => x + r.returned, 0),
      boundFailures: reports.reduce((x, r) => x + r.boundFailures, 0),
      maxStore: Math.max(...reports.map(r => r.maxStore)),
      maxBound: Math.max(...reports.map(r => r.maxBound)),
      maxIdSet: Math.max(...reports.map(r => r.maxIdSet)),
      maxTombstones: Math.max(...reports.map(r => r.maxTombstones)),
      maxTombstoneBound: Math.max(...reports.map(r => r.maxTombstoneBound)),
      bytesPerNodePerDayMedian: med(r => r.bytesPerNodePerDay),
      eventBytesPerNodePerDayMedian: med(r => r.eventBytesPerNodePerDay),
      presenceBytesPerNodePerDayMedian: med(r => r.presenceBytesPerNodePerDay),
      syncBytesPerNodePerDayMedian: med(r => r.syncBytesPerNodePerDay),
      idleBytesPerNodePerHourMedian: medOrNull(r => r.idleBytesPerNodePerHour),
      bytesPerNodePerDayWithIdleMedian: medOrNull(r => r.bytesPerNodePerDayWithIdle),
      simulatedMsMedian: med(r => r.simulatedMs),
      skippedMsMedian: med(r => r.skippedMs),
      wallMsMedian: med(r => r.wallMs),
      heapMbMax: Math.max(...reports.map(r => r.heapMb)),
      peakRssMb: Math.max(...reports.map(r => r.peakRssMb))
    })
  )
  return failed.length === 0 ? 0 : 1
}

main().then(
  code => {
    process.exitCode = code
  },
  (err: Error) => {
    console.error(`sim: ${err.message}`)
    process.exitCode = 2
  }
)
