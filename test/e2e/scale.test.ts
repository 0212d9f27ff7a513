/**
 * Past thirty peers, as real processes: 40 nodes of the built CLI (as a
 * deployment runs them, `node dist/src/cli.js`) on loopback, every one
 * bootstrapped to the goal's author, plan a goal against the fake Messages
 * API. Each holds at most --max-peers connections (default 24; a few more
 * for a newcomer's first seconds) instead of one to every peer, yet every roster fills (presence travels through the
 * gossip mesh), the plan completes with no task executed twice (from the
 * fake server's log), and every process ends with the author's treeHash.
 * About 2-3 minutes on this 2-core machine. `npm test` runs this file alone,
 * after the rest (package.json), so its 40 processes starve no other test.
 * The figures (idle CPU and bytes
 * per node, time to full rosters) are `npm run bench -- scale`'s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BenchSwarm } from '../../bench/common/swarm.js'
import { startBenchLlm, countCalls } from '../../bench/common/llm.js'
import { DEFAULT_MAX_PEERS, NEWCOMER_HEADROOM } from '../../src/net/neighbours.js'
import { removeTempDirs } from '../helpers/cli-process.js'
import type { BenchLlm } from '../../bench/common/llm.js'

const PROCESSES = 40

describe(`${PROCESSES} processes of the built CLI`, () => {
  let llm: BenchLlm
  let swarm: BenchSwarm | undefined

  beforeAll(async () => {
    llm = await startBenchLlm(100)
  }, 240_000)

  afterAll(async () => {
    await swarm?.stop()
    await llm?.fake.close()
    removeTempDirs()
  }, 60_000)

  it('fill their rosters, stay within their connection bound, and plan a goal with one treeHash and no duplicate execution', async () => {
    swarm = await BenchSwarm.start(
      PROCESSES,
      llm.fake.url,
      line => {
        console.log(line)
      },
      'built',
      300_000
    )
    expect(swarm.rosterShare, 'the smallest share of the others any process lists in its roster').toBe(1)
    const from = llm.fake.requests.length
    const run = await swarm.runPlan(`plan at ${PROCESSES} processes`, 100, { maxDepth: 2 }, 240_000)
    expect(run.status).toBe('completed')
    expect(run.convergenceMs, "every process holds the finished plan with the author's treeHash").not.toBeNull()
    expect(run.taskDuplicates).toBe(0)
    expect(countCalls(llm.fake.requests.slice(from)).duplicateExecutions).toBe(0)
    const peers: number[] = []
    for (const node of swarm.nodes) {
      const st = (await (await fetch(`${node.http}/status`, { signal: AbortSignal.timeout(5_000) })).json()) as {
        peers: number
      }
      peers.push(st.peers)
    }
    console.log(
      `connections per process: max ${Math.max(...peers)}, min ${Math.min(...peers)}; roster ` +
        `full after ${swarm.rosterFullMs ?? '-'} ms; plan ${run.makespanMs} ms, ` +
        `converged ${run.convergenceMs ?? '-'} ms later`
    )
    // The bound: --max-peers once settled, a few more for newcomers in their first seconds (libp2p's hard cap).
    for (const p of peers) expect(p).toBeLessThanOrEqual(DEFAULT_MAX_PEERS + NEWCOMER_HEADROOM)
    expect(
      peers.filter(p => p > DEFAULT_MAX_PEERS).length,
      'processes over --max-peers once settled'
    ).toBeLessThanOrEqual(PROCESSES / 4)
    expect(Math.max(...peers)).toBeLessThan(PROCESSES - 1)
  }, 600_000)
})
