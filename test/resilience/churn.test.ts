/**
 * Resilience 7: churn. While a plan runs, a peer joins every second and
 * peers leave (SIGKILL or SIGTERM, alternately, 3, 6 or 9 s after they are
 * up) for 60 s: executors that may die holding claims, decomposers that
 * propose, scorers outside the committee, observers. (At most four peers
 * start at once: on a loaded machine a start takes longer than a lifetime.) At the end, every live node (the base swarm and the
 * churn peers still up) holds the same tree, equal to the fold of the union
 * of every store, the plan completes, and the five invariants hold.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { ResilienceSwarm, Stopwatch, printMeasured } from '../helpers/swarm.js'
import type { NodeRole } from '../helpers/swarm.js'

const CHURN_MS = Number(process.env.RESILIENCE_CHURN_MS ?? 60_000)
const EVERY_MS = 1_000
/** A churn peer lives this long after it is up. */
const LIFETIMES_MS = [3_000, 6_000, 9_000]
/** At most this many churn peers starting at once. */
const MAX_STARTING = 4
const ROLES: NodeRole[] = ['executor', 'observer', 'decomposer', 'scorer']
const PLAN_MS = 300_000

describe('resilience: churn', () => {
  let swarm: ResilienceSwarm | undefined

  afterAll(async () => {
    await swarm?.close()
  }, 120_000)

  it('peers join and leave every second for 60 s while a plan runs: converged at the end', async () => {
    swarm = await ResilienceSwarm.start({
      label: 'churn',
      nodes: [
        { role: 'observer' },
        { role: 'decomposer' },
        { role: 'scorer' },
        { role: 'executor' },
        { role: 'executor' }
      ],
      // Slow executions and two levels of splits: the plan is still running while the peers churn.
      fake: {
        auto: { children: 3, leafDepth: 2 },
        script: req => ({ kind: 'auto', delayMs: req.tool === 'report_result' ? 4_000 : 200 })
      }
    })
    const s = swarm
    const scorer = s.byName('scorer-1')
    const clock = new Stopwatch()
    // The committee is the base scorer alone: churning scorers stay outside it.
    const { plan } = await s.submit('plan a road trip along the coast of Portugal', [
      '--max-depth',
      '2',
      '--lease-ms',
      '3000',
      '--committee',
      scorer.peerId
    ])
    clock.mark('submitted')

    const leaving: Array<Promise<void>> = []
    let joined = 0
    let up = 0
    let left = 0
    let starting = 0
    const churnStart = Date.now()
    const churning = (): boolean => Date.now() - churnStart < CHURN_MS
    for (let i = 0; churning(); i++) {
      // A peer joins every second (unless MAX_STARTING are still starting: on a loaded machine start-up takes longer
      // than a lifetime, and peers that leave before they are up test nothing)...
      if (starting < MAX_STARTING) {
        const node = s.spawn({ role: ROLES[i % ROLES.length] as NodeRole, name: `churn-${i}` })
        joined++
        starting++
        const lifetime = LIFETIMES_MS[i % LIFETIMES_MS.length] as number
        // ... and leaves, by SIGKILL or SIGTERM in turn, a lifetime after it is up (the last ones stay).
        leaving.push(
          node.ready.then(async () => {
            starting--
            up++
            await new Promise(resolve => setTimeout(resolve, lifetime))
            if (!churning()) return
            await (i % 2 === 0 ? s.kill9(node) : s.stop(node))
            left++
          })
        )
      }
      await new Promise(resolve => setTimeout(resolve, EVERY_MS))
    }
    await Promise.all(leaving)
    clock.mark('churn ended')
    // Churn peers still up stay in the check.

    const done = await s.waitPlan(s.seed, plan, 'the plan to complete', t => t.status === 'completed', PLAN_MS)
    clock.mark('completed')
    expect(done.deliverable?.output ?? '').not.toBe('')

    const report = await s.checkInvariants({ convergeTimeoutMs: 120_000, maxDeadOnly: 40 })
    clock.mark('converged')
    expect(report.failures, s.tails(300)).toEqual([])
    const m = clock.marks
    printMeasured('churn', {
      churnMs: CHURN_MS,
      joined,
      up,
      left,
      liveAtEnd: s.nodes.filter(n => n.alive).length,
      churnEndToCompletedMs: Math.max(0, (m.completed ?? 0) - (m['churn ended'] ?? 0)),
      submitToCompletedMs: (m.completed ?? 0) - (m.submitted ?? 0),
      convergedMs: report.convergedMs,
      events: report.unionEvents,
      deadOnly: report.deadOnly,
      duplicates: report.plans.map(p => p.duplicates),
      ignoredClaims: report.plans.map(p => p.ignoredClaims),
      rssMB: Math.round(Math.max(...Object.values(report.rssBytes)) / 2 ** 20)
    })
  }, 900_000)
})
