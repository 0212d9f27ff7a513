/**
 * The command line as a user meets it, as child processes: `--help`, and
 * every configuration mistake ending with its documented exit code and a
 * message that says what to do (and no stack trace):
 *   2  bad flags or configuration (unknown flag, bad multiaddr, missing or
 *      unknown role, unreadable or malformed swarm key, a provider without
 *      its key, a bad --http or env value, a tools file that cannot be
 *      served, an unknown command)
 *   3  data dir in use by another running process
 *   4  --http port in use
 * and `keygen`, whose key round-trips through --swarm-key (and
 * PLAN_SWARM_SWARM_KEY): two nodes holding it connect.
 * Nodes run on 127.0.0.1 with --no-mdns, so nothing reaches the LAN.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { OPTIONS, envName } from '../../src/runtime/config.js'
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
import { waitUntil } from '../helpers/wait.js'
import type { Server } from 'node:net'

const LOCAL = ['--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
/** A process that starts a node needs several seconds on a busy 2-core machine. */
const START_MS = 60_000
const KEY_FILE = /^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}\n$/

const home = tempDir('cli-errors')
const env = (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => cliEnv(home, extra)

// Not afterEach at the top: the concurrent cases below would kill each other's processes.
afterAll(async () => {
  await stopCliChildren()
  removeTempDirs()
})

/** No stack frames: a configuration error is a message for the user, not a crash. */
const STACK_FRAME = /\n\s+at .+:\d+:\d+/
function expectNoStack(stderr: string): void {
  expect(stderr).not.toMatch(STACK_FRAME)
}

describe('--help', () => {
  it('exits 0 and lists every option with its variable, examples and the exit codes', async () => {
    for (const flag of ['--help', '-h']) {
      const r = await runCli([flag], { env: env() })
      expect(r.code, r.stderr).toBe(EXIT.OK)
      expect(r.stdout).toMatch(/^Usage:/m)
      for (const name of Object.keys(OPTIONS)) {
        expect(r.stdout).toContain(`--${name}`)
        if (name !== 'version') expect(r.stdout).toContain(envName(name))
      }
      expect(r.stdout).not.toContain('PLAN_SWARM_VERSION')
      expect(r.stdout).toMatch(/^Examples:\n(\s+.*npm start -- .*\n)+/m)
      expect(r.stdout).toMatch(
        /Exit codes: 0 ok, 1 .*, 2 .*, 3 data dir in use, 4 port in use, 5 the plan was cancelled, 6 timed out waiting/
      )
    }
  })

  it('is the same through `npm start`, the sources through tsx as a user runs them, as from the bundle', async () => {
    // Every other process here runs the bundle (test/helpers/cli-process.ts); this one runs what users run.
    const npm = spawnCommand(['npm', 'start', '-s', '--', '--help'], { env: env(), name: 'npm start -- --help' })
    const exit = await npm.exitWithin(START_MS)
    expect(exit, npm.tail()).toEqual({ code: EXIT.OK, signal: null })
    const built = await runCli(['--help'], { env: env() })
    expect(npm.stdout()).toBe(built.stdout)
  })

  it('after any command prints the help and does nothing else (no key made, no task claimed)', async () => {
    const home = tempDir('help-')
    for (const args of [
      ['id', '--help'],
      ['task', 'next', '--help'],
      ['inbox', '-h'],
      ['keygen', '--help']
    ]) {
      const r = await runCli(args, { env: cliEnv(home) })
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(EXIT.OK)
      expect(r.stdout).toMatch(/^Usage:/m)
    }
    expect(readdirSync(home)).toEqual([])
  })
})

interface ErrorCase {
  name: string
  args: string[]
  env?: Record<string, string | undefined>
  code: number
  /** What the message must say: the problem and the way out. */
  says: RegExp[]
}

describe('configuration errors: exit code and a message that says what to do', () => {
  const dir = (name: string): string => join(home, 'data', name)
  const file = (name: string, text: string): string => {
    const p = join(home, name)
    writeFileSync(p, text)
    return p
  }
  const cases = (): ErrorCase[] => [
    { name: 'unknown flag', args: ['--role', 'scorer', '--bogus'], code: EXIT.CONFIG, says: [/--bogus/, /see --help/] },
    {
      name: 'missing --role',
      args: [...LOCAL],
      code: EXIT.CONFIG,
      says: [/--role is required: one of decomposer, scorer, executor, observer/]
    },
    {
      name: 'unknown role from PLAN_SWARM_ROLE',
      args: [],
      env: { PLAN_SWARM_ROLE: 'planner' },
      code: EXIT.CONFIG,
      says: [/--role planner: expected one of decomposer, scorer, executor, observer/]
    },
    {
      name: 'a --bootstrap that is not a multiaddr',
      args: ['--role', 'scorer', '--bootstrap', 'localhost:4001'],
      code: EXIT.CONFIG,
      says: [/--bootstrap "localhost:4001" is not a multiaddr/, /e\.g\. \/ip4\/127\.0\.0\.1\/tcp\/4001\/p2p\//]
    },
    {
      name: 'a --bootstrap without /p2p/<peer id>',
      args: ['--role', 'scorer', '--bootstrap', '/ip4/127.0.0.1/tcp/4001'],
      code: EXIT.CONFIG,
      says: [/must end in \/p2p\/<peer id>/, /\/status/]
    },
    {
      name: 'a bad --http',
      args: ['--role', 'scorer', '--http', '8080'],
      code: EXIT.CONFIG,
      says: [/--http "8080": expected HOST:PORT, e\.g\. 127\.0\.0\.1:7070/]
    },
    {
      name: 'a --history that is neither all nor open',
      args: ['--role', 'executor', '--history', 'none'],
      code: EXIT.CONFIG,
      says: [/--history "none": expected all \(fetch every plan from peers, the default\) or open/]
    },
    {
      name: 'a boolean variable that is not a boolean',
      args: ['--role', 'scorer'],
      env: { PLAN_SWARM_NO_MDNS: 'maybe' },
      code: EXIT.CONFIG,
      says: [/PLAN_SWARM_NO_MDNS=maybe: expected true or false/]
    },
    {
      name: 'a --swarm-key file that does not exist',
      args: ['--role', 'scorer', ...LOCAL, '--data-dir', dir('k1'), '--swarm-key', join(home, 'missing.key')],
      code: EXIT.CONFIG,
      says: [/--swarm-key .*missing\.key: cannot read it \(ENOENT\); check the path/]
    },
    {
      name: 'a --swarm-key that is a directory',
      args: ['--role', 'scorer', ...LOCAL, '--data-dir', dir('k2'), '--swarm-key', home],
      code: EXIT.CONFIG,
      says: [/--swarm-key .*: cannot read it \(EISDIR\)/]
    },
    {
      name: 'an unreadable PLAN_SWARM_SWARM_KEY',
      args: ['--role', 'scorer', ...LOCAL, '--data-dir', dir('k3')],
      env: { PLAN_SWARM_SWARM_KEY: join(home, 'nope.key') },
      code: EXIT.CONFIG,
      says: [/--swarm-key .*nope\.key: cannot read it/]
    },
    {
      name: 'a malformed swarm key',
      args: ['--role', 'scorer', ...LOCAL, '--data-dir', dir('k4'), '--swarm-key', file('bad.key', 'not a key\n')],
      code: EXIT.CONFIG,
      says: [/swarm key file is malformed/, /keygen/]
    },
    {
      name: 'a swarm key with a short key line',
      args: [
        '--role',
        'scorer',
        ...LOCAL,
        '--data-dir',
        dir('k5'),
        '--swarm-key',
        file('short.key', '/key/swarm/psk/1.0.0/\n/base16/\nabcd\n')
      ],
      code: EXIT.CONFIG,
      says: [/must be exactly 64 hex digits/]
    },
    {
      name: '--provider anthropic without ANTHROPIC_API_KEY',
      args: ['--role', 'executor', ...LOCAL, '--data-dir', dir('p1'), '--provider', 'anthropic'],
      code: EXIT.CONFIG,
      says: [/--provider anthropic needs an API key: set ANTHROPIC_API_KEY/, /--provider offline/]
    },
    {
      name: 'an unknown --provider',
      args: ['--role', 'executor', ...LOCAL, '--data-dir', dir('p2'), '--provider', 'gpt'],
      code: EXIT.CONFIG,
      says: [/unknown provider "gpt"; use --provider anthropic/]
    },
    {
      name: '--tools naming a command that does not exist',
      args: [
        '--role',
        'executor',
        ...LOCAL,
        '--data-dir',
        dir('t1'),
        '--tools',
        file('tools.json', JSON.stringify({ mcpServers: { lab: { command: 'no-such-mcp-server-here' } } }))
      ],
      code: EXIT.CONFIG,
      says: [/tools\.json/, /"lab"/, /no-such-mcp-server-here/]
    },
    {
      name: '--tools that is not JSON',
      args: [
        '--role',
        'executor',
        ...LOCAL,
        '--data-dir',
        dir('t2'),
        '--tools',
        file('broken.json', '{"mcpServers": ')
      ],
      code: EXIT.CONFIG,
      says: [/broken\.json/, /JSON/]
    },
    {
      name: '--tools on a scorer',
      args: ['--role', 'scorer', ...LOCAL, '--data-dir', dir('t3'), '--tools', 'tools.json'],
      code: EXIT.CONFIG,
      says: [/--tools is for executors, not --role scorer/]
    },
    {
      name: 'a --max-steps out of range',
      args: ['--role', 'executor', ...LOCAL, '--data-dir', dir('t4'), '--max-steps', '0'],
      code: EXIT.CONFIG,
      says: [/--max-steps "0": expected a whole number of turns from 1 to 100/]
    },
    {
      name: 'submit with --max-nodes beyond the cap, refused before it waits for peers',
      args: ['submit', 'plan a trip', ...LOCAL, '--data-dir', dir('s1'), '--max-nodes', '6000'],
      code: EXIT.CONFIG,
      says: [/plan parameters: params\.maxNodes: 6000 is outside 1\.\.5000/]
    },
    {
      name: 'an unknown command',
      args: ['frobnicate'],
      code: EXIT.CONFIG,
      says: [/unknown command "frobnicate"; commands: .*submit.*keygen/, /--help/]
    },
    {
      name: 'keygen with two files',
      args: ['keygen', 'a.key', 'b.key'],
      code: EXIT.CONFIG,
      says: [/keygen takes one file name at most .*keygen swarm\.key/]
    }
  ]

  // Independent processes: run a few at once (vitest's maxConcurrency), asserting with each test's own expect.
  it.concurrent.for(cases())('$name', async (c, { expect }) => {
    const expectNoStack = (stderr: string): void => {
      expect(stderr).not.toMatch(STACK_FRAME)
    }
    const r = await runCli(c.args, { env: env(c.env) }, START_MS)
    expect({ code: r.code, signal: r.signal }, `stderr: ${r.stderr}\nstdout: ${r.stdout}`).toEqual({
      code: c.code,
      signal: null
    })
    expect(r.stderr).toMatch(/^plan-swarm: /)
    for (const re of c.says) expect(r.stderr).toMatch(re)
    expectNoStack(r.stderr)
    // Nothing started: no banner.
    expect(r.stdout).not.toMatch(/^plan-swarm \S+ 12D3/m)
  })
})

describe('resources held by another process', () => {
  afterEach(async () => {
    await stopCliChildren()
  })

  it(
    'a data dir in use by a running node: exit 3, naming the holder; free again once it stops',
    async () => {
      const dataDir = join(home, 'locked')
      const first = spawnCli(['--role', 'scorer', ...LOCAL, '--data-dir', dataDir, '--json'], { env: env() })
      await first.waitForJson(o => o.event === 'started', START_MS)
      const second = await runCli(['--role', 'executor', ...LOCAL, '--data-dir', dataDir], { env: env() }, START_MS)
      expect(second.code, second.stderr).toBe(EXIT.DATA_DIR_IN_USE)
      expect(second.stderr).toMatch(new RegExp(`data dir ${dataDir} is in use by .*${first.pid}`))
      expect(second.stderr).toMatch(/stop it or pass --data-dir <another dir>/)
      expectNoStack(second.stderr)
      // A clean stop (SIGTERM) exits 0 and frees the dir for the next process.
      expect(await first.stop(30_000)).toEqual({ code: 0, signal: null })
      const third = spawnCli(['--role', 'scorer', ...LOCAL, '--data-dir', dataDir, '--json'], { env: env() })
      const started = await third.waitForJson(o => o.event === 'started', START_MS)
      expect(started.dataDir).toBe(dataDir)
    },
    4 * START_MS
  )

  it(
    'an --http port in use: exit 4 with what to do, and the data dir is released',
    async () => {
      const server: Server = createServer()
      await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
      const port = (server.address() as { port: number }).port
      try {
        const dataDir = join(home, 'port')
        const r = await runCli(
          ['--role', 'observer', ...LOCAL, '--data-dir', dataDir, '--http', `127.0.0.1:${port}`],
          { env: env() },
          START_MS
        )
        expect(r.code, r.stderr).toBe(EXIT.PORT_IN_USE)
        expect(r.stderr).toContain(
          `--http 127.0.0.1:${port}: that address is already in use; stop the other process or ` +
            `choose another port (port 0 picks a free one)`
        )
        expectNoStack(r.stderr)
        // The failed start let go of everything it had taken.
        const again = spawnCli(
          ['--role', 'observer', ...LOCAL, '--data-dir', dataDir, '--http', '127.0.0.1:0', '--json'],
          { env: env() }
        )
        const started = await again.waitForJson(o => o.event === 'started', START_MS)
        expect(started.dataDir).toBe(dataDir)
      } finally {
        server.close()
      }
    },
    3 * START_MS
  )
})

describe('keygen FILE', () => {
  it('writes a key only its owner can read, which --swarm-key accepts, and never overwrites one', async () => {
    const dir = tempDir('keygen-')
    const file = join(dir, 'swarm.key')
    const made = await runCli(['keygen', file], { env: env() })
    expect(made.code, made.stderr).toBe(EXIT.OK)
    expect(made.stdout).toBe('')
    expect(made.stderr).toContain(`--swarm-key ${file}`)
    const key = readFileSync(file, 'utf8')
    expect(key).toMatch(KEY_FILE)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const again = await runCli(['keygen', file], { env: env() })
    expect(again.code).toBe(EXIT.CONFIG)
    expect(again.stderr).toMatch(/exists: keygen never overwrites a key/)
    expect(readFileSync(file, 'utf8')).toBe(key)
  })
})

describe('keygen', () => {
  afterEach(async () => {
    await stopCliChildren()
  })

  it(
    'prints a fresh swarm key that --swarm-key and PLAN_SWARM_SWARM_KEY accept: two nodes holding it connect',
    async () => {
      const a = await runCli(['keygen'], { env: env() })
      const b = await runCli(['keygen'], { env: env() })
      expect(a.code, a.stderr).toBe(EXIT.OK)
      expect(a.stdout).toMatch(KEY_FILE)
      expect(b.stdout).toMatch(KEY_FILE)
      expect(a.stdout).not.toBe(b.stdout)
      mkdirSync(join(home, 'keys'), { recursive: true })
      const keyFile = join(home, 'keys', 'swarm.key')
      writeFileSync(keyFile, a.stdout)

      const seed = spawnCli(
        [
          '--role',
          'scorer',
          ...LOCAL,
          '--data-dir',
          join(home, 'key-a'),
          '--swarm-key',
          keyFile,
          '--http',
          '127.0.0.1:0',
          '--json'
        ],
        { env: env() }
      )
      const seedStarted = await seed.waitForJson(o => o.event === 'started', START_MS)
      const joiner = spawnCli(
        [
          '--role',
          'executor',
          ...LOCAL,
          '--data-dir',
          join(home, 'key-b'),
          '--bootstrap',
          (seedStarted.addresses as string[])[0] as string,
          '--json'
        ],
        { env: env({ PLAN_SWARM_SWARM_KEY: keyFile }) }
      )
      const joinerStarted = await joiner.waitForJson(o => o.event === 'started', START_MS)
      const status = await waitUntil(
        'the two keyed nodes to connect',
        async () => {
          const s = (await (await fetch(`${seedStarted.http as string}/status`)).json()) as {
            peers: number
            roster: Array<{ peerId: string }>
          }
          return s.roster.some(r => r.peerId === joinerStarted.peerId) && s.peers > 0 ? s : undefined
        },
        START_MS
      )
      expect(status.peers).toBeGreaterThan(0)
    },
    4 * START_MS
  )
})
