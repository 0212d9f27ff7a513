/**
 * Dishonest members in the simulator (src/sim/byzantine/): a seeded sweep of every mode but `stuff` (its 71
 * proposals a slot make a run tens of seconds; `npm run bench -- byzantine` runs it), f = 1 and f =
 * floor((n - 1) / 3) of the attacked role (cut to leave one honest member), over small swarms, some with link
 * faults and clock skew on top.
 *
 * What holds today and must keep holding is asserted: the dishonest nodes crash nothing, every honest node ends
 * with one treeHash per plan, and every plan completes under the modes that do not stop it today. The rules the
 * fold does not enforce yet (protocol version 5 will) are in NOT_YET_IN_FORCE: each is measured and printed on
 * every run, not asserted, and listed as a todo. When the fold work lands, remove a rule from NOT_YET_IN_FORCE and
 * the sweep asserts it for every mode it names.
 *
 * A failure prints the command that replays the run.
 */
import { describe, expect, it } from 'vitest'
import { runSeed } from '../../src/sim/run.js'
import { runByzantine } from '../../src/sim/byzantine/run.js'
import { castFor, maxFaulty } from '../../src/sim/byzantine/modes.js'
import type { ByzMode } from '../../src/sim/byzantine/modes.js'
import type { ByzReport } from '../../src/sim/byzantine/run.js'
import type { FaultKind } from '../../src/sim/faults.js'
import type { RunReport } from '../../src/sim/run.js'

/** A rule of a dishonest run, and the modes it is checked under. */
interface Rule {
  readonly modes: readonly ByzMode[]
  /** Why the run breaks it, in words, or null when it holds. */
  readonly broken: (r: ByzReport) => string | null
}

const EXECUTOR_MODES: readonly ByzMode[] = ['backdate', 'hoard', 'late-rewrite', 'not-held', 'junk', 'sybil']
const PLAN_MODES: readonly ByzMode[] = ['equivocate-early', 'equivocate-late', 'budget-drain']
const ALL: readonly ByzMode[] = [...EXECUTOR_MODES, ...PLAN_MODES, 'twins']

/** The modes under which every plan still completes on today's rules (hoarding and draining stop a plan). */
const COMPLETES_TODAY: readonly ByzMode[] = ALL.filter(m => m !== 'hoard' && m !== 'budget-drain')

const RULES: Readonly<Record<string, Rule>> = {
  'no crash: every honest node is up at the end': {
    modes: ALL,
    broken: r => (r.verdict.problems.length === 0 ? null : r.verdict.problems.join('; '))
  },
  'one treeHash on every honest node': {
    modes: ALL,
    broken: r => (r.verdict.honestAgree ? null : 'honest nodes disagree')
  },
  'every plan completes (modes that complete today)': {
    modes: COMPLETES_TODAY,
    broken: r => (r.verdict.completed ? null : `not completed (${r.outcome})`)
  },
  'every plan completes (hoard, budget-drain)': {
    modes: ['hoard', 'budget-drain'],
    broken: r => (r.verdict.completed ? null : `not completed (${r.outcome})`)
  },
  'dishonest executors win at most their fair share + 5 points': {
    modes: ALL,
    broken: r =>
      r.verdict.dishonestShare <= r.verdict.fairShare + 0.05
        ? null
        : `won ${pct(r.verdict.dishonestShare)} of the tasks, fair share ${pct(r.verdict.fairShare)}`
  },
  'no finished plan changes its status or deliverable afterwards': {
    modes: ALL,
    broken: r =>
      r.verdict.plansChangedAfterFinish === 0
        ? null
        : `${r.verdict.plansChangedAfterFinish} plan(s) changed after finishing`
  },
  'no junk accepted after its author was first rejected': {
    modes: ['junk'],
    broken: r =>
      r.verdict.junkAcceptedAfter === 0 ? null : `${r.verdict.junkAcceptedAfter} junk result(s) accepted after`
  },
  'makespan at most 1.5x the honest run': {
    modes: ALL,
    broken: r =>
      r.makespanRatio !== null && r.makespanRatio <= 1.5
        ? null
        : `makespan ratio ${r.makespanRatio ?? 'none (did not complete)'}`
  }
}

/**
 * The rules the fold does not enforce yet: measured and printed, not asserted. Remove one when the fold work that
 * enforces it has landed, and the sweep asserts it.
 */
const NOT_YET_IN_FORCE: ReadonlySet<string> = new Set([
  'every plan completes (hoard, budget-drain)',
  'dishonest executors win at most their fair share + 5 points',
  'no finished plan changes its status or deliverable afterwards',
  'no junk accepted after its author was first rejected',
  'makespan at most 1.5x the honest run'
])

const pct = (x: number): string => `${Math.round(x * 1000) / 10} %`

/** The size a mode is swept at: 7 nodes give 4 executors; the plan modes need 2 decomposers (10 nodes). */
const sizeOf = (mode: ByzMode): number => (PLAN_MODES.includes(mode) ? 10 : 7)

interface Case {
  readonly mode: ByzMode
  readonly nodes: number
  readonly seed: number
  readonly f: number
  readonly faults: readonly FaultKind[]
}

/** f = 1 on clean links, and f = floor((n - 1) / 3) with link faults and skew on top, a seed per mode. */
const CASES: readonly Case[] = ALL.flatMap((mode, i) => {
  const nodes = sizeOf(mode)
  const seed = 1 + (i % 3)
  const most = maxFaulty(nodes)
  const fs = castFor(mode, nodes, most).members.length > 1 ? [1, most] : [1]
  return fs.map(f => ({ mode, nodes, seed, f, faults: f === 1 ? [] : (['links', 'skew'] as FaultKind[]) }))
})

const honestRuns = new Map<string, Promise<RunReport>>()
function honest(c: Case, review: boolean): Promise<RunReport> {
  const key = `${c.nodes}/${c.seed}/${c.faults.join(',')}/${review}`
  let run = honestRuns.get(key)
  if (run === undefined) {
    run = runSeed({ seed: c.seed, nodes: c.nodes, faults: c.faults, until: 'plan', ...(review ? { review } : {}) })
    honestRuns.set(key, run)
  }
  return run
}

describe('dishonest members (simulator)', () => {
  it(
    'a seeded sweep of every mode keeps the rules in force; the others are printed',
    async () => {
      const breaks: string[] = []
      const lines: string[] = []
      for (const c of CASES) {
        const review = c.mode === 'junk'
        const r = await runByzantine(
          {
            seed: c.seed,
            nodes: c.nodes,
            faults: c.faults,
            until: 'plan',
            mode: c.mode,
            f: c.f,
            ...(review ? { review } : {})
          },
          await honest(c, review)
        )
        expect(r.members, `${c.mode} at ${c.nodes} nodes has no dishonest member`).toBeGreaterThan(0)
        for (const [name, rule] of Object.entries(RULES)) {
          if (!rule.modes.includes(c.mode)) continue
          const why = rule.broken(r)
          if (why === null) continue
          const line = `${c.mode} f=${c.f} seed ${c.seed}: ${name}: ${why} (${r.replay})`
          if (NOT_YET_IN_FORCE.has(name)) lines.push(line)
          else breaks.push(line)
        }
      }
      console.log(
        `rules not yet in force (printed, not asserted):\n  ${[...NOT_YET_IN_FORCE].join('\n  ')}\n` +
          `broken today:\n  ${lines.join('\n  ') || 'none'}`
      )
      expect(breaks, breaks.join('\n')).toEqual([])
    },
    5 * 60_000
  )

  for (const name of NOT_YET_IN_FORCE) it.todo(`${name} (not yet in force: protocol version 5)`)
})
