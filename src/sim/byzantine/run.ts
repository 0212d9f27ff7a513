import { runSeed, runWorld, GOAL_AT_MS } from '../run.js'
import { castFor, maxFaulty } from './modes.js'
import { membersFor, sybilKeys } from './members.js'
import { junkJudge } from './plan-policies.js'
import { FinishWatch, judge } from './verdict.js'
import type { PeerIdString } from '../../core/events.js'
import type { RunReport } from '../run.js'
import type { WorldOptions } from '../world-options.js'
import type { SimNode } from '../sim-node.js'
import type { ByzMode } from './modes.js'
import type { ByzVerdict } from './verdict.js'
import type { Dishonesty } from './hooks.js'

/**
 * A hoarder on version-5 plans delays each task it holds on the critical path by the fold's backup time plus the
 * backup's own work (docs/protocol/fold.md 11.8), not by maxClaimMs: four typical task times once the plan has a
 * built-on split or result, one once the hoarder was outdone (ADR-0054), and four leases (60 s at the simulator's
 * 15 s lease) before that. Its runs give up at this multiple of the honest makespan (plus 30 s) instead of 3x, so a
 * bounded delay completes and an unbounded one does not.
 */
export const HOARD_DEADLINE_FACTOR = 15

/** A dishonest run: a World's options plus the mode and how many members follow it. */
export interface ByzOptions extends Omit<WorldOptions, 'dishonest'> {
  readonly mode: ByzMode
  /** Dishonest members (cut to leave one honest member of the attacked role; see castFor). */
  readonly f: number
  /** Give up at this multiple of the honest run's makespan (default 3; HOARD_DEADLINE_FACTOR for hoard on version 5). */
  readonly deadlineFactor?: number
  /** Goal parameters beyond the world's (Dishonesty.params). */
  readonly params?: Dishonesty['params']
  /**
   * Who reviews in a junk run: `judge` (default) rejects junk, as a model reading the output would (junkJudge);
   * `stand-in` is the offline review alone, which takes junk that names its task for work.
   */
  readonly reviewer?: 'judge' | 'stand-in'
}

/**
 * How a junk run has results reviewed: on version 5, the review sample (each member's first result in a plan, every
 * result after its first rejection, one in four of the rest; fold.md 11.7); before it, `review` (every result).
 */
export function junkReview(trust: boolean): { review: true } | { reviewOneIn: number } {
  return trust ? { reviewOneIn: 4 } : { review: true }
}

/** One dishonest run beside the same seed with everyone honest. */
export interface ByzReport {
  readonly mode: ByzMode
  readonly seed: number
  readonly nodes: number
  /** Members asked for, and those the swarm's shape allowed (castFor). */
  readonly f: number
  readonly members: number
  readonly outcome: RunReport['outcome']
  readonly verdict: ByzVerdict
  /** Virtual ms from the goals to every plan finished on node 0, with and without the dishonest members. */
  readonly completionMs: number | null
  readonly honestMs: number | null
  /** completionMs / honestMs, or null when the dishonest run did not complete. */
  readonly makespanRatio: number | null
  /** The run's own checks that failed (every node, dishonest ones too: duplicate executions are expected). */
  readonly runProblems: readonly string[]
  readonly wallMs: number
  readonly replay: string
}

/** f as a bench names it: a number, or `max` for floor((n - 1) / 3). */
export function resolveF(f: number | 'max', nodes: number): number {
  return f === 'max' ? maxFaulty(nodes) : f
}

/**
 * Run one seed with `f` members following `mode`, and judge it (src/sim/byzantine/verdict.ts) against the same
 * seed run honest (`honest`, or run here). The run gives up at deadlineFactor times the honest makespan.
 */
export async function runByzantine(opts: ByzOptions, honest?: RunReport): Promise<ByzReport> {
  const t0 = performance.now()
  const { mode, f, deadlineFactor, params, reviewer, ...given } = opts
  const world =
    mode === 'junk' && given.review !== true && given.reviewOneIn === undefined
      ? { ...given, ...junkReview(given.trust === true) }
      : given
  const base = honest ?? (await runSeed(world))
  const cast = castFor(mode, opts.nodes, f)
  const sybils = mode === 'sybil' ? await sybilKeys(opts.seed, cast.members) : undefined
  const members = membersFor(mode, cast, sybils, params)
  const isHonest = (n: SimNode): boolean => !cast.members.includes(n.index) && n.twinOf === undefined
  const watch = new FinishWatch(isHonest)
  const goalAt = opts.goalAtMs ?? GOAL_AT_MS
  const factor = deadlineFactor ?? (mode === 'hoard' && opts.trust === true ? HOARD_DEADLINE_FACTOR : 3)
  const deadlineMs =
    base.completionMs === null
      ? (opts.deadlineMs ?? 15 * 60_000)
      : goalAt + Math.round(base.completionMs * factor) + 30_000
  const { report, world: w } = await runWorld({
    ...world,
    deadlineMs,
    dishonest: {
      ...members.dishonesty,
      ...(mode === 'junk' && reviewer !== 'stand-in' ? { provider: junkJudge } : {}),
      booted: (node, runtime) => {
        watch.booted(node, runtime)
      }
    }
  })
  const authors = new Set<PeerIdString>(members.authors)
  for (const i of cast.twinsOf) {
    const n = w.nodes[i]
    if (n !== undefined) authors.add(n.peerId)
  }
  // A Twin is a second executor machine under its original's key: both count, as dishonest, in the fair share.
  const executors = w.nodes.filter(n => n.role === 'executor')
  const dishonestExecutors = executors.filter(n => !isHonest(n) || cast.twinsOf.includes(n.index)).length
  const verdict = judge(w, isHonest, authors, executors.length === 0 ? 0 : dishonestExecutors / executors.length, watch)
  const completionMs = verdict.completed ? report.completionMs : null
  return {
    mode,
    seed: opts.seed,
    nodes: opts.nodes,
    f,
    members: cast.members.length,
    outcome: report.outcome,
    verdict,
    completionMs,
    honestMs: base.completionMs,
    makespanRatio:
      completionMs === null || base.completionMs === null || base.completionMs === 0
        ? null
        : Math.round((completionMs / base.completionMs) * 1000) / 1000,
    runProblems: report.checks.problems,
    wallMs: Math.round(performance.now() - t0),
    replay: `npm run sim -- ${report.replay.replace(/^npm run sim -- /, '')} --byzantine ${mode} --f ${f}`
  }
}
