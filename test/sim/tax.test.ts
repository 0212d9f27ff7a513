/**
 * The simulator's tax against its central scheduler (src/sim/tax.ts), the
 * critical path it is attributed by (src/sim/critical-path.ts), and the
 * latency specs `npm run sim` and bench/tax/index.ts take (src/sim/latency.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { latencyOf, latencyWords, parseLatencySpec, parseLinkMs } from '../../src/sim/latency.js'
import { PATH_PARTS, criticalPath, partsTotal } from '../../src/sim/critical-path.js'
import { FIXED_WAITS, runTax, taxFigures } from '../../src/sim/tax.js'
import { runWorld } from '../../src/sim/run.js'
import { taxOptions } from '../../bench/tax/index.js'
import type { TaxRun } from '../../src/sim/tax.js'

describe('latency specs', () => {
  it('parses the fixed and log-normal forms', () => {
    expect(parseLatencySpec('300')).toEqual({ kind: 'fixed', ms: 300 })
    expect(parseLatencySpec('fixed:250')).toEqual({ kind: 'fixed', ms: 250 })
    expect(parseLatencySpec('lognormal:4000')).toEqual({ kind: 'lognormal', medianMs: 4000, sigma: 0.7 })
    expect(parseLatencySpec('lognormal:4000:1.2')).toEqual({ kind: 'lognormal', medianMs: 4000, sigma: 1.2 })
    expect(latencyWords(parseLatencySpec('lognormal:4000:1.2'))).toBe('lognormal:4000:1.2')
    expect(parseLinkMs('20-80')).toEqual({ minMs: 20, maxMs: 80 })
    expect(parseLinkMs('30')).toEqual({ minMs: 30, maxMs: 30 })
  })

  it('refuses bad input, saying what it expected', () => {
    expect(() => parseLatencySpec('')).toThrow(/--llm-ms : the latency must be a number >= 0/)
    expect(() => parseLatencySpec('-5')).toThrow(/the latency must be a number >= 0/)
    expect(() => parseLatencySpec('fast')).toThrow(/the latency must be a number/)
    expect(() => parseLatencySpec('lognormal:abc')).toThrow(/--llm-ms lognormal:abc: the median must be a number >= 0/)
    expect(() => parseLatencySpec('lognormal:4000:-1')).toThrow(/sigma must be a number >= 0/)
    expect(() => parseLatencySpec('lognormal:4000:0.7:9')).toThrow(
      /expected MS, fixed:MS or lognormal:MEDIAN_MS\[:SIGMA\]/
    )
    expect(() => parseLatencySpec('gamma:3')).toThrow(/expected MS, fixed:MS or lognormal/)
    expect(() => parseLinkMs('80-20')).toThrow(/--link-ms 80-20: the maximum is below the minimum/)
    expect(() => parseLinkMs('20..80')).toThrow(/--link-ms 20\.\.80: expected MIN-MAX in whole ms, e\.g\. 20-80/)
    expect(() => parseLinkMs('-5')).toThrow(/expected MIN-MAX/)
    expect(() => taxOptions(['--nodes=10,0'])).toThrow(/--nodes=10,0: expected whole numbers >= 1/)
    expect(() => taxOptions(['--plans=x'])).toThrow(/--plans=x: expected whole numbers/)
    expect(() => taxOptions(['--llm-ms=lognormal:'])).toThrow(/the median must be a number/)
    expect(taxOptions(['--nodes=10,100', '--plans=1']).nodes).toEqual([10, 100])
  })

  it('a log-normal latency is a function of the seed and the call, with the median asked for', () => {
    const spec = parseLatencySpec('lognormal:4000:0.7')
    expect(latencyOf(spec, 1, 'a call')).toBe(latencyOf(spec, 1, 'a call'))
    const xs = Array.from({ length: 2001 }, (_, i) => latencyOf(spec, 1, `call ${i}`)).sort((a, b) => a - b)
    expect(xs[1000]).toBeGreaterThan(3_600)
    expect(xs[1000]).toBeLessThan(4_400)
    // A long tail: p99 about 5 x the median (exp(2.33 x 0.7)).
    expect(xs[1980]).toBeGreaterThan(3 * 4_000)
    const other = Array.from({ length: 20 }, (_, i) => latencyOf(spec, 2, `call ${i}`))
    expect(other).not.toEqual(Array.from({ length: 20 }, (_, i) => latencyOf(spec, 1, `call ${i}`)))
    expect(latencyOf(parseLatencySpec('300'), 1, 'x')).toBe(300)
  })
})

describe('the critical path of a small run', () => {
  it('adds up to the makespan, the model calls on it at their fixed latency, the rest waits and hops', async () => {
    // Four nodes (an author, a decomposer, a scorer, an executor), depth 1, every call 300 ms, links 20-80 ms.
    const { report, world } = await runWorld({
      seed: 3,
      nodes: 4,
      faults: [],
      maxDepth: 1,
      llmLatencyMs: 300,
      linkMs: { minMs: 20, maxMs: 80 },
      until: 'plan',
      record: true
    })
    expect(report.ok, report.checks.problems.join('; ')).toBe(true)
    const plan = world.plans[0]
    if (plan === undefined) throw new Error('no plan')
    const path = criticalPath(world, plan)
    expect(path.makespanMs).toBeCloseTo(report.completionMs ?? NaN, 0)
    expect(partsTotal(path.parts)).toBeCloseTo(path.makespanMs, 6)
    // The goal, the proposal, its ballot, a leaf's claim and result, the roll-up's claim and result.
    // The goal, the proposal, its ballot, then claims and their results: the leaves the offline planner chained by
    // their dependencies, one after the other, and the roll-up last.
    const [goal, proposal, ballot, ...rest] = path.trail
    expect([goal, proposal, ballot]).toEqual(['goal-submitted', 'split-proposed', 'ballot-cast'])
    expect(rest.length % 2).toBe(0)
    expect(rest.length).toBeGreaterThanOrEqual(4)
    for (let i = 0; i < rest.length; i += 2) expect(rest.slice(i, i + 2)).toEqual(['task-claimed', 'result-reported'])
    expect(path.events).toBe(path.trail.length)
    // Every call on the path at its 300 ms: the proposal, the ballot, every execution.
    expect(path.calls).toBe(2 + rest.length / 2)
    expect(path.parts.llm).toBe(path.calls * 300)
    // The proposal's way to the scorer, the ballot's to the executor, the last result's to node 0, at least.
    expect(path.hops).toBeGreaterThanOrEqual(3)
    expect(path.parts.gossip).toBeGreaterThanOrEqual(3 * 20)
    for (const k of PATH_PARTS) expect(path.parts[k], k).toBeGreaterThanOrEqual(0)
    // Not recorded: refused.
    const bare = await runWorld({ seed: 3, nodes: 4, faults: [], maxDepth: 1, until: 'plan' })
    expect(() => criticalPath(bare.world, plan)).toThrow(/was not recorded/)
  }, 30_000)
})

describe('the tax of a small run', () => {
  let run: TaxRun
  beforeAll(async () => {
    run = await runTax({
      seed: 1,
      nodes: 5,
      faults: [],
      maxDepth: 1,
      plans: 1,
      llmLatency: parseLatencySpec('lognormal:4000:0.7'),
      linkMs: { minMs: 20, maxMs: 80 },
      until: 'plan'
    })
  }, 30_000)

  it('is at least 1, the central scheduler no slower than its unlimited self, every part >= 0', () => {
    expect(run.tax).toBeGreaterThanOrEqual(1)
    expect(run.tax).toBeLessThan(1.5)
    expect(run.unlimited.makespanMs).toBeLessThanOrEqual(run.central.makespanMs)
    expect(run.floorMs).toBeLessThanOrEqual(run.central.makespanMs)
    expect(run.overFloor).toBeGreaterThanOrEqual(run.tax)
    expect(run.central.calls).toBeGreaterThanOrEqual(1 + 1 + 2 + 1)
    expect(run.extraCalls).toBeGreaterThanOrEqual(0)
    for (const k of PATH_PARTS) expect(run.path.parts[k], k).toBeGreaterThanOrEqual(0)
    expect(partsTotal(run.path.parts)).toBeCloseTo(run.swarmMs, 0)
  })

  it("reports each fixed wait's share, adding up with the remainder to tax - 1", () => {
    const f = taxFigures(run, 1)
    expect(f.tax).toBeCloseTo(run.tax, 3)
    for (const k of FIXED_WAITS) expect(f.taxParts[k], k).toBeGreaterThanOrEqual(0)
    const sum = FIXED_WAITS.reduce((s, k) => s + f.taxParts[k], 0) + f.taxParts.remainder
    expect(sum).toBeCloseTo(f.tax - 1, 3)
    expect(f.taxParts.gossip).toBeGreaterThan(0)
    expect(f.swarmS).toBeGreaterThanOrEqual(f.centralS)
  })
})
