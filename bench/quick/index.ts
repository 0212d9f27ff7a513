/**
 * `npm run bench -- quick`: the headline ratios again in about six minutes, to tell whether a change moved them
 * before an issue is called resolved. It runs the benchmarks themselves with smaller options (fewer runs, shorter
 * windows, one size each), so a figure here is a rougher reading of the same measure, not a replacement for its
 * row: the fold as one batch (1 run), the gossip hop over bare libp2p at 3 and 10 processes (10 s windows), the
 * leaderless tax at 10 processes (1 repeat), every roster full at 24 processes, and /status while 100 plans run
 * (the first 60 s of them). Each figure is printed beside its goal and the last figure of its row in
 * BENCHMARKS.md; the sub-benchmarks write their files into bench/results/quick/, and this one bench/results/quick.json.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { benchFold } from '../fold/index.js'
import { benchNet } from '../net/index.js'
import { benchE2e } from '../e2e/index.js'
import { benchScale } from '../scale/index.js'
import { runLoad } from '../load/index.js'
import { REPO, loadNow, machine, report, resultsDir, setResultsDir } from '../common/util.js'
import { QUICK_ROWS, bookRow, goalMet, type BookRow } from './book.js'

/** The smaller options, in one place. */
const NET_ENV = {
  NET_PARTS: 'gossip',
  NET_SIZES: '3,10',
  NET_SECONDS: '10',
  NET_WINDOWS: '2',
  NET_WARMUP_S: '1',
  NET_DRAIN_MS: '5000',
  NET_MESH_WAIT_MS: '30000'
}
const E2E_ARGS = ['--sizes=10', '--latencies=300', '--repeats=1', '--sensitivity-sizes=10']
const SCALE_ARGS = ['--sizes=24', '--idle-s=2', '--sim-sizes=', '--mesh-wait-s=90']
const LOAD_GOALS = 100
const LOAD_CAP_S = 60

/** One figure of the quick run: what it is, its numbers now, and the row of BENCHMARKS.md it is a reading of. */
interface Figure {
  readonly name: string
  readonly now: Array<number | null>
  readonly unit: string
  readonly row: BookRow | undefined
  readonly met: boolean | null
  readonly error?: string
  readonly loadBefore: number[]
  readonly seconds: number
}

const log = (s: string): void => {
  console.error(s)
}

/** Runs `fn` with `vars` set in the environment (the net benchmark's knobs), as it was afterwards. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const was = Object.fromEntries(Object.keys(vars).map(k => [k, process.env[k]]))
  Object.assign(process.env, vars)
  try {
    return await fn()
  } finally {
    for (const [k, v] of Object.entries(was))
      if (v === undefined) Reflect.deleteProperty(process.env, k)
      else process.env[k] = v
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

export async function benchQuick(): Promise<Record<string, unknown>> {
  const started = Date.now()
  const book = readFileSync(join(REPO, 'BENCHMARKS.md'), 'utf8')
  const home = resultsDir()
  const figures: Figure[] = []
  /** Runs one part; a part that fails is reported with its error, and the others still run. */
  const part = async (
    name: string,
    unit: string,
    rowPrefixes: readonly string[],
    run: () => Promise<Array<number | null>>
  ): Promise<void> => {
    const loadBefore = loadNow()
    const t0 = Date.now()
    log(`quick: ${name}, load ${loadBefore.join(' ')}`)
    const row = bookRow(book, rowPrefixes)
    let now: Array<number | null> = []
    let error: string | undefined
    try {
      now = await run()
    } catch (err) {
      error = (err as Error).message.slice(0, 300)
      log(`quick: ${name} failed: ${error}`)
    }
    const seconds = Math.round((Date.now() - t0) / 1000)
    figures.push({
      name,
      now,
      unit,
      row,
      met: goalMet(row?.goal, now),
      loadBefore,
      seconds,
      ...(error ? { error } : {})
    })
  }
  setResultsDir(join(home, 'quick'))
  try {
    await part('fold: 99,999 events as one batch', 'events/s', QUICK_ROWS.fold, async () => {
      const f: Json = await benchFold({ runs: 1, memory: false })
      return [f.batchEventsPerSec]
    })
    let net: Json
    const gossip = async (n: number): Promise<Array<number | null>> => {
      net ??= await withEnv(NET_ENV, benchNet)
      const g = net.gossip?.[`n${n}`]
      return [g?.p50Ratio ?? null, g?.p99Ratio ?? null]
    }
    await part('net: publish → folded over bare, 3 processes, p50 / p99', 'x', QUICK_ROWS.net3, () => gossip(3))
    await part('net: the same, 10 processes', 'x', QUICK_ROWS.net10, async () => await gossip(10))
    await part('e2e: leaderless tax, 10 processes', 'x', QUICK_ROWS.tax10, async () => {
      const e: Json = await benchE2e(E2E_ARGS)
      return [e.tax]
    })
    await part('scale: every roster full, 24 processes', 's', QUICK_ROWS.rosters24, async () => {
      const s: Json = await benchScale(SCALE_ARGS)
      return [s.real?.[0]?.rosterFullS ?? null]
    })
    await part(
      `load: /status while ${LOAD_GOALS} plans run (first ${LOAD_CAP_S} s), p50 / p99`,
      's',
      QUICK_ROWS.status,
      async () => {
        const l: Json = await runLoad({
          goals: LOAD_GOALS,
          flood: 0,
          few: 0,
          one: false,
          capS: LOAD_CAP_S,
          cli: 'built',
          profile: false
        })
        const p = l.phases?.[0]
        // From the bench's worker thread, as the row is: the main thread's figure adds the bench's own peers' delay.
        return p === undefined ? [null, null] : [p.statusOffLoopP50Ms / 1000, p.statusOffLoopP99Ms / 1000]
      }
    )
  } finally {
    setResultsDir(home)
  }
  console.log(quickTable(figures))
  return report('quick', {
    figures,
    machine: machine(),
    loadAtEnd: loadNow(),
    wallS: Math.round((Date.now() - started) / 1000)
  })
}

/** The figures beside their goals and the last figures of their rows. */
function quickTable(figures: readonly Figure[]): string {
  const fmt = (xs: ReadonlyArray<number | null>): string =>
    xs.length === 0 ? 'failed' : xs.map(x => (x === null ? '?' : x.toLocaleString('en-US'))).join(' / ')
  const lines = ['', 'figure | now | goal | last in BENCHMARKS.md | load before | s']
  for (const f of figures) {
    const verdict = f.met === null ? '' : f.met ? ' (met)' : ' (missed)'
    const last = f.row === undefined ? 'no row' : `${f.row.value} (${f.row.date}; ${f.row.figure})`
    lines.push(
      `${f.name} | ${fmt(f.now)} ${f.unit}${verdict} | ${f.row?.goal ?? 'none'} | ${last} | ` +
        `${f.loadBefore[0] ?? '?'} | ${f.seconds}`
    )
  }
  return lines.join('\n')
}
