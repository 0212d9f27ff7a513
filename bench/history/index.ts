import '../../src/polyfill.js'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureHistory } from './gen-history.js'
import { Case } from './case.js'
import { idsetMeasure } from './id-set.js'
import { removeOnExit, say } from './node.js'
import { REPO, buildCli, cliMode, loadNow, machine, median, report } from '../common/util.js'
import type { History } from './gen-history.js'
import type { Options, SyncSession } from './node.js'

/**
 * `npm run bench -- history`: a node with a long history. Builds (or takes
 * from the cache) stores of about 100k and 1M events (bench/history/gen-history.ts:
 * about 100 events a finished plan, so 1k and 10k finished plans, and a few
 * plans under way), then for the empty store (the reference) and for each
 * history, on real CLI processes on 127.0.0.1 in swarm HISTORY_SWARM with the
 * offline model:
 *
 * - a decomposer D (with --mcp-http, through which the bench submits goals)
 *   and a scorer S, each on its own copy of the store, started one after
 *   the other and left to settle (their CPU quiet, and their finished plans
 *   out of memory);
 * - the node measured, an executor X on a copy of the store, bootstrapped to
 *   D, started HISTORY_TRIALS times (the first on a fresh copy, then
 *   restarted on its own data dir, which then holds what D and S hold). Per
 *   start: ms from spawn until GET /status answers; its first sync session
 *   with a peer holding the same history (ms, rounds, bytes, from the sync
 *   service's own log line, DEBUG=plan-swarm:sync, and the bytes on the
 *   node's TCP connections so far, from `ss`); then a fresh goal is submitted
 *   to D (committee S, quorum 1, max depth 1, so X is the only executor) and
 *   the signal is X's first task-claimed in that plan (read from D's
 *   /plans/<id>/events; its stamp is X's clock at signing, the same clock as
 *   the spawn time): ms from spawn and from the submit; RSS (and its peak) at
 *   that moment, and the V8 heap it reports in /metrics. The first start
 *   also samples RSS and heap 65 s after /status answered (75 s at least), once the
 *   finished plans left memory (60 s quiet);
 * - a newcomer N with an empty store, bootstrapped to D while X is stopped:
 *   a goal is submitted as soon as its /status answers, and it is timed
 *   until it claims a task in that plan and until it holds every event D
 *   holds (/metrics plan_swarm_events_stored), with the bytes on its
 *   connections (`ss`) and in its finished sync sessions at each point;
 * - a newcomer O with `--history open`, the same way: timed until its claim,
 *   then watched HISTORY_OPEN_WATCH_S more; the events it holds (the plans
 *   under way and the new one, never the history) and the bytes it took in.
 *
 * Separately, per history, in a process of its own run with --expose-gc: the
 * heap (heapUsed + arrayBuffers after full collections) that a sync id set
 * holds for the store's ids, in memory (`IdSet`, the simulator's) and on disk
 * (`StoredIds`, a SQLite node's): see bench/history/id-set.ts.
 *
 * Options (environment): HISTORY_SIZES=100k,1m HISTORY_TRIALS=3
 * HISTORY_START_TIMEOUT_S=600 (a node that does not answer /status in time is
 * reported as timed out) HISTORY_CATCHUP_TIMEOUT_S=1800 (the newcomer's, from its spawn) HISTORY_IDSET_RUNS=3
 * HISTORY_CPU_PROF=DIR (one more start of X, under --cpu-prof, writes a V8
 * CPU profile into DIR/<case>; it is not counted in the medians)
 * HISTORY_NEWCOMER=0 (leave the newcomer out) HISTORY_OPEN_WATCH_S=30 (how long the
 * --history open newcomer O is watched after its claim; 0 leaves it out) HISTORY_REBUILD=1 (build the
 * stores again) HISTORY_KEEP=1 (keep the nodes' data dirs) HISTORY_COMMIT=abc1234
 * (the commit of a tree exported without .git); --cli=built|tsx (default built:
 * `node dist/src/cli.js` after `npm run build`, as a deployment runs it; tsx
 * runs the sources as `npm start` does, and its start includes transpiling).
 */

/** "100k" -> 100000, "1m" -> 1000000, "2500" -> 2500. */
function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(s.trim())
  if (m === null) throw new Error(`HISTORY_SIZES: ${s} is not a size such as 100k or 1m`)
  const unit = (m[2] ?? '').toLowerCase()
  return Math.round(Number(m[1]) * (unit === 'k' ? 1_000 : unit === 'm' ? 1_000_000 : 1))
}

/** "100k" for 100000, "1m" for 1000000. */
function sizeLabel(n: number): string {
  return n % 1_000_000 === 0 ? `${n / 1_000_000}m` : n % 1_000 === 0 ? `${n / 1_000}k` : String(n)
}

function options(argv: readonly string[]): Options {
  const env = process.env
  const whole = (name: string, dflt: number): number => {
    const n = Number(env[name] ?? dflt)
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: expected a whole number >= 1`)
    return n
  }
  const cli = argv.find(a => a.startsWith('--cli='))?.slice('--cli='.length)
  return {
    sizes: (env.HISTORY_SIZES ?? '100k,1m')
      .split(',')
      .filter(s => s.trim() !== '')
      .map(parseSize),
    trials: whole('HISTORY_TRIALS', 3),
    startTimeoutMs: whole('HISTORY_START_TIMEOUT_S', 600) * 1000,
    catchupTimeoutMs: whole('HISTORY_CATCHUP_TIMEOUT_S', 1800) * 1000,
    idsetRuns: whole('HISTORY_IDSET_RUNS', 3),
    cpuProf: env.HISTORY_CPU_PROF,
    newcomer: env.HISTORY_NEWCOMER !== '0',
    openWatchMs: Number(env.HISTORY_OPEN_WATCH_S ?? 30) * 1000,
    cli: cliMode(cli ?? 'built')
  }
}

/** The commit measured, and whether src/ or roles/ differ from it; HISTORY_COMMIT names it for a tree without .git (git archive). */
function commit(): { commit: string; dirty: boolean | null } {
  if (process.env.HISTORY_COMMIT !== undefined) return { commit: process.env.HISTORY_COMMIT, dirty: null }
  try {
    const c = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim()
    const d = execFileSync('git', ['status', '--porcelain', '--', 'src', 'roles'], { cwd: REPO, encoding: 'utf8' })
    return { commit: c, dirty: d.trim() !== '' }
  } catch {
    return { commit: 'unknown', dirty: null }
  }
}

function medianOf(trials: ReadonlyArray<Record<string, unknown>>, k: string): number | null {
  const xs = trials.map(t => t[k]).filter((x): x is number => typeof x === 'number' && Number.isFinite(x))
  return xs.length === 0 ? null : median(xs)
}

async function runCase(o: Options, label: string, history: History | undefined): Promise<Record<string, unknown>> {
  const started = Date.now()
  const root = mkdtempSync(join(tmpdir(), `plan-swarm-bench-history-${label}-`))
  const remove = process.env.HISTORY_KEEP === undefined ? removeOnExit(root) : undefined
  const c = new Case(o, label, root, history)
  const fig: Record<string, unknown> = { label, events: history?.meta.events ?? 0, plans: history?.meta.plans ?? 0 }
  try {
    say(`history: case ${label}, load ${loadNow().join(' ')}`)
    fig.helpers = await c.startHelpers()
    const xDir = c.dataDir('x')
    if (history !== undefined) {
      // On X's copy before X opens it: the cached store itself is never opened by the code measured.
      say(`  ${label}: the sync id set of the store, in a process of its own (${o.idsetRuns} runs)`)
      fig.idSet = idsetMeasure(o.idsetRuns, xDir)
    }
    const trials: Array<Record<string, unknown>> = []
    for (let t = 1; t <= o.trials; t++) {
      say(`  ${label}: start ${t} of ${o.trials} of the executor X`)
      const tr: Record<string, unknown> = await c
        .startX(t, xDir)
        .catch((err: Error) => ({ trial: t, error: err.message.slice(0, 2_000) }))
      trials.push(tr)
      if (tr.timedOutS !== undefined || tr.exited !== undefined || tr.error !== undefined) break
    }
    if (o.cpuProf !== undefined && trials.every(t => t.error === undefined && t.exited === undefined)) {
      say(`  ${label}: one more start of X, under --cpu-prof (${o.cpuProf}/${label}; not in the medians)`)
      const tr: Record<string, unknown> = await c
        .startX(o.trials + 1, xDir, true)
        .catch((err: Error) => ({ trial: o.trials + 1, error: err.message.slice(0, 2_000) }))
      fig.profiledStart = tr
    }
    const syncs = trials.map(t => t.sync as SyncSession | null).filter((s): s is SyncSession => s !== null)
    fig.node = {
      statusMs: medianOf(trials, 'statusMs'),
      claimMs: medianOf(trials, 'claimMs'),
      submitToClaimMs: medianOf(trials, 'submitToClaimMs'),
      rssAtClaimMb: medianOf(trials, 'rssAtClaimMb'),
      hwmAtClaimMb: medianOf(trials, 'hwmAtClaimMb'),
      cpuMsAtStatus: medianOf(trials, 'cpuMsAtStatus'),
      rssSettledMb: trials[0]?.rssSettledMb ?? null,
      heapSettled: trials[0]?.heapSettled ?? null,
      syncSameHistory:
        syncs.length === 0
          ? null
          : {
              ms: median(syncs.map(s => s.ms)),
              bytes: median(syncs.map(s => s.bytesIn + s.bytesOut)),
              rounds: median(syncs.map(s => s.rounds)),
              eventsIn: median(syncs.map(s => s.eventsIn)),
              eventsOut: median(syncs.map(s => s.eventsOut)),
              sessions: syncs.length
            },
      timedOutS: trials.find(t => t.timedOutS !== undefined)?.timedOutS ?? null,
      trials
    }
    if (history !== undefined && o.newcomer) {
      say(`  ${label}: the newcomer N (empty store) joins D`)
      fig.newcomer = await c.newcomer().catch((err: Error) => ({ error: err.message.slice(0, 2_000) }))
    }
    if (history !== undefined && o.openWatchMs > 0) {
      say(`  ${label}: a newcomer O with --history open (empty store) joins D`)
      fig.newcomerOpen = await c
        .newcomerOpen(o.openWatchMs)
        .catch((err: Error) => ({ error: err.message.slice(0, 2_000) }))
    }
  } catch (err) {
    fig.error = (err as Error).message
    say(`  ${label}: failed: ${(err as Error).message}`)
    for (const n of [c.d, c.s]) if (n !== undefined) say(`    ${n.name} stderr: ${n.stderrTail().slice(-1_500)}`)
  } finally {
    await c.stop()
    if (remove !== undefined) remove()
    else say(`  ${label}: data dirs kept in ${root}`)
  }
  fig.wallS = Math.round((Date.now() - started) / 1000)
  return fig
}

function summary(fig: Record<string, unknown>): void {
  const lines: string[] = ['', 'history: a node with a long history (medians over the starts of X)']
  const ms = (x: unknown): string => (typeof x === 'number' ? `${Math.round(x).toLocaleString('en')} ms` : 'n/a')
  const mb = (x: unknown): string => (typeof x === 'number' ? `${x} MB` : 'n/a')
  const cases = fig.cases as Array<Record<string, unknown>>
  const ref = cases[0]?.node as Record<string, unknown> | undefined
  for (const c of cases) {
    const n = (c.node ?? {}) as Record<string, unknown>
    const sync = n.syncSameHistory as Record<string, number> | null | undefined
    const rss = n.rssAtClaimMb as number | null
    const refRss = ref?.rssAtClaimMb as number | null | undefined
    lines.push(`  ${String(c.label)} (${Number(c.events).toLocaleString('en')} events, ${String(c.plans)} plans)`)
    if (c.error !== undefined) lines.push(`    failed: ${String(c.error)}`)
    lines.push(
      `    /status answers ${ms(n.statusMs)} after spawn${typeof n.timedOutS === 'number' ? ` (timed out at ${n.timedOutS} s)` : ''}; ` +
        `claims in a new plan ${ms(n.claimMs)} after spawn (${ms(n.submitToClaimMs)} after the goal); ` +
        `CPU until /status ${ms(n.cpuMsAtStatus)}`
    )
    lines.push(
      `    RSS at the claim ${mb(rss)}` +
        (typeof rss === 'number' && typeof refRss === 'number' && c !== cases[0]
          ? ` (${(rss / refRss).toFixed(2)}x empty)`
          : '') +
        `, peak ${mb(n.hwmAtClaimMb)}, once finished plans left memory ${mb(n.rssSettledMb)}`
    )
    if (sync !== null && sync !== undefined)
      lines.push(`    sync with a peer holding the same set: ${sync.ms} ms, ${sync.bytes} bytes, ${sync.rounds} rounds`)
    const ids = c.idSet as Record<string, number> | undefined
    if (ids !== undefined)
      lines.push(
        `    sync id set in memory (IdSet): ${ids.setMb} MB (${ids.bytesPerId} B an id), ${ids.withSnapshotMb} MB ` +
          `with its sorted snapshot; on disk (StoredIds, a SQLite node's): ${ids.storedMb} MB, ` +
          `${ids.storedWithViewMb} MB with a view, built in ${ids.storedBuildMs} ms`
      )
    const nc = c.newcomer as Record<string, unknown> | undefined
    if (nc !== undefined) {
      const bc = nc.connectionBytesAtClaim as { in: number } | undefined
      const bf = nc.connectionBytesAtFull as { in: number } | undefined
      lines.push(
        `    newcomer: claims ${ms(nc.claimMs)} after spawn (${((bc?.in ?? NaN) / 2 ** 20).toFixed(1)} MB in), ` +
          `whole history ${nc.fullMs === null ? `not within ${String(nc.timedOutS)} s` : ms(nc.fullMs)} ` +
          `(${((bf?.in ?? NaN) / 2 ** 20).toFixed(1)} MB in, RSS ${mb(nc.rssAtFullMb)}); ` +
          `${String(nc.ownEventsElsewhere)} events of its own in other plans, ${String(nc.syncFailures)} failed sync sessions`
      )
      if (nc.error !== undefined) lines.push(`    newcomer failed: ${String(nc.error).slice(0, 300)}`)
    }
    const no = c.newcomerOpen as Record<string, unknown> | undefined
    if (no !== undefined) {
      const be = no.connectionBytesAtEnd as { in: number } | undefined
      lines.push(
        `    --history open newcomer: claims ${ms(no.claimMs)} after spawn; ${String(no.watchS)} s later holds ` +
          `${String(no.heldAtEnd)} of ${String(no.target)} events, ${((be?.in ?? NaN) / 2 ** 20).toFixed(2)} MB in, ` +
          `RSS ${mb(no.rssAtEndMb)}, ${String(no.syncFailures)} failed sync sessions`
      )
      if (no.error !== undefined) lines.push(`    --history open newcomer failed: ${String(no.error).slice(0, 300)}`)
    }
  }
  console.error(lines.join('\n'))
}

export async function benchHistory(): Promise<Record<string, unknown>> {
  const o = options(process.argv.slice(2))
  const t0 = Date.now()
  const loadStart = loadNow()
  if (o.cli === 'built') {
    say('history: npm run build (the nodes run node dist/src/cli.js)')
    buildCli()
  }
  if (o.cpuProf !== undefined) mkdirSync(o.cpuProf, { recursive: true })
  const histories: History[] = []
  const builds: Record<string, unknown> = {}
  for (const size of o.sizes) {
    const h = await ensureHistory(size, sizeLabel(size), say)
    histories.push(h)
    builds[sizeLabel(size)] = { cached: !h.built, ...h.meta, underWayPlans: h.meta.underWayPlans.length }
  }
  const cases: Array<Record<string, unknown>> = []
  cases.push(await runCase(o, 'empty', undefined))
  for (const h of histories) cases.push(await runCase(o, sizeLabel(h.meta.target), h))
  const fig: Record<string, unknown> = {
    date: new Date().toISOString(),
    machine: machine(),
    ...commit(),
    cli: o.cli,
    trials: o.trials,
    loadStart,
    loadEnd: loadNow(),
    builds,
    cases,
    wallS: Math.round((Date.now() - t0) / 1000)
  }
  summary(fig)
  return report('history', fig)
}
