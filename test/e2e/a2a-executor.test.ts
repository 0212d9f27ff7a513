/**
 * `--role executor --a2a-agent URL` against real processes: an observer (the
 * seed, with --http), an offline decomposer and scorer, and one executor whose
 * every task goes to a stand-in A2A agent in this test process
 * (test/helpers/a2a-agent.ts, built with the SDK's server pieces). No model
 * executor runs, so every result comes from the agent.
 *   - The agent is down when the executor starts: the node stays up, says so
 *     and tries again with backoff; once the agent listens it takes tasks.
 *   - Plans run side by side, one per mode of the agent (the goal names it):
 *     normal completes with the agent's artifacts as the results, goal,
 *     ancestors and inputs sent along; slow works past two leases while the
 *     executor renews them; failing, input-required, garbage, silent, hang
 *     (no answer at all) and endless (past maxClaimMs) fail their tasks with
 *     the reason, each task sent to the agent once, the remote tasks given up
 *     on cancelled. The faults do not stop the other plans.
 *   - The agent goes away mid-run: the task is released, the executor looks
 *     for the agent again, and the plan completes once it is back.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, removeTempDirs, runCli, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { freePort, startStandInAgent } from '../helpers/a2a-agent.js'
import type { CliChild } from '../helpers/cli-process.js'
import type { AgentMode, StandInAgent } from '../helpers/a2a-agent.js'
import type { PlanTree } from '../../src/core/tree.js'

const SWARM = 'a2a-exec-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
const PLAN_MS = 120_000
const SILENCE_S = 3
const AGENT = 'stand-in agent'
/** Two leaves and a roll-up, one attempt each, so a fault ends the plan at once. */
const SMALL = ['--max-depth', '1', '--min-children', '2', '--max-children', '2', '--max-attempts', '1']

describe('an executor that delegates its tasks to an A2A agent', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let http = ''
  let seed = ''
  let port = 0
  let agent: StandInAgent | undefined
  let executor: CliChild
  const nodes: CliChild[] = []
  const plans = new Map<AgentMode, string>()

  const lines = (): string[] =>
    executor.lines.flatMap(l => {
      try {
        const o = JSON.parse(l) as { line?: unknown }
        return typeof o.line === 'string' ? [o.line] : []
      } catch {
        return []
      }
    })
  const sayLine = async (pred: (line: string) => boolean, timeoutMs: number): Promise<string> =>
    (await executor.waitForJson(o => typeof o.line === 'string' && pred(o.line), timeoutMs)).line as string

  const tree = async (plan: string): Promise<PlanTree | undefined> => {
    const r = await fetch(`${http}/plans/${plan}`)
    return r.ok ? ((await r.json()) as { tree: PlanTree }).tree : undefined
  }
  const finished = async (plan: string, what: string): Promise<PlanTree> =>
    await waitUntil(
      `${what} to finish`,
      async () => {
        const t = await tree(plan)
        return t !== undefined && ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined
      },
      PLAN_MS,
      250
    )
  const submit = async (goal: string, extra: string[] = []): Promise<string> => {
    const r = await runCli(['submit', goal, ...SMALL, ...extra, ...COMMON, '--bootstrap', seed], { env }, START_MS)
    expect(r.code, r.stderr).toBe(0)
    return r.stdout.split('\n')[0] as string
  }
  /** What the agent received for a plan's tasks (the data part names them). */
  const sentFor = (
    plan: string
  ): Array<{ task: string; kind: string; inputs: unknown[]; text: string; remote: string }> =>
    (agent?.received ?? []).flatMap(r => {
      const d = (r.data as { planSwarm?: { plan: string; task: string; kind: string; inputs: unknown[] } })?.planSwarm
      return d?.plan === plan ? [{ task: d.task, kind: d.kind, inputs: d.inputs, text: r.text, remote: r.taskId }] : []
    })

  beforeAll(async () => {
    home = tempDir('a2a-exec')
    env = cliEnv(home)
    port = await freePort()
    const observer = spawnCli(
      ['--role', 'observer', ...COMMON, '--data-dir', join(home, 'observer'), '--http', '127.0.0.1:0', '--json'],
      { env }
    )
    nodes.push(observer)
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    for (const role of ['decomposer', 'scorer']) {
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], { env })
      )
    }
    // The agent is not listening yet.
    executor = spawnCli(
      [
        '--role',
        'executor',
        ...COMMON,
        '--data-dir',
        join(home, 'executor'),
        '--bootstrap',
        seed,
        '--a2a-agent',
        `http://127.0.0.1:${port}`,
        '--worker-silence-s',
        String(SILENCE_S),
        '--json'
      ],
      { env }
    )
    nodes.push(executor)
    await Promise.all(nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
  }, 2 * START_MS)

  afterAll(async () => {
    await stopCliChildren()
    await agent?.close()
    removeTempDirs()
  }, 60_000)

  it(
    'keeps running while the agent is down, says so, and finds it with backoff once it listens',
    async () => {
      const down = await sayLine(l => l.startsWith('could not reach the A2A agent'), START_MS)
      expect(down).toContain(`http://127.0.0.1:${port}/.well-known/agent-card.json`)
      expect(down).toMatch(/taking no tasks, trying again in [\d.]+ s/)
      agent = await startStandInAgent({ port, name: AGENT, slowMs: 5_000, beatMs: 300 })
      const found = await sayLine(l => l.startsWith('A2A agent'), 60_000)
      expect(found).toContain(`"${AGENT}"`)
      expect(found).toContain('streaming')
      expect(executor.proc.exitCode).toBeNull()
      await waitUntil(
        'the observer to see the decomposer, the scorer and the executor',
        async () => {
          const s = (await (await fetch(`${http}/status`)).json()) as { roster: Array<{ role: string }> }
          const roles = new Set(s.roster.map(r => r.role))
          return ['decomposer', 'scorer', 'executor'].every(r => roles.has(r)) ? true : undefined
        },
        START_MS
      )
    },
    START_MS
  )

  it(
    'runs plans in every mode side by side: results from the agent, renewals, faults failed with their reason',
    async () => {
      const modes: AgentMode[] = ['normal', 'slow', 'failing', 'input-required', 'garbage', 'silent', 'hang', 'endless']
      const extra: Partial<Record<AgentMode, string[]>> = {
        slow: ['--lease-ms', '2000'],
        endless: ['--lease-ms', '1000', '--max-claim-ms', '4000']
      }
      const ids = await Promise.all(
        modes.map(async m => await submit(`plan a picnic in the park [a2a:${m}]`, extra[m] ?? []))
      )
      modes.forEach((m, i) => plans.set(m, ids[i] as string))
      const trees = new Map(
        await Promise.all(modes.map(async m => [m, await finished(plans.get(m) as string, `the ${m} plan`)] as const))
      )

      // normal: completed, every result the agent's, sent once each, with the goal and the inputs.
      const normal = trees.get('normal') as PlanTree
      expect(normal.status, normal.statusReason).toBe('completed')
      for (const t of normal.tasks) {
        const r = t.results.find(x => x.accepted)
        expect(r?.model).toBe(`a2a:${AGENT}`)
        expect(r?.source).toBe('llm')
        expect(r?.output).toContain(`${AGENT} did`)
        expect(t.duplicates).toBe(0)
      }
      expect(normal.deliverable?.output).toContain(`${AGENT} did`)
      const sent = sentFor(normal.plan)
      expect(sent.map(s => s.task).sort()).toEqual(normal.tasks.map(t => t.id).sort())
      expect(sent.every(s => s.text.includes('plan a picnic in the park'))).toBe(true)
      const rollup = sent.find(s => s.kind === 'rollup')
      expect(rollup?.inputs).toHaveLength(2)
      expect(JSON.stringify(rollup?.inputs)).toContain(`${AGENT} did`)
      const leaf = sent.find(s => s.kind === 'leaf')
      expect(leaf?.text).toContain('<ancestors>')

      // slow: each task worked for 5 s against a 2 s lease, kept by renewals.
      const slow = trees.get('slow') as PlanTree
      expect(slow.status, slow.statusReason).toBe('completed')
      for (const t of slow.tasks) {
        expect(t.chains).toHaveLength(1)
        expect(t.chains[0]?.renewals).toBeGreaterThanOrEqual(2)
        expect(t.results.find(x => x.accepted)?.output).toContain('(slow)')
      }

      // The faults: each task failed once, with the reason, and was sent to the agent once.
      const reasons: Array<[AgentMode, RegExp]> = [
        ['failing', /the agent failed the task: the stand-in agent fails this task on purpose/],
        ['input-required', /the agent asked for input, which an executor cannot give: which city/],
        ['garbage', /the agent's answer is not A2A/],
        ['silent', new RegExp(`the agent was silent for more than ${SILENCE_S} s`)],
        ['hang', new RegExp(`the agent was silent for more than ${SILENCE_S} s`)],
        ['endless', /the agent did not finish within the plan's maxClaimMs/]
      ]
      for (const [mode, reason] of reasons) {
        const t = trees.get(mode) as PlanTree
        expect(t.status, `${mode}: ${t.statusReason}`).toBe('failed')
        for (const task of t.tasks) {
          expect(task.results).toHaveLength(0)
          expect(task.failures).toBe(1)
          expect(task.chains.map(c => c.end?.kind)).toEqual(['failed'])
        }
        expect(lines().filter(l => reason.test(l)).length, mode).toBeGreaterThanOrEqual(t.tasks.length)
        expect(sentFor(t.plan), mode).toHaveLength(t.tasks.length)
      }
      // Given up on, the remote tasks were cancelled: the silent and endless ones, and those that asked for input.
      for (const mode of ['silent', 'endless', 'input-required'] as const) {
        const ids = sentFor((trees.get(mode) as PlanTree).plan).map(s => s.remote)
        expect(
          ids.every(id => agent?.cancelled.includes(id) === true),
          mode
        ).toBe(true)
      }
      expect(executor.proc.exitCode).toBeNull()
    },
    PLAN_MS + 60_000
  )

  it(
    'releases a task when the agent goes away, finds the agent again, and the plan completes',
    async () => {
      await agent?.close()
      agent = undefined
      const plan = await submit('plan a dinner party [a2a:normal]')
      const released = await sayLine(l => l.startsWith('released') && l.includes('unreachable'), PLAN_MS)
      expect(released).toMatch(/the agent is unreachable/)
      await sayLine(l => l.startsWith('lost the A2A agent'), 10_000)
      agent = await startStandInAgent({ port, name: AGENT })
      const done = await finished(plan, 'the plan after the agent came back')
      expect(done.status, done.statusReason).toBe('completed')
      const retried = done.tasks.find(t => t.chains.some(c => c.end?.kind === 'released'))
      expect(retried, 'a task given back while the agent was away').toBeDefined()
      expect(retried?.failures).toBe(0)
      expect(retried?.results.find(r => r.accepted)?.model).toBe(`a2a:${AGENT}`)
    },
    PLAN_MS
  )
})
