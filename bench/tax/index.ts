import '../../src/polyfill.js'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseLatencySpec, latencyWords } from '../../src/sim/latency.js'
import { parseLinkMs, runTax, taxFigures } from '../../src/sim/tax.js'
import { loadNow, machine, report } from '../common/util.js'
import type { LatencySpec } from '../../src/sim/latency.js'
import type { TaxFigures } from '../../src/sim/tax.js'

/**
 * `npm run bench -- tax`: the protocol's own tax, in the simulator (src/sim).
 * The real node runtime and roles at 10, 100 and 1,000 simulated nodes, one
 * plan and 100 at once (submitted together 1.5 s after the start, plan k by
 * node k mod n), on links of 20-80 ms one way, the model's calls log-normal
 * with a median of 4 s and sigma 0.7 (p90 about 10 s, p99 about 20 s), no
 * faults; then the central scheduler (src/sim/central.ts) replays the same
 * calls with the same latencies under the same limits (each role 4 calls at
 * once, as many executors, each 4 tasks at once and the plan's claims per
 * executor) with no network and no waits. Tax = swarm makespan / central
 * makespan. Where the swarm's extra time went is read off the critical path
 * of the plan that finished last (src/sim/critical-path.ts): gossip hops,
 * the executors' staggers and confirmations, the scorers' ballot windows, the
 * driver's coalescing, each as ms and as its share of the tax
 * (part / central makespan); `remainder` is what the calls and slots on that
 * path add or save against the central schedule (tax - 1 = the shares +
 * remainder). The greedy central schedule is no lower bound once the slots
 * bind (many plans): `floorS` is one (the longest chain of calls, or the
 * busiest decomposer's, scorer's or the executors' work over their slots),
 * and `overFloor` the swarm's makespan over it.
 *
 * Each case runs in a child process of its own (its wall time, peak RSS and
 * a heap cap of its own; one that runs out of either is reported as not
 * measured, with what it used). Options: --nodes=10,100,1000 --plans=1,100
 * --seed=1 --seeds=1 (each case for seeds seed..seed+K-1, with the mean tax per size)
 * --llm-ms=lognormal:4000:0.7 --link-ms=20-80 --case-timeout-s=2400
 * --max-heap-mb=6144 --trust (every goal a version-5 plan, params.trust:
 * its rules' tax against today's) --review-one-in=N (with --trust: the
 * review sample at one in N, docs/protocol/fold.md 11.7) --goal-at-ms=1500 (later: the goals reach a settled
 * swarm, whose executors trust their view of each other and skip the
 * confirmation and the extra stagger a young swarm's take; that is two
 * presence intervals, n seconds at n nodes past six, of idle simulated time
 * first).
 */

interface Options {
  readonly nodes: readonly number[]
  readonly plans: readonly number[]
  readonly seed: number
  /** Seeds to run from `seed` on: each case once per seed, with the mean over them (one seed's tax moves by 0.01). */
  readonly seeds: number
  readonly llm: LatencySpec
  readonly link: { readonly minMs: number; readonly maxMs: number }
  readonly goalAtMs: number | undefined
  readonly caseTimeoutS: number
  readonly maxHeapMb: number
  /** Every goal a version-5 plan (params.trust, WorldOptions.trust): the tax of its rules against today's. */
  readonly trust: boolean
  /** With trust: the review sample, one result in this many (0: off). */
  readonly reviewOneIn: number
}

export const TAX_GOALS = { at10: 1.05, at1000: 1.1 } as const

function list(flag: string, raw: string): number[] {
  const xs = raw.split(',').map(s => Number(s.trim()))
  if (xs.length === 0 || xs.some(x => !Number.isInteger(x) || x < 1))
    throw new Error(`${flag}=${raw}: expected whole numbers >= 1 separated by commas, e.g. ${flag}=10,100`)
  return xs
}

export function taxOptions(argv: readonly string[]): Options {
  const value = (flag: string): string | undefined => argv.find(a => a.startsWith(`${flag}=`))?.slice(flag.length + 1)
  const whole = (flag: string, dflt: number, min = 1): number => {
    const raw = value(flag)
    const n = Number(raw ?? dflt)
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag}=${raw ?? ''}: expected a whole number >= ${min}`)
    return n
  }
  return {
    nodes: list('--nodes', value('--nodes') ?? '10,100,1000'),
    plans: list('--plans', value('--plans') ?? '1,100'),
    seed: whole('--seed', 1, 0),
    seeds: whole('--seeds', 1),
    llm: parseLatencySpec(value('--llm-ms') ?? 'lognormal:4000:0.7'),
    link: parseLinkMs(value('--link-ms') ?? '20-80'),
    goalAtMs: value('--goal-at-ms') === undefined ? undefined : whole('--goal-at-ms', 1_500, 0),
    caseTimeoutS: whole('--case-timeout-s', 2_400),
    maxHeapMb: whole('--max-heap-mb', 6_144, 256),
    trust: argv.includes('--trust'),
    reviewOneIn: whole('--review-one-in', 0, 0)
  }
}

interface Case {
  readonly nodes: number
  readonly plans: number
  readonly seed: number
  readonly llm: LatencySpec
  readonly link: { readonly minMs: number; readonly maxMs: number }
  readonly goalAtMs?: number
  readonly trust?: boolean
  readonly reviewOneIn?: number
}

/** One case's figures, or why it has none. */
type CaseResult =
  | (TaxFigures & { readonly measured: true; readonly loadBefore: number[] })
  | {
      readonly measured: false
      readonly nodes: number
      readonly plans: number
      readonly why: string
      readonly wallS: number
      readonly peakRssMb: number | null
      readonly loadBefore: number[]
    }

const log = (s: string): void => {
  console.error(s)
}

/** Run one case in this process (the child's side). */
async function runCase(c: Case): Promise<TaxFigures> {
  const t0 = performance.now()
  const run = await runTax({
    seed: c.seed,
    nodes: c.nodes,
    faults: [],
    llmLatency: c.llm,
    linkMs: c.link,
    plans: c.plans,
    ...(c.goalAtMs === undefined ? {} : { goalAtMs: c.goalAtMs }),
    until: 'plan',
    deadlineMs: 6 * 3_600_000,
    ...(c.trust === true ? { trust: true } : {}),
    ...(c.reviewOneIn === undefined ? {} : { reviewOneIn: c.reviewOneIn })
  })
  return taxFigures(run, (performance.now() - t0) / 1000)
}

/** The largest RSS of a running process, from /proc (VmHWM), in MB; null where /proc has none. */
async function peakRss(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null
  try {
    const { readFile } = await import('node:fs/promises')
    const m = /VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))
    return m === null ? null : Math.round(Number(m[1]) / 1024)
  } catch {
    return null
  }
}

/** Run one case in a child process of its own, with its own heap cap and time limit. */
async function spawnCase(c: Case, opts: Options): Promise<CaseResult> {
  const loadBefore = loadNow()
  const t0 = performance.now()
  const child = spawn(
    process.execPath,
    [
      `--max-old-space-size=${opts.maxHeapMb}`,
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      '--case',
      JSON.stringify(c)
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] }
  )
  let out = ''
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString()
  })
  let peak: number | null = null
  const sampler = setInterval(() => {
    void peakRss(child.pid).then(x => {
      if (x !== null) peak = Math.max(peak ?? 0, x)
    })
  }, 2_000)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGKILL')
  }, opts.caseTimeoutS * 1000)
  const code = await new Promise<number | null>(resolve => {
    child.on('exit', (status, signal) => {
      resolve(signal === null ? status : -1)
    })
  })
  clearTimeout(timer)
  clearInterval(sampler)
  const wallS = Math.round((performance.now() - t0) / 100) / 10
  const last = out.trim().split('\n').pop() ?? ''
  if (code === 0 && last.startsWith('{')) return { ...(JSON.parse(last) as TaxFigures), measured: true, loadBefore }
  const failed = code === 1 && last.startsWith('{') ? (JSON.parse(last) as { error?: string }).error : undefined
  const why = timedOut
    ? `over the case time limit (${opts.caseTimeoutS} s of wall time, --case-timeout-s)`
    : failed !== undefined
      ? failed
      : `the child exited with ${code === -1 ? 'a signal' : `code ${code}`} (a heap over --max-heap-mb=${opts.maxHeapMb} ends it so)`
  return { measured: false, nodes: c.nodes, plans: c.plans, why, wallS, peakRssMb: peak, loadBefore }
}

export async function benchTax(): Promise<Record<string, unknown>> {
  const opts = taxOptions(process.argv.slice(2))
  const started = Date.now()
  const cases: CaseResult[] = []
  for (let seed = opts.seed; seed < opts.seed + opts.seeds; seed++)
    for (const plans of opts.plans)
      for (const nodes of opts.nodes) {
        const c: Case = {
          nodes,
          plans,
          seed,
          llm: opts.llm,
          link: opts.link,
          ...(opts.goalAtMs === undefined ? {} : { goalAtMs: opts.goalAtMs }),
          ...(opts.trust ? { trust: true } : {}),
          ...(opts.trust && opts.reviewOneIn > 0 ? { reviewOneIn: opts.reviewOneIn } : {})
        }
        log(`tax: ${nodes} nodes, ${plans} plan(s) at once, seed ${seed}, load ${loadNow().join(' ')}`)
        const r = await spawnCase(c, opts)
        log(`  ${JSON.stringify(r)}`)
        cases.push(r)
      }
  const taxAt = (n: number): number | null => {
    const xs = cases.filter(c => c.measured && c.nodes === n).map(c => (c.measured ? c.tax : 0))
    return xs.length === 0 ? null : Math.max(...xs)
  }
  const goal = (n: number, limit: number): Record<string, unknown> => {
    const worst = taxAt(n)
    return { worstTax: worst, goal: `at most ${limit}`, met: worst === null ? null : worst <= limit }
  }
  const perSize = opts.plans.flatMap(plans =>
    opts.nodes.map(nodes => {
      const taxes = cases.flatMap(c => (c.measured && c.nodes === nodes && c.plans === plans ? [c.tax] : []))
      const mean = taxes.length === 0 ? null : Math.round((taxes.reduce((a, b) => a + b, 0) / taxes.length) * 1e4) / 1e4
      return { nodes, plans, seeds: taxes.length, meanTax: mean, taxes }
    })
  )
  return report('tax', {
    machine: machine(),
    date: new Date().toISOString(),
    seed: opts.seed,
    seeds: opts.seeds,
    llmMs: latencyWords(opts.llm),
    linkMs: `${opts.link.minMs}-${opts.link.maxMs}`,
    goalAtMs: opts.goalAtMs ?? 1_500,
    protocol: opts.trust ? 'version 5 (params.trust)' : 'versions 1-4',
    reviewOneIn: opts.trust ? opts.reviewOneIn : null,
    cases,
    ...(opts.seeds > 1 ? { perSize } : {}),
    goals: { at10: goal(10, TAX_GOALS.at10), at1000: goal(1_000, TAX_GOALS.at1000) },
    notMeasured: cases.filter(c => !c.measured).map(c => `${c.nodes} nodes x ${c.plans} plans`),
    wallS: Math.round((Date.now() - started) / 1000)
  })
}

// The child's side: `node --import tsx bench/tax/index.ts --case JSON` runs one case and prints its figures as one line.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--case')
  const raw = i < 0 ? undefined : process.argv[i + 1]
  if (raw === undefined) {
    console.error(
      'usage: npm run bench -- tax [--nodes=10,100,1000] [--plans=1,100] (bench/tax/index.ts --case JSON is its child)'
    )
    process.exit(2)
  }
  runCase(JSON.parse(raw) as Case).then(
    f => {
      console.log(JSON.stringify({ ...f, peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024) }))
      process.exit(0)
    },
    (err: Error) => {
      console.error(`tax case: ${err.stack ?? err.message}`)
      console.log(JSON.stringify({ error: err.message }))
      process.exit(1)
    }
  )
}
