/**
 * `docker compose up` without Docker: every replica of every service becomes
 * a "container", a process in its own network namespace on a shared bridge,
 * started from the image's ENTRYPOINT and ENV (the Dockerfile) and the
 * service's command and environment (docker-compose.yml), with named volumes
 * and secrets mapped to host paths. Replicas of a service share its volume
 * directory, as they share the named volume under Docker.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT, spawnCommand } from './cli-process.js'
import { inHost, type BridgeNet, type Host } from './compose-netns.js'
import { pathMapper } from './compose-file.js'
import type { CliChild, Finished } from './cli-process.js'
import type { ComposeService, DockerImage } from './compose-file.js'

export interface Container {
  readonly service: ComposeService
  /** 1-based, like compose's `<project>-<service>-<n>`. */
  readonly replica: number
  readonly name: string
  readonly host: Host
  readonly argv: string[]
  readonly env: NodeJS.ProcessEnv
  /** The image's WORKDIR on the host (the repository). */
  readonly cwd: string
  /** Host path of a container path (volumes, secrets, the workdir). */
  readonly hostPath: (containerPath: string) => string
  readonly volumeDirs: Record<string, string>
  child: CliChild | undefined
}

/** `node` in an argv is this test's node binary (the image's node:20 stands in for it). */
function program(argv: string[]): string[] {
  return argv[0] === 'node' ? [process.execPath, ...argv.slice(1)] : argv
}

/** Lays out the containers of `services` (replicas included) on `net`, with volumes under `root`. */
export function planContainers(
  services: readonly ComposeService[],
  image: DockerImage,
  net: BridgeNet,
  root: string
): Container[] {
  const volumeDir = (name: string): string => {
    const dir = join(root, 'volumes', name)
    mkdirSync(dir, { recursive: true })
    return dir
  }
  const out: Container[] = []
  for (const service of services) {
    for (let replica = 1; replica <= service.replicas; replica++) {
      const name = `${service.name}-${replica}`
      const home = join(root, 'containers', name, 'home')
      mkdirSync(home, { recursive: true })
      const volumeDirs: Record<string, string> = {}
      const mounts = service.mounts.map(m => {
        const host = m.kind === 'volume' ? volumeDir(m.source) : m.source
        if (m.kind === 'volume') volumeDirs[m.target] = host
        return { target: m.target, host }
      })
      // The image's own /data (VOLUME) is an anonymous volume per container when the service mounts nothing there.
      for (const v of image.volumes) {
        if (!mounts.some(m => m.target === v)) {
          const host = join(root, 'containers', name, 'anon', v.replace(/\//g, '_'))
          mkdirSync(host, { recursive: true })
          mounts.push({ target: v, host })
          volumeDirs[v] = host
        }
      }
      mounts.push({ target: image.workdir, host: REPO_ROOT })
      const hostPath = pathMapper(mounts)
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home }
      for (const [k, v] of Object.entries(image.env)) env[k] = hostPath(v)
      for (const [k, v] of Object.entries(service.environment)) env[k] = hostPath(v)
      const entrypoint = service.entrypoint ?? image.entrypoint
      const command =
        service.command.length > 0 || service.entrypoint !== undefined ? service.command : (image.cmd ?? [])
      const argv = program([...entrypoint, ...command].map(hostPath))
      out.push({
        service,
        replica,
        name,
        host: net.addHost(name),
        argv,
        env,
        cwd: hostPath(image.workdir),
        hostPath,
        volumeDirs,
        child: undefined
      })
    }
  }
  return out
}

/** Starts a container's process in its namespace, with the image's workdir as cwd. */
export function startContainer(c: Container): CliChild {
  c.child = spawnCommand(c.argv, { env: c.env, cwd: c.cwd, wrap: inHost(c.host), name: c.name })
  return c.child
}

/** Runs `argv` to its exit inside a container's namespace, with its environment (a healthcheck, a fetch). */
export async function execIn(c: Container, argv: readonly string[], timeoutMs: number): Promise<Finished> {
  const child = spawnCommand(program([...argv]), {
    env: c.env,
    cwd: c.cwd,
    wrap: inHost(c.host),
    name: `${c.name} exec`
  })
  try {
    const e = await child.exitWithin(timeoutMs)
    return { ...e, stdout: child.stdout(), stderr: child.stderr(), ms: child.elapsedMs() }
  } catch {
    const e = await child.stop(1_000, 'SIGKILL')
    return {
      ...e,
      stdout: child.stdout(),
      stderr: `${child.stderr()}\n(killed after ${timeoutMs} ms)`,
      ms: child.elapsedMs()
    }
  }
}

/** A healthcheck test (['CMD', ...] or ['CMD-SHELL', cmd]) as an argv. */
export function healthcheckArgv(test: readonly string[]): string[] {
  if (test[0] === 'CMD') return test.slice(1)
  if (test[0] === 'CMD-SHELL') return ['sh', '-c', test[1] ?? '']
  return [...test]
}

/** GET a path of the container's own --http server (from inside its namespace), parsed as JSON. */
export async function getJson(c: Container, port: number, path: string, timeoutMs = 20_000): Promise<unknown> {
  const script =
    `fetch('http://127.0.0.1:${port}${path}').then(async r => { if (!r.ok) { ` +
    `console.error(r.status, await r.text()); process.exit(1) } process.stdout.write(await ` +
    `r.text()) }, e => { console.error(String(e)); process.exit(1) })`
  const r = await execIn(c, ['node', '-e', script], timeoutMs)
  if (r.code !== 0) throw new Error(`${c.name}: GET ${path} failed (exit ${r.code}): ${r.stderr.slice(-500)}`)
  return JSON.parse(r.stdout) as unknown
}

/** Compose's duration strings ("20s", "1m30s", "500ms") in milliseconds. */
export function durationMs(text: string | undefined, fallbackMs: number): number {
  if (text === undefined) return fallbackMs
  let total = 0
  const re = /(\d+(?:\.\d+)?)(ms|us|h|m|s)/g
  let m: RegExpExecArray | null
  let matched = ''
  while ((m = re.exec(text)) !== null) {
    matched += m[0]
    const n = Number(m[1])
    total += n * ({ h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 } as Record<string, number>)[m[2] as string]!
  }
  if (matched !== text) throw new Error(`not a compose duration: ${text}`)
  return total
}
