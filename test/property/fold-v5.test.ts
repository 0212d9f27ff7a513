/**
 * Protocol 5's rules, over generated version-5 plans with a member who lies
 * (test/helpers/plan-gen.ts GenOptions.liar: an executor whose every event
 * is stamped a tick after its deps, who ignores the claim limit and reports
 * on claims it lost) and with equivocations that travel late, published
 * after the first event of their slot was built on.
 *
 * Properties:
 * 1. Order independence: any arrival order, with duplicates, folds to the
 *    treeHash of the set (standing included).
 * 2. Monotonicity, equivocation and dishonest stamps included: along the
 *    prefixes of a random causal order, a split that another member built
 *    on keeps its proposal and children, and a done task whose accepted
 *    result another member built on stays done.
 * 3. The rules hold on every set: no accepted result comes from a claim that
 *    does not head one of its task's chains; no member has more live chains
 *    than maxClaimsPerExecutor at any chain's start; nobody takes over its
 *    own chain; spent tokens never exceed what the counted events report;
 *    a member with a rejected result has no result accepted unreviewed,
 *    unless another member built on it (the review sample, ADR-0049).
 * The suite reports how often the generator made the hard cases and fails
 * if one never occurred.
 *
 * Each run draws a fresh corpus; replay a failure with GEN_SEED=<seed> (printed
 * in the failure). Seeds that found a bug stay below as regressions.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { compareHlc } from '../../src/core/hlc.js'
import { rollupId } from '../../src/core/node-ids.js'
import {
  ARRIVAL_MODES,
  CaseCounter,
  Corpus,
  Rng,
  actorsFrom,
  arrangeEvents,
  causalOrder,
  generatePlan,
  loadActors,
  planSeed,
  runSeed
} from '../helpers/plan-gen.js'
import { encodeEnvelope, eventIdOf, validateEnvelope } from '../../src/wire/index.js'
import type { Envelope, EventId, NodeId, PeerIdString, PlanEvent, PlanId, TaskId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { GeneratedPlan } from '../helpers/plan-gen.js'

const RUNS = Math.max(300, Number(process.env.FC_RUNS ?? 300))
const CORPUS = Math.max(40, Number(process.env.GEN_CORPUS ?? 80))
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/fold-v5.test.ts`

const REQUIRED = [
  'claim a tick after readyAt',
  'contest won by rank, not stamp',
  'result not held',
  'claim over limit',
  'equivocation',
  'late equivocation kept out by finality',
  'ended without result',
  'status completed',
  'result reviewed first',
  'result reviewed after a rejection',
  'result reviewed by the sample',
  'result accepted unreviewed',
  'member outdone',
  'claim after its author was outdone'
]

/**
 * Plans (run seed, plan index) with a member outdone and a claim after it (ADR-0054), which a drawn corpus of 80
 * reaches in only 0-7 plans: every run covers them too.
 */
const PINNED: ReadonlyArray<readonly [number, number]> = [
  [12, 18],
  [11, 33],
  [5, 65]
]
const PLANS = CORPUS + PINNED.length

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(await loadActors(), { trust: true, liar: true, backups: true }, SEED, CORPUS, PINNED)
})

/** The hard cases of one v5 plan, read from its events and its final tree. */
function v5Cases(events: readonly PlanEvent[], tree: PlanTree): Set<string> {
  const out = new Set<string>()
  const byId = new Map(events.map(e => [e.id, e]))
  for (const e of tree.standing?.evidence ?? [])
    out.add(e.kind.replace(/-/g, ' ').replace('claim over limit', 'claim over limit'))
  if ((tree.standing?.equivocators.length ?? 0) > 0) out.add('equivocation')
  for (const t of tree.tasks) {
    if (t.readyAt === null) continue
    const claims = events.filter(
      (e): e is PlanEvent<'task-claimed'> =>
        e.env.type === 'task-claimed' && (e as PlanEvent<'task-claimed'>).env.body.task === t.id
    )
    const ready = t.readyAt
    if (claims.some(c => c.env.hlc.ms === ready.ms)) out.add('claim a tick after readyAt')
    for (let k = 1; k < t.chains.length; k++) {
      const [a, b] = [t.chains[k - 1], t.chains[k]]
      if (a?.end?.kind === 'superseded' && b !== undefined && b.claimedAt.ms <= a.lapseMs) out.add('backup')
    }
    const first = t.chains[0]
    const counting = claims
      .filter(c => compareHlc(c.env.hlc, ready) > 0)
      .sort((a, b) => compareHlc(a.env.hlc, b.env.hlc))
    if (first !== undefined && counting[0] !== undefined && counting[0].id !== first.claim)
      out.add('contest won by rank, not stamp')
  }
  for (const n of tree.nodes) {
    const won = n.accepted === null ? undefined : n.attempts.flatMap(a => a.proposals).find(p => p.id === n.accepted)
    if (won?.equivocated === true) out.add('late equivocation kept out by finality')
  }
  if (tree.status === 'completed') out.add('status completed')
  // ADR-0054: a member held a task past the backup time and another member's backup finished it first.
  const outdone = tree.backupSooner?.after
  if (outdone !== undefined) out.add('member outdone')
  for (const e of events) {
    const at = outdone?.[e.env.author]
    if (e.env.type === 'task-claimed' && at !== undefined && compareHlc(at, e.env.hlc) < 0)
      out.add('claim after its author was outdone')
  }
  const why = {
    first: 'first',
    'after-rejection': 'after a rejection',
    sample: 'by the sample',
    review: 'by --review',
    deliverable: 'as the deliverable'
  }
  for (const r of tree.tasks.flatMap(t => t.results)) {
    if (r.reviewedFor === null && r.accepted) out.add('result accepted unreviewed')
    if (r.reviewedFor !== undefined && r.reviewedFor !== null) out.add(`result reviewed ${why[r.reviewedFor]}`)
  }
  void byId
  return out
}

/**
 * Folds `p` along one random causal order and checks, at every tenth prefix and the last, that a split another
 * member built on keeps its proposal and children and that a task done on a result another member built on stays
 * done.
 */
function keepsWhatWasBuiltOn(p: GeneratedPlan, orderSeed: number, replay: string): void {
  const order = causalOrder(p.events, new Rng(orderSeed))
  const f = new Fold()
  const pinnedSplits = new Map<NodeId, string>()
  const pinnedDone = new Set<TaskId>()
  const cited = new Map<EventId, Set<string>>()
  const step = Math.max(1, Math.floor(order.length / 10))
  order.forEach((e, i) => {
    f.add(e, NO_CLOCK)
    if (e.env.type === 'split-proposed' || e.env.type === 'task-claimed' || e.env.type === 'result-reported')
      for (const d of e.env.deps) cited.set(d, new Set([...(cited.get(d) ?? []), e.env.author]))
    if (i % step !== 0 && i !== order.length - 1) return
    const tree = f.tree(p.plan) as PlanTree
    const nodes = new Map(tree.nodes.map(n => [n.id, n]))
    for (const [node, was] of pinnedSplits) {
      if (twoCommitteesDecided(tree, node)) continue
      const n = nodes.get(node)
      expect(n === undefined ? 'gone' : `${n.accepted}|${n.children.join(',')}`, `${replay} node ${node}`).toBe(was)
    }
    for (const t of pinnedDone) expect(tree.tasks.find(x => x.id === t)?.status, `${replay} task ${t}`).toBe('done')
    for (const n of tree.nodes) {
      if (n.kind !== 'composite' || n.accepted === null || twoCommitteesDecided(tree, n.id)) continue
      const author = n.attempts.flatMap(a => a.proposals).find(x => x.id === n.accepted)?.author
      if ([...(cited.get(n.accepted) ?? [])].some(a => a !== author))
        pinnedSplits.set(n.id, `${n.accepted}|${n.children.join(',')}`)
    }
    for (const t of tree.tasks) {
      const r = t.results.find(x => x.accepted)
      if (t.status === 'done' && r !== undefined && [...(cited.get(r.id) ?? [])].some(a => a !== r.author))
        pinnedDone.add(t.id)
    }
  })
}

/**
 * Whether quorums under two committee events chose different proposals of one attempt of `node`: the goal's
 * committee decided one and, after an amendment replaced a member, the new committee another (the old one's ballots
 * arriving late, as across a partition). Each side can build on its own; which split stands then depends on what
 * arrived first, an open limit of version 5 (docs/security.md), so the property leaves such nodes out. Seen with
 * GEN_SEED=1254106044 (plan 21, order 1404580883).
 */
function twoCommitteesDecided(tree: PlanTree, node: NodeId): boolean {
  const n = tree.nodes.find(x => x.id === node)
  for (const a of n?.attempts ?? []) {
    const decided = new Set<EventId>()
    for (const c of tree.committees) {
      const votes = new Map<EventId, number>()
      for (const b of a.ballots)
        if (b.committee === c.event && b.choice !== null && !b.equivocated)
          votes.set(b.choice, (votes.get(b.choice) ?? 0) + 1)
      for (const [choice, count] of votes) if (count >= c.quorum) decided.add(choice)
    }
    if (decided.size > 1) return true
  }
  return false
}

describe('protocol 5 over generated plans with a liar', () => {
  it('folds every arrival order to one treeHash', () => {
    fc.assert(
      fc.property(
        fc.record({
          plan: fc.nat({ max: PLANS - 1 }),
          order: fc.noBias(fc.integer()),
          dup: fc.constantFrom(0, 0.2),
          mode: fc.constantFrom(...ARRIVAL_MODES)
        }),
        c => {
          const p = corpus.plan(c.plan)
          const want = corpus.reference(c.plan).hash
          const f = new Fold()
          for (const e of arrangeEvents(p, c)) f.add(e, NO_CLOCK)
          expect(f.events.parkedCount).toBe(0)
          expect(f.treeHash(p.plan), REPLAY).toBe(want)
        }
      ),
      { numRuns: RUNS, seed: SEED }
    )
  })

  it('keeps what others built on, along every causal order (equivocation and lying stamps included)', () => {
    fc.assert(
      fc.property(fc.record({ plan: fc.nat({ max: PLANS - 1 }), order: fc.noBias(fc.integer()) }), c => {
        keepsWhatWasBuiltOn(corpus.plan(c.plan), c.order, REPLAY)
      }),
      { numRuns: Math.ceil(RUNS / 3), seed: SEED }
    )
  })

  it('keeps a done task done when a back-dated failure would use its last attempt (regression)', async () => {
    // A liar's failure stamped before the claim whose result others built on arrived after it, and used the
    // task's last attempt: the task went from done to failed.
    const actors = await loadActors()
    const p = generatePlan(planSeed(1675930758, 25), actors, { trust: true, liar: true })
    keepsWhatWasBuiltOn(p, -15508744, 'regression GEN_SEED=1675930758 plan 25')
  })

  it('keeps a done task done when a late renewal makes the walk pass its claim over (regression)', async () => {
    // A renewal arriving late kept an old chain alive, so the built-on claim of its owner counted as a
    // self-takeover and the liar's takeover held the task past it: the task went from done to ready.
    const actors = await loadActors()
    const p = generatePlan(planSeed(122, 73), actors, { trust: true, liar: true })
    keepsWhatWasBuiltOn(p, -399136727, 'regression GEN_SEED=122 plan 73')
  })

  it('holds its rules on every generated set', () => {
    for (let i = 0; i < PLANS; i++) {
      const p = corpus.plan(i)
      const tree = corpus.reference(i).tree
      const byId = new Map(p.events.map(e => [e.id, e]))
      for (const t of tree.tasks) {
        const heads = new Set(t.chains.map(c => c.claim))
        for (const r of t.results) if (r.accepted) expect(heads.has(r.claim), `${REPLAY} plan ${i}`).toBe(true)
        for (let k = 1; k < t.chains.length; k++) {
          const [a, b] = [t.chains[k - 1], t.chains[k]]
          if (a?.end?.kind === 'superseded') expect(b?.owner, `${REPLAY} self-takeover in plan ${i}`).not.toBe(a.owner)
        }
      }
      const all = tree.tasks.flatMap(t => t.results)
      // Built on: cited by another author's proposal, claim or result, directly or through what cites it; or in the
      // past of the deliverable the committee accepted, along those citations (fold.md 11.5, 11.9). A claim citing a
      // result of its own task (a claim after a rejection) does not build on that result.
      const builds = (e: PlanEvent): boolean =>
        e.env.type === 'split-proposed' || e.env.type === 'task-claimed' || e.env.type === 'result-reported'
      const reclaims = (e: PlanEvent, d: EventId): boolean => {
        const x = byId.get(d)
        return (
          e.env.type === 'task-claimed' &&
          x?.env.type === 'result-reported' &&
          (x.env.body as { task: string }).task === (e.env.body as { task: string }).task
        )
      }
      const citers = new Map<EventId, PlanEvent[]>()
      for (const e of p.events)
        if (builds(e)) for (const d of e.env.deps) if (!reclaims(e, d)) citers.set(d, [...(citers.get(d) ?? []), e])
      const futureAuthors = (id: EventId): Set<PeerIdString> => {
        const out = new Set<PeerIdString>()
        const todo = [id]
        const seen = new Set<EventId>()
        while (todo.length > 0)
          for (const c of citers.get(todo.pop() as EventId) ?? [])
            if (!seen.has(c.id)) {
              seen.add(c.id)
              out.add(c.env.author)
              todo.push(c.id)
            }
        return out
      }
      const settled = new Set<EventId>()
      const rootTasks = new Set<string>([tree.root, rollupId(tree.root)])
      const past = tree.tasks
        .filter(t => rootTasks.has(t.id))
        .flatMap(t => t.results.filter(r => r.review === 'accepted').map(r => r.id))
      while (past.length > 0) {
        const id = past.pop() as EventId
        if (settled.has(id)) continue
        settled.add(id)
        const e = byId.get(id)
        if (e !== undefined && builds(e)) past.push(...e.env.deps.filter(d => !reclaims(e, d)))
      }
      const builtOn = (r: { id: EventId; author: PeerIdString }): boolean =>
        settled.has(r.id) || [...futureAuthors(r.id)].some(a => a !== r.author)
      // A result the committee rejected stays rejected unless it was built on first.
      for (const r of all)
        if (r.accepted && r.review === 'rejected')
          expect(builtOn(r), `${REPLAY} plan ${i}: ${r.id} accepted though rejected on review`).toBe(true)
      const rejected = new Set(all.filter(r => r.review === 'rejected').map(r => r.author))
      for (const r of all) {
        if (!r.accepted || !rejected.has(r.author) || r.review === 'accepted') continue
        expect(builtOn(r), `${REPLAY} plan ${i}: ${r.id} accepted unreviewed after its author's rejection`).toBe(true)
      }
      let reported = 0
      for (const e of p.events) {
        const b = e.env.body as { usage?: { inputTokens: number; outputTokens: number } }
        if (b.usage !== undefined) reported += b.usage.inputTokens + b.usage.outputTokens
      }
      expect(tree.spentTokens).toBeLessThanOrEqual(reported)
      expect(foldAll(p.events).treeHash(p.plan)).toBe(corpus.reference(i).hash)
      void byId
    }
  })

  it('generates the hard cases (reported)', () => {
    const counter = new CaseCounter()
    for (let i = 0; i < PLANS; i++) counter.add(v5Cases(corpus.plan(i).events, corpus.reference(i).tree))
    const lines = [...counter.counts.entries()].sort().map(([k, n]) => `${k}: ${n}/${counter.runs}`)
    console.log(`protocol 5 hard cases over ${counter.runs} plans (seed ${SEED}):\n  ${lines.join('\n  ')}`)
    for (const r of REQUIRED) expect(counter.counts.get(r) ?? 0, `${r}; ${REPLAY}`).toBeGreaterThan(0)
  })
})

const FIXTURE = new URL('../fixtures/golden-plan-v5.json', import.meta.url)

interface GoldenV5 {
  readonly about: string
  readonly seed: number
  readonly actors: readonly PeerIdString[]
  readonly plan: PlanId
  readonly treeHash: string
  readonly evidence: readonly string[]
  readonly envelopes: readonly Envelope[]
}

/** The generated v5 plan (with a liar) of at most 150 events whose standing has the most kinds of evidence. */
async function regenerate(): Promise<void> {
  const actors = await loadActors()
  let best: { seed: number; kinds: number } | undefined
  for (let seed = 1; seed <= 200; seed++) {
    const p = generatePlan(seed, actors, { trust: true, liar: true })
    if (p.events.length > 150) continue
    const kinds = new Set(
      foldAll(p.events)
        .tree(p.plan)
        ?.standing?.evidence.map(e => e.kind)
    ).size
    if (best === undefined || kinds > best.kinds) best = { seed, kinds }
  }
  const seed = (best as { seed: number }).seed
  const p = generatePlan(seed, actors, { trust: true, liar: true })
  const f = foldAll(p.events)
  const golden: GoldenV5 = {
    about:
      'A version-5 plan with a lying executor and its golden treeHash. ' +
      'Regenerate: UPDATE_GOLDEN=1 npx vitest run test/property/fold-v5.test.ts',
    seed,
    actors: [actors.author, ...actors.decomposers, ...actors.scorers, ...actors.executors],
    plan: p.plan,
    treeHash: f.treeHash(p.plan) as string,
    evidence: [...new Set(f.tree(p.plan)?.standing?.evidence.map(e => e.kind))].sort(),
    envelopes: p.events.map(e => e.env)
  }
  writeFileSync(FIXTURE, `${JSON.stringify(golden, null, 1)}\n`)
}

describe('protocol 5: golden treeHash', () => {
  it('a fixed version-5 event set folds to its golden treeHash in any order, standing included', async () => {
    if (process.env.UPDATE_GOLDEN === '1' || !existsSync(FIXTURE)) await regenerate()
    const golden = JSON.parse(readFileSync(FIXTURE, 'utf8')) as GoldenV5
    expect(actorsFrom(golden.actors).executors.length).toBe(3)
    const events: PlanEvent[] = golden.envelopes.map(env => ({ id: eventIdOf(encodeEnvelope(env)), env }))
    for (const e of events) expect(validateEnvelope(e.env), e.id).toBeNull()
    const rng = new Rng(golden.seed)
    for (const order of [events, [...events].reverse(), rng.shuffle([...events])]) {
      const f = foldAll(order)
      expect(f.treeHash(golden.plan), 'the v5 tree changed; if intended, regenerate (see the fixture)').toBe(
        golden.treeHash
      )
      expect([...new Set(f.tree(golden.plan)?.standing?.evidence.map(e => e.kind))].sort()).toStrictEqual(
        golden.evidence
      )
    }
  })
})
