/**
 * The open-plan limit per author on real processes (an observer with --http
 * as the seed, a decomposer, a scorer and an executor, offline provider,
 * every node and client with PLAN_SWARM_OPEN_PLANS_PER_AUTHOR=1):
 *   - author A's first plan is for outside workers, so no model executor
 *     finishes it: it stays open;
 *   - A's second goal is stored and waits: `submit` says so, the observer's
 *     /status line says why, and no node proposes a split for it;
 *   - author B's goal, submitted after it, is not held back by A's limit and
 *     completes;
 *   - A cancels the first plan, and the second starts by itself and
 *     completes, its first proposal signed after the cancel.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXIT, cliEnv, removeTempDirs, runCli, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import type { CliChild } from '../helpers/cli-process.js'

const SWARM = 'author-limit-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
const PLAN_MS = 240_000
const CLIENT_MS = 120_000

interface StatusPlan {
  id: string
  status: string
  waiting: string[]
}
type PlanEvents = Array<{ type: string; hlc: { ms: number; c: number } }>

describe('the open-plan limit per author, on real processes', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let http = ''
  let seed = ''
  const nodes: CliChild[] = []

  const statusPlans = async (): Promise<StatusPlan[]> =>
    ((await (await fetch(`${http}/status`)).json()) as { plans: StatusPlan[] }).plans
  const planEvents = async (plan: string): Promise<PlanEvents> => {
    const r = await fetch(`${http}/plans/${plan}/events`)
    return r.ok ? ((await r.json()) as PlanEvents) : []
  }

  beforeAll(async () => {
    home = tempDir('author-limit')
    env = cliEnv(home, { PLAN_SWARM_OPEN_PLANS_PER_AUTHOR: '1' })
    const observer = spawnCli(
      ['--role', 'observer', ...COMMON, '--data-dir', join(home, 'observer'), '--http', '127.0.0.1:0', '--json'],
      { env }
    )
    nodes.push(observer)
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    for (const role of ['decomposer', 'scorer', 'executor'])
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], { env })
      )
    await Promise.all(nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
  }, 2 * START_MS)

  afterAll(async () => {
    await stopCliChildren()
    removeTempDirs()
  }, 60_000)

  const submit = async (goal: string, dir: string, extra: string[] = []): Promise<{ plan: string; stderr: string }> => {
    const r = await runCli(
      ['submit', goal, ...COMMON, '--bootstrap', seed, '--data-dir', join(home, dir), '--max-depth', '1', ...extra],
      { env },
      CLIENT_MS
    )
    expect(r.code, `${r.stderr.slice(-2000)}\n${nodes.map(n => n.tail(400)).join('\n')}`).toBe(EXIT.OK)
    return { plan: r.stdout.trim().split('\n')[0] as string, stderr: r.stderr }
  }

  it(
    "holds an author's goal beyond the limit, lets other authors through, and starts it when the earlier plan ends",
    async () => {
      const first = await submit('plan a garden for a small yard', 'author-a', ['--executors', 'outside'])
      // Started: a decomposer proposed a split (the admission rule's word for it; nobody claims an outside plan here).
      await waitUntil(
        'the first plan to be started',
        async () => ((await planEvents(first.plan)).some(e => e.type === 'split-proposed') ? true : undefined),
        PLAN_MS
      )
      const second = await submit('plan a birthday party for ten', 'author-a')
      expect(second.stderr).toContain("the plan waits for its author's earlier open plan to finish")
      const line = await waitUntil(
        'the observer to say why the second plan waits',
        async () => (await statusPlans()).find(p => p.id === second.plan),
        CLIENT_MS
      )
      expect(line.waiting[0]).toBe(
        "the plan waits for its author's earlier open plan to finish (at most 1 open plan per author)"
      )

      // Another author is not held back by A's limit.
      const other = await submit('plan a weekend in Porto', 'author-b')
      await waitUntil(
        "author B's plan to complete",
        async () => ((await statusPlans()).find(p => p.id === other.plan)?.status === 'completed' ? true : undefined),
        PLAN_MS
      )
      const held = (await statusPlans()).find(p => p.id === second.plan) as StatusPlan
      expect(held.status).toBe('planning')
      const early = await planEvents(second.plan)
      expect(early.map(e => e.type)).toEqual(['goal-submitted'])

      // A cancels the first plan: the second goes on by itself.
      const r = await runCli(
        ['cancel', first.plan, ...COMMON, '--bootstrap', seed, '--data-dir', join(home, 'author-a')],
        { env },
        CLIENT_MS
      )
      expect(r.code, r.stderr.slice(-2000)).toBe(EXIT.OK)
      await waitUntil(
        'the second plan to complete',
        async () => ((await statusPlans()).find(p => p.id === second.plan)?.status === 'completed' ? true : undefined),
        PLAN_MS
      )
      const cancel = (await planEvents(first.plan)).find(e => e.type === 'goal-cancelled')
      const proposals = (await planEvents(second.plan)).filter(e => e.type === 'split-proposed')
      expect(cancel).toBeDefined()
      expect(proposals.length).toBeGreaterThan(0)
      for (const p of proposals) expect(p.hlc.ms).toBeGreaterThanOrEqual(cancel?.hlc.ms ?? Infinity)
    },
    4 * PLAN_MS
  )
})
