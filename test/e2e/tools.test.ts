/**
 * Executors with tools, on real processes on loopback: an observer with
 * --http, a decomposer, a scorer and an executor without tools, against the
 * fake Messages API; and an executor with `--tools` (the stand-in MCP
 * server of test/helpers/tool-server.ts, a real child process) against a
 * fake of its own, scripted to call tools:
 *   - a plan with --use-tools whose decomposer marks one leaf as needing
 *     `lab`: the executor without tools does the other leaf and never
 *     claims the marked one, which waits and says so on /status;
 *   - the executor with the tool, seen once and gone, comes back, claims the waiting leaf and
 *     runs its loop through a hang past the tool timeout, a result of
 *     megabytes (cut for the model), and a crash of the server mid-call;
 *     the node keeps running, the server comes back, and the tool's output
 *     reaches the deliverable; every tool ran once and nothing is executed
 *     twice;
 *   - an executor of the release before protocol 3 (its source from git)
 *     joins: it stores and relays a tool plan's events without folding or
 *     working on them, and works on a plan without tools beside the new
 *     nodes, with the same treeHash.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  EXIT,
  cliEnv,
  removeTempDirs,
  runCli,
  spawnCli,
  spawnCommand,
  stopCliChildren,
  tempDir
} from '../helpers/cli-process.js'
import { sourceBefore } from '../helpers/old-release.js'
import { waitUntil } from '../helpers/wait.js'
import { promptText, startFakeLlm } from '../helpers/fake-llm.js'
import type { CliChild } from '../helpers/cli-process.js'
import type { FakeLlm, RecordedRequest, ScriptStep } from '../helpers/fake-llm.js'

const SWARM = 'tools-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
const PLAN_MS = 240_000
const MARKER = 'TOOL-MARKER-4711'
const TOOL_SERVER = resolve(import.meta.dirname, '../helpers/tool-server.ts')

type Structured = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

/** A forced report_result that quotes the marker when the prompt carries it (a roll-up of the tool's result). */
function reportWithMarker(req: RecordedRequest): ScriptStep | undefined {
  if (req.tool !== 'report_result') return undefined
  const text = promptText(req.body)
  return text.includes(MARKER) ? { kind: 'tool', input: { output: `summary quoting ${MARKER}` } } : undefined
}

describe('executors with tools, on real processes', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let fake: FakeLlm
  let labFake: FakeLlm
  let http = ''
  let seed = ''
  let plain: CliChild | undefined
  let plainId = ''
  const nodes: CliChild[] = []
  const callsFile = (): string => join(home, 'tool-calls.jsonl')

  const status = async (): Promise<Structured> => (await (await fetch(`${http}/status`)).json()) as Structured
  const tree = async (id: string): Promise<Structured | undefined> => {
    const r = await fetch(`${http}/plans/${id}`)
    return r.ok ? ((await r.json()) as Structured).tree : undefined
  }

  /** The executor with the lab tools (the stand-in MCP server), on a fake model scripted to use them. */
  const startLab = (): CliChild => {
    const tools = join(home, 'tools.json')
    writeFileSync(
      tools,
      JSON.stringify({
        mcpServers: {
          lab: {
            command: process.execPath,
            args: ['--import', 'tsx', TOOL_SERVER],
            env: { TOOL_SERVER_CALLS_FILE: callsFile(), TOOL_SERVER_TAG: 'lab' },
            tags: ['lab']
          }
        }
      })
    )
    const child = spawnCli(
      [
        '--role',
        'executor',
        ...COMMON,
        '--data-dir',
        join(home, 'lab-executor'),
        '--bootstrap',
        seed,
        '--json',
        '--http',
        '127.0.0.1:0',
        '--tools',
        tools,
        '--tool-timeout-s',
        '2',
        '--tool-result-bytes',
        '4096'
      ],
      { env: { ...env, ANTHROPIC_BASE_URL: labFake.url } }
    )
    nodes.push(child)
    return child
  }

  beforeAll(async () => {
    home = tempDir('tools')
    // The swarm's model: splits the root into a leaf that needs `lab` and one that does not.
    fake = await startFakeLlm({
      latencyMs: 20,
      auto: { children: 2, leafDepth: 1 },
      script: req => {
        const needs = req.body?.tools?.find((t: Structured) => t.name === 'propose_split')?.input_schema?.properties
          ?.subgoals?.items?.properties?.needs
        if (req.tool === 'propose_split' && needs !== undefined)
          return {
            kind: 'tool',
            input: {
              subgoals: [
                { title: 'Read the lab notes', detail: 'with the lab tool', leaf: true, dependsOn: [], needs: ['lab'] },
                { title: 'Write the cover page', detail: 'any executor', leaf: true, dependsOn: [] }
              ],
              rationale: 'one part needs the lab'
            }
          }
        return reportWithMarker(req) ?? { kind: 'auto' }
      }
    })
    // The tool executor's model: a loop through a hang, the marker, a flood and a crash, then the answer.
    labFake = await startFakeLlm({
      latencyMs: 20,
      script: req => {
        const forced = reportWithMarker(req)
        if (forced !== undefined) return forced
        if (req.tool !== null) return { kind: 'auto' }
        const turns = ((req.body?.messages ?? []) as Structured[]).filter(m => m.role === 'assistant').length
        const steps: ScriptStep[] = [
          { kind: 'tool', name: 'lab__slow', input: { ms: 120_000 } },
          { kind: 'tool', name: 'lab__echo', input: { text: MARKER } },
          { kind: 'tool', name: 'lab__huge', input: { bytes: 3_000_000 } },
          { kind: 'tool', name: 'lab__crash', input: {} }
        ]
        return steps[turns] ?? { kind: 'auto' }
      }
    })
    env = cliEnv(home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: fake.url })
    const observer = spawnCli(
      ['--role', 'observer', ...COMMON, '--data-dir', join(home, 'observer'), '--http', '127.0.0.1:0', '--json'],
      { env }
    )
    nodes.push(observer)
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    for (const role of ['decomposer', 'scorer', 'executor'] as const) {
      const child = spawnCli(
        ['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'],
        {
          env
        }
      )
      nodes.push(child)
      if (role === 'executor') plain = child
    }
    const all = await Promise.all(
      nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS))
    )
    plainId = all.find(s => s.role === 'executor')?.peerId as string
    await waitUntil(
      'the observer to see every role',
      async () => {
        const s = await status()
        return ['decomposer', 'scorer', 'executor'].every(r => s.roster.some((x: Structured) => x.role === r))
          ? true
          : undefined
      },
      START_MS
    )
  }, START_MS * 2)

  afterAll(async () => {
    await stopCliChildren()
    await fake?.close()
    await labFake?.close()
    removeTempDirs()
  })

  it(
    'a leaf that needs a tool waits for the executor that has it, which runs its loop through the faults',
    async () => {
      // The executor with the lab joins, is seen, and goes away (a laptop closed for the night).
      const first = startLab()
      const firstStarted = await first.waitForJson(o => o.event === 'started', START_MS)
      const labId = firstStarted.peerId as string
      await waitUntil(
        'the swarm to see what the lab executor offers',
        async () =>
          (await status()).roster.some((r: Structured) => r.peerId === labId && r.capabilities.includes('offers:lab'))
            ? true
            : undefined,
        START_MS
      )
      await new Promise(resolve => setTimeout(resolve, 1_000))
      await first.stop()

      const submitted = await runCli(
        [
          'submit',
          'summarise the lab notes',
          '--use-tools',
          '--max-depth',
          '1',
          '--json',
          ...COMMON,
          '--bootstrap',
          seed
        ],
        { env },
        120_000
      )
      expect(submitted.code, submitted.stderr).toBe(EXIT.OK)
      const plan = JSON.parse(submitted.stdout.trim().split('\n')[0] as string).plan as string

      // The executor without tools does the cover page; the lab leaf waits, and /status says for what.
      const waiting = await waitUntil(
        'the lab leaf to wait for an executor with `lab`',
        async () => {
          const t = await tree(plan)
          const cover = t?.nodes.find((n: Structured) => n.title === 'Write the cover page')
          const line = ((await status()).plans.find((p: Structured) => p.id === plan)?.waiting ?? []).join(' ')
          return cover?.status === 'done' && line.includes('waits for an executor with `lab`') ? t : undefined
        },
        PLAN_MS
      )
      const lab = waiting.nodes.find((n: Structured) => n.title === 'Read the lab notes')
      expect(lab.needs).toStrictEqual(['lab'])
      expect(lab.status).toBe('ready')
      expect(waiting.tasks.find((t: Structured) => t.node === lab.id).chains).toStrictEqual([])

      // The executor with the tool comes back: it takes the leaf that waited for it.
      const labExec = startLab()
      const labStarted = await labExec.waitForJson(o => o.event === 'started', START_MS)
      expect(labStarted.offers).toContain('lab')
      expect(labStarted.peerId).toBe(labId)

      const done = await waitUntil(
        'the plan to complete',
        async () => {
          const t = await tree(plan)
          return t?.status === 'completed' ? t : undefined
        },
        PLAN_MS
      )
      const labTask = done.tasks.find((t: Structured) => t.node === lab.id)
      const result = labTask.results.find((r: Structured) => r.accepted)
      expect(result.author).toBe(labId)
      expect(result.author).not.toBe(plainId)
      expect(labTask.chains.map((c: Structured) => c.owner)).toStrictEqual([labId])
      expect(
        result.toolCalls.map((c: Structured) => [c.server, c.tool, c.ok]),
        JSON.stringify(result.toolCalls)
      ).toStrictEqual([
        ['lab', 'slow', false],
        ['lab', 'echo', true],
        ['lab', 'huge', true],
        ['lab', 'crash', false]
      ])
      expect(result.toolCalls[0].error).toMatch(/did not answer within 2 s/)
      expect(result.output).toContain(MARKER)
      expect(done.deliverable.output).toContain(MARKER)
      expect(done.duplicates).toBe(0)

      // What the model saw of the flood: cut, saying so.
      const bodies = labFake.requests.map(r => JSON.stringify(r.body))
      expect(bodies.some(b => /cut: the tool returned 3000000 bytes/.test(b))).toBe(true)
      expect(Math.max(...bodies.map(b => b.length))).toBeLessThan(200_000)

      // Each tool ran once (the crash killed the first server process; a new one took its place).
      const calls = readFileSync(callsFile(), 'utf8')
        .trim()
        .split('\n')
        .map(l => JSON.parse(l) as Structured)
      expect(calls.map(c => c.tool).filter(t => !t.endsWith('-cancelled'))).toStrictEqual([
        'slow',
        'echo',
        'huge',
        'crash'
      ])
      // The hung call was cancelled at the server when it timed out.
      expect(calls.map(c => c.tool)).toContain('slow-cancelled')
      // The crashed server is restarted and its tools are offered again; both executors kept running.
      await waitUntil(
        'the lab server to come back after its crash',
        async () => {
          const mine = (await (await fetch(`${labStarted.http as string}/status`)).json()) as Structured
          return mine.offers.includes('lab/echo') ? true : undefined
        },
        30_000
      )
      expect(labExec.proc.exitCode).toBeNull()
      expect(plain?.proc.exitCode).toBeNull()
    },
    PLAN_MS * 2
  )

  it(
    'an executor of the release before protocol 3 relays a tool plan without folding it, and works on the rest',
    async ({ skip }) => {
      const old = sourceBefore('PROTOCOL_VERSION_3', 'src/core/events.ts', home)
      if (old === undefined) {
        console.warn('skipped: this checkout has no git history to take the release before protocol 3 from')
        skip()
        return
      }
      const oldExec = spawnCommand(
        [
          ...old.cli,
          '--role',
          'executor',
          ...COMMON,
          '--data-dir',
          join(home, 'old-executor'),
          '--bootstrap',
          seed,
          '--http',
          '127.0.0.1:0',
          '--json'
        ],
        { env, name: `executor ${old.version}` }
      )
      nodes.push(oldExec)
      const oldStarted = await oldExec.waitForJson(o => o.event === 'started', START_MS)
      expect(oldStarted.version).toBe(`plan-swarm/${old.version}`)
      const oldStatus = async (): Promise<Structured> =>
        (await (await fetch(`${oldStarted.http as string}/status`)).json()) as Structured
      const submit = async (goal: string, extra: string[]): Promise<string> => {
        const r = await runCli(
          ['submit', goal, ...extra, '--max-depth', '1', '--json', ...COMMON, '--bootstrap', seed],
          {
            env
          }
        )
        expect(r.code, r.stderr).toBe(EXIT.OK)
        return JSON.parse(r.stdout.trim().split('\n')[0] as string).plan as string
      }
      const withTools = await submit('summarise the lab notes again', ['--use-tools'])
      const plainPlan = await submit('plan a picnic', [])
      const finished = async (id: string): Promise<Structured> =>
        await waitUntil(
          `plan ${id.slice(0, 8)} to complete`,
          async () => {
            const t = await tree(id)
            return t?.status === 'completed' ? t : undefined
          },
          PLAN_MS
        )
      const [v3, v1] = [await finished(withTools), await finished(plainPlan)]
      const oldId = oldStarted.peerId as string
      // The old node took no part in the tool plan, and holds every event the observer holds.
      expect(v3.tasks.flatMap((t: Structured) => t.chains.map((c: Structured) => c.owner))).not.toContain(oldId)
      await waitUntil(
        'the old executor to hold every event',
        async () => {
          const [o, n] = [await oldStatus(), await status()]
          return o.events.held === n.events.held ? o : undefined
        },
        60_000
      )
      const o = await oldStatus()
      expect(o.plans.map((p: Structured) => p.id)).not.toContain(withTools)
      const mine = o.plans.find((p: Structured) => p.id === plainPlan)
      expect(mine?.treeHash).toBe((await status()).plans.find((p: Structured) => p.id === plainPlan).treeHash)
      expect(v1.duplicates).toBe(0)
      expect(v3.duplicates).toBe(0)
      expect(oldExec.proc.exitCode).toBeNull()
    },
    PLAN_MS * 2
  )
})
