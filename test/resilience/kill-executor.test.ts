/**
 * Resilience 1: an executor holding a claim is killed with SIGKILL. Another
 * executor takes the leaf over once the lease lapses, and the plan completes;
 * then the five invariants hold over every store.
 *
 * The executor that asks the fake LLM for a result first gets no answer (a
 * minute-long delay): it holds its claim, renewing the lease, until it dies.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { ResilienceSwarm, Stopwatch, printMeasured, invariantFigures } from '../helpers/swarm.js'
import type { RecordedRequest } from '../helpers/fake-llm.js'

const LEASE_MS = 3_000
const PLAN_MS = 240_000

function modelOf(req: RecordedRequest): string {
  return String((req.body as { model?: unknown } | undefined)?.model ?? '')
}

describe('resilience: kill -9 an executor holding a claim', () => {
  let swarm: ResilienceSwarm | undefined

  afterAll(async () => {
    await swarm?.close()
  }, 60_000)

  it('another executor takes the leaf after the lease, the plan completes, and the invariants hold', async () => {
    let victim: string | undefined
    swarm = await ResilienceSwarm.start({
      label: 'kill-exec',
      nodes: [
        { role: 'observer' },
        { role: 'decomposer' },
        { role: 'scorer' },
        { role: 'executor' },
        { role: 'executor' }
      ],
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
    const { plan } = await s.submit('plan a weekend in Lisbon', ['--max-depth', '1', '--lease-ms', String(LEASE_MS)])
    clock.mark('submitted')

    // The victim is executing: its claim is in the tree and its model call hangs.
    const held = await s.waitPlan(
      s.seed,
      plan,
      'a task claimed by the executor whose model call hangs',
      t => {
        if (victim === undefined) return false
        const owner = s.byName(victim.replace(/^fake-/, '')).peerId
        // ... and it has renewed its lease at least once, so the chain that lapses is a renewed one.
        return t.tasks.some(
          task =>
            task.status === 'claimed' &&
            task.owner === owner &&
            (task.chains[task.chains.length - 1]?.renewals ?? 0) >= 1
        )
      },
      PLAN_MS
    )
    const victimNode = s.byName((victim as string).replace(/^fake-/, ''))
    const heldTasks = held.tasks.filter(t => t.status === 'claimed' && t.owner === victimNode.peerId).map(t => t.id)
    s.snapshot(victimNode, 'before the kill')
    for (const n of s.nodes) if (n !== victimNode) s.snapshot(n, 'at the kill')
    await s.kill9(victimNode)
    clock.mark('killed')

    const takenOver = await s.waitPlan(
      s.seed,
      plan,
      'another executor to take over the leaf',
      t =>
        heldTasks.every(id => {
          const task = t.tasks.find(x => x.id === id)
          return task !== undefined && task.chains.some(c => c.owner !== victimNode.peerId)
        }),
      PLAN_MS
    )
    const takeoverMs = clock.mark('taken over')
    for (const id of heldTasks) {
      const task = takenOver.tasks.find(x => x.id === id)
      // The takeover claim is stamped after the lapse of the victim's chain.
      const victimChain = task?.chains.find(c => c.owner === victimNode.peerId)
      const next = task?.chains.find(c => c.owner !== victimNode.peerId)
      expect(victimChain, s.tails()).toBeDefined()
      expect(next?.claimedAt.ms ?? 0).toBeGreaterThan(victimChain?.lapseMs ?? Infinity)
    }

    const done = await s.waitPlan(s.seed, plan, 'the plan to complete', t => t.status === 'completed', PLAN_MS)
    clock.mark('completed')
    for (const id of heldTasks) {
      const task = done.tasks.find(x => x.id === id)
      expect(task?.status).toBe('done')
      expect(task?.results.find(r => r.accepted)?.author).not.toBe(victimNode.peerId)
    }
    expect(done.deliverable?.output ?? '').not.toBe('')

    const report = await s.checkInvariants({ convergeTimeoutMs: 90_000 })
    expect(report.failures, s.tails()).toEqual([])
    printMeasured('kill-executor', {
      leaseMs: LEASE_MS,
      killToTakeoverMs: takeoverMs - (clock.marks.killed ?? 0),
      killToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.killed ?? 0),
      submitToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.submitted ?? 0),
      ...invariantFigures(report)
    })
  }, 900_000)
})
