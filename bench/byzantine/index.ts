import '../../src/polyfill.js'
import { runSeed } from '../../src/sim/run.js'
import { junkReview, runByzantine, resolveF } from '../../src/sim/byzantine/run.js'
import { BYZ_MODES, parseModes } from '../../src/sim/byzantine/modes.js'
import { parseLatencySpec, latencyWords } from '../../src/sim/latency.js'
import { loadNow, machine, r3, report } from '../common/util.js'
import type { ByzMode } from '../../src/sim/byzantine/modes.js'
import type { ByzReport } from '../../src/sim/byzantine/run.js'
import type { LatencySpec } from '../../src/sim/latency.js'
import type { RunReport } from '../../src/sim/run.js'

/**
 * `npm run bench -- byzantine`: dishonest members in the simulator (src/sim/byzantine/), on the rules of the
 * fold before and after protocol version 5 (ADR-0047): `before` runs the simulator's goals as they are (folded by
 * the rules of versions 1-4, which treat claims, results and equivocation alike), `after` makes every goal a
 * version-5 plan (WorldOptions.trust, `npm run sim -- --trust`). For each version, size, seed and mode, the same
 * seed is run honest and then with f dishonest members (f = 1 and f = floor((n - 1) / 3), cut so that one honest
 * member of the attacked role is left), and judged on the honest nodes: the share of tasks the dishonest executors
 * won against their share of the executors (goal: at most fair share + 5 points, pooled over the seeds), the makespan over the honest
 * run's of the same version (goal: at most 1.5x; a run that does not complete within 3x counts as missed), junk
 * results accepted before and after their author's first rejection (goal 0 after; the junk mode runs with review,
 * so that there are rejections), finished plans whose status or deliverable changed afterwards (goal 0), and one
 * treeHash on every honest node.
 *
 * Options: --nodes=10,100 --modes=all --f=1,max --versions=4,5 --seeds=1 --seed=1 --llm-ms=300 (a fixed
 * latency, or lognormal:MEDIAN:SIGMA) --allow-list (every node refuses authors outside the run's keys, as with
 * `--allow-peers`). Everything runs in this process; each case prints a line on stderr as it
 * ends. The JSON (last line) has the goals' summary per version (`before`, `after`), and `compare`: each mode
 * and f with both versions' figures side by side.
 */

interface Options {
  readonly nodes: readonly number[]
  readonly modes: readonly ByzMode[]
  readonly fs: ReadonlyArray<number | 'max'>
  /** Protocol versions to run: 4 (before: the rules of versions 1-4) and 5 (after: params.trust). */
  readonly versions: ReadonlyArray<4 | 5>
  readonly seeds: readonly number[]
  readonly llm: LatencySpec
  /** Who reviews in junk runs (ByzOptions.reviewer). */
  readonly reviewer: 'judge' | 'stand-in'
  /** Every node with an allow-list of the run's keys (WorldOptions.allowList, `--allow-peers`). */
  readonly allowList: boolean
}

function reviewerOf(raw: string): 'judge' | 'stand-in' {
  if (raw !== 'judge' && raw !== 'stand-in')
    throw new Error(
      `--reviewer=${raw}: expected judge (rejects junk, as a model would) or stand-in (the offline review)`
    )
  return raw
}

/** The goals, as BENCHMARKS.md states them. */
export const BYZ_GOALS = { shareOverFair: 0.05, makespan: 1.5, junkAfter: 0, changed: 0 } as const

function options(argv: readonly string[]): Options {
  const value = (flag: string): string | undefined => argv.find(a => a.startsWith(`${flag}=`))?.slice(flag.length + 1)
  const whole = (flag: string, raw: string): number => {
    const n = Number(raw)
    if (!Number.isInteger(n) || n < 0) throw new Error(`${flag}=${raw}: expected whole numbers, e.g. ${flag}=10,100`)
    return n
  }
  const seeds = whole('--seeds', value('--seeds') ?? '1')
  const first = whole('--seed', value('--seed') ?? '1')
  return {
    nodes: (value('--nodes') ?? '10,100').split(',').map(s => Math.max(4, whole('--nodes', s))),
    modes: parseModes(value('--modes') ?? 'all'),
    fs: (value('--f') ?? '1,max').split(',').map(s => (s === 'max' ? 'max' : whole('--f', s))),
    versions: (value('--versions') ?? '4,5').split(',').map(s => {
      if (s !== '4' && s !== '5') throw new Error(`--versions=${s}: expected 4 (before), 5 (after) or 4,5`)
      return s === '4' ? 4 : 5
    }),
    seeds: Array.from({ length: Math.max(1, seeds) }, (_, i) => first + i),
    llm: parseLatencySpec(value('--llm-ms') ?? '300'),
    reviewer: reviewerOf(value('--reviewer') ?? 'judge'),
    allowList: argv.includes('--allow-list')
  }
}

const log = (s: string): void => {
  console.error(s)
}

/** One case as the JSON reports it. */
function row(r: ByzReport, f: number | 'max', version: 4 | 5): Record<string, unknown> {
  const v = r.verdict
  return {
    version,
    mode: r.mode,
    nodes: r.nodes,
    seed: r.seed,
    f: f === 'max' ? `max (${r.f})` : r.f,
    members: r.members,
    completed: v.completed,
    honestAgree: v.honestAgree,
    makespan: r.makespanRatio,
    share: r3(v.dishonestShare),
    fairShare: r3(v.fairShare),
    tasks: v.tasks,
    won: Math.round(v.dishonestShare * v.tasks),
    junkAcceptedBefore: v.junkAcceptedBefore,
    junkAcceptedAfter: v.junkAcceptedAfter,
    plansChangedAfterFinish: v.plansChangedAfterFinish,
    problems: v.problems,
    wallS: Math.round(r.wallMs / 100) / 10,
    replay: r.replay
  }
}

type Row = ReturnType<typeof row>

/**
 * The dishonest executors' share over fair, pooled over the seeds of each size, mode and f: tasks won over tasks.
 * One seed's plan has about 21 tasks, so a fair draw's share on one seed has a standard deviation of 9-11 points,
 * and the worst of eight fair draws is 13 (at a fair 20 %) or 16 (at 60 %) points over in the median, 4-23 points
 * in 80 % of sweeps: the worst seed says little, and the pooled share is what the goal is judged on.
 */
function pooledExcess(rows: readonly Row[]): number | null {
  const groups = new Map<string, Row[]>()
  for (const r of rows) {
    const k = `${r.nodes as number}/${r.mode as string}/${String(r.f)}`
    groups.set(k, [...(groups.get(k) ?? []), r])
  }
  const excess = [...groups.values()].map(g => {
    const tasks = g.reduce((a, r) => a + (r.tasks as number), 0)
    const won = g.reduce((a, r) => a + (r.won as number), 0)
    return tasks === 0 ? 0 : won / tasks - (g[0]?.fairShare as number)
  })
  return excess.length === 0 ? null : r3(Math.max(...excess))
}

/** The worst of each figure over a set of cases, and whether each goal was met. */
function summary(rows: readonly Row[]): Record<string, unknown> {
  const num = (k: string): number[] => rows.map(r => r[k]).filter((x): x is number => typeof x === 'number')
  const excess = rows.map(r => (r.share as number) - (r.fairShare as number))
  const worstSeedExcess = excess.length === 0 ? null : r3(Math.max(...excess))
  const worstExcess = pooledExcess(rows)
  const incomplete = rows.filter(r => r.completed !== true).length
  const makespans = num('makespan')
  const worstMakespan = incomplete > 0 ? null : makespans.length === 0 ? null : Math.max(...makespans)
  const junkAfter = num('junkAcceptedAfter').reduce((a, b) => a + b, 0)
  const changed = num('plansChangedAfterFinish').reduce((a, b) => a + b, 0)
  return {
    cases: rows.length,
    notCompleted: incomplete,
    honestDisagree: rows.filter(r => r.honestAgree !== true).length,
    shareOverFairPooled: worstExcess,
    worstSeedShareOverFair: worstSeedExcess,
    shareMet: worstExcess !== null && worstExcess <= BYZ_GOALS.shareOverFair,
    worstMakespan,
    makespanMet: incomplete === 0 && (worstMakespan ?? Infinity) <= BYZ_GOALS.makespan,
    junkAcceptedBefore: num('junkAcceptedBefore').reduce((a, b) => a + b, 0),
    junkAcceptedAfter: junkAfter,
    junkMet: junkAfter === BYZ_GOALS.junkAfter,
    plansChangedAfterFinish: changed,
    changedMet: changed === BYZ_GOALS.changed
  }
}

/** Each mode and f with the figures of both versions beside each other (the cases of the first seed and size). */
function compare(rows: readonly Row[]): Array<Record<string, unknown>> {
  const key = (r: Row): string => `${r.nodes as number}/${r.mode as string}/${String(r.f)}`
  const keys = [...new Set(rows.filter(r => r.seed === rows[0]?.seed).map(key))]
  const figures = (r: Row | undefined): Record<string, unknown> | null =>
    r === undefined
      ? null
      : {
          share: r.share,
          fairShare: r.fairShare,
          makespan: r.makespan,
          completed: r.completed,
          junk: `${r.junkAcceptedBefore as number} / ${r.junkAcceptedAfter as number}`,
          changed: r.plansChangedAfterFinish
        }
  return keys.map(k => {
    const of = (v: 4 | 5): Row | undefined =>
      rows.find(r => key(r) === k && r.version === v && r.seed === rows[0]?.seed)
    const any = of(4) ?? of(5)
    return { nodes: any?.nodes, mode: any?.mode, f: any?.f, before: figures(of(4)), after: figures(of(5)) }
  })
}

/** The goals' summary of one version's cases: all of them, at f = 1, at f = max, and per mode. */
function byVersion(rows: readonly Row[], modes: readonly ByzMode[]): Record<string, unknown> {
  return {
    overall: summary(rows),
    atF1: summary(rows.filter(r => r.f === 1)),
    atFMax: summary(rows.filter(r => typeof r.f === 'string')),
    byMode: Object.fromEntries(
      BYZ_MODES.filter(m => modes.includes(m)).map(m => [m, summary(rows.filter(r => r.mode === m))])
    )
  }
}

export async function benchByzantine(): Promise<Record<string, unknown>> {
  const opts = options(process.argv.slice(2))
  const started = Date.now()
  const loadBefore = loadNow()
  const rows: Row[] = []
  for (const version of opts.versions)
    for (const nodes of opts.nodes)
      for (const seed of opts.seeds) {
        const world = {
          seed,
          nodes,
          faults: [],
          until: 'plan' as const,
          llmLatency: opts.llm,
          ...(version === 5 ? { trust: true } : {}),
          ...(opts.allowList ? { allowList: true } : {})
        }
        const honest: RunReport = await runSeed(world)
        const reviewed: RunReport | null = opts.modes.includes('junk')
          ? await runSeed({ ...world, ...junkReview(version === 5) })
          : null
        log(
          `byzantine: version ${version}, ${nodes} nodes, seed ${seed}: honest ${honest.completionMs} ms virtual, ` +
            `load ${loadNow().join(' ')}`
        )
        for (const mode of opts.modes)
          for (const f of opts.fs) {
            const review = mode === 'junk'
            const r = await runByzantine(
              { ...world, mode, f: resolveF(f, nodes), reviewer: opts.reviewer },
              review && reviewed !== null ? reviewed : honest
            )
            const line = row(r, f, version)
            log(`  ${JSON.stringify(line)}`)
            rows.push(line)
          }
      }
  const of = (v: 4 | 5): Row[] => rows.filter(r => r.version === v)
  return report('byzantine', {
    machine: machine(),
    date: new Date().toISOString(),
    loadBefore,
    loadAfter: loadNow(),
    llmMs: latencyWords(opts.llm),
    allowList: opts.allowList,
    goals: {
      share: `at most fair share + ${BYZ_GOALS.shareOverFair * 100} points, pooled over the seeds`,
      makespan: `at most ${BYZ_GOALS.makespan}x the honest run, and every plan completes`,
      junkAfter: 'none accepted after its author was first rejected',
      changed: 'no finished plan changes afterwards'
    },
    ...(opts.versions.includes(4) ? { before: byVersion(of(4), opts.modes) } : {}),
    ...(opts.versions.includes(5) ? { after: byVersion(of(5), opts.modes) } : {}),
    compare: compare(rows),
    cases: rows,
    wallS: Math.round((Date.now() - started) / 1000)
  })
}
