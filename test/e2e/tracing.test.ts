/**
 * One trace per plan across a swarm of real processes, with no one handing
 * out ids: 9 CLI processes on loopback (an observer as the seed, 3
 * decomposers, 3 scorers, 2 executors) against the fake Messages API, each
 * exporting spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT) to a test
 * receiver. For one plan of depth 2:
 *   - every span of every process is in one trace, the one named by the plan
 *     id, and every model-backed process contributed;
 *   - the spans are the plan's run: the plan, each node, each decomposition
 *     attempt, proposal, ballot, claim (with its execution), result, and each
 *     model call, as many as the plan's tree and the fake server's log say;
 *   - parents follow the deps: a result under its claim, a claim under its
 *     task's node, a node under its parent node, a proposal and a ballot under
 *     their attempt, a model call under the slot or claim it served; no span
 *     has a parent that is missing from the trace;
 *   - model calls carry the GenAI attribute names, the scripted HTTP 429
 *     shows as a retried call, and their tokens add up to the plan's spent
 *     tokens (as do the events' own);
 *   - /metrics has token usage by model and the model-call latency histogram.
 * And a 10th process, an observer without an endpoint following the same
 * plan, loads no OpenTelemetry SDK module (a module-resolution hook and
 * require.cache record them in every process; only the API package, which
 * prom-client and the Anthropic SDK require themselves), while every process
 * with an endpoint loads the SDK and the OTLP exporter. A static import of
 * the SDK anywhere on a node's startup path fails this. About 50 s.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  EXIT,
  SOURCE_CLI,
  cliEnv,
  removeTempDirs,
  runCli,
  spawnCommand,
  stopCliChildren,
  tempDir
} from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import type { CliChild } from '../helpers/cli-process.js'

const SWARM = 'tracing-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 60_000
const PLAN_MS = 120_000
const GOAL = 'plan a weekend in Porto'

interface TreeJson {
  plan: string
  status: string
  spentTokens: number
  submittedAt: { ms: number }
  root: string
  nodes: Array<{
    id: string
    parent: string | null
    attempts: Array<{ attempt: number; outcome: string; proposals: unknown[]; ballots: unknown[] }>
  }>
  tasks: Array<{
    id: string
    node: string
    results: unknown[]
    chains: Array<{ claim: string; end: { kind: string } | null }>
  }>
}

const attr = (s: ReceivedSpan | undefined, k: string): unknown => s?.attributes[k]
const num = (s: ReceivedSpan, k: string): number => Number(s.attributes[k] ?? 0)

/** The --import hook that writes every OpenTelemetry module the process resolves (ESM) or loads (CommonJS) to $MODULES_FILE. */
function writeModuleHook(dir: string): string {
  writeFileSync(
    join(dir, 'record-hooks.mjs'),
    [
      "import { appendFileSync } from 'node:fs'",
      'let file',
      'export function initialize (data) { file = data.file }',
      'export async function resolve (specifier, context, next) {',
      '  const r = await next(specifier, context)',
      "  if (r.url.includes('@opentelemetry')) appendFileSync(file, `esm ${r.url}\\n`)",
      '  return r',
      '}'
    ].join('\n')
  )
  const main = join(dir, 'record-modules.mjs')
  writeFileSync(
    main,
    [
      "import { appendFileSync, writeFileSync } from 'node:fs'",
      "import { createRequire, register } from 'node:module'",
      'const file = process.env.MODULES_FILE',
      "writeFileSync(file, '')",
      "register(new URL('./record-hooks.mjs', import.meta.url), { data: { file } })",
      'const require = createRequire(import.meta.url)',
      "process.on('exit', () => { appendFileSync(file, Object.keys(require.cache).filter(k => " +
        "k.includes('@opentelemetry')).map(k => `cjs ${k}\\n`).join('')) })"
    ].join('\n')
  )
  return pathToFileURL(main).href
}

describe('tracing: one trace per plan across 9 processes', () => {
  let home: string
  let receiver: OtlpReceiver
  let fake: FakeLlm
  let env: NodeJS.ProcessEnv
  let hook = ''
  let http = ''
  let seed = ''
  let observerId = ''
  let untracedId = ''
  let metricsUrl = ''
  /** The 9 traced processes, the observer (the seed) first. */
  const nodes: CliChild[] = []
  let untraced: CliChild | undefined
  const byRole = new Map<string, string[]>()
  let stopped = false

  /** A node of the CLI with the module-recording hook, its record in <home>/<name>.modules. */
  const spawnNode = (name: string, args: readonly string[], nodeEnv: NodeJS.ProcessEnv): CliChild =>
    spawnCommand(
      [
        SOURCE_CLI[0],
        '--import',
        'tsx',
        '--import',
        hook,
        SOURCE_CLI[3],
        ...args,
        ...COMMON,
        '--data-dir',
        join(home, name),
        '--json'
      ],
      { env: { ...nodeEnv, MODULES_FILE: join(home, `${name}.modules`) }, name }
    )
  const loaded = (name: string): string[] =>
    readFileSync(join(home, `${name}.modules`), 'utf8')
      .split('\n')
      .filter(Boolean)

  beforeAll(async () => {
    home = tempDir('tracing')
    hook = writeModuleHook(home)
    receiver = await startOtlpReceiver()
    // The first execution's first request gets a 429: one model call is retried.
    let throttled = false
    fake = await startFakeLlm({ latencyMs: 30, auto: { children: 2, leafDepth: 2 } })
    fake.setScript(req => {
      if (req.tool === 'report_result' && !throttled) {
        throttled = true
        return { kind: 'status', status: 429, retryAfterMs: 50 }
      }
      return { kind: 'auto' }
    })
    env = cliEnv(home, {
      ANTHROPIC_API_KEY: 'test',
      ANTHROPIC_BASE_URL: fake.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '200'
    })
    const observer = spawnNode('observer', ['--role', 'observer', '--http', '127.0.0.1:0'], env)
    nodes.push(observer)
    const o = await observer.waitForJson(x => x.event === 'started', START_MS)
    http = o.http as string
    seed = (o.addresses as string[])[0] as string
    observerId = o.peerId as string
    const roles = ['decomposer', 'decomposer', 'decomposer', 'scorer', 'scorer', 'scorer', 'executor', 'executor']
    const started = roles.map((role, i) => {
      const n = spawnNode(
        `${role}-${i}`,
        ['--role', role, '--bootstrap', seed, ...(i === 0 ? ['--http', '127.0.0.1:0'] : [])],
        env
      )
      nodes.push(n)
      return n.waitForJson(x => x.event === 'started', START_MS)
    })
    // A 10th process, an observer without an endpoint, follows the same plan.
    untraced = spawnNode('untraced', ['--role', 'observer', '--bootstrap', seed], {
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: undefined
    })
    const lines = await Promise.all(started)
    untracedId = (await untraced.waitForJson(x => x.event === 'started', START_MS)).peerId as string
    lines.forEach((l, i) => {
      byRole.set(roles[i] as string, [...(byRole.get(roles[i] as string) ?? []), l.peerId as string])
    })
    metricsUrl = `${lines[0]?.http as string}/metrics`
    await waitUntil(
      'the observer to see all 8 model-backed peers',
      async () => {
        const st = (await (await fetch(`${http}/status`)).json()) as { roster: Array<{ peerId: string }> }
        const seen = new Set(st.roster.map(r => r.peerId))
        return [...byRole.values()].flat().every(p => seen.has(p)) ? true : undefined
      },
      START_MS
    )
  }, 2 * START_MS)

  afterAll(async () => {
    await stopCliChildren()
    await fake?.close()
    await receiver?.close()
    removeTempDirs()
  }, 60_000)

  it(
    'exports the whole run of a plan as one trace whose parents follow the deps',
    async () => {
      const t0 = Date.now()
      expect(nodes).toHaveLength(9)
      const scorers = byRole.get('scorer') ?? []
      const r = await runCli(
        [
          'submit',
          GOAL,
          '--wait',
          ...COMMON,
          '--bootstrap',
          seed,
          '--max-depth',
          '2',
          '--committee',
          scorers.join(','),
          '--timeout',
          String(PLAN_MS / 1000 - 10)
        ],
        { env: cliEnv(home, { ANTHROPIC_API_KEY: 'test', ANTHROPIC_BASE_URL: fake.url }) },
        PLAN_MS
      )
      expect(r.code, `${r.stderr.slice(-2000)}\n${nodes.map(n => n.tail(400)).join('\n')}`).toBe(EXIT.OK)
      const plan = r.stdout.split('\n')[0] as string
      expect(plan).toMatch(/^[0-9a-f]{64}$/)
      const tree = await waitUntil(
        'the observer to hold the completed plan',
        async () => {
          const b = (await (await fetch(`${http}/plans/${plan}`)).json()) as { tree: TreeJson }
          return b.tree.status === 'completed' ? b.tree : undefined
        },
        30_000
      )
      const metrics = await (await fetch(metricsUrl)).text()
      // Every node sends what it has left as it stops.
      const exits = await Promise.all([...nodes, untraced as CliChild].map(async n => await n.stop(15_000)))
      stopped = true
      expect(exits, 'every process stops cleanly').toEqual(exits.map(() => ({ code: 0, signal: null })))
      const ranMs = Date.now() - t0

      // Observers author nothing: these are the spans of the 8 model-backed processes.
      const spans = receiver.spans
      const traceId = plan.slice(0, 32)
      const context = `${spans.length} spans: ${[...new Set(spans.map(s => s.name))].join(', ')}`

      // One trace, from every model-backed process (the observer authors nothing), under the names of their roles.
      expect(new Set(spans.map(s => s.traceId)), context).toEqual(new Set([traceId]))
      const emitters = new Set(spans.map(s => String(s.resource['service.instance.id'])))
      for (const p of [...(byRole.get('decomposer') ?? []), ...scorers])
        expect(emitters.has(p), `spans from ${p}`).toBe(true)
      expect((byRole.get('executor') ?? []).some(p => emitters.has(p))).toBe(true)
      expect(emitters.has(observerId)).toBe(false)
      expect(emitters.has(untracedId)).toBe(false)
      for (const s of spans)
        expect(String(s.resource['service.name'])).toMatch(/^plan-swarm-(decomposer|scorer|executor)$/)
      const twice = spans.filter(s => spans.filter(x => x.spanId === s.spanId).length > 1)
      expect(
        twice.map(
          s =>
            `${s.name} ${s.spanId} ` +
            (`from ${String(s.resource['service.name'])} ` +
              `${String(s.resource['service.instance.id']).slice(-6)} ${s.startMs}-${s.endMs} ` +
              `${JSON.stringify(s.attributes)}`)
        ),
        'spans sent twice'
      ).toEqual([])

      // The spans are the plan's run, as its tree counts it.
      const named = (name: string): ReceivedSpan[] => spans.filter(s => s.name === name)
      const attempts = tree.nodes.flatMap(n => n.attempts.filter(a => a.outcome !== 'open'))
      const chains = tree.tasks.flatMap(t => t.chains.filter(c => c.end !== null && c.end.kind !== 'superseded'))
      const results = tree.tasks.reduce((n, t) => n + t.results.length, 0)
      const planSpans = named('plan')
      expect(planSpans, context).toHaveLength(1)
      const root = planSpans[0] as ReceivedSpan
      expect(root).toMatchObject({ spanId: plan.slice(0, 16), parentSpanId: null, status: { code: 1 } })
      expect(root.startMs).toBe(tree.submittedAt.ms)
      expect(attr(root, 'plan_swarm.plan.status')).toBe('completed')
      expect(named('node')).toHaveLength(tree.nodes.length - 1)
      expect(named('decomposition-attempt')).toHaveLength(attempts.length)
      const allAttempts = tree.nodes.flatMap(n => n.attempts)
      expect(named('split-proposed')).toHaveLength(allAttempts.reduce((n, a) => n + a.proposals.length, 0))
      expect(named('ballot-cast')).toHaveLength(allAttempts.reduce((n, a) => n + a.ballots.length, 0))
      expect(named('task-claimed')).toHaveLength(chains.length)
      expect(named('result-reported')).toHaveLength(results)
      expect(tree.nodes.length).toBeGreaterThanOrEqual(7)
      const calls = spans.filter(s => s.kind === 3)
      const modelRequests = fake.calls().length - 1
      expect(calls, 'one span per model call (the 429 was a retry inside one)').toHaveLength(modelRequests)

      // Parents: present, and the ones the deps name.
      const byId = new Map(spans.map(s => [s.spanId, s]))
      const orphans = spans.filter(s => s.parentSpanId !== null && !byId.has(s.parentSpanId))
      expect(
        orphans.map(s => `${s.name} ${s.spanId} -> ${s.parentSpanId ?? ''}`),
        'spans whose parent is not in the trace'
      ).toEqual([])
      const sid = (id: string | null): string | null => (id === null ? null : id.slice(0, 16))
      const nodesById = new Map(tree.nodes.map(n => [n.id, n]))
      const tasksById = new Map(tree.tasks.map(t => [t.id, t]))
      for (const s of named('node'))
        expect(s.parentSpanId).toBe(sid(nodesById.get(String(attr(s, 'plan_swarm.node.id')))?.parent ?? null))
      for (const s of named('decomposition-attempt'))
        expect(s.parentSpanId).toBe(sid(String(attr(s, 'plan_swarm.node.id'))))
      for (const s of [...named('split-proposed'), ...named('ballot-cast')]) {
        const parent = byId.get(s.parentSpanId as string)
        expect(parent?.name).toBe('decomposition-attempt')
        expect([attr(parent, 'plan_swarm.node.id'), attr(parent, 'plan_swarm.attempt')]).toEqual([
          attr(s, 'plan_swarm.node.id'),
          attr(s, 'plan_swarm.attempt')
        ])
      }
      for (const s of named('task-claimed'))
        expect(s.parentSpanId).toBe(sid(tasksById.get(String(attr(s, 'plan_swarm.task.id')))?.node ?? null))
      for (const s of named('result-reported')) {
        const claim = byId.get(s.parentSpanId as string)
        expect(claim?.name).toBe('task-claimed')
        expect(attr(claim, 'plan_swarm.event.id')).toBe(attr(s, 'plan_swarm.claim.id'))
      }
      const parentName: Record<string, string> = {
        decompose: 'split-proposed',
        score: 'ballot-cast',
        execute: 'task-claimed',
        'roll-up': 'task-claimed'
      }
      for (const c of calls) {
        const parent = byId.get(c.parentSpanId as string)
        expect(parent?.name, `parent of a ${String(attr(c, 'plan_swarm.llm.question'))} call`).toBe(
          parentName[String(attr(c, 'plan_swarm.llm.question'))]
        )
        expect(parent?.resource['service.instance.id']).toBe(c.resource['service.instance.id'])
      }
      // Everything happened within the plan span.
      for (const s of spans) {
        expect(s.startMs).toBeGreaterThanOrEqual(root.startMs - 50)
        expect(s.endMs).toBeLessThanOrEqual(root.endMs + 50)
      }

      // Model calls: GenAI names, one retried call, and tokens that add up to what the plan spent.
      for (const c of calls) {
        expect(c.attributes).toMatchObject({
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'anthropic',
          'plan_swarm.plan.id': plan
        })
        expect(attr(c, 'gen_ai.request.model')).toBeTypeOf('string')
        expect(num(c, 'gen_ai.usage.input_tokens')).toBeGreaterThan(0)
        expect(num(c, 'gen_ai.usage.output_tokens')).toBeGreaterThan(0)
      }
      const retried = calls.filter(c => attr(c, 'plan_swarm.llm.retried') === true)
      expect(retried.map(c => [attr(c, 'plan_swarm.llm.question'), attr(c, 'plan_swarm.llm.retries')])).toEqual([
        ['execute', 1]
      ])
      const callTokens = calls.reduce(
        (n, c) => n + num(c, 'gen_ai.usage.input_tokens') + num(c, 'gen_ai.usage.output_tokens'),
        0
      )
      const eventTokens = spans.reduce(
        (n, s) => n + num(s, 'plan_swarm.usage.input_tokens') + num(s, 'plan_swarm.usage.output_tokens'),
        0
      )
      expect(tree.spentTokens).toBeGreaterThan(0)
      expect(callTokens, 'tokens on model-call spans').toBe(tree.spentTokens)
      expect(eventTokens, 'tokens on event spans').toBe(tree.spentTokens)
      expect(attr(root, 'plan_swarm.plan.spent_tokens')).toBe(tree.spentTokens)

      // Metrics: token usage by model, model-call latency.
      expect(metrics).toMatch(/plan_swarm_llm_tokens_total\{model="[^"]+",direction="input"\} [1-9]/)
      expect(metrics).toMatch(
        /plan_swarm_llm_call_seconds_count\{operation="decompose",model="[^"]+",outcome="ok"\} [1-9]/
      )
      console.log(
        `tracing e2e: ${spans.length} spans from ${emitters.size} processes, ${tree.nodes.length} ` +
          `nodes, ${calls.length} model calls, ${tree.spentTokens} tokens; ${ranMs} ms`
      )
    },
    PLAN_MS + 60_000
  )

  it('loads no OpenTelemetry SDK module in the node without an endpoint, and the SDK in every node with one', () => {
    expect(stopped, 'the processes have stopped (the first test stops them)').toBe(true)
    // The API package alone is always there: prom-client and the Anthropic SDK require it (a no-op without a registered provider).
    const beyondApi = loaded('untraced').filter(m => !/\/@opentelemetry\/api\//.test(m))
    expect(beyondApi, 'OpenTelemetry modules beyond the API that a node without an endpoint loaded').toEqual([])
    expect(receiver.spans.filter(s => s.resource['service.instance.id'] === untracedId)).toEqual([])
    for (const n of nodes) {
      const mods = loaded(n.name).join('\n')
      expect(mods, n.name).toMatch(/@opentelemetry\/sdk-trace-base/)
      expect(mods, n.name).toMatch(/@opentelemetry\/exporter-trace-otlp-http/)
    }
  })
})
