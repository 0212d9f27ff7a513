/**
 * The real node in the simulator with version-5 goals (params.trust,
 * ADR-0047): the executors claim in the fold's rank order, release the
 * claims they lose, release their own lapsed chains instead of taking them
 * over, and the plan still finishes and converges on every node, without
 * faults and with every fault, with no task executed twice without faults.
 * The simulator's goals are made version 5 by the world's `trust` option
 * (`npm run sim -- --trust`).
 */
import { describe, expect, it } from 'vitest'
import { runWorld } from '../../src/sim/run.js'
import { StandingBook } from '../../src/core/peer-standing.js'
import { FAULT_KINDS } from '../../src/sim/faults.js'
import { DEFAULT_REVIEW_ONE_IN, PROTOCOL_VERSION_5, paramsVersion } from '../../src/core/events.js'
import type { RunReport } from '../../src/sim/run.js'

function explain(r: RunReport): string {
  const problems = r.checks.problems.slice(0, 8).join('\n  ')
  return `seed ${r.seed} (${r.nodes} nodes, faults ${r.faults.join(',') || 'none'}) failed: ${r.outcome}\n  ${problems}`
}

describe('version-5 plans in the simulator', () => {
  it('without faults: 10 seeds finish, converge, and never execute a task twice', async () => {
    const versions = new Set<number>()
    for (let seed = 1; seed <= 10; seed++) {
      const { report: r, world } = await runWorld({ seed, nodes: 5 + (seed % 6), faults: [], trust: true })
      expect(r.ok, explain(r)).toBe(true)
      expect(r.checks.duplicateExecutions, explain(r)).toBe(0)
      expect(r.replay).toContain(' --trust')
      for (const plan of world.plans) {
        const params = world.nodes[0]?.runtime?.view.loadTree(plan)?.params
        if (params !== undefined) versions.add(paramsVersion(params))
      }
    }
    expect(versions).toStrictEqual(new Set([PROTOCOL_VERSION_5]))
  }, 300_000)

  it('with the review sample: 4 seeds finish, converge and run no task twice, the scorers reviewing', async () => {
    let reviewed = 0
    // Seeds 6 and 10 ran a task twice before executors stopped contesting claims made while they were full.
    for (const seed of [1, 2, 6, 10]) {
      const { report, world } = await runWorld({
        seed,
        nodes: 5 + (seed % 6),
        faults: [],
        trust: true,
        reviewOneIn: DEFAULT_REVIEW_ONE_IN
      })
      expect(report.ok, explain(report)).toBe(true)
      expect(report.checks.duplicateExecutions, explain(report)).toBe(0)
      const view = world.nodes.find(n => n.runtime !== undefined)?.runtime?.view
      for (const plan of world.plans)
        for (const r of (view?.loadTree(plan)?.tasks ?? []).flatMap(t => t.results))
          if (r.reviewedFor !== null && r.reviewedFor !== undefined && r.review === 'accepted') reviewed++
    }
    expect(reviewed).toBeGreaterThan(0)
  }, 300_000)

  it('with every fault: 12 seeds finish and converge, and no honest member’s standing counts against it', async () => {
    for (let seed = 2_000; seed < 2_012; seed++) {
      const { report: r, world } = await runWorld({ seed, nodes: 5 + (seed % 6), faults: FAULT_KINDS, trust: true })
      expect(r.ok, explain(r)).toBe(true)
      // Every member here is honest: whatever evidence crashes, partitions and lost messages leave, none of it may
      // lower a member's gossip score or push it down the committee draw (ADR-0048).
      const book = new StandingBook()
      for (const plan of world.plans) book.set(plan, world.nodes[0]?.runtime?.view.loadTree(plan)?.standing)
      expect(
        book.records().filter(x => x.penalty > 0),
        explain(r)
      ).toStrictEqual([])
    }
  }, 300_000)

  it('an honest task that runs long is backed up: a second execution, not a duplicate the run fails on', async () => {
    // Seed 4 at 10 nodes with calls of a log-normal latency (the tax bench's): one leaf's call runs past four
    // typical task times, and an idle executor backs it up (docs/protocol/fold.md 11.8).
    const { report: r } = await runWorld({
      seed: 4,
      nodes: 10,
      faults: [],
      until: 'plan',
      trust: true,
      llmLatency: { kind: 'lognormal', medianMs: 4_000, sigma: 0.7 },
      linkMs: { minMs: 20, maxMs: 80 },
      plans: 1
    })
    expect(r.ok, explain(r)).toBe(true)
    expect(r.checks.claimsOnOthersChains).toBeGreaterThanOrEqual(1)
    expect(r.checks.duplicateExecutions).toBeGreaterThanOrEqual(1)
    expect(r.checks.duplicateExecutions).toBeLessThanOrEqual(r.checks.claimsOnOthersChains)
  }, 120_000)
})
