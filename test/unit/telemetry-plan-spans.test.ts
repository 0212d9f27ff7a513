/**
 * The spans of a whole plan, as its authors emit them (each author's own
 * spans when its event folds, and the interval spans its event closes as
 * soon as its tree shows them closed): one trace, one root (the
 * plan), every parent present, each span emitted by exactly one author, and
 * the parents following the deps: attempts under their node, proposals and
 * ballots under their attempt, claims under their task's node, results and
 * failures under their claim, nodes under their parent node.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { childId, rollupId } from '../../src/core/node-ids.js'
import { closedBy, ownSpans } from '../../src/telemetry/plan-spans.js'
import {
  attemptSpanId,
  ballotSpanId,
  planSpanId,
  proposalSpanId,
  spanIdOfId,
  traceIdOf
} from '../../src/telemetry/ids.js'
import { ATTR } from '../../src/telemetry/span.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import { makeCast } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { EventId, NodeId, PeerIdString, PlanEvent, TaskId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { SpanSpec } from '../../src/telemetry/span.js'
import type { PlanSpanContext } from '../../src/telemetry/plan-spans.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

const WORK_MS = 50
const U = (n: number): { inputTokens: number; outputTokens: number } => ({ inputTokens: n, outputTokens: 1 })

/** Folds events one at a time; after each, its author computes its spans (with a model call WORK_MS before each slot event). */
class Run {
  readonly fold = new Fold()
  readonly spans: Array<SpanSpec & { by: PeerIdString }> = []
  readonly renewals = new Map<EventId, Array<PlanEvent<'claim-renewed'>>>()
  constructor(readonly b: PlanBuilder) {
    this.add(b.goal)
  }

  get tree(): PlanTree {
    return this.fold.tree(this.b.plan) as PlanTree
  }

  add<T extends PlanEvent>(e: T): T {
    const out = this.fold.add(e, NO_CLOCK)
    expect(out, `${e.env.type} folds`).toMatchObject({ status: 'folded' })
    if (e.env.type === 'claim-renewed') {
      const r = e as unknown as PlanEvent<'claim-renewed'>
      this.renewals.set(r.env.body.claim, [...(this.renewals.get(r.env.body.claim) ?? []), r])
    }
    const ctx = (of: PlanEvent): PlanSpanContext => ({
      tree: this.tree,
      event: id => this.fold.events.get(id),
      workStart: () => of.env.hlc.ms - WORK_MS,
      renewals: claim => this.renewals.get(claim) ?? []
    })
    for (const s of ownSpans(e, ctx(e))) this.spans.push({ ...s, by: e.env.author })
    // As the tracer does: an event whose interval is still open is asked again as more events fold.
    this.pending.push(e)
    this.pending = this.pending.filter(p => {
      const closed = closedBy(p, ctx(p))
      for (const s of closed.spans) this.spans.push({ ...s, by: p.env.author })
      return !closed.settled
    })
    return e
  }

  private pending: PlanEvent[] = []

  evidenceOf(task: TaskId | NodeId): EventId[] {
    const t = this.tree.tasks.find(x => x.id === task)
    if (t === undefined || t.status !== 'ready') throw new Error(`task ${task} is not ready: ${t?.status ?? 'absent'}`)
    return [...t.evidence]
  }

  nodeEvidence(node: NodeId): EventId[] {
    return [...(this.tree.nodes.find(n => n.id === node)?.evidence ?? [])]
  }

  claim(by: PeerIdString, task: TaskId | NodeId, at: number, prev: EventId | null = null): PlanEvent<'task-claimed'> {
    return this.add(this.b.claim(by, task as TaskId, at, { evidence: this.evidenceOf(task), prev }))
  }
}

function byName<S extends SpanSpec>(spans: readonly S[], name: string): S[] {
  return spans.filter(s => s.name === name)
}

function one(spans: readonly SpanSpec[], id: string): SpanSpec {
  const found = spans.filter(s => s.spanId === id)
  expect(found, `span ${id}`).toHaveLength(1)
  return found[0] as SpanSpec
}

/**
 * Root split into A (leaf) and B; B's first attempt fails, its second splits
 * it into B1 and B2; A's claim is renewed once; B1 fails once and is claimed
 * again; then B's roll-up and the root's.
 */
function wholePlan(): { run: Run; ids: Record<string, string> } {
  const [s0, s1, s2] = cast.scorers
  const [d0, d1] = cast.decomposers
  const [e0, e1] = cast.executors
  const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxDepth: 2 })
  const run = new Run(b)
  const p1 = run.add(
    b.propose(d0, b.root, 1, [...subgoals(['A']), ...subgoals(['B'], { leaf: false })], 2000, [], U(10))
  )
  const p2 = run.add(b.propose(d1, b.root, 1, subgoals(['X', 'Y']), 2050, [], U(11)))
  run.add(b.ballot(s0, { node: b.root, attempt: 1 }, p1, 2100, { judged: [p1, p2], usage: U(5) }))
  const deciding = run.add(b.ballot(s1, { node: b.root, attempt: 1 }, p1, 2200, { judged: [p1, p2], usage: U(5) }))
  run.add(b.ballot(s2, { node: b.root, attempt: 1 }, p2, 2250, { judged: [p1, p2], usage: U(5) }))
  const A = childId(b.root, p1.id, 0)
  const B = childId(b.root, p1.id, 1)

  const cA = run.claim(e0, A, 2300)
  const rA = run.add(b.renew(cA, cA, 2400))
  run.add(b.result(cA, 2500, 'A done', U(20), [rA.id]))

  const p3 = run.add(b.propose(d0, B, 1, subgoals(['B1', 'B2']), 3000, run.nodeEvidence(B), U(12)))
  const none = [s0, s1, s2].map((s, i) =>
    run.add(b.ballot(s, { node: B, attempt: 1 }, null, 3100 + 100 * i, { judged: [p3], usage: U(5) }))
  )
  const p4 = run.add(
    b.propose(d1, B, 2, subgoals(['B1', 'B2']), 3400, [...run.nodeEvidence(B), ...none.map(x => x.id)], U(13))
  )
  run.add(b.ballot(s0, { node: B, attempt: 2 }, p4, 3500, { judged: [p4], usage: U(5) }))
  run.add(b.ballot(s1, { node: B, attempt: 2 }, p4, 3600, { judged: [p4], usage: U(5) }))
  const B1 = childId(B, p4.id, 0)
  const B2 = childId(B, p4.id, 1)

  const c1 = run.claim(e1, B1, 3700)
  const c2 = run.claim(e0, B2, 3700)
  const f1 = run.add(b.fail(c1, 3800, U(3)))
  run.add(b.result(c2, 3850, 'B2 done', U(20)))
  const c1b = run.claim(e1, B1, 3900, f1.id)
  run.add(b.result(c1b, 4000, 'B1 done', U(20)))
  const cB = run.claim(e1, rollupId(B), 4100)
  run.add(b.result(cB, 4200, 'B done', U(20)))
  const cRoot = run.claim(e0, rollupId(b.root), 4300)
  run.add(b.result(cRoot, 4400, 'all done', U(20)))
  return {
    run,
    ids: {
      A,
      B,
      B1,
      B2,
      p1: p1.id,
      p2: p2.id,
      p4: p4.id,
      deciding: deciding.id,
      cA: cA.id,
      c1: c1.id,
      c1b: c1b.id,
      cRoot: cRoot.id,
      d0,
      d1,
      s0
    }
  }
}

describe('plan spans: a whole plan from its authors', () => {
  it('form one trace with one root, every parent present, no span emitted twice', () => {
    const { run } = wholePlan()
    const spans = run.spans
    expect(run.tree.status).toBe('completed')
    expect(new Set(spans.map(s => s.traceId))).toEqual(new Set([traceIdOf(run.b.plan)]))
    expect(new Set(spans.map(s => s.spanId)).size).toBe(spans.length)
    const roots = spans.filter(s => s.parentSpanId === null)
    expect(roots.map(s => s.name)).toEqual(['plan'])
    const ids = new Set(spans.map(s => s.spanId))
    for (const s of spans)
      if (s.parentSpanId !== null) expect(ids.has(s.parentSpanId), `parent of ${s.name} ${s.spanId}`).toBe(true)
    for (const s of spans) expect(s.endMs).toBeGreaterThanOrEqual(s.startMs)
  })

  it('has a span per node, attempt, proposal, ballot, claim, result and failure, and the plan span covers the run', () => {
    const { run } = wholePlan()
    const t = run.tree
    const spans = run.spans
    const plan = one(spans, planSpanId(run.b.plan))
    expect(plan).toMatchObject({ name: 'plan', startMs: 1000, endMs: 4400, status: 'ok' })
    expect(plan.attributes[ATTR.spentTokens]).toBe(t.spentTokens)
    expect(plan.attributes[ATTR.status]).toBe('completed')
    expect(byName(spans, 'node')).toHaveLength(t.nodes.length - 1)
    expect(byName(spans, 'decomposition-attempt')).toHaveLength(t.nodes.reduce((n, x) => n + x.attempts.length, 0))
    expect(byName(spans, 'split-proposed')).toHaveLength(4)
    expect(byName(spans, 'ballot-cast')).toHaveLength(8)
    expect(byName(spans, 'task-claimed')).toHaveLength(6)
    expect(byName(spans, 'result-reported')).toHaveLength(5)
    expect(byName(spans, 'task-failed')).toHaveLength(1)
    expect(byName(spans, 'task-failed')[0]?.status).toBe('error')
    // Tokens: the event spans' usage adds up to what the plan spent.
    const used = spans.reduce(
      (n, s) => n + Number(s.attributes[ATTR.inputTokens] ?? 0) + Number(s.attributes[ATTR.outputTokens] ?? 0),
      0
    )
    expect(used).toBe(t.spentTokens)
  })

  it('hangs each span under the span its deps name', () => {
    const { run, ids } = wholePlan()
    const spans = run.spans
    const b = run.b
    const A = ids.A as NodeId
    const B = ids.B as NodeId
    // Nodes under their parent node; the root node is the plan.
    expect(one(spans, spanIdOfId(A)).parentSpanId).toBe(planSpanId(b.plan))
    expect(one(spans, spanIdOfId(B)).parentSpanId).toBe(planSpanId(b.plan))
    expect(one(spans, spanIdOfId(ids.B1 as NodeId)).parentSpanId).toBe(spanIdOfId(B))
    expect(one(spans, spanIdOfId(ids.B2 as NodeId)).parentSpanId).toBe(spanIdOfId(B))
    // Attempts under their node; a failed attempt closed by its last ballot, the next one opening there.
    const root1 = one(spans, attemptSpanId(b.root, 1))
    expect(root1).toMatchObject({ parentSpanId: planSpanId(b.plan), startMs: 1000, endMs: 2200 })
    expect(root1.attributes[ATTR.outcome]).toBe('won')
    const b1 = one(spans, attemptSpanId(B, 1))
    expect(b1).toMatchObject({ parentSpanId: spanIdOfId(B), startMs: 2200, endMs: 3300 })
    expect(b1.attributes[ATTR.outcome]).toBe('failed')
    expect(one(spans, attemptSpanId(B, 2))).toMatchObject({ parentSpanId: spanIdOfId(B), startMs: 3300, endMs: 3600 })
    // Proposals and ballots under their attempt, from the start of the model call behind them; ballots link the proposals they judged.
    const p1 = one(spans, proposalSpanId(ids.d0 as PeerIdString, b.root, 1))
    expect(p1).toMatchObject({ parentSpanId: attemptSpanId(b.root, 1), startMs: 2000 - WORK_MS, endMs: 2000 })
    const ballot = one(spans, ballotSpanId(ids.s0 as PeerIdString, b.root, 1, b.goal.id))
    expect(ballot.parentSpanId).toBe(attemptSpanId(b.root, 1))
    expect(ballot.links.map(l => l.spanId).sort()).toEqual(
      [p1.spanId, proposalSpanId(cast.decomposers[1], b.root, 1)].sort()
    )
    // Claims under their task's node, with their renewals; results and failures under their claim.
    const cA = one(spans, spanIdOfId(ids.cA as EventId))
    expect(cA).toMatchObject({ name: 'task-claimed', parentSpanId: spanIdOfId(A), startMs: 2300, endMs: 2500 })
    expect(cA.events.map(e => e.name)).toEqual(['claim-renewed'])
    for (const r of [...byName(spans, 'result-reported'), ...byName(spans, 'task-failed')]) {
      const claim = one(spans, r.parentSpanId as string)
      expect(claim.name).toBe('task-claimed')
      expect(claim.attributes[ATTR.event]).toBe(r.attributes[ATTR.claim])
    }
    expect(one(spans, spanIdOfId(ids.c1 as EventId)).status).toBe('error')
    expect(one(spans, spanIdOfId(ids.c1b as EventId)).links.map(l => l.attributes[ATTR.eventType])).toContain(
      'task-failed'
    )
    expect(one(spans, spanIdOfId(ids.cRoot as EventId)).parentSpanId).toBe(planSpanId(b.plan))
  })

  it('gives each interval span to the author of the event that settles it', () => {
    const { run, ids } = wholePlan()
    const spans = run.spans
    expect(spans.find(s => s.name === 'plan')?.by).toBe(cast.executors[0])
    // A won attempt from its winning proposal's author; a failed one from its last ballot's.
    expect(spans.find(s => s.spanId === attemptSpanId(run.b.root, 1))?.by).toBe(ids.d0)
    expect(spans.find(s => s.spanId === attemptSpanId(ids.B as NodeId, 1))?.by).toBe(cast.scorers[2])
    expect(spans.find(s => s.spanId === attemptSpanId(ids.B as NodeId, 2))?.by).toBe(ids.d1)
    for (const s of byName(spans, 'task-claimed')) expect(s.by).toBe(s.attributes[ATTR.peer])
    for (const s of byName(spans, 'node')) {
      const task = run.tree.tasks.find(t => t.node === s.attributes[ATTR.node])
      expect(s.attributes['plan_swarm.node.closed_by']).toBe(task?.finishEvent)
    }
  })

  it("ends a cancelled plan at its author's cancellation", () => {
    const [s0, s1, s2] = cast.scorers
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const run = new Run(b)
    run.add(b.propose(cast.decomposers[0], b.root, 1, subgoals(['A', 'B']), 2000))
    const cancel = run.add(b.cancel(2500, 'changed my mind'))
    const plan = one(run.spans, planSpanId(b.plan))
    expect(plan).toMatchObject({ startMs: 1000, endMs: 2500, status: 'unset' })
    expect(plan.attributes[ATTR.status]).toBe('cancelled')
    expect(run.spans.find(s => s.spanId === spanIdOfId(cancel.id))?.parentSpanId).toBe(planSpanId(b.plan))
    // Nothing closed the attempt: its span is not emitted, the proposal's parent is named all the same.
    expect(run.spans.some(s => s.name === 'decomposition-attempt')).toBe(false)
  })
})
