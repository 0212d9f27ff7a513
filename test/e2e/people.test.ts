/**
 * People on the committee, against a swarm of real processes on loopback
 * (an observer with --http, a decomposer, two scorers and an executor; the
 * model is the fake Messages API):
 *   - from the command line: `id` gives the person's key; a plan names it an
 *     approver of splits; no split is applied until the person chooses, the
 *     person's "none" (with notes) starts a new attempt, and choosing P1 then
 *     applies it and the plan completes; `inbox` lists what waits, and the
 *     observer's /status says whom the plan waits for;
 *   - refusals: a vote on a finished plan, and by a key not in the
 *     committee, exit 2 with a reason and publish nothing;
 *   - through MCP: an agent approves results of a reviewed plan; its reject
 *     has the task redone, and the new result is accepted.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mcpStdioClient } from '../helpers/mcp-client.js'
import { EXIT, cliEnv, removeTempDirs, runCli, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { startFakeLlm } from '../helpers/fake-llm.js'
import type { CliChild } from '../helpers/cli-process.js'
import type { FakeLlm } from '../helpers/fake-llm.js'

const SWARM = 'people-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
const PLAN_MS = 300_000

type Structured = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

describe('people on the committee, from the command line and MCP', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let fake: FakeLlm
  let http = ''
  let seed = ''
  const scorers: string[] = []
  const nodes: CliChild[] = []
  let person = ''
  let planA = ''

  const cli = async (args: string[], timeoutMs = 120_000): ReturnType<typeof runCli> =>
    await runCli([...args, ...COMMON, '--bootstrap', seed], { env }, timeoutMs)
  const tree = async (id: string): Promise<Structured | undefined> => {
    const r = await fetch(`${http}/plans/${id}`)
    return r.ok ? ((await r.json()) as Structured).tree : undefined
  }
  const root = async (id: string): Promise<Structured | undefined> => (await tree(id))?.nodes[0]
  const held = async (): Promise<number> => ((await (await fetch(`${http}/status`)).json()) as Structured).events.held

  beforeAll(async () => {
    home = tempDir('people')
    fake = await startFakeLlm({ latencyMs: 20, auto: { children: 2, leafDepth: 1 } })
    env = cliEnv(home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: fake.url })
    const observer = spawnCli(
      ['--role', 'observer', ...COMMON, '--data-dir', join(home, 'observer'), '--http', '127.0.0.1:0', '--json'],
      { env }
    )
    nodes.push(observer)
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    for (const [role, dir] of [
      ['decomposer', 'decomposer'],
      ['scorer', 'scorer-a'],
      ['scorer', 'scorer-b'],
      ['executor', 'executor']
    ] as const) {
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, dir), '--bootstrap', seed, '--json'], { env })
      )
    }
    const all = await Promise.all(
      nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS))
    )
    for (const s of all) if (s.role === 'scorer') scorers.push(s.peerId as string)
    await waitUntil(
      'the observer to see every role',
      async () => {
        const s = (await (await fetch(`${http}/status`)).json()) as { roster: Array<{ role: string }> }
        return s.roster.filter(r => r.role === 'scorer').length === 2 && s.roster.some(r => r.role === 'executor')
          ? true
          : undefined
      },
      START_MS
    )
  }, START_MS * 2)

  afterAll(async () => {
    await stopCliChildren()
    await fake?.close()
    removeTempDirs()
  })

  it(
    'an approver steers a split from the command line: none with notes, then P1',
    async () => {
      const id = await cli(['id'])
      expect(id.code, id.stderr).toBe(EXIT.OK)
      person = id.stdout.trim()
      expect(person).toMatch(/^12D3KooW/)
      const submitted = await cli([
        'submit',
        'plan a neighbourhood book swap',
        '--committee',
        scorers.join(','),
        '--approver',
        person,
        '--approve',
        'splits',
        '--max-depth',
        '1',
        '--json'
      ])
      expect(submitted.code, submitted.stderr).toBe(EXIT.OK)
      planA = JSON.parse(submitted.stdout.trim().split('\n')[0] as string).plan as string
      // The scorers vote; the split waits for the person, visibly and by name.
      const waiting = await waitUntil(
        'the root to wait for the approver',
        async () => {
          const r = await root(planA)
          return r?.awaiting?.includes(person) === true && r.attempts[0]?.ballots.length === 2 ? r : undefined
        },
        PLAN_MS
      )
      expect(waiting.status).toBe('decomposing')
      expect(waiting.waiting).toContain(person)
      const status = (await (await fetch(`${http}/status`)).json()) as Structured
      expect(status.plans.find((p: Structured) => p.id === planA).waiting.join(' ')).toContain(person)
      const inbox = await cli(['inbox', '--json'])
      expect(inbox.code, inbox.stderr).toBe(EXIT.OK)
      const items = JSON.parse(inbox.stdout.trim()).items as Structured[]
      const item = items.find(i => i.plan === planA)
      expect(item?.ask).toBe('choose a split')
      expect(item?.approver).toBe(true)
      expect(item?.proposals[0].scores.length).toBe(2)

      const none = await cli([
        'vote',
        planA.slice(0, 12),
        waiting.id.slice(0, 12),
        '--choose',
        'none',
        '--notes',
        'fewer, bigger steps please'
      ])
      expect(none.code, none.stderr).toBe(EXIT.OK)
      const second = await waitUntil(
        'a new attempt that waits for the approver',
        async () => {
          const r = await root(planA)
          return r?.attempts.length === 2 && r.attempts[1].proposals.length > 0 && r.awaiting.includes(person)
            ? r
            : undefined
        },
        PLAN_MS
      )
      expect(second.attempts[0].outcome).toBe('failed')
      expect(second.children).toHaveLength(0)
      const pick = await cli(['vote', planA, second.id, '--choose', 'P1'])
      expect(pick.code, pick.stderr).toBe(EXIT.OK)
      const done = await waitUntil(
        'plan A to complete',
        async () => {
          const t = await tree(planA)
          return t?.status === 'completed' ? t : undefined
        },
        PLAN_MS
      )
      expect(done.nodes[0].attempts[1].winner).toBe(second.attempts[1].proposals[0].id)
    },
    PLAN_MS * 2
  )

  it(
    'refuses a vote on a finished plan and a vote by a key not in the committee, publishing nothing',
    async () => {
      const before = await held()
      const finished = await cli(['vote', planA, (await root(planA))?.id as string, '--choose', 'P1'])
      expect(finished.code).toBe(EXIT.CONFIG)
      expect(finished.stderr).toMatch(/completed: there is nothing left to decide/)
      const plan = (
        await cli([
          'submit',
          'plan a street party',
          '--committee',
          scorers.join(','),
          '--approver',
          person,
          '--approve',
          'splits',
          '--max-depth',
          '1',
          '--json'
        ])
      ).stdout
        .trim()
        .split('\n')[0] as string
      const planB = JSON.parse(plan).plan as string
      const r = await waitUntil(
        'plan B to wait for its approver',
        async () => {
          const x = await root(planB)
          return x?.awaiting?.includes(person) === true ? x : undefined
        },
        PLAN_MS
      )
      const countBefore = await held()
      const stranger = await cli(['vote', planB, r.id, '--choose', 'P1', '--data-dir', join(home, 'stranger')])
      expect(stranger.code).toBe(EXIT.CONFIG)
      expect(stranger.stderr).toMatch(/is not in the committee of plan/)
      await new Promise(resolve => setTimeout(resolve, 1_500))
      expect(await held()).toBe(countBefore)
      expect(countBefore).toBeGreaterThan(before)
      await cli(['cancel', planB])
    },
    PLAN_MS
  )

  it(
    'an agent approves results through MCP; its reject has the task redone',
    async () => {
      const agent = await mcpStdioClient(
        'test-approver',
        [...COMMON, '--bootstrap', seed, '--data-dir', join(home, 'agent')],
        env
      )
      try {
        const call = async (name: string, a: Record<string, unknown>): Promise<Structured> => {
          const r = await agent.callTool({ name, arguments: a })
          if (r.isError === true) throw new Error(`${name}: ${JSON.stringify(r.content)}`)
          return r.structuredContent as Structured
        }
        const me = await waitUntil(
          'the agent to see the scorers',
          async () => {
            const s = await call('swarm_status', {})
            return s.canSubmit === true ? (s.peerId as string) : undefined
          },
          START_MS
        )
        const plan = (
          await call('plan_submit', {
            goal: 'plan a repair café',
            committee: scorers,
            approvers: [me],
            approveFor: 'results',
            review: true,
            maxDepth: 1
          })
        ).plan as string
        let rejected = ''
        const reviewed: string[] = []
        await waitUntil(
          "the plan to complete under the agent's reviews",
          async () => {
            const t = await tree(plan)
            if (t?.status === 'completed') return true
            const { items } = await call('inbox', {})
            for (const i of (items as Structured[]).filter(x => x.plan === plan && x.ask === 'review a result')) {
              if (rejected === '') {
                // The observer's /status says whom the review waits for.
                await waitUntil(
                  '/status to name the awaited reviewer',
                  async () => {
                    const st = (await (await fetch(`${http}/status`)).json()) as Structured
                    return st.plans
                      .find((p: Structured) => p.id === plan)
                      ?.waiting.join(' ')
                      .includes(`(from ${me})`) === true
                      ? true
                      : undefined
                  },
                  30_000
                )
                await call('plan_review', {
                  plan,
                  task: i.task,
                  verdict: 'reject',
                  notes: 'say which café tools to bring'
                })
                rejected = i.task as string
              } else {
                await call('plan_review', { plan, task: i.task, verdict: 'accept' })
                reviewed.push(i.task as string)
              }
            }
            return undefined
          },
          PLAN_MS,
          1_000
        )
        const t = (await tree(plan)) as Structured
        const redone = t.tasks.find((x: Structured) => x.id === rejected)
        expect(redone.results.length).toBeGreaterThanOrEqual(2)
        expect(redone.results[0].review).toBe('rejected')
        expect(redone.results.find((r: Structured) => r.accepted)?.id).not.toBe(redone.results[0].id)
        expect(reviewed).toContain(rejected)
        expect(t.tasks.every((x: Structured) => x.status === 'done')).toBe(true)
      } finally {
        await agent.close()
      }
    },
    PLAN_MS
  )
})
