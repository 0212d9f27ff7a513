/**
 * When a claim may call the model without the confirmation wait
 * (roles/executor.ts needsConfirm): only when no other executor can have
 * claimed first, i.e. the claim reaches every other executor, at twice the
 * observed gossip delay, before the earliest moment another may claim (one
 * stagger after the task became ready), with a quarter of the stagger to
 * spare. And a slot frees as soon as the executor's result is folded, not
 * when its publish returns.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createExecutor } from '../../roles/executor.js'
import { decideExecutor, needsConfirm, rankFor, VIEW_UNCHANGED_MS } from '../../roles/claim-rules.js'
import type { RoleContext } from '../../roles/driver.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { makeCast, split, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { EventId, PeerIdString, PlanEvent, TaskId } from '../../src/core/events.js'

const base = {
  rank: 0,
  executors: 4,
  stableView: true,
  takeover: false,
  sinceSeenMs: 0,
  sinceReadyMs: 0,
  lagMs: 30,
  staggerMs: 250
}

describe('needsConfirm', () => {
  it('lets a first-ranked claim on a stable view go ahead while ready + x + 2 lag stays a quarter stagger short of ready + S', () => {
    // S = 250, lag 30: budget 3S/4 - 2 lag = 127.5 ms.
    expect(needsConfirm({ ...base, sinceSeenMs: 60, sinceReadyMs: 120 })).toBe(false)
    expect(needsConfirm({ ...base, sinceSeenMs: 60, sinceReadyMs: 130 })).toBe(true)
    expect(needsConfirm({ ...base, sinceSeenMs: 130, sinceReadyMs: 120 })).toBe(true)
    // A slow swarm leaves no budget: every claim confirms.
    expect(needsConfirm({ ...base, lagMs: 94 })).toBe(true)
  })

  it('always confirms a lower rank, a changing view and a takeover; never a lone executor on a stable view', () => {
    expect(needsConfirm({ ...base, rank: 1 })).toBe(true)
    expect(needsConfirm({ ...base, stableView: false })).toBe(true)
    expect(needsConfirm({ ...base, takeover: true })).toBe(true)
    // It held the plan's limit of claims less than a stagger ago: others may have skipped it.
    expect(needsConfirm({ ...base, recentlyFull: true })).toBe(true)
    expect(needsConfirm({ ...base, executors: 1, sinceReadyMs: 5_000, lagMs: 1_000 })).toBe(false)
  })

  it('skips the wait only when the claim outruns every competing claim (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          rank: fc.nat(3),
          executors: fc.integer({ min: 2, max: 50 }),
          stableView: fc.boolean(),
          takeover: fc.boolean(),
          recentlyFull: fc.boolean(),
          sinceSeenMs: fc.integer({ min: -100, max: 2_000 }),
          sinceReadyMs: fc.integer({ min: -100, max: 2_000 }),
          lagMs: fc.integer({ min: 0, max: 1_000 }),
          staggerMs: fc.integer({ min: 250, max: 2_000 })
        }),
        o => {
          if (needsConfirm(o)) return
          expect(o.rank === 0 && o.stableView && !o.takeover && !o.recentlyFull).toBe(true)
          // The claim, made x after ready (by either clock), arrives within 2 lag: before ready + S - S/4.
          const x = Math.max(o.sinceSeenMs, o.sinceReadyMs)
          expect(x + 2 * o.lagMs + o.staggerMs / 4).toBeLessThanOrEqual(o.staggerMs)
        }
      ),
      { numRuns: 2_000 }
    )
  })
})

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

describe('executor slots', () => {
  it('frees a slot once its result is folded, while the publish is still under way', async () => {
    const [s0, s1, s2] = cast.scorers
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxClaimsPerExecutor: 1 })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0] as PeerIdString,
      titles: ['book flights', 'book hotels'],
      voters: [s0, s1],
      at: 2_000 + VIEW_UNCHANGED_MS + 1_000
    })
    let events: PlanEvent[] = [...s.events]
    const leaves = treeOf(b, events)
      .tasks.filter(t => t.status === 'ready')
      .map(t => t.id)
    expect(leaves).toHaveLength(2)
    // Another executor, one that `me` outranks for both leaves (a roster entry is only a name to rank by).
    // The keys are made afresh each run, so search executors and names until one pair fits.
    const all = treeOf(b, events).tasks.map(t => t.id)
    const names = Array.from({ length: 2_000 }, (_, i) => `other-${i}`)
    const pairs = cast.executors.flatMap(e => names.map(p => [e as PeerIdString, p] as const))
    const pair = pairs.find(([e, p]) => all.every(l => rankFor(l, e, [e, p]) === 0))
    if (!pair) throw new Error('no executor outranks any of the names for every task; widen the search')
    const [me, other] = pair
    let now = 2_000
    let releasePublish: () => void = () => {}
    const published: string[] = []
    const claims = new Map<string, PlanEvent<'task-claimed'>>()
    const view = {
      me,
      now: () => now,
      roster: () => [{ peerId: other, role: 'executor' }],
      presenceIntervalMs: () => 500,
      lagMs: () => 0,
      scheduler: {
        after: (_ms: number, fn: () => void) => {
          fn()
          return () => {}
        }
      },
      tree: () => treeOf(b, events),
      publish: async (type: string, _plan: string, cites: string[], body: Record<string, unknown>) => {
        now += 1
        const e =
          type === 'task-claimed'
            ? b.claim(me, body.task as TaskId, now, { evidence: cites as EventId[] })
            : b.result(claims.get(body.claim as string) as PlanEvent<'task-claimed'>, now)
        if (type === 'task-claimed') claims.set(e.id, e as PlanEvent<'task-claimed'>)
        events = [...events, e]
        published.push(type)
        // The result is folded locally at once; its gossip publish hangs until the test lets it go.
        if (type === 'result-reported')
          await new Promise<void>(resolve => {
            releasePublish = resolve
          })
        return { event: e }
      }
    }
    const ctx = {
      view,
      say: () => {},
      provider: {
        execute: async () => ({
          output: 'done',
          usage: { inputTokens: 1, outputTokens: 1 },
          model: 'm',
          source: 'model'
        }),
        downgrade() {
          return this
        }
      }
    }
    const handler = createExecutor(ctx as unknown as RoleContext)
    // Up and watching an unchanged view for longer than the stable-view window; then the leaves become ready.
    handler.tick?.(now)
    now = Math.max(...treeOf(b, events).tasks.map(t => t.readyAt?.ms ?? 0)) + 10
    handler.tick?.(now)
    const first = handler.decide(treeOf(b, events), now) as unknown as Array<{ task: { id: string }; confirm: boolean }>
    expect(first.map(i => i.confirm)).toEqual([false])
    const acting = handler.act(first[0] as never, treeOf(b, events))
    // Let the claim, the model call and the result's local fold happen.
    for (let i = 0; i < 20 && !published.includes('result-reported'); i++) await Promise.resolve()
    expect(published).toEqual(['task-claimed', 'result-reported'])
    now += 10
    const next = handler.decide(treeOf(b, events), now) as unknown as Array<{ task: { id: string }; confirm: boolean }>
    expect(next.map(i => i.task.id)).toEqual(leaves.filter(l => l !== first[0]?.task.id))
    // It held its limit a moment ago, so the other may have skipped it and claimed: this claim confirms.
    expect(next.map(i => i.confirm)).toEqual([true])
    releasePublish()
    await acting
    // The second leaf, run to its result; that result makes the roll-up ready.
    const second = handler.act(next[0] as never, treeOf(b, events))
    for (let i = 0; i < 20 && published.filter(p => p === 'result-reported').length < 2; i++) await Promise.resolve()
    expect(published.filter(p => p === 'result-reported')).toHaveLength(2)
    now += 10
    const rollup = handler.decide(treeOf(b, events), now) as unknown as Array<{
      task: { kind: string }
      confirm: boolean
    }>
    // Full until that result, but nobody can see the roll-up claimable before hearing of it: no wait.
    expect(rollup.map(i => [i.task.kind, i.confirm])).toEqual([['rollup', false]])
    releasePublish()
    await second
  })
})

describe('executor ranks skip executors with no room', () => {
  it("does not wait out the stagger of an executor that holds the plan's limit of claims, and confirms", () => {
    const [s0, s1, s2] = cast.scorers
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { maxClaimsPerExecutor: 1 })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0] as PeerIdString,
      titles: ['book flights', 'book hotels'],
      voters: [s0, s1],
      at: 2000
    })
    const [first, second] = treeOf(b, s.events)
      .tasks.filter(t => t.status === 'ready')
      .map(t => t.id) as [TaskId, TaskId]
    const [a, c] = [cast.executors[0] as PeerIdString, cast.executors[1] as PeerIdString]
    // Keys are fresh each run: `top` ranks first for the second leaf, `next` second.
    const [top, next] = rankFor(second, a, [a, c]) === 0 ? [a, c] : [c, a]
    const now = 3_000
    const decide = (events: readonly PlanEvent[]): ReturnType<typeof decideExecutor> =>
      decideExecutor(treeOf(b, events), next, now, [top, next], 0, () => now, 250, { stableView: true, lagMs: 0 })
    // `top` has room: `next` waits its stagger for the second leaf.
    expect(decide(s.events).filter(i => i.task.id === second)).toEqual([])
    // `top` holds its one claim (on the first leaf): `next` takes the second leaf at once, and confirms.
    const held = decide([...s.events, b.claim(top, first, 2_500, { evidence: s.events.map(e => e.id) })])
    expect(held.map(i => [i.task.id, i.confirm])).toEqual([[second, true]])
  })
})
