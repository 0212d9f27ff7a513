/**
 * The built CLI (`npm run build`: one esbuild bundle, dist/src/cli.js, with a
 * chunk per lazy import) does what the sources do on the paths a bundle can
 * break: the dashboard's files found beside the bundle, the MCP server over
 * --mcp-http and as the `mcp` command, the model provider of a decomposer,
 * a person command, and a plan submitted, planned offline and exported as
 * Markdown (the roles' renderer is a lazy chunk too). Vitest's globalSetup
 * (test/helpers/build-cli.ts) built the bundle from the current sources
 * before any file ran. The other process tests run it too
 * (test/helpers/cli-process.ts) but do not look for these paths;
 * scale.test.ts runs 40 built processes and touches none of them.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import {
  BUILT_CLI,
  EXIT,
  REPO_ROOT,
  cliEnv,
  removeTempDirs,
  spawnCommand,
  stopCliChildren,
  tempDir
} from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import type { CliChild, Finished } from '../helpers/cli-process.js'

const BUILT = [process.execPath, BUILT_CLI] as const
const STATIC_SRC = join(REPO_ROOT, 'src', 'http', 'dashboard', 'static')
const COMMON = ['--swarm', 'built-e2e', '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 60_000
const PLAN_MS = 120_000

describe('the built CLI', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let http = ''
  let seed = ''
  let mcpUrl = ''
  let mcpToken = ''
  const clients: Client[] = []

  const spawnBuilt = (args: readonly string[], name: string): CliChild =>
    spawnCommand([...BUILT, ...args], { env, name })

  const runBuilt = async (args: readonly string[], name: string, timeoutMs: number): Promise<Finished> => {
    const child = spawnBuilt(args, name)
    const e = await child.exitWithin(timeoutMs).catch(async () => await child.stop(1_000, 'SIGKILL'))
    return { ...e, stdout: child.stdout(), stderr: child.stderr(), ms: child.elapsedMs() }
  }

  beforeAll(async () => {
    home = tempDir('built-cli')
    env = cliEnv(home)
    const observer = spawnBuilt(
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
      'observer'
    )
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    mcpUrl = started.mcp as string
    mcpToken = started.mcpToken as string
  }, START_MS + 60_000)

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {})
    await stopCliChildren()
    removeTempDirs()
  }, 60_000)

  it('serves the dashboard page and its files, the same bytes as in src/', async () => {
    const modules = readdirSync(join(STATIC_SRC, 'js')).map(name => [`/js/${name}`, join('js', name)] as const)
    expect(modules.length).toBeGreaterThan(0)
    for (const [path, file] of [
      ['/', 'index.html'],
      ['/dashboard.js', 'dashboard.js'],
      ['/dashboard.css', 'dashboard.css'],
      ['/favicon.svg', 'favicon.svg'],
      ...modules
    ] as const) {
      const r = await fetch(`${http}${path}`)
      expect(r.status, path).toBe(200)
      expect(Buffer.from(await r.arrayBuffer()).equals(readFileSync(join(STATIC_SRC, file))), path).toBe(true)
    }
  })

  it('is ASCII, comments too, so V8 holds each file at one byte a character', () => {
    const dist = join(REPO_ROOT, 'dist')
    const js = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter(f => f.endsWith('.js'))
    expect(js.length).toBeGreaterThan(10)
    // The dashboard's own files are served, not run by the node.
    const notAscii = js.filter(f => !f.includes('static') && /[^\x00-\x7f]/.test(readFileSync(join(dist, f), 'utf8')))
    expect(notAscii).toEqual([])
  })

  it('serves /metrics with the node counters and the process metrics (prom-client, a file at a time)', async () => {
    const r = await fetch(`${http}/metrics`)
    expect(r.status).toBe(200)
    const text = await r.text()
    expect(text).toMatch(/^# TYPE plan_swarm_events_accepted_total counter$/m)
    expect(text).toMatch(/^# TYPE plan_swarm_fold_seconds histogram$/m)
    expect(text).toMatch(/^plan_swarm_process_cpu_seconds_total \d/m)
    expect(text).toMatch(/^plan_swarm_nodejs_eventloop_lag_seconds \d/m)
  })

  it(
    'answers MCP over --mcp-http and as the mcp command over stdio',
    async () => {
      const overHttp = new Client({ name: 'built-http', version: '1.0.0' })
      await overHttp.connect(
        new StreamableHTTPClientTransport(new URL(mcpUrl), {
          requestInit: { headers: { authorization: `Bearer ${mcpToken}` } }
        })
      )
      clients.push(overHttp)
      const overStdio = new Client({ name: 'built-stdio', version: '1.0.0' })
      await overStdio.connect(
        new StdioClientTransport({
          command: BUILT[0],
          args: [BUILT[1], 'mcp', ...COMMON, '--bootstrap', seed, '--data-dir', join(home, 'mcp')],
          env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
          cwd: REPO_ROOT,
          stderr: 'pipe'
        })
      )
      clients.push(overStdio)
      for (const client of [overHttp, overStdio]) {
        const { tools } = await client.listTools()
        expect(tools.map(t => t.name)).toContain('swarm_status')
        const status = await client.callTool({ name: 'swarm_status', arguments: {} })
        expect(status.isError, JSON.stringify(status.content)).not.toBe(true)
      }
    },
    START_MS
  )

  it(
    "prints a key's id (a person command)",
    async () => {
      const r = await runBuilt(['id', '--json', '--data-dir', join(home, 'person')], 'id', START_MS)
      expect(r.code, r.stderr).toBe(EXIT.OK)
      expect(JSON.parse(r.stdout).peerId).toMatch(/^12D3KooW/)
    },
    START_MS
  )

  it(
    'plans a goal with the offline model and exports it as Markdown',
    async () => {
      const roles = ['decomposer', 'scorer', 'executor'].map(role =>
        spawnBuilt(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], role)
      )
      await Promise.all(roles.map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
      await waitUntil(
        'the observer to see every role',
        async () => {
          const s = (await (await fetch(`${http}/status`)).json()) as { roster: Array<{ role: string }> }
          const seen = new Set(s.roster.map(r => r.role))
          return ['decomposer', 'scorer', 'executor'].every(r => seen.has(r)) ? true : undefined
        },
        START_MS
      )
      const submitted = await runBuilt(
        [
          'submit',
          'plan a picnic',
          '--wait',
          ...COMMON,
          '--bootstrap',
          seed,
          '--max-depth',
          '1',
          '--timeout',
          String(PLAN_MS / 1000 - 10)
        ],
        'submit',
        PLAN_MS
      )
      expect(submitted.code, `${submitted.stderr.slice(-2000)}\n${roles.map(n => n.tail(500)).join('\n')}`).toBe(
        EXIT.OK
      )
      const plan = submitted.stdout.split('\n')[0] ?? ''
      expect(plan, submitted.stdout).toMatch(/^[0-9a-f]{64}$/)
      const file = join(home, 'plan.md')
      const exported = await runBuilt(
        ['export', plan, '--markdown', file, ...COMMON, '--bootstrap', seed],
        'export',
        START_MS
      )
      expect(exported.code, exported.stderr).toBe(EXIT.OK)
      expect(readFileSync(file, 'utf8')).toContain('plan a picnic')
    },
    START_MS + PLAN_MS + START_MS
  )
})
