/**
 * Dishonest members in the simulator (src/sim/byzantine/): a seeded sweep of every mode but `stuff` and
 * `budget-drain` (their extra proposals make a run tens of seconds; `npm run bench -- byzantine` runs both) on version-5 plans
 * (WorldOptions.trust, docs/protocol/fold.md section 11), f = 1 on clean links and f = floor((n - 1) / 3) of the
 * attacked role (cut to leave one honest member) with link faults, clock skew and a crash on top. A few cases on
 * the simulator's plain goals (the rules of versions 1-4) keep what held there before version 5 holding.
 *
 * A run passes only if every plan completes, every honest node ends with one treeHash per plan, no finished plan
 * changes its status or deliverable afterwards, and no junk is accepted after its author's first rejection; and on
 * version 5 the dishonest executors win at most their fair share + 5 points, and the makespan is at most 1.5x the
 * same seed run honest. The rules version 5 does not hold yet under some modes are in NOT_YET_IN_FORCE, each with
 * why: measured and printed on every run, not asserted, and listed as todos.
 *
 * A failure prints the command that replays the run. Seeds that found a bug stay in REGRESSIONS.
 */
import { describe, expect, it } from 'vitest'
import { runSeed } from '../../src/sim/run.js'
import { junkReview, runByzantine } from '../../src/sim/byzantine/run.js'
import { castFor, maxFaulty } from '../../src/sim/byzantine/modes.js'
import type { ByzMode } from '../../src/sim/byzantine/modes.js'
import type { ByzReport } from '../../src/sim/byzantine/run.js'
import type { FaultKind } from '../../src/sim/faults.js'
import type { RunReport } from '../../src/sim/run.js'

/** A rule of a dishonest run, and the modes it is checked under. */
interface Rule {
  readonly modes: readonly ByzMode[]
  /** Versions it is checked on: 5 only, or every version. */
  readonly v5Only?: true
  /** Why the run breaks it, in words, or null when it holds. */
  readonly broken: (r: ByzReport) => string | null
}

const EXECUTOR_MODES: readonly ByzMode[] = ['backdate', 'hoard', 'late-rewrite', 'not-held', 'junk', 'sybil']
const PLAN_MODES: readonly ByzMode[] = ['equivocate-early', 'equivocate-late', 'budget-drain']
const ALL: readonly ByzMode[] = [...EXECUTOR_MODES, ...PLAN_MODES, 'twins']
/** Swept in CI: all but budget-drain, whose 40 proposals a proposal make a run the dearest of the sweep. */
const SWEPT: readonly ByzMode[] = ALL.filter(m => m !== 'budget-drain')

const RULES: Readonly<Record<string, Rule>> = {
  'no crash: every honest node is up at the end': {
    modes: ALL,
    broken: r => (r.verdict.problems.length === 0 ? null : r.verdict.problems.join('; '))
  },
  'one treeHash on every honest node': {
    modes: ALL,
    broken: r => (r.verdict.honestAgree ? null : 'honest nodes disagree')
  },
  'every plan completes': {
    modes: ALL,
    broken: r => (r.verdict.completed ? null : `not completed (${r.outcome})`)
  },
  'no finished plan changes its status or deliverable afterwards': {
    modes: ALL,
    v5Only: true,
    broken: r =>
      r.verdict.plansChangedAfterFinish === 0
        ? null
        : `${r.verdict.plansChangedAfterFinish} plan(s) changed after finishing`
  },
  'no junk accepted after its author was first rejected': {
    modes: ['junk'],
    v5Only: true,
    broken: r =>
      r.verdict.junkAcceptedAfter === 0 ? null : `${r.verdict.junkAcceptedAfter} junk result(s) accepted after`
  },
  'dishonest executors win at most their fair share + 5 points': {
    modes: ALL,
    v5Only: true,
    broken: r =>
      r.verdict.dishonestShare <= r.verdict.fairShare + 0.05
        ? null
        : `won ${pct(r.verdict.dishonestShare)} of the tasks, fair share ${pct(r.verdict.fairShare)}`
  },
  'makespan at most 1.5x the honest run': {
    modes: ALL,
    v5Only: true,
    broken: r =>
      r.makespanRatio !== null && r.makespanRatio <= 1.5
        ? null
        : `makespan ratio ${r.makespanRatio ?? 'none (did not complete)'}`
  }
}

/** A rule version 5 does not hold yet under some modes (in runs with faults on top only, where `withFaults`). */
interface Waiver {
  readonly rule: string
  readonly modes: readonly ByzMode[]
  readonly withFaults?: true
  /** Waived only where the nodes run without an allow-list. */
  readonly withoutAllowList?: true
  readonly why: string
}

/**
 * What version 5 does not hold yet: measured and printed, not asserted. Remove an entry when the work it waits for
 * has landed, and the sweep asserts the rule under those modes too.
 */
const NOT_YET_IN_FORCE: readonly Waiver[] = [
  {
    rule: 'dishonest executors win at most their fair share + 5 points',
    modes: ['backdate', 'not-held', 'twins'],
    withFaults: true,
    why:
      'with link delays and clock skew an honest claim can be stamped past claimWindowMs (1 s, four staggers), ' +
      'where a claim stamped a tick after readyAt wins by time'
  },
  {
    rule: 'dishonest executors win at most their fair share + 5 points',
    modes: ['sybil'],
    withoutAllowList: true,
    why:
      'each identity is ranked as a member of its own; only an allow-list keeps them out, and the sybil case ' +
      'with one (every node refusing authors outside the run, as --allow-peers does) holds the rule'
  }
]

const waiverWhere = (w: Waiver): string =>
  `${w.modes.join(', ')}${w.withFaults === true ? ', with faults' : ''}` +
  `${w.withoutAllowList === true ? ', without an allow-list' : ''}`

const pct = (x: number): string => `${Math.round(x * 1000) / 10} %`

const waived = (rule: string, c: Case): boolean =>
  NOT_YET_IN_FORCE.some(
    w =>
      w.rule === rule &&
      w.modes.includes(c.mode) &&
      (w.withFaults !== true || c.faults.length > 0) &&
      (w.withoutAllowList !== true || c.allowList !== true)
  )

/** The size a mode is swept at: 7 nodes give 4 executors; the plan modes need 2 decomposers (10 nodes). */
const sizeOf = (mode: ByzMode): number => (PLAN_MODES.includes(mode) ? 10 : 7)

interface Case {
  readonly mode: ByzMode
  readonly nodes: number
  readonly seed: number
  readonly f: number
  readonly faults: readonly FaultKind[]
  readonly trust: boolean
  /** Every node with an allow-list of the run's keys (WorldOptions.allowList). */
  readonly allowList?: true
}

/** The faults put on top of the f = max runs. */
const ON_TOP: readonly FaultKind[] = ['links', 'skew', 'crash']

/**
 * Version 5: f = 1 on clean links, and f = floor((n - 1) / 3) of the role with faults on top where the role has
 * that many to spare, a seed per mode.
 */
const V5_CASES: readonly Case[] = SWEPT.flatMap(mode => {
  const nodes = sizeOf(mode)
  const seed = 1 + (ALL.indexOf(mode) % 3)
  const most = maxFaulty(nodes)
  const fs = castFor(mode, nodes, most).members.length > 1 ? [1, most] : [1]
  return fs.map(f => ({ mode, nodes, seed, f, faults: f === 1 ? [] : ON_TOP, trust: true }))
})

/** Sybils behind an allow-list: their extra identities' events are refused, and the share rule holds. */
const ALLOW_LIST_CASES: readonly Case[] = [
  { mode: 'sybil', nodes: sizeOf('sybil'), seed: 1, f: 1, faults: [], trust: true, allowList: true }
]

/** Versions 1-4 (the simulator's plain goals): what held before version 5 and must keep holding there. */
const V4_CASES: readonly Case[] = (['backdate', 'late-rewrite'] as const).map((mode, i) => ({
  mode,
  nodes: sizeOf(mode),
  seed: 1 + i,
  f: 1,
  faults: [],
  trust: false
}))

/** Seeds that found a bug, replayed on every run (each with what it found). */
const REGRESSIONS: ReadonlyArray<Case & { readonly found: string }> = []

const honestRuns = new Map<string, Promise<RunReport>>()
function honest(c: Case, review: boolean): Promise<RunReport> {
  const key = `${c.nodes}/${c.seed}/${c.faults.join(',')}/${review}/${c.trust}/${c.allowList === true}`
  let run = honestRuns.get(key)
  if (run === undefined) {
    run = runSeed({
      seed: c.seed,
      nodes: c.nodes,
      faults: c.faults,
      until: 'plan',
      ...(review ? junkReview(c.trust) : {}),
      ...(c.trust ? { trust: true } : {}),
      ...(c.allowList === true ? { allowList: true } : {})
    })
    honestRuns.set(key, run)
  }
  return run
}

/** Run one case: the rules it breaks that are in force, and those printed only. */
async function check(c: Case): Promise<{ breaks: string[]; printed: string[] }> {
  const breaks: string[] = []
  const printed: string[] = []
  const review = c.mode === 'junk'
  const r = await runByzantine(
    {
      seed: c.seed,
      nodes: c.nodes,
      faults: c.faults,
      until: 'plan',
      mode: c.mode,
      f: c.f,
      ...(c.trust ? { trust: true } : {}),
      ...(c.allowList === true ? { allowList: true } : {})
    },
    await honest(c, review)
  )
  expect(r.members, `${c.mode} at ${c.nodes} nodes has no dishonest member`).toBeGreaterThan(0)
  for (const [name, rule] of Object.entries(RULES)) {
    if (!rule.modes.includes(c.mode) || (rule.v5Only === true && !c.trust)) continue
    const why = rule.broken(r)
    if (why === null) continue
    const line = `${c.mode} f=${c.f} seed ${c.seed}: ${name}: ${why} (${r.replay})`
    if (c.trust && waived(name, c)) printed.push(line)
    else breaks.push(line)
  }
  return { breaks, printed }
}

const named = (c: Case): string =>
  `${c.mode}, f = ${c.f} of ${c.nodes} nodes, seed ${c.seed}${c.faults.length > 0 ? `, ${c.faults.join(' ')}` : ''}` +
  `${c.allowList === true ? ', allow-list' : ''}`

describe('dishonest members on version-5 plans (simulator)', () => {
  for (const c of [...V5_CASES, ...ALLOW_LIST_CASES, ...REGRESSIONS])
    it(
      `${named(c)}: every rule in force holds`,
      async () => {
        const { breaks, printed } = await check(c)
        if (printed.length > 0) console.log(`not yet in force, broken:\n  ${printed.join('\n  ')}`)
        expect(breaks, breaks.join('\n')).toEqual([])
      },
      5 * 60_000
    )

  for (const w of NOT_YET_IN_FORCE) it.todo(`${w.rule} under ${waiverWhere(w)} (${w.why})`)
})

describe('dishonest members on the rules of versions 1-4 (simulator)', () => {
  for (const c of V4_CASES)
    it(
      `${named(c)}: no crash, one treeHash, every plan completes`,
      async () => {
        const { breaks } = await check(c)
        expect(breaks, breaks.join('\n')).toEqual([])
      },
      5 * 60_000
    )
})
