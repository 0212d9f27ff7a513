/**
 * The real node in the simulator with version-5 goals (params.trust,
 * ADR-0047): the executors claim in the fold's rank order, release the
 * claims they lose, release their own lapsed chains instead of taking them
 * over, and the plan still finishes and converges on every node, without
 * faults and with every fault, with no task executed twice without faults.
 * The simulator's goals are made version 5 by wrapping World.params here,
 * so src/sim is used as it is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSeed, runWorld } from '../../src/sim/run.js'
import { World } from '../../src/sim/world.js'
import { FAULT_KINDS } from '../../src/sim/faults.js'
import { DEFAULT_REVIEW_ONE_IN, DEFAULT_TRUST, PROTOCOL_VERSION_5, paramsVersion } from '../../src/core/events.js'
import type { PeerIdString, PlanParams, Trust } from '../../src/core/events.js'
import type { RunReport } from '../../src/sim/run.js'

const own = World.prototype.params
/** How many goals the wrapped World.params gave, and of which protocol versions. */
const versions: number[] = []
/** The goals' trust parameters (a test may turn the review sample on). */
let trust: Trust = DEFAULT_TRUST
beforeAll(() => {
  World.prototype.params = function (this: World, committee?: readonly PeerIdString[]): PlanParams {
    const p = { ...own.call(this, committee), trust }
    versions.push(paramsVersion(p))
    return p
  }
})
afterAll(() => {
  World.prototype.params = own
})

function explain(r: RunReport): string {
  const problems = r.checks.problems.slice(0, 8).join('\n  ')
  return `seed ${r.seed} (${r.nodes} nodes, faults ${r.faults.join(',') || 'none'}) failed: ${r.outcome}\n  ${problems}`
}

describe('version-5 plans in the simulator', () => {
  it('without faults: 10 seeds finish, converge, and never execute a task twice', async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const r = await runSeed({ seed, nodes: 5 + (seed % 6), faults: [] })
      expect(r.ok, explain(r)).toBe(true)
      expect(r.checks.duplicateExecutions, explain(r)).toBe(0)
    }
    expect(versions.length).toBeGreaterThan(0)
    expect(new Set(versions)).toStrictEqual(new Set([PROTOCOL_VERSION_5]))
  }, 300_000)

  it('with the review sample: 4 seeds finish and converge, the scorers reviewing the sampled results', async () => {
    trust = { ...DEFAULT_TRUST, reviewOneIn: DEFAULT_REVIEW_ONE_IN }
    try {
      let reviewed = 0
      for (let seed = 1; seed <= 4; seed++) {
        const { report, world } = await runWorld({ seed, nodes: 5 + (seed % 6), faults: [] })
        expect(report.ok, explain(report)).toBe(true)
        const view = world.nodes.find(n => n.runtime !== undefined)?.runtime?.view
        for (const plan of world.plans)
          for (const r of (view?.loadTree(plan)?.tasks ?? []).flatMap(t => t.results))
            if (r.reviewedFor !== null && r.reviewedFor !== undefined && r.review === 'accepted') reviewed++
      }
      expect(reviewed).toBeGreaterThan(0)
    } finally {
      trust = DEFAULT_TRUST
    }
  }, 300_000)

  it('with every fault: 12 seeds finish and converge', async () => {
    for (let seed = 2_000; seed < 2_012; seed++) {
      const r = await runSeed({ seed, nodes: 5 + (seed % 6), faults: FAULT_KINDS })
      expect(r.ok, explain(r)).toBe(true)
    }
  }, 300_000)
})
