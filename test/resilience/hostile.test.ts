/**
 * Resilience scenario 8, a hostile peer: a swarm of node processes (observer,
 * decomposer, two scorers, two executors) driven by the fake LLM server plans
 * one goal alone (the baseline), then a second goal with a hostile process in
 * the swarm (test/helpers/hostile-main.ts) publishing every kind of bad event it can make
 * at a high rate; for the second goal the hostile peer even sits on the
 * committee (three members, quorum two), so its conflicting ballots matter.
 *
 * Checked: the honest swarm completes both plans; the five invariants hold
 * (no invalid event folded in any store, one treeHash everywhere, ...); the
 * honest nodes' /metrics count the rejections by reason; the equivocations
 * are recorded in the tree; the parked events (ballots for proposals that do
 * not exist) stay bounded. The slowdown against the baseline is measured.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { spawnCommand, REPO_ROOT } from '../helpers/cli-process.js'
import { join } from 'node:path'
import { ResilienceSwarm, Stopwatch, printMeasured } from '../helpers/swarm.js'
import type { CliChild } from '../helpers/cli-process.js'
import { byLabel } from '../helpers/metrics-text.js'

const PLAN_MS = 240_000
const PLAN_ARGS = ['--max-depth', '2', '--lease-ms', '3000', '--max-claim-ms', '10000']
const RATE = 200

describe('resilience: a hostile peer in the swarm', () => {
  let s: ResilienceSwarm | undefined
  let hostile: CliChild | undefined
  afterAll(async () => {
    await hostile?.stop(5_000)
    await s?.close()
  }, 60_000)

  it('gets everything it sends rejected or neutralised and counted, and the honest swarm completes the plan', async () => {
    const clock = new Stopwatch()
    s = await ResilienceSwarm.start({
      label: 'hostile',
      fake: { latencyMs: 300, auto: { children: 3, leafDepth: 2 } },
      nodes: [
        { role: 'observer' },
        { role: 'decomposer' },
        { role: 'scorer' },
        { role: 'scorer' },
        { role: 'executor' },
        { role: 'executor' }
      ]
    })
    clock.mark('swarm up')
    const scorers = s.ofRole('scorer').map(n => n.peerId)

    // Baseline: the same kind of plan without the hostile peer.
    const base = await s.submit('plan a weekend in Lisbon', ['--committee', scorers.join(','), ...PLAN_ARGS])
    clock.mark('baseline submitted')
    await s.waitPlan(s.seed, base.plan, 'the baseline plan to complete', t => t.status === 'completed', PLAN_MS)
    const baselineMs = clock.since('baseline submitted')

    hostile = spawnCommand(
      [
        process.execPath,
        '--import',
        'tsx',
        join(REPO_ROOT, 'test/helpers/hostile-main.ts'),
        '--swarm',
        s.swarm,
        '--bootstrap',
        s.seed.addresses[0] as string,
        '--rate',
        String(RATE)
      ],
      { env: s.env, name: 'hostile' }
    )
    const started = await hostile.waitForJson(o => o.event === 'started', 120_000)
    const hostileId = started.peerId as string
    await s.waitRoster(s.seed, [hostileId])
    clock.mark('hostile up')

    const attacked = await s.submit('plan a two-week trip to Japan', [
      '--committee',
      [...scorers, hostileId].join(','),
      ...PLAN_ARGS
    ])
    clock.mark('attacked submitted')
    const tree = await s
      .waitPlan(s.seed, attacked.plan, 'the attacked plan to complete', t => t.status === 'completed', PLAN_MS)
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${hostile?.tail(2000) ?? ''}\n${s?.tails(1000) ?? ''}`)
      })
    const attackedMs = clock.since('attacked submitted')
    // Let it go on a little after the plan completed (replays, floods at a finished plan), then stop it.
    await new Promise(resolve => setTimeout(resolve, 2_000))
    await hostile.stop(10_000)
    const sentLine =
      [...hostile.lines].reverse().find(l => l.includes('"final":true')) ??
      [...hostile.lines].reverse().find(l => l.includes('"sent"'))
    const sent = (JSON.parse(sentLine ?? '{"counts":{}}') as { counts: Record<string, number> }).counts

    const report = await s.checkInvariants({ plans: [base.plan, attacked.plan], convergeTimeoutMs: 120_000 })
    expect(report.failures, `${report.failures.join('\n')}\n${s.tails()}`).toEqual([])
    for (const p of report.plans) expect(p.status).toBe('completed')

    // Counted by reason on the honest nodes.
    const rejected: Record<string, number> = {}
    const ignored: Record<string, number> = {}
    let maxParked = 0
    for (const n of s.nodes.filter(x => x.alive)) {
      const text = await (await fetch(`${n.http}/metrics`)).text()
      for (const [k, v] of Object.entries(byLabel(text, 'plan_swarm_events_rejected_total', 'reason')))
        rejected[k] = (rejected[k] ?? 0) + v
      for (const [k, v] of Object.entries(byLabel(text, 'plan_swarm_events_ignored_total', 'why')))
        ignored[k] = (ignored[k] ?? 0) + v
      maxParked = Math.max(maxParked, Number(/^plan_swarm_events_parked\s+(\S+)$/m.exec(text)?.[1] ?? 0))
    }
    const expected = [
      'undecodable',
      'oversized',
      'not-canonical',
      'bad-signature',
      'wrong-swarm',
      'unknown-type',
      'wrong-shape',
      'not-in-committee',
      'stamp-not-after-dep',
      'late-renewal'
    ]
    for (const reason of expected)
      expect(
        rejected[reason] ?? 0,
        `rejections for ${reason}: ${JSON.stringify(rejected)}; sent ${JSON.stringify(sent)}`
      ).toBeGreaterThan(0)
    // Replays are dropped by gossipsub's duplicate cache (or by its graylist once the hostile peer's score
    // is low) before they reach the validator; any that reach it are ignored as duplicates (reported below).
    expect(ignored['missing-deps'] ?? 0, 'ballots for proposals that do not exist are parked').toBeGreaterThan(0)
    // Equivocation (its conflicting ballots, proposals and renewals) is recorded in the tree, and neither event counted.
    const final = (await s.plan(s.seed, attacked.plan))?.tree ?? tree
    const equivocations = final.equivocations.filter(e => e.author === hostileId)
    expect(
      equivocations.length,
      `${JSON.stringify(final.equivocations)}; sent ${JSON.stringify(sent)}`
    ).toBeGreaterThan(0)
    for (const n of final.nodes) {
      for (const a of n.attempts) {
        if (a.decidedBy === null) continue
        const decisive = a.ballots.find(b => b.id === a.decidedBy)
        expect(decisive?.author, 'the hostile peer never decides an attempt').not.toBe(hostileId)
      }
    }

    printMeasured('hostile', {
      honestNodes: s.nodes.length,
      rate: RATE,
      sent,
      rejected,
      ignored,
      maxParked,
      equivocations: equivocations.length,
      treeNodes: report.plans[1]?.nodes,
      duplicates: report.plans[1]?.duplicates,
      startMs: clock.marks['swarm up'],
      baselineMs,
      attackedMs,
      slowdown: Number((attackedMs / baselineMs).toFixed(2)),
      maxRssMb: Math.round(Math.max(...Object.values(report.rssBytes)) / 2 ** 20)
    })
  }, 600_000)
})
