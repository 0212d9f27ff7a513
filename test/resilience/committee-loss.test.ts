/**
 * Resilience 2: decomposers and committee scorers killed with SIGKILL
 * mid-plan, leaving one decomposer and one of three committee members
 * (quorum 2). The plan waits, and says why in /status, in /plans/<id> and in
 * the observer's output. A killed committee scorer restarted on its data dir
 * (same peer id) votes again, and a split is accepted; the author amends the
 * committee to include a scorer started later, which catches up and votes
 * under the amendment; the plan completes and the five invariants hold.
 *
 * Control comes from the fake LLM: ballots on the root's two parts hang for
 * scorer-2 and scorer-3 (so they die without voting on them); after its
 * restart scorer-2 answers for part 1 but not part 2, which only the amended
 * committee can decide.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { ResilienceSwarm, Stopwatch, printMeasured, invariantFigures } from '../helpers/swarm.js'
import { modelOf, promptOf, titleIn } from '../helpers/roles-swarm.js'
import type { ScriptStep } from '../helpers/fake-llm.js'

const PLAN_MS = 300_000
const GOAL = 'plan a week of hiking in the Alps'
const BALLOTS_WAIT = /waiting for ballots from 2 of 3 committee members \(quorum 2\)/

describe('resilience: committee members and decomposers killed mid-plan', () => {
  let swarm: ResilienceSwarm | undefined

  afterAll(async () => {
    await swarm?.close()
  }, 60_000)

  it("waits and says why, counts a restarted member's vote, and completes after the author amends the committee", async () => {
    let restarted = false
    const hang: ScriptStep = { kind: 'auto', delayMs: 600_000 }
    swarm = await ResilienceSwarm.start({
      label: 'committee',
      nodes: [
        { role: 'observer' },
        { role: 'decomposer' },
        { role: 'decomposer' },
        { role: 'scorer' },
        { role: 'scorer' },
        { role: 'scorer' },
        { role: 'executor' }
      ],
      fake: {
        auto: { children: 2, leafDepth: 2 },
        script: req => {
          if (req.tool !== 'score_proposals') return { kind: 'auto' }
          const node = titleIn(promptOf(req), 'node') ?? ''
          const model = modelOf(req)
          if (!node.includes(' / part ')) return { kind: 'auto' }
          if (model === 'fake-scorer-3') return hang
          if (model === 'fake-scorer-2') return !restarted || node.endsWith(' / part 2') ? hang : { kind: 'auto' }
          return { kind: 'auto' }
        }
      }
    })
    const s = swarm
    const clock = new Stopwatch()
    const [s1, s2, s3] = ['scorer-1', 'scorer-2', 'scorer-3'].map(n => s.byName(n))
    const committee = [s1, s2, s3].map(n => (n as { peerId: string }).peerId)
    const { plan, quorum } = await s.submit(GOAL, [
      '--max-depth',
      '2',
      '--lease-ms',
      '3000',
      '--committee',
      committee.join(',')
    ])
    expect(quorum).toBe(2)
    clock.mark('submitted')

    // Mid-plan: the root is split, and both parts wait for ballots (scorer-1 has voted on them, 2 and 3 hang).
    const parts = (t: {
      nodes: ReadonlyArray<{
        depth: number
        title: string
        attempts: ReadonlyArray<{ ballots: ReadonlyArray<{ author: string }> }>
      }>
    }): typeof t.nodes => t.nodes.filter(n => n.depth === 1)
    await s.waitPlan(
      s.seed,
      plan,
      'scorer-1 to vote on both parts of the root',
      t =>
        parts(t).length === 2 &&
        parts(t).every(n => n.attempts.some(a => a.ballots.some(b => b.author === s1?.peerId))),
      PLAN_MS
    )
    for (const n of [s.byName('decomposer-2'), s2, s3]) await s.kill9(n as NonNullable<typeof n>)
    clock.mark('killed')

    // The plan waits, and says why: in /status, /plans/<id> and the observer's output.
    const status = await s.status(s.seed)
    const line = status.plans.find(p => p.id === plan) as { waiting?: string[]; status: string } | undefined
    expect(line?.status).toBe('planning')
    expect(
      (line?.waiting ?? []).some(w => BALLOTS_WAIT.test(w)),
      JSON.stringify(line)
    ).toBe(true)
    for (const id of [s2?.peerId, s3?.peerId]) expect((line?.waiting ?? []).join('\n')).toContain(id)
    const tree = (await s.plan(s.seed, plan))?.tree
    expect(
      parts(tree as NonNullable<typeof tree>).every(n =>
        BALLOTS_WAIT.test((n as unknown as { waiting: string }).waiting)
      )
    ).toBe(true)
    await s.seed.child?.waitForLine(l => l.includes('"event":"tree"') && BALLOTS_WAIT.test(l), 30_000)
    // ... and stays so: nothing can be decided with one member of three.
    await new Promise(resolve => setTimeout(resolve, 5_000))
    const still = (await s.plan(s.seed, plan))?.tree
    expect(still?.status).toBe('planning')
    expect(
      parts(still as NonNullable<typeof still>).every(
        n => (n as unknown as { accepted: string | null }).accepted === null
      )
    ).toBe(true)
    clock.mark('waited')

    // A committee member restarted on its data dir votes again (same peer id): part 1 is accepted.
    restarted = true
    await s.restart(s2 as NonNullable<typeof s2>)
    expect(s2?.peerId).toBe(committee[1])
    clock.mark('restarted')
    await s.waitPlan(
      s.seed,
      plan,
      'part 1 accepted with a ballot of the restarted scorer-2',
      t => {
        const p1 = parts(t).find(n => n.title.endsWith(' / part 1')) as unknown as
          { accepted: string | null; attempts: Array<{ ballots: Array<{ author: string }> }> } | undefined
        return p1?.accepted !== null && p1?.attempts.some(a => a.ballots.some(b => b.author === s2?.peerId)) === true
      },
      PLAN_MS
    )
    clock.mark('restarted member voted')

    // Part 2 still waits (scorer-2 does not answer for it, scorer-3 is gone): the author amends the committee to
    // scorer-1 and a scorer started now, which catches up and votes under the amendment.
    const s4 = await s.add({ role: 'scorer', name: 'scorer-4' })
    clock.mark('scorer-4 started')
    await s.waitRoster(s.seed, [s4.peerId])
    await s.amend(plan, [s1?.peerId as string, s4.peerId])
    clock.mark('amended')
    const done = await s.waitPlan(s.seed, plan, 'the plan to complete', t => t.status === 'completed', PLAN_MS)
    clock.mark('completed')
    const p2 = parts(done).find(n => n.title.endsWith(' / part 2')) as unknown as {
      accepted: string | null
      attempts: Array<{ ballots: Array<{ author: string; committee: string }> }>
    }
    expect(done.committees).toHaveLength(2)
    const amendment = done.committees[1]?.event
    expect(p2.attempts.some(a => a.ballots.some(b => b.author === s4.peerId && b.committee === amendment))).toBe(true)
    expect(done.deliverable?.output ?? '').not.toBe('')

    const report = await s.checkInvariants({ convergeTimeoutMs: 90_000 })
    expect(report.failures, s.tails()).toEqual([])
    const m = clock.marks
    printMeasured('committee-loss', {
      killToRestartMs: (m.restarted ?? 0) - (m.killed ?? 0),
      restartToVoteMs: (m['restarted member voted'] ?? 0) - (m.restarted ?? 0),
      lateScorerStartToAmendMs: (m.amended ?? 0) - (m['scorer-4 started'] ?? 0),
      amendToCompletedMs: (m.completed ?? 0) - (m.amended ?? 0),
      submitToCompletedMs: (m.completed ?? 0) - (m.submitted ?? 0),
      ...invariantFigures(report)
    })
  }, 900_000)
})
