/**
 * Resilience 5: one executor's clock runs 30 s ahead
 * (PLAN_SWARM_CLOCK_OFFSET_MS=30000). Its events are stamped in the future:
 * the others hold them back (parked, `clock-ahead`) until their clocks are
 * within the allowance, so nothing it signs can jump ahead of the plan. By its
 * own clock every other executor's lease has long lapsed; it must not take
 * their tasks over while they are plainly alive and renewing (no takeover
 * storm). While its claims wait at the others, they may run the same task
 * (a duplicate execution, bounded by its claims). The plan completes and the
 * five invariants hold.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { ResilienceSwarm, Stopwatch, printMeasured, invariantFigures } from '../helpers/swarm.js'
import { modelOf, promptOf, titleIn } from '../helpers/roles-swarm.js'

const SKEW_MS = 30_000
const LEASE_MS = 3_000
const PLAN_MS = 300_000

describe("resilience: one node's clock 30 s ahead", () => {
  let swarm: ResilienceSwarm | undefined

  afterAll(async () => {
    await swarm?.close()
  }, 60_000)

  it('holds its events back, takes over no live lease, and the plan completes', async () => {
    swarm = await ResilienceSwarm.start({
      label: 'skew',
      nodes: [
        { role: 'observer' },
        { role: 'decomposer' },
        { role: 'scorer' },
        { role: 'executor' },
        { role: 'executor', name: 'skewed', env: { PLAN_SWARM_CLOCK_OFFSET_MS: String(SKEW_MS) } }
      ],
      // Executions take several seconds: long enough, with renewals, for the skewed executor to think every lease
      // lapsed; one claim at a time per executor, so the skewed one has to do some of the work.
      fake: {
        auto: { children: 3 },
        script: req => ({ kind: 'auto', delayMs: req.tool === 'report_result' ? 4_000 : 100 })
      }
    })
    const s = swarm
    const skewed = s.byName('skewed')
    const clock = new Stopwatch()
    const { plan } = await s.submit('plan a day of museums in Paris', [
      '--max-depth',
      '1',
      '--lease-ms',
      String(LEASE_MS),
      '--max-claims-per-executor',
      '1'
    ])
    clock.mark('submitted')

    const done = await s.waitPlan(s.seed, plan, 'the plan to complete', t => t.status === 'completed', PLAN_MS)
    clock.mark('completed')
    expect(done.deliverable?.output ?? '').not.toBe('')

    const report = await s.checkInvariants({ convergeTimeoutMs: 120_000 })
    clock.mark('converged')
    expect(report.failures, s.tails()).toEqual([])

    // Held back: the others parked what the skewed node signed, for the clock.
    const metrics = await (await fetch(`${s.seed.http}/metrics`)).text()
    const heldBack = [
      ...metrics.matchAll(/^plan_swarm_events_ignored_total\{why="clock-ahead"[^}]*\}\s+(\d+)/gm)
    ].reduce((n, m) => n + Number(m[1]), 0)
    const final = (await s.plan(s.seed, plan))?.tree ?? done
    // What the skewed executor claimed: fresh claims (prev null) and takeovers (prev set).
    const events = (await (await fetch(`${s.seed.http}/plans/${plan}/events`)).json()) as Array<{
      type: string
      author: string
      body: { prev?: string | null }
    }>
    const skewedClaims = events.filter(e => e.type === 'task-claimed' && e.author === skewed.peerId)
    const skewedTakeovers = skewedClaims.filter(e => e.body.prev !== null && e.body.prev !== undefined).length
    // No takeover storm: nobody died, so no chain was taken over.
    const takeovers = final.tasks.flatMap(t => t.chains).filter(c => c.end?.kind === 'superseded').length
    const executions = new Map<string, string[]>()
    for (const r of s.fake.calls('report_result')) {
      const key = titleIn(promptOf(r), 'task') ?? '?'
      executions.set(key, [...(executions.get(key) ?? []), modelOf(r)])
    }
    const duplicateExecutions = [...executions.values()].reduce((n, v) => n + v.length - 1, 0)
    const skewedExecutions = [...executions.values()].flat().filter(m => m === `fake-${skewed.name}`).length
    printMeasured('clock-skew', {
      skewMs: SKEW_MS,
      leaseMs: LEASE_MS,
      submitToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.submitted ?? 0),
      ...invariantFigures(report),
      heldBackAtObserver: heldBack,
      takeovers,
      duplicateExecutions,
      skewedClaims: skewedClaims.length,
      skewedTakeovers,
      skewedExecutions
    })
    expect(heldBack, 'events of the skewed node parked at the observer for the clock').toBeGreaterThan(0)
    expect(skewedClaims.length, 'claims of the skewed executor').toBeGreaterThan(0)
    expect(skewedTakeovers, 'takeover claims by the skewed executor').toBe(0)
    expect(
      takeovers,
      JSON.stringify(
        final.tasks.map(t => t.chains),
        null,
        1
      )
    ).toBe(0)
    // While its claims wait at the others, they may run the same task: at most one duplicate per claim it made.
    expect(duplicateExecutions, JSON.stringify([...executions])).toBeLessThanOrEqual(skewedClaims.length)
  }, 900_000)
})
