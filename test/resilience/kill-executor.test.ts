/**
 * Resilience 1: an executor holding claims in several plans is killed with
 * SIGKILL. Another executor takes every one of its leaves over once each
 * lease lapses, in every plan, and every plan completes; then the five
 * invariants hold over every store (among them: no task has two accepted
 * results).
 *
 * The victim is the only executor at first, and its model calls for results
 * get no answer (a minute-long delay): it claims leaves in the two oldest
 * plans and holds them, renewing the leases, until it dies. The second
 * executor joins just before the kill.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { ResilienceSwarm, Stopwatch, printMeasured, invariantFigures } from '../helpers/swarm.js'
import type { RecordedRequest } from '../helpers/fake-llm.js'
import type { PlanTree } from '../../src/core/tree.js'

const LEASE_MS = 3_000
const PLAN_MS = 240_000
const PLANS = 3

function modelOf(req: RecordedRequest): string {
  return String((req.body as { model?: unknown } | undefined)?.model ?? '')
}

describe('resilience: kill -9 an executor holding claims in several plans', () => {
  let swarm: ResilienceSwarm | undefined

  afterAll(async () => {
    await swarm?.close()
  }, 60_000)

  it('another executor takes every leaf over after its lease, every plan completes, and the invariants hold', async () => {
    let victim: string | undefined
    swarm = await ResilienceSwarm.start({
      label: 'kill-exec',
      nodes: [{ role: 'observer' }, { role: 'decomposer' }, { role: 'scorer' }, { role: 'executor' }],
      fake: {
        auto: { children: 2 },
        script: req => {
          if (req.tool !== 'report_result') return { kind: 'auto' }
          victim ??= modelOf(req)
          return modelOf(req) === victim ? { kind: 'auto', delayMs: 600_000 } : { kind: 'auto' }
        }
      }
    })
    const s = swarm
    const clock = new Stopwatch()
    const plans: string[] = []
    for (const goal of ['plan a weekend in Lisbon', 'plan a garden for bees', 'plan a book club'])
      plans.push((await s.submit(goal, ['--max-depth', '1', '--lease-ms', String(LEASE_MS)])).plan)
    expect(plans).toHaveLength(PLANS)
    clock.mark('submitted')

    // The victim executes in the two oldest plans: its claims are in their trees, renewed at least once (so the
    // chains that lapse are renewed ones), and its model calls hang.
    const victimNode = s.ofRole('executor')[0]
    if (victimNode === undefined) throw new Error('no executor')
    const holds = (t: PlanTree): boolean =>
      t.tasks.some(
        task =>
          task.status === 'claimed' &&
          task.owner === victimNode.peerId &&
          (task.chains[task.chains.length - 1]?.renewals ?? 0) >= 1
      )
    const heldTasks: { plan: string; task: string }[] = []
    for (const plan of plans.slice(0, 2)) {
      const held = await s.waitPlan(s.seed, plan, 'a renewed claim of the hanging executor', holds, PLAN_MS)
      for (const t of held.tasks)
        if (t.status === 'claimed' && t.owner === victimNode.peerId) heldTasks.push({ plan, task: t.id })
    }
    expect(new Set(heldTasks.map(h => h.plan)).size).toBeGreaterThanOrEqual(2)
    await s.add({ role: 'executor' })
    s.snapshot(victimNode, 'before the kill')
    for (const n of s.nodes) if (n !== victimNode) s.snapshot(n, 'at the kill')
    await s.kill9(victimNode)
    clock.mark('killed')

    for (const plan of plans) {
      const mine = heldTasks.filter(h => h.plan === plan).map(h => h.task)
      const done = await s.waitPlan(s.seed, plan, 'the plan to complete', t => t.status === 'completed', PLAN_MS)
      for (const id of mine) {
        const task = done.tasks.find(x => x.id === id)
        // Taken over by a claim stamped after the lapse of the victim's chain, and done by somebody else.
        const victimChain = task?.chains.find(c => c.owner === victimNode.peerId)
        const next = task?.chains.find(c => c.owner !== victimNode.peerId)
        expect(victimChain, s.tails()).toBeDefined()
        expect(next?.claimedAt.ms ?? 0).toBeGreaterThan(victimChain?.lapseMs ?? Infinity)
        expect(task?.status).toBe('done')
        expect(task?.results.find(r => r.accepted)?.author).not.toBe(victimNode.peerId)
      }
      expect(done.deliverable?.output ?? '').not.toBe('')
    }
    clock.mark('completed')

    const report = await s.checkInvariants({ convergeTimeoutMs: 90_000 })
    expect(report.failures, s.tails()).toEqual([])
    printMeasured('kill-executor', {
      leaseMs: LEASE_MS,
      plans: PLANS,
      claimsHeldAtKill: heldTasks.length,
      plansWithClaimsAtKill: new Set(heldTasks.map(h => h.plan)).size,
      killToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.killed ?? 0),
      submitToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.submitted ?? 0),
      ...invariantFigures(report)
    })
  }, 900_000)
})
