/**
 * Plans that use tools (protocol 3) keep the fold's contract.
 *
 * Over generated plans with `tools` (test/helpers/plan-gen.ts: some
 * subgoals name needs, results record tool calls and the turns of their
 * loop, failures their turns):
 * 1. Any permutation of a set, with any duplicates, in shuffled, reverse
 *    causal or delayed delivery order, folds to the treeHash of the set in
 *    creation order, and to the same needs, tool calls and tokens spent
 *    (needs and tool calls are left out of the hash, so they are compared
 *    on their own).
 * 2. Monotonic: as events are added in a causal order, a node's needs never
 *    change once it exists, and an accepted result's tool calls stay.
 * 3. The property can fail: a fold that counts a result's turns only when
 *    it arrives after its claim's renewal is caught.
 * Replay with GEN_SEED=<seed>; FC_RUNS and GEN_CORPUS raise the counts.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { CaseCounter, Corpus, Rng, arrangeEvents, causalOrder, loadActors, runSeed } from '../helpers/plan-gen.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { ArrivalMode } from '../helpers/plan-gen.js'

const RUNS = Math.max(300, Number(process.env.FC_RUNS ?? 400))
const CORPUS = Math.max(40, Number(process.env.GEN_CORPUS ?? 80))
const SEED = runSeed()
const REPLAY = `replay: GEN_SEED=${SEED} npx vitest run test/property/fold-tools.test.ts`

let corpus: Corpus
beforeAll(async () => {
  corpus = new Corpus(await loadActors(), { tools: true }, SEED, CORPUS)
})

const arbCase = fc.record({
  plan: fc.nat({ max: CORPUS - 1 }),
  order: fc.noBias(fc.integer()),
  dup: fc.constantFrom(0, 0.1, 0.4),
  mode: fc.constantFrom<ArrivalMode>('shuffle', 'reverse-causal', 'network delivery')
})

interface Folded {
  readonly hash: string
  readonly tree: PlanTree | undefined
}
type FoldFn = (arrival: readonly PlanEvent[], plan: PlanId) => Folded

const realFold: FoldFn = (arrival, plan) => {
  const f = new Fold()
  for (const e of arrival) {
    const out = f.add(e, NO_CLOCK)
    if (out.status === 'rejected') throw new Error(`valid event ${e.id} rejected: ${out.reason} ${out.detail}`)
  }
  return { hash: f.treeHash(plan) as string, tree: f.tree(plan) }
}

/** Canary: a result's `turns` are dropped unless it arrives after another event of its task (a renewal). */
const turnsNeedRenewalFirst: FoldFn = (arrival, plan) => {
  const seen = new Set<string>()
  const f = new Fold()
  for (const e of arrival) {
    const body = e.env.body as { task?: string; turns?: number }
    let event = e
    if (e.env.type === 'result-reported' && body.turns !== undefined && !seen.has(body.task as string)) {
      const { turns: _dropped, ...rest } = body
      event = { ...e, env: { ...e.env, body: rest } } as PlanEvent
    }
    if (e.env.type === 'claim-renewed') seen.add(body.task as string)
    f.add(event, NO_CLOCK)
  }
  return { hash: f.treeHash(plan) ?? 'no goal', tree: f.tree(plan) }
}

/** What the hash leaves out of a tool plan, and what turns change: compared on their own. */
function unhashed(tree: PlanTree | undefined): unknown {
  if (tree === undefined) return null
  return {
    spent: tree.spentTokens,
    needs: tree.nodes.map(n => [n.id, n.needs]),
    calls: tree.tasks.map(t => [t.id, t.results.map(r => [r.id, r.toolCalls])])
  }
}

function cases(tree: PlanTree | undefined): string[] {
  if (tree === undefined) return []
  const out: string[] = []
  if (tree.nodes.some(n => n.needs.length > 0)) out.push('node with needs')
  if (tree.tasks.some(t => t.results.some(r => r.toolCalls.length > 0))) out.push('result with tool calls')
  if (tree.tasks.some(t => t.results.some(r => r.toolCalls.some(c => !c.ok)))) out.push('failed tool call')
  if (tree.status === 'completed') out.push('status completed')
  return out
}

type Case = typeof arbCase extends fc.Arbitrary<infer T> ? T : never

function sameSet(foldFn: FoldFn, counter?: CaseCounter): fc.IPropertyWithHooks<[Case]> {
  const refs = new Map<number, Folded>()
  return fc.property(arbCase, c => {
    const p = corpus.plan(c.plan)
    let ref = refs.get(c.plan)
    if (ref === undefined) {
      ref = foldFn(p.events, p.plan)
      refs.set(c.plan, ref)
    }
    const got = foldFn(arrangeEvents(p, c), p.plan)
    counter?.add([...cases(ref.tree), `order: ${c.mode}`])
    const label = `plan seed ${p.seed}, ${c.mode} order ${c.order}`
    expect(got.hash, label).toBe(ref.hash)
    expect(unhashed(got.tree), `${label}: needs, tool calls, tokens`).toStrictEqual(unhashed(ref.tree))
  })
}

function reporter<T>(out: fc.RunDetails<T>): void {
  if (out.failed)
    throw new Error(
      `${fc.defaultReportMessage(out) ?? 'property failed'}\n${String((out.errorInstance as Error | null)?.message ?? '')}\n${REPLAY}`
    )
}

describe('fold of plans with tools: the tree is a function of the set', () => {
  it('generated plans are protocol 3 and every event folds', () => {
    for (let i = 0; i < Math.min(CORPUS, 30); i++) {
      const p = corpus.plan(i)
      expect(p.goal.env.v).toBe(3)
      expect(corpus.reference(i).tree.events).toBe(p.events.length)
    }
  })

  it('any permutation, duplication or delay folds to the same treeHash, needs, tool calls and tokens', () => {
    const counter = new CaseCounter()
    fc.assert(sameSet(realFold, counter), { numRuns: RUNS, seed: SEED, reporter })
    console.log(counter.table('tool plan cases'))
    expect(
      counter.missing(['node with needs', 'result with tool calls', 'failed tool call', 'status completed'])
    ).toEqual([])
  })

  it('canary: turns that count only after a renewal are caught', () => {
    const out = fc.check(sameSet(turnsNeedRenewalFirst), { numRuns: RUNS, seed: SEED, endOnFailure: true })
    expect(out.failed, `the permutation property did not catch the canary (${REPLAY})`).toBe(true)
  })
})

describe('fold of plans with tools: monotonic in the set', () => {
  it("a node's needs and an accepted result's tool calls never change as events are added", () => {
    const arb = fc.record({ plan: fc.nat({ max: CORPUS - 1 }), order: fc.noBias(fc.integer()) })
    fc.assert(
      fc.property(arb, c => {
        const p = corpus.plan(c.plan)
        const events = causalOrder(p.events, new Rng(c.order))
        const f = new Fold()
        const needs = new Map<string, string>()
        const calls = new Map<string, string>()
        events.forEach((e, i) => {
          f.add(e, NO_CLOCK)
          if (i % 7 !== 6 && i !== events.length - 1) return
          const t = f.tree(p.plan)
          for (const n of t?.nodes ?? []) {
            const k = JSON.stringify(n.needs)
            expect(needs.get(n.id) ?? k, `node ${n.id} needs`).toBe(k)
            needs.set(n.id, k)
          }
          for (const r of (t?.tasks ?? []).flatMap(x => x.results)) {
            const k = JSON.stringify(r.toolCalls)
            expect(calls.get(r.id) ?? k, `result ${r.id} tool calls`).toBe(k)
            calls.set(r.id, k)
          }
        })
      }),
      { numRuns: Math.floor(RUNS / 4), seed: SEED, reporter }
    )
  })
})
