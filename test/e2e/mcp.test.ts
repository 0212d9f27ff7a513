/**
 * MCP, as an agent uses it: the SDK's own client drives `npm start -- mcp`
 * over stdio (the real CLI, spawned) and an observer's `--mcp-http`
 * endpoint, against a swarm of real processes on loopback whose model is
 * the fake Messages API:
 *   - submit, wait with progress notifications, get, events, export, cancel;
 *   - an outside executor takes the tasks of a plan reserved for outside
 *     workers, works longer than the lease while the server renews it,
 *     completes them, and the plan finishes with its results in the
 *     deliverable;
 *   - an outside worker that goes silent has its task taken over;
 *   - bad input, a plan not the caller's, a wrong token and a foreign
 *     Origin get errors and publish nothing.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { mcpStdioClient } from '../helpers/mcp-client.js'
import { EXIT, cliEnv, removeTempDirs, runCli, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { startFakeLlm } from '../helpers/fake-llm.js'
import type { CliChild } from '../helpers/cli-process.js'
import type { FakeLlm } from '../helpers/fake-llm.js'
import { PACKAGE_VERSION } from '../../src/runtime/version.js'

const SWARM = 'mcp-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
const PLAN_MS = 240_000

type Result = Awaited<ReturnType<Client['callTool']>>
type Structured = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

function textOf(r: Result): string {
  return (r.content as Array<{ type: string; text?: string }>).map(c => c.text ?? '').join('\n')
}

function data(r: Result): Structured {
  if (r.isError === true) throw new Error(`tool error: ${textOf(r)}`)
  return r.structuredContent as Structured
}

describe('MCP over stdio and Streamable HTTP against a swarm of processes', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let fake: FakeLlm
  let http = ''
  let seed = ''
  let mcpUrl = ''
  let mcpToken = ''
  const nodes: CliChild[] = []
  const clients: Client[] = []

  /** An MCP client over stdio to a fresh `mcp` process with its own data dir. */
  const stdioClient = async (name: string, extra: string[] = []): Promise<Client> => {
    const client = await mcpStdioClient(
      `test-${name}`,
      [...COMMON, '--bootstrap', seed, '--data-dir', join(home, name), ...extra],
      env
    )
    clients.push(client)
    return client
  }

  const httpClient = async (token: string): Promise<Client> => {
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${token}` } }
    })
    const client = new Client({ name: 'test-http', version: '1.0.0' })
    await client.connect(transport)
    clients.push(client)
    return client
  }

  const planOnObserver = async (id: string): Promise<Structured | undefined> => {
    const r = await fetch(`${http}/plans/${id}`)
    return r.ok ? ((await r.json()) as Structured).tree : undefined
  }
  const heldOnObserver = async (): Promise<number> =>
    ((await (await fetch(`${http}/status`)).json()) as Structured).events.held

  const ready = async (client: Client): Promise<void> => {
    await waitUntil(
      'the MCP node to see a scorer and a peer',
      async () => {
        const s = data(await client.callTool({ name: 'swarm_status', arguments: {} }))
        return s.canSubmit === true && (s.roster.executor ?? 0) > 0 ? true : undefined
      },
      START_MS,
      500
    )
  }

  beforeAll(async () => {
    home = tempDir('mcp')
    fake = await startFakeLlm({ latencyMs: 20, auto: { children: 2, leafDepth: 1 } })
    env = cliEnv(home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: fake.url })
    const observer = spawnCli(
      [
        '--role',
        'observer',
        ...COMMON,
        '--data-dir',
        join(home, 'observer'),
        '--http',
        '127.0.0.1:0',
        '--mcp-http',
        '127.0.0.1:0',
        '--json'
      ],
      { env }
    )
    nodes.push(observer)
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    mcpUrl = started.mcp as string
    mcpToken = started.mcpToken as string
    for (const role of ['decomposer', 'scorer', 'executor']) {
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], { env })
      )
    }
    await Promise.all(nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
  }, START_MS * 2)

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {})
    await stopCliChildren()
    await fake?.close()
    removeTempDirs()
  })

  let agent: Client
  let mine = ''

  it(
    'lists the tools, with schemas, over stdio',
    async () => {
      agent = await stdioClient('agent')
      const { tools } = await agent.listTools()
      const names = tools.map(t => t.name).sort()
      expect(names).toEqual(
        expect.arrayContaining([
          'plan_amend_committee',
          'plan_cancel',
          'plan_events',
          'plan_export',
          'plan_get',
          'plan_list',
          'plan_raise_budget',
          'plan_retry',
          'plan_submit',
          'plan_wait',
          'swarm_status',
          'task_complete',
          'task_next',
          'task_release'
        ])
      )
      const submit = tools.find(t => t.name === 'plan_submit')
      expect(submit?.inputSchema.properties).toHaveProperty('goal')
      expect(submit?.description).toMatch(/plan id/)
      await ready(agent)
    },
    START_MS
  )

  it(
    'submits a goal, waits with progress notifications, gets, pages events and exports it',
    async () => {
      const submitted = data(
        await agent.callTool({ name: 'plan_submit', arguments: { goal: 'plan a picnic in the park', maxDepth: 1 } })
      )
      mine = submitted.plan as string
      expect(mine).toMatch(/^[0-9a-f]{64}$/)
      expect(submitted.heldBy).toMatch(/^12D3KooW/)
      const progress: string[] = []
      const waited = data(
        await agent.callTool(
          { name: 'plan_wait', arguments: { plan: mine, timeoutSeconds: 200 } },
          {
            onprogress: p => {
              progress.push(String(p.message))
            },
            timeout: PLAN_MS,
            resetTimeoutOnProgress: true
          }
        )
      )
      expect(waited.finished).toBe(true)
      expect(waited.status).toBe('completed')
      expect(String(waited.deliverable.text).length).toBeGreaterThan(0)
      // One notification per change: at least the state at the start of the wait, and more unless the plan
      // had already finished by then (it can, on a loaded machine, between plan_submit and plan_wait).
      expect(progress.length).toBeGreaterThan(0)
      const finished = progress.map(m => Number(/(\d+)\/\d+ tasks finished/.exec(m)?.[1] ?? -1))
      const total = Number(/\d+\/(\d+) tasks finished/.exec(progress[0] ?? '')?.[1] ?? -1)
      if (finished[0] !== total) expect(progress.length).toBeGreaterThan(1)
      expect(finished.every(n => n >= 0)).toBe(true)
      expect(finished).toEqual([...finished].sort((a, b) => a - b))

      const got = data(await agent.callTool({ name: 'plan_get', arguments: { plan: mine, maxResultChars: 5 } }))
      expect(got.yours).toBe(true)
      expect(got.nodes.length).toBe(3)
      expect(got.nodes.every((n: Structured) => n.status === 'done')).toBe(true)
      expect(got.deliverable.trimmed).toBe(true)
      expect(got.hint).toMatch(/maxResultChars: 0/)
      expect(got.treeHash).toBe(((await (await fetch(`${http}/plans/${mine}`)).json()) as Structured).treeHash)

      const page = data(await agent.callTool({ name: 'plan_events', arguments: { plan: mine, limit: 5 } }))
      expect(page.events).toHaveLength(5)
      expect(page.events[0].type).toBe('goal-submitted')
      expect(page.next).toBe(5)

      const md = data(await agent.callTool({ name: 'plan_export', arguments: { plan: mine } }))
      expect(md.markdown).toContain('plan a picnic in the park')

      const listed = data(await agent.callTool({ name: 'plan_list', arguments: {} }))
      expect(listed.plans.some((p: Structured) => p.id === mine && p.yours === true)).toBe(true)
      const resource = await agent.readResource({ uri: `plan-swarm://plans/${mine}` })
      expect(resource.contents.map(c => c.mimeType).sort()).toEqual(['application/json', 'text/markdown'])
    },
    PLAN_MS
  )

  it('answers bad input with tool errors that say what to do, and publishes nothing', async () => {
    const before = await heldOnObserver()
    const unknown = await agent.callTool({ name: 'plan_get', arguments: { plan: 'f'.repeat(64) } })
    expect(unknown.isError).toBe(true)
    expect(textOf(unknown)).toMatch(/not held by this node.*plan_list/)
    const badId = await agent.callTool({ name: 'plan_cancel', arguments: { plan: 'nope' } })
    expect(badId.isError).toBe(true)
    expect(textOf(badId)).toMatch(/not a plan id/)
    const long = await agent.callTool({ name: 'plan_submit', arguments: { goal: 'x'.repeat(5_000) } })
    expect(long.isError).toBe(true)
    expect(textOf(long)).toMatch(/characters long; the most is 4000/)
    const badParams = await agent.callTool({ name: 'plan_submit', arguments: { goal: 'plan a party', maxDepth: 99 } })
    expect(badParams.isError).toBe(true)
    expect(textOf(badParams)).toMatch(/maxDepth/)
    const finished = await agent.callTool({ name: 'plan_cancel', arguments: { plan: mine } })
    expect(finished.isError).toBe(true)
    expect(textOf(finished)).toMatch(/completed: nothing more can be changed/)
    const notHeld = await agent.callTool({ name: 'task_complete', arguments: { task: 'a'.repeat(64), result: 'done' } })
    expect(notHeld.isError).toBe(true)
    expect(textOf(notHeld)).toMatch(/not held here: take one with task_next/)
    // Still alive after all that.
    expect(data(await agent.callTool({ name: 'swarm_status', arguments: {} })).peerId).toMatch(/^12D3KooW/)
    await new Promise(resolve => setTimeout(resolve, 1_500))
    expect(await heldOnObserver()).toBe(before)
  }, 60_000)

  it('refuses a goal beyond --goals-per-minute with the wait, and publishes nothing', async () => {
    const limited = await stdioClient('limited', ['--goals-per-minute', '1'])
    await ready(limited)
    const first = data(
      await limited.callTool({ name: 'plan_submit', arguments: { goal: 'plan a quiet evening', maxDepth: 1 } })
    )
    expect(first.plan).toMatch(/^[0-9a-f]{64}$/)
    const second = await limited.callTool({
      name: 'plan_submit',
      arguments: { goal: 'plan a second quiet evening', maxDepth: 1 }
    })
    expect(second.isError).toBe(true)
    expect(textOf(second)).toMatch(
      /at most 1 goal a minute \(--goals-per-minute\), and 1 came in the last minute: try again in \d+ s; nothing was published/
    )
    const listed = data(await limited.callTool({ name: 'plan_list', arguments: {} })).plans as Structured[]
    expect(listed.some(p => p.id === first.plan)).toBe(true)
    expect(listed.some(p => p.goal === 'plan a second quiet evening')).toBe(false)
  }, 120_000)

  it('serves Streamable HTTP with the printed token only, refuses a foreign Origin, and keeps author tools to the author', async () => {
    await expect(httpClient('wrong-token')).rejects.toThrow()
    const foreign = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${mcpToken}`,
        origin: 'http://evil.example',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream'
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    })
    expect(foreign.status).toBe(403)
    expect(await foreign.text()).toMatch(/cross-origin request refused/)
    const viaHttp = await httpClient(mcpToken)
    expect(viaHttp.getServerVersion()).toEqual({ name: 'plan-swarm', version: PACKAGE_VERSION })
    const s = data(await viaHttp.callTool({ name: 'swarm_status', arguments: {} }))
    expect(s.peerId).not.toBe(data(await agent.callTool({ name: 'swarm_status', arguments: {} })).peerId)
    // Reserved for outside workers, of which there are none: it cannot complete before the cancels below (under load it did).
    const theirs = data(
      await viaHttp.callTool({
        name: 'plan_submit',
        arguments: { goal: 'plan a board game night', maxDepth: 1, executors: 'outside' }
      })
    ).plan as string
    await waitUntil(
      'the stdio agent to hold the other plan',
      async () => {
        const l = data(await agent.callTool({ name: 'plan_list', arguments: {} }))
        return l.plans.some((p: Structured) => p.id === theirs) ? true : undefined
      },
      60_000
    )
    const refused = await agent.callTool({ name: 'plan_cancel', arguments: { plan: theirs } })
    expect(refused.isError).toBe(true)
    expect(textOf(refused)).toMatch(/was submitted by .*not by this key/)
    const cancelled = data(
      await viaHttp.callTool({ name: 'plan_cancel', arguments: { plan: theirs, reason: 'testing cancel' } })
    )
    expect(cancelled.done).toMatch(/cancelled plan/)
    await waitUntil(
      'the observer to see the cancellation',
      async () => ((await planOnObserver(theirs))?.status === 'cancelled' ? true : undefined),
      60_000
    )
  }, 120_000)

  it(
    'lets an outside agent do every task of a plan reserved for it, renewing its lease while it works',
    async () => {
      const plan = data(
        await agent.callTool({
          name: 'plan_submit',
          arguments: { goal: 'plan a garden clean-up day', maxDepth: 1, executors: 'outside', leaseMs: 2_000 }
        })
      ).plan as string
      const me = data(await agent.callTool({ name: 'swarm_status', arguments: {} })).peerId as string
      const updates: string[] = []
      agent.setNotificationHandler('notifications/resources/updated', n => {
        updates.push(n.params.uri)
      })
      await agent.subscribeResource({ uri: `plan-swarm://plans/${plan}` })
      const done: string[] = []
      for (let i = 0; i < 3; i++) {
        const next = (await waitUntil(
          `task ${i + 1} to become claimable`,
          async () => {
            const r = data(await agent.callTool({ name: 'task_next', arguments: { plan } }))
            return r.task ?? undefined
          },
          PLAN_MS,
          500
        )) as Structured
        expect(next.plan).toBe(plan)
        expect(next.goal).toBe('plan a garden clean-up day')
        if (next.kind === 'rollup') expect(next.inputs).toHaveLength(2)
        // Work for longer than the lease (3 s against 2 s: it lapses unless renewed), talking to the server now and then.
        for (let k = 0; k < 3; k++) {
          await new Promise(resolve => setTimeout(resolve, 1_000))
          await agent.callTool({ name: 'plan_get', arguments: { plan, node: next.task } })
        }
        const held = await planOnObserver(plan)
        const t = held?.tasks.find((x: Structured) => x.id === next.task)
        expect(t.status).toBe('claimed')
        expect(t.owner).toBe(me)
        expect(t.chains.at(-1).renewals).toBeGreaterThan(0)
        const text =
          next.kind === 'rollup' ? `ROLLUP by the agent of: ${done.join(' + ')}` : `AGENT RESULT for "${next.title}"`
        data(
          await agent.callTool({ name: 'task_complete', arguments: { task: next.task, result: text, outputTokens: 7 } })
        )
        done.push(text)
      }
      const waited = data(await agent.callTool({ name: 'plan_wait', arguments: { plan, timeoutSeconds: 60 } }))
      expect(waited.status).toBe('completed')
      expect(waited.deliverable.text).toContain('ROLLUP by the agent of: AGENT RESULT')
      const tree = await waitUntil(
        'the observer to see the plan completed',
        async () => {
          const p = await planOnObserver(plan)
          return p?.status === 'completed' ? p : undefined
        },
        60_000
      )
      expect(
        tree.tasks.every((t: Structured) => t.results.find((r: Structured) => r.accepted)?.source === 'outside')
      ).toBe(true)
      // Subscribers heard of the changes, at most about once a second.
      expect(updates.length).toBeGreaterThan(2)
      expect(new Set(updates)).toEqual(new Set([`plan-swarm://plans/${plan}`]))
      await agent.unsubscribeResource({ uri: `plan-swarm://plans/${plan}` })
    },
    PLAN_MS
  )

  it(
    'takes over the task of an outside worker that goes silent',
    async () => {
      const quiet = await stdioClient('quiet-agent', ['--worker-silence-s', '2'])
      await ready(quiet)
      const quietId = data(await quiet.callTool({ name: 'swarm_status', arguments: {} })).peerId as string
      const plan = data(
        await quiet.callTool({
          name: 'plan_submit',
          arguments: { goal: 'plan a bake sale', maxDepth: 1, executors: 'outside', leaseMs: 1_000 }
        })
      ).plan as string
      const taken = (await waitUntil(
        'the quiet agent to take a task',
        async () => data(await quiet.callTool({ name: 'task_next', arguments: { plan } })).task ?? undefined,
        PLAN_MS,
        500
      )) as Structured
      // The quiet agent now says nothing; its server stops renewing after 2 s and the lease lapses.
      const again = (await waitUntil(
        'the other agent to take the task over',
        async () => {
          const r = data(await agent.callTool({ name: 'task_next', arguments: { plan } }))
          return r.task?.task === taken.task
            ? r.task
            : r.task === null
              ? undefined
              : (await agent.callTool({ name: 'task_release', arguments: { task: r.task.task } }), undefined)
        },
        60_000,
        500
      )) as Structured
      data(
        await agent.callTool({ name: 'task_complete', arguments: { task: again.task, result: 'taken over and done' } })
      )
      const late = await quiet.callTool({ name: 'task_complete', arguments: { task: taken.task, result: 'too late' } })
      expect(late.isError).toBe(true)
      const tree = await planOnObserver(plan)
      const t = tree?.tasks.find((x: Structured) => x.id === taken.task)
      expect(t.chains.map((c: Structured) => c.owner)).toEqual([quietId, expect.not.stringMatching(quietId)])
      expect(t.results.find((r: Structured) => r.accepted)?.output).toBe('taken over and done')
    },
    PLAN_MS
  )

  it(
    'lets a person do a task from the command line: task next, task done, task release',
    async () => {
      const submitted = await runCli(
        [
          'submit',
          'plan a reading group',
          ...COMMON,
          '--bootstrap',
          seed,
          '--max-depth',
          '1',
          '--executors',
          'outside',
          '--lease-ms',
          '2000',
          '--json'
        ],
        { env },
        180_000
      )
      expect(submitted.code, submitted.stderr).toBe(EXIT.OK)
      const plan = JSON.parse(submitted.stdout.trim().split('\n')[0] as string).plan as string
      // Take a task and give it back from another terminal (handed to the running `task next`, which publishes it).
      const first = spawnCli(
        ['task', 'next', ...COMMON, '--bootstrap', seed, '--plan', plan, '--json', '--timeout', '120'],
        { env }
      )
      const taken = await first.waitForJson(o => typeof o.task === 'string', 120_000)
      const released = await runCli(
        ['task', 'release', taken.task as string, ...COMMON, '--bootstrap', seed, '--reason', 'not today'],
        { env },
        120_000
      )
      expect(released.code, released.stderr).toBe(EXIT.OK)
      expect(released.stderr).toMatch(/handed the release to the running `task next`/)
      expect((await first.exitWithin(60_000)).code).toBe(EXIT.FAILURE)
      // Take it again, hold it past its lease, and report from another terminal.
      const second = spawnCli(
        ['task', 'next', ...COMMON, '--bootstrap', seed, '--plan', plan, '--json', '--timeout', '120'],
        { env }
      )
      const task = await second.waitForJson(o => typeof o.task === 'string', 120_000)
      await new Promise(resolve => setTimeout(resolve, 3_000))
      const file = join(home, 'result.md')
      writeFileSync(file, 'READ: the person chose three books')
      const reported = await runCli(
        ['task', 'done', task.task as string, ...COMMON, '--bootstrap', seed, '--file', file],
        { env },
        120_000
      )
      expect(reported.code, reported.stderr).toBe(EXIT.OK)
      expect(reported.stderr).toMatch(/handed the result to the running `task next`.*\n.*reported the result of task/s)
      expect((await second.exitWithin(60_000)).code).toBe(EXIT.OK)
      const tree = await planOnObserver(plan)
      const t = tree?.tasks.find((x: Structured) => x.id === task.task)
      expect(t.status).toBe('done')
      expect(t.chains.at(-1).renewals).toBeGreaterThan(0)
      expect(t.results.find((r: Structured) => r.accepted)?.output).toBe('READ: the person chose three books')
      const bad = await runCli(
        ['task', 'done', 'nope', ...COMMON, '--bootstrap', seed, '--file', file],
        { env },
        60_000
      )
      expect(bad.code).toBe(EXIT.CONFIG)
      expect(bad.stderr).toMatch(/expected a task id/)
    },
    PLAN_MS * 2
  )
})
