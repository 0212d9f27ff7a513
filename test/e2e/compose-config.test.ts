/**
 * The deployment files, checked without a Docker engine:
 *   - `docker-compose config -q` (Debian's docker-compose 1.29) accepts
 *     docker-compose.yml, with and without the optional swarm key; skipped
 *     with a message when the binary is missing (`apt-get install
 *     docker-compose`); `docker compose config -q` too where the v2 plugin is;
 *   - the topology the file promises (replicas, ports, volumes, healthchecks,
 *     mDNS only, the one-shot submitter), and that every PLAN_SWARM_*
 *     variable in it or in the Dockerfile is one the CLI reads, with a value
 *     the CLI accepts (parsed by the CLI's own parser);
 *   - the Dockerfile runs what `npm start` runs, as a non-root user, and the
 *     production dependencies (`npm ci --omit=dev`) are all that src/ and
 *     roles/ import.
 * Running the file for real is compose-topology.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { CLIENT_OPTIONS, OPTIONS, ROLES, envName, parseClientArgs, parseNodeArgs } from '../../src/runtime/config.js'
import { REPO_ROOT, removeTempDirs, tempDir } from '../helpers/cli-process.js'
import { COMPOSE_FILE, loadCompose, loadDockerfile } from '../helpers/compose-file.js'
import type { ComposeService } from '../helpers/compose-file.js'

/** Variables the CLI reads: one per flag, plus PLAN_SWARM_HOME and the clock-offset test hook. */
const KNOWN_VARIABLES = new Set([
  ...Object.keys(OPTIONS).map(envName),
  ...Object.keys(CLIENT_OPTIONS).map(envName),
  'PLAN_SWARM_HOME',
  'PLAN_SWARM_CLOCK_OFFSET_MS'
])

function works(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore' })
  return r.error === undefined && r.status === 0
}

/** A clean environment for docker-compose: no PLAN_SWARM_* or model keys from whoever runs the tests. */
function composeEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(PLAN_SWARM_|ANTHROPIC_|OPENAI_|SWARM_KEY_FILE|COMPOSE_|DOCKER_)/.test(k)) env[k] = v
  }
  return { ...env, ...extra }
}

const hasComposeV1 = works('docker-compose', ['version'])
const hasComposeV2 = works('docker', ['compose', 'version'])
if (!hasComposeV1)
  console.warn(
    'skipping `docker-compose config -q`: docker-compose not found (CI installs it: apt-get install -y docker-compose)'
  )

afterAll(() => {
  removeTempDirs()
})

describe('docker-compose config', () => {
  const variants: Array<[string, () => Record<string, string>]> = [
    ['as shipped (offline, no swarm key)', () => ({})],
    [
      'with a swarm key, a model key and a goal',
      () => {
        const dir = tempDir('compose-config')
        const key = join(dir, 'swarm.key')
        writeFileSync(key, '/key/swarm/psk/1.0.0/\n/base16/\n' + '0'.repeat(64) + '\n')
        return {
          SWARM_KEY_FILE: key,
          PLAN_SWARM_SWARM_KEY: '/run/secrets/swarm_key',
          ANTHROPIC_API_KEY: 'sk-test',
          PLAN_SWARM_GOAL: 'plan a wedding for 80 guests'
        }
      }
    ]
  ]
  it.skipIf(!hasComposeV1).each(variants)(
    'docker-compose (1.29) config -q accepts docker-compose.yml %s',
    (_name, extra) => {
      const r = spawnSync('docker-compose', ['-f', COMPOSE_FILE, 'config', '-q'], {
        cwd: REPO_ROOT,
        env: composeEnv(extra()),
        encoding: 'utf8',
        timeout: 60_000
      })
      expect(r.error).toBeUndefined()
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
    }
  )

  it.skipIf(!hasComposeV1)('docker-compose reads deploy.replicas as the scale (what `up` starts)', () => {
    // docker-compose 1.29 turns deploy.replicas into the scale outside swarm mode (compose/project.py get_service_scale).
    const r = spawnSync('docker-compose', ['-f', COMPOSE_FILE, 'config'], {
      cwd: REPO_ROOT,
      env: composeEnv(),
      encoding: 'utf8',
      timeout: 60_000
    })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/decomposer:[\s\S]*?replicas: 2/)
    expect(r.stdout).not.toMatch(/^\s+scale:/m)
  })

  it.skipIf(!hasComposeV2)('docker compose (v2) config -q accepts it too', () => {
    const r = spawnSync('docker', ['compose', '-f', COMPOSE_FILE, 'config', '-q'], {
      cwd: REPO_ROOT,
      env: composeEnv(),
      encoding: 'utf8',
      timeout: 60_000
    })
    expect(r.status, r.stderr).toBe(0)
  })
})

describe('docker-compose.yml: the topology it promises', () => {
  const compose = loadCompose({})
  const byName = (name: string): ComposeService => {
    const s = compose.services.find(x => x.name === name)
    if (s === undefined) throw new Error(`no service ${name}`)
    return s
  }
  const nodes = compose.services.filter(s => s.name !== 'submitter')

  it('has 2 decomposers, 3 scorers, 3 executors, an observer, a relay and a one-shot submitter, replicated with deploy.replicas', () => {
    expect(Object.fromEntries(compose.services.map(s => [s.name, s.replicas]))).toEqual({
      decomposer: 2,
      scorer: 3,
      executor: 3,
      observer: 1,
      relay: 1,
      submitter: 1
    })
    for (const s of compose.services) expect(s.raw.scale, `${s.name}: use deploy.replicas, not scale`).toBeUndefined()
    // No `version:`: docker compose v2 warns that it is obsolete, and 1.29 reads a file without one as the latest schema.
    expect(compose.raw.version).toBeUndefined()
  })

  it('configures every service through PLAN_SWARM_* variables the CLI reads, with values the CLI accepts', () => {
    for (const s of compose.services) {
      for (const k of Object.keys(s.environment).filter(k => k.startsWith('PLAN_SWARM_'))) {
        expect(
          KNOWN_VARIABLES.has(k),
          `${s.name}: ${k} is not a variable the CLI reads (typo, or a renamed flag?)`
        ).toBe(true)
      }
    }
    for (const s of nodes) {
      expect(s.command, `${s.name} is configured by its environment alone`).toEqual([])
      const config = parseNodeArgs(s.command, s.environment)
      expect(ROLES as readonly string[]).toContain(config.role)
      // The relay is a passive member: an observer that serves circuit relay v2.
      expect(config.role).toBe(s.name === 'relay' ? 'observer' : s.name)
      expect(config.network.relay, `${s.name}: only the relay service relays`).toBe(s.name === 'relay')
      expect(config.http).toEqual({ host: '0.0.0.0', port: 8080 })
      expect(config.bootstrap, `${s.name}: discovery is mDNS on the compose network`).toEqual([])
      expect(config.mdns).toBe(true)
      expect(config.swarmKeyFile).toBeUndefined()
      expect(config.provider).toBeUndefined()
    }
    const submit = byName('submitter')
    expect(submit.command.slice(0, 2)).toEqual(['submit', '--wait'])
    const parsed = parseClientArgs(submit.command.slice(1), submit.environment)
    expect(parsed.positionals).toEqual(['plan a two-week trip to Japan'])
    expect(parsed.values.wait).toBe(true)
    expect(parsed.config.http, 'a one-shot client serves no /status').toBeUndefined()
    expect(parsed.config.dataDir).toBe('/data')
  })

  it('passes the goal, ANTHROPIC_API_KEY and the swarm key through from the shell', () => {
    const withShell = loadCompose({
      PLAN_SWARM_GOAL: 'plan a wedding for 80 guests',
      ANTHROPIC_API_KEY: 'sk-test',
      SWARM_KEY_FILE: './swarm.key',
      PLAN_SWARM_SWARM_KEY: '/run/secrets/swarm_key'
    })
    const submit = withShell.services.find(s => s.name === 'submitter') as ComposeService
    expect(submit.command).toEqual(['submit', '--wait', 'plan a wedding for 80 guests'])
    for (const s of withShell.services.filter(x => x.name !== 'observer' && x.name !== 'submitter')) {
      expect(s.environment.ANTHROPIC_API_KEY).toBe('sk-test')
      expect(parseNodeArgs([], s.environment).swarmKeyFile).toBe('/run/secrets/swarm_key')
      expect(s.mounts.find(m => m.kind === 'secret')).toEqual({
        kind: 'secret',
        source: resolve(REPO_ROOT, 'swarm.key'),
        target: '/run/secrets/swarm_key'
      })
    }
    // Without them: offline, no key (an empty variable is unset for the CLI).
    for (const s of nodes) {
      expect(s.environment.ANTHROPIC_API_KEY).toBe('')
      expect(s.environment.PLAN_SWARM_SWARM_KEY).toBe('')
    }
  })

  it('gives every service its own named volume at /data, and every node a healthcheck on its /status', () => {
    const volumes = compose.services.map(s => {
      const data = s.mounts.filter(m => m.target === '/data')
      expect(data.length, `${s.name} mounts one volume at /data`).toBe(1)
      expect(data[0]?.kind).toBe('volume')
      expect(compose.volumes).toContain(data[0]?.source)
      return data[0]?.source
    })
    expect(new Set(volumes).size).toBe(compose.services.length)
    for (const s of nodes) {
      // Replicas share the volume: they must not share a data dir, so they use the default dir under PLAN_SWARM_HOME.
      if (s.replicas > 1) {
        expect(s.environment.PLAN_SWARM_DATA_DIR ?? '', `${s.name}: replicas would fight over one data dir`).toBe('')
        expect(s.environment.PLAN_SWARM_HOME).toBe('/data')
      }
      expect(s.healthcheck?.[0]).toBe('CMD')
      expect(s.healthcheck?.join(' ')).toContain('127.0.0.1:8080/status')
      expect(s.restart).toBe('unless-stopped')
    }
    const submit = byName('submitter')
    expect(submit.healthcheckDisabled).toBe(true)
    expect(submit.restart).toBe('no')
    expect(submit.dependsOn.sort()).toEqual(['decomposer', 'executor', 'scorer'])
    expect(compose.services.filter(s => s.ports.length > 0).map(s => s.name)).toEqual(['observer', 'relay'])
  })

  it('publishes the relay on port 4001 of every interface, where it listens, announcing PLAN_SWARM_RELAY_ANNOUNCE when given', () => {
    const relay = byName('relay')
    expect(relay.ports).toEqual(['4001:4001'])
    const config = parseNodeArgs(relay.command, relay.environment)
    expect(config.listen).toEqual(['/ip4/0.0.0.0/tcp/4001'])
    expect(config.network.relay).toBe(true)
    expect(config.network.announce, 'empty: AutoNAT finds the public address').toEqual([])
    expect(config.dataDir, 'its peer id stays across restarts: peers elsewhere bootstrap to it').toBe('/data')
    const announced = loadCompose({ PLAN_SWARM_RELAY_ANNOUNCE: '/ip4/203.0.113.7/tcp/4001' }).services.find(
      s => s.name === 'relay'
    ) as ComposeService
    expect(parseNodeArgs(announced.command, announced.environment).network.announce).toEqual([
      '/ip4/203.0.113.7/tcp/4001'
    ])
  })

  it("publishes the observer's dashboard on this host's port 8080, read-only unless PLAN_SWARM_ALLOW_SUBMIT=true", () => {
    const observer = byName('observer')
    expect(observer.ports).toEqual(['127.0.0.1:8080:8080'])
    const [hostIp, hostPort, containerPort] = (observer.ports[0] as string).split(':')
    expect(hostIp, 'only this host sees the dashboard').toBe('127.0.0.1')
    expect(hostPort).toBe('8080')
    const config = parseNodeArgs(observer.command, observer.environment)
    expect(config.http?.port, 'the published port is the one the observer serves its dashboard on').toBe(
      Number(containerPort)
    )
    expect(
      config.http?.host,
      'inside the container it listens on every interface, or the port mapping could not reach it'
    ).toBe('0.0.0.0')
    expect(config.allowSubmit).toBe(false)
    const writable = loadCompose({ PLAN_SWARM_ALLOW_SUBMIT: 'true' }).services.find(
      s => s.name === 'observer'
    ) as ComposeService
    expect(parseNodeArgs(writable.command, writable.environment).allowSubmit).toBe(true)
  })
})

/** Bare package names a TypeScript file imports at run time (type-only imports are erased). */
function runtimeImports(text: string): string[] {
  const out: string[] = []
  const re =
    /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g
  let m: RegExpExecArray | null
  while ((m = re.exec(text)) !== null) {
    if (m[2] !== undefined) continue
    out.push((m[3] ?? m[4]) as string)
  }
  return out
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []
  )
}

describe('Dockerfile', () => {
  const image = loadDockerfile()
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
    dependencies: Record<string, string>
    devDependencies: Record<string, string>
  }

  it('runs what `npm start` runs, on node:20-slim, as the node user, with /data as a volume and a healthcheck', () => {
    expect(image.instructions.filter(i => i.op === 'FROM').map(i => i.args.split(/\s+/)[0])).toEqual([
      'node:20-slim',
      'node:20-slim'
    ])
    expect(image.entrypoint).toEqual(pkg.scripts.start?.split(' '))
    expect(image.cmd, 'no CMD: it would override a role given by PLAN_SWARM_ROLE').toBeUndefined()
    expect(image.user).toBe('node')
    expect(image.volumes).toEqual(['/data'])
    expect(image.healthcheck?.slice(0, 2)).toEqual(['node', '-e'])
    expect(image.healthcheck?.[2]).toContain('/status')
    for (const k of Object.keys(image.env).filter(k => k.startsWith('PLAN_SWARM_')))
      expect(KNOWN_VARIABLES.has(k), k).toBe(true)
    const config = parseNodeArgs(['--role', 'scorer'], image.env)
    expect(config.dataRoot.startsWith('/data/')).toBe(true)
    expect(config.http).toEqual({ host: '0.0.0.0', port: 8080 })
    const run = image.instructions
      .filter(i => i.op === 'RUN')
      .map(i => i.args)
      .join('\n')
    expect(run).toMatch(/npm ci --omit=dev/)
    const copied = image.instructions
      .filter(i => i.op === 'COPY' && i.stage === 1)
      .map(i => i.args)
      .join('\n')
    for (const f of ['src', 'roles', 'tsconfig.json', 'package.json']) expect(copied).toContain(f)
  })

  it('needs nothing from devDependencies at run time: every package that src/ and roles/ import is a dependency', () => {
    expect(pkg.dependencies.tsx, 'the entrypoint runs TypeScript through tsx').toBeDefined()
    const builtins = new Set(builtinModules)
    const problems: string[] = []
    for (const file of [...tsFiles(join(REPO_ROOT, 'src')), ...tsFiles(join(REPO_ROOT, 'roles'))]) {
      for (const spec of runtimeImports(readFileSync(file, 'utf8'))) {
        const where = relative(REPO_ROOT, file)
        if (spec.startsWith('.')) {
          const target = relative(REPO_ROOT, resolve(dirname(file), spec))
          if (!/^(src|roles)\//.test(target) && target !== 'package.json')
            problems.push(`${where} imports ${spec}, which the image does not copy`)
          continue
        }
        if (spec.startsWith('node:') || builtins.has(spec)) continue
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string)
        if (pkg.dependencies[name] === undefined)
          problems.push(
            `${where} imports ${spec}, but ${name} is not in ` +
              `dependencies${pkg.devDependencies[name] !== undefined ? ' (only in devDependencies: npm ci --omit=dev leaves it out)' : ''}`
          )
      }
    }
    expect(problems).toEqual([])
  })

  it('.dockerignore keeps what the image copies', () => {
    const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map(l => l.trim())
      .filter(l => l !== '' && !l.startsWith('#'))
    for (const f of ['src', 'roles', 'package.json', 'package-lock.json', 'tsconfig.json'])
      expect(ignored).not.toContain(f)
    expect(ignored).toContain('node_modules')
  })
})
