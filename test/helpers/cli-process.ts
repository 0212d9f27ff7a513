/**
 * The real command line as child processes, for the CLI and compose
 * end-to-end tests: `node dist/src/cli.js ...` (or any argv), each in
 * its own process group, with stdout split into lines, a clean environment,
 * and a registry so `stopCliChildren()` in an afterEach/afterAll leaves no
 * process behind.
 *
 * No orphans: every child is a process-group leader (detached), stopped with
 * SIGTERM to the whole group and SIGKILL after a grace period; and, where
 * util-linux's setpriv exists, started with a parent-death signal, so even a
 * test worker that dies abruptly takes its direct children with it.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { ChildProcess } from 'node:child_process'

const here = dirname(fileURLToPath(import.meta.url))
/** The repository root: the children's cwd, so `--import tsx` and `src/cli.ts` resolve. */
export const REPO_ROOT = resolve(here, '..', '..')
/** The bundle `npm run build` writes (scripts/build.ts): what a deployment runs with `node`. */
export const BUILT_CLI = join(REPO_ROOT, 'dist', 'src', 'cli.js')
/**
 * The argv prefix of every CLI invocation: the bundle, which vitest's
 * globalSetup (./build-cli.ts) builds once per run from the current sources.
 * A process of it starts in a fraction of the CPU the sources through tsx
 * take (ADR-0031), and the suite starts hundreds.
 */
export const CLI = [process.execPath, BUILT_CLI] as const
/** `npm start` without npm: the sources through tsx, for the tests about what the sources load. */
export const SOURCE_CLI = [process.execPath, '--import', 'tsx', join(REPO_ROOT, 'src', 'cli.ts')] as const

/** Exit codes the CLI documents (src/cli.ts, src/commands/client.ts). */
export const EXIT = {
  OK: 0,
  FAILURE: 1,
  CONFIG: 2,
  DATA_DIR_IN_USE: 3,
  PORT_IN_USE: 4,
  CANCELLED: 5,
  TIMEOUT: 6
} as const

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface CliChild {
  readonly proc: ChildProcess
  readonly pid: number
  readonly name: string
  /** Every stdout line so far. */
  readonly lines: string[]
  stdout(): string
  stderr(): string
  /** Milliseconds since spawn. */
  elapsedMs(): number
  /** The first stdout line (past or future) matching `pred`; rejects when the process exits first or after `timeoutMs`. */
  waitForLine(pred: (line: string) => boolean, timeoutMs: number): Promise<string>
  /** The first stdout line that is a JSON object matching `pred`. */
  waitForJson(pred: (o: Record<string, unknown>) => boolean, timeoutMs: number): Promise<Record<string, unknown>>
  readonly exited: Promise<Exit>
  /** Resolves with the exit, or rejects after `timeoutMs` (the process is left running for stop()). */
  exitWithin(timeoutMs: number): Promise<Exit>
  /** SIGTERM (or `signal`) to the process group, SIGKILL after `graceMs`; resolves on exit. */
  stop(graceMs?: number, signal?: NodeJS.Signals): Promise<Exit>
  /** The last stdout and stderr, for failure messages. */
  tail(chars?: number): string
}

export interface SpawnOptions {
  /** The complete environment (see cliEnv). */
  env: NodeJS.ProcessEnv
  cwd?: string
  /** A display name for messages. */
  name?: string
  /** Argv run before the command, e.g. ['ip', 'netns', 'exec', NS]. */
  wrap?: readonly string[]
  /** Signal the child gets when this test worker dies (default SIGKILL); null for none. */
  parentDeathSignal?: 'KILL' | 'TERM' | null
}

const running = new Set<CliChild>()
/** Process groups ever started, so leftovers of a leader that already exited (npm's script, a demo's nodes) can be killed too. */
const groups = new Set<number>()

let setprivChecked: boolean | undefined
function hasSetpriv(): boolean {
  if (setprivChecked === undefined) {
    const r = spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' })
    setprivChecked = r.error === undefined && r.status === 0
  }
  return setprivChecked
}

/** Spawns `argv` (argv[0] is the program) in a new process group with piped stdio. */
export function spawnCommand(argv: readonly string[], opts: SpawnOptions): CliChild {
  const death = opts.parentDeathSignal === undefined ? 'KILL' : opts.parentDeathSignal
  const full = [
    ...(opts.wrap ?? []),
    ...(death !== null && hasSetpriv() ? ['setpriv', '--pdeathsig', death, '--'] : []),
    ...argv
  ]
  const started = Date.now()
  const proc = spawn(full[0] as string, full.slice(1), {
    cwd: opts.cwd ?? REPO_ROOT,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  const name =
    opts.name ??
    argv
      .slice(argv[0] !== process.execPath ? 0 : argv[1] === BUILT_CLI ? 2 : 3)
      .join(' ')
      .slice(0, 80)
  const lines: string[] = []
  let out = ''
  let err = ''
  const waiters = new Set<(line: string) => void>()
  createInterface({ input: proc.stdout! }).on('line', line => {
    lines.push(line)
    out += `${line}\n`
    for (const w of [...waiters]) w(line)
  })
  proc.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString()
  })
  const exited = new Promise<Exit>(resolve => {
    proc.on('close', (code, signal) => {
      resolve({ code, signal })
    })
    proc.on('error', () => {
      resolve({ code: null, signal: null })
    })
  })
  const tail = (chars = 3_000): string =>
    `[${name}] stdout: ${out.slice(-chars)}\n[${name}] stderr: ${err.slice(-chars)}`
  const child: CliChild = {
    proc,
    pid: proc.pid ?? -1,
    name,
    lines,
    stdout: () => out,
    stderr: () => err,
    elapsedMs: () => Date.now() - started,
    tail,
    exited,
    waitForLine(pred, timeoutMs) {
      const seen = lines.find(pred)
      if (seen !== undefined) return Promise.resolve(seen)
      return new Promise<string>((resolve, reject) => {
        const w = (line: string): void => {
          if (!pred(line)) return
          waiters.delete(w)
          clearTimeout(timer)
          resolve(line)
        }
        const timer = setTimeout(() => {
          waiters.delete(w)
          reject(new Error(`${name}: no matching line within ${timeoutMs} ms\n${tail()}`))
        }, timeoutMs)
        waiters.add(w)
        void exited.then(e => {
          if (!waiters.has(w)) return
          waiters.delete(w)
          clearTimeout(timer)
          reject(new Error(`${name}: exited (code ${e.code}, signal ${e.signal}) without a matching line\n${tail()}`))
        })
      })
    },
    async waitForJson(pred, timeoutMs) {
      const line = await child.waitForLine(l => {
        const o = parseJsonLine(l)
        return o !== undefined && pred(o)
      }, timeoutMs)
      return parseJsonLine(line) as Record<string, unknown>
    },
    exitWithin(timeoutMs) {
      return new Promise<Exit>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`${name}: still running after ${timeoutMs} ms\n${tail()}`))
        }, timeoutMs)
        void exited.then(e => {
          clearTimeout(timer)
          resolve(e)
        })
      })
    },
    async stop(graceMs = 5_000, signal = 'SIGTERM') {
      killGroup(child.pid, signal)
      const timer = setTimeout(() => {
        killGroup(child.pid, 'SIGKILL')
      }, graceMs)
      const e = await exited
      clearTimeout(timer)
      // Whatever the leader left in its group (npm's children, a demo's nodes) goes too.
      killGroup(child.pid, 'SIGKILL')
      return e
    }
  }
  running.add(child)
  if (child.pid > 0) groups.add(child.pid)
  void exited.then(() => {
    running.delete(child)
  })
  return child
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 0) return
  try {
    process.kill(-pid, signal)
  } catch {
    // The group is gone.
  }
}

/** `node dist/src/cli.js ...args` (see CLI). */
export function spawnCli(args: readonly string[], opts: SpawnOptions): CliChild {
  return spawnCommand([...CLI, ...args], { ...opts, name: opts.name ?? args.slice(0, 4).join(' ') })
}

export interface Finished extends Exit {
  stdout: string
  stderr: string
  ms: number
}

/** Runs the CLI to its exit (SIGKILLed after `timeoutMs`, which fails the caller's expectations on `code`). */
export async function runCli(args: readonly string[], opts: SpawnOptions, timeoutMs = 60_000): Promise<Finished> {
  const child = spawnCli(args, opts)
  let e: Exit
  try {
    e = await child.exitWithin(timeoutMs)
  } catch {
    e = await child.stop(1_000, 'SIGKILL')
  }
  return { ...e, stdout: child.stdout(), stderr: child.stderr(), ms: child.elapsedMs() }
}

/** Stops every child still running (whole process groups). */
export async function stopCliChildren(graceMs = 5_000): Promise<void> {
  await Promise.all([...running].map(async c => c.stop(graceMs)))
  for (const pgid of groups) killGroup(pgid, 'SIGKILL')
  groups.clear()
}

export function parseJsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined
  try {
    const o = JSON.parse(line) as unknown
    return typeof o === 'object' && o !== null && !Array.isArray(o) ? (o as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/**
 * The environment of a CLI child: this process's, less anything that would
 * configure plan-swarm or pick a model (PLAN_SWARM_*, ANTHROPIC_*, OPENAI_*,
 * DEMO_*), with HOME and PLAN_SWARM_HOME in `home`, so no test ever touches
 * the real ~/.plan-swarm, plus `extra` (an undefined value removes a variable).
 */
export function cliEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (
      /^(PLAN_SWARM_|ANTHROPIC_|OPENAI_|DEMO_)/.test(k) ||
      k === 'NODE_OPTIONS' ||
      k.startsWith('VITEST') ||
      k === 'TEST'
    )
      continue
    env[k] = v
  }
  env.HOME = home
  env.PLAN_SWARM_HOME = join(home, '.plan-swarm')
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k]
    else env[k] = v
  }
  return env
}

const temps: string[] = []

/** A fresh temp dir, removed by removeTempDirs(). */
export function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `plan-swarm-${label}-`))
  temps.push(dir)
  return dir
}

export function removeTempDirs(): void {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
}
