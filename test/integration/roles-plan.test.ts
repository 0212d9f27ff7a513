/**
 * Whole plans run by real in-process role peers (decomposers, scorers,
 * executors, an observer and the author's client peer) over libp2p on
 * 127.0.0.1: against the fake Messages API through the real SDK, and with the
 * offline provider.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js'
import { RoleSwarm, executionsByTask } from '../helpers/roles-swarm.js'
import { OFFLINE_OUTPUT_PREFIX } from '../../src/offline/index.js'
import type { PlanTree } from '../../src/core/tree.js'

const GOAL = 'plan a two-week trip to Japan'

let swarm: RoleSwarm | undefined
let fake: FakeLlm | undefined

afterEach(async () => {
  await swarm?.stop()
  await fake?.close()
  swarm = undefined
  fake = undefined
})

function depthOf(tree: PlanTree): number {
  return Math.max(...tree.nodes.map(n => n.depth))
}

describe('roles: a whole plan', () => {
  it(
    '2 decomposers, 3 scorers, 3 executors and an observer complete a plan with one treeHash ' +
      'everywhere and no duplicate execution',
    async () => {
      const t0 = Date.now()
      fake = await startFakeLlm({ latencyMs: 50, auto: { children: 3, leafDepth: 2 } })
      swarm = await RoleSwarm.start({ llm: { fake }, decomposers: 2, scorers: 3, executors: 3, observer: true })
      const started = Date.now()
      const plan = await swarm.submit(GOAL, { maxDepth: 2 })
      await swarm.waitStatus(plan, 'completed', 90_000)
      const ran = Date.now() - started
      const hash = await swarm.waitConverged(plan)

      const tree = swarm.tree(plan) as PlanTree
      expect(tree.status).toBe('completed')
      expect(depthOf(tree)).toBe(2)
      // Root split into 3, each child split into 3 leaves: 13 nodes, 9 leaves, 4 roll-ups.
      expect(tree.nodes).toHaveLength(13)
      const leaves = tree.tasks.filter(t => t.kind === 'leaf')
      expect(leaves).toHaveLength(9)
      for (const t of leaves) {
        expect(t.status).toBe('done')
        expect(t.results.filter(r => r.accepted)).toHaveLength(1)
      }
      expect(tree.tasks.filter(t => t.kind === 'rollup')).toHaveLength(4)
      expect(tree.deliverable).not.toBeNull()
      expect(tree.deliverable?.output).toBe(`result of ${GOAL}`)
      expect(tree.equivocations).toHaveLength(0)

      // Every peer: the same swarmHash, the same treeHash from the fold and recomputed from its tree, equal to the referee's.
      const hashes = swarm.hashes(plan)
      expect(hashes).toHaveLength(10)
      for (const h of hashes) {
        expect(h.swarm, h.name).toBe(hashes[0]?.swarm)
        expect(h.fold, h.name).toBe(hash)
        expect(h.tree, h.name).toBe(hash)
      }
      expect(swarm.unionTreeHash(plan)).toBe(hash)

      // Duplicate executions, counted from the fake server's request log: one execute call per task (no faults here).
      const executions = executionsByTask(fake)
      expect(executions.size).toBe(13)
      const dups = [...executions.entries()].filter(([, n]) => n > 1)
      expect(dups, 'execute requests per task, where more than one').toEqual([])
      expect(tree.duplicates).toBe(0)
      for (const t of tree.tasks) expect(t.results).toHaveLength(1)
      // One proposal per decomposer per composite node, one ballot per scorer per composite node.
      expect(fake.calls('propose_split')).toHaveLength(2 * 4)
      expect(fake.calls('score_proposals')).toHaveLength(3 * 4)

      // The observer never publishes plan events, and prints the finished tree.
      const observer = swarm.live('observer')[0]
      expect(observer).toBeDefined()
      expect(swarm.eventsBy(plan, observer!.id)).toEqual([])
      const screen = observer!.render?.() ?? ''
      expect(screen).toContain('completed')
      expect(screen).toContain(`treeHash ${hash.slice(0, 12)}`)
      expect(screen).toContain('deliverable:')
      console.log(
        `whole plan (fake LLM): ${Date.now() - t0} ms in all, the plan ran ${ran} ` +
          `ms; ${fake.calls().length} model calls, ${tree.events} events`
      )
    },
    150_000
  )

  it(
    'the same swarm with the offline provider completes a plan of two levels with dependencies ' +
      'and a roll-up, and says no model ran',
    async () => {
      const t0 = Date.now()
      swarm = await RoleSwarm.start({ llm: 'offline', decomposers: 2, scorers: 3, executors: 3 })
      const started = Date.now()
      // At most 3 children a split keeps the tree small (the offline decomposer merges its template's steps into groups).
      const plan = await swarm.submit(GOAL, { maxDepth: 2, maxChildren: 3 })
      await swarm.waitStatus(plan, ['completed', 'failed'], 90_000)
      const ran = Date.now() - started
      const hash = await swarm.waitConverged(plan)
      const tree = swarm.tree(plan) as PlanTree
      const ids = tree.nodes.map(
        n => `${n.depth} ${n.kind} ${n.leafReason ?? ''} deps=${n.dependsOn.length} ${n.title}`
      )
      expect(tree.status, ids.join('\n')).toBe('completed')

      expect(depthOf(tree), ids.join('\n')).toBeGreaterThanOrEqual(2)
      const leaves = tree.nodes.filter(n => n.kind === 'leaf')
      expect(leaves.length).toBeGreaterThanOrEqual(3)
      expect(
        tree.nodes.some(n => n.dependsOn.length > 0),
        ids.join('\n')
      ).toBe(true)
      // A composite below the root rolled its children up, and the root's roll-up is the deliverable.
      const rollups = tree.tasks.filter(t => t.kind === 'rollup' && t.status === 'done')
      expect(rollups.some(t => t.node !== tree.root)).toBe(true)
      for (const t of tree.tasks) {
        expect(t.status).toBe('done')
        expect(t.results.filter(r => r.accepted)).toHaveLength(1)
        for (const r of t.results) expect(r.source).toBe('offline')
      }
      expect(tree.deliverable).not.toBeNull()
      expect(tree.deliverable?.output.startsWith(OFFLINE_OUTPUT_PREFIX)).toBe(true)
      expect(tree.deliverable?.output).toMatch(/no model ran/i)
      expect(tree.deliverable?.output).toContain('Nothing was researched, booked, bought or carried out.')
      expect(tree.spentTokens).toBe(0)
      for (const h of swarm.hashes(plan)) {
        expect(h.fold, h.name).toBe(hash)
        expect(h.tree, h.name).toBe(hash)
      }
      expect(swarm.unionTreeHash(plan)).toBe(hash)
      console.log(
        `whole plan (offline): ${Date.now() - t0} ms in all, the plan ran ${ran} ` +
          `ms; ${tree.nodes.length} nodes, depth ${depthOf(tree)}, ${tree.events} events`
      )
    },
    150_000
  )
})
