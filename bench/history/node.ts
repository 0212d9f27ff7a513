/**
 * The processes of `npm run bench -- history` (bench/history/index.ts): a CLI node
 * in a process group of its own, its /status, /metrics and sync log lines,
 * its RSS and CPU (/proc) and the bytes on its TCP connections (`ss`).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { cliEnv } from '../../test/helpers/cli-process.js'
import { sampleProc } from '../common/swarm.js'
import { HISTORY_SWARM } from './gen-history.js'
import { REPO, loadNow } from '../common/util.js'
import type { ChildProcess } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import type { CliMode } from '../common/util.js'

/** The bearer token of the decomposer's --mcp-http, through which the bench submits goals. */
export const MCP_TOKEN = 'bench-history-token'
/** The sync service's line for a finished session (src/sync/libp2p-service.ts, DEBUG=plan-swarm:sync). */
const SYNC_FAILED = /sync (inbound|outbound) (\S+) failed after (\d+) ms: (.*)$/
const SYNC_LINE =
  /sync (inbound|outbound) (\S+): ok, (\d+) rounds, (\d+)\/(\d+) events in\/out, (\d+)\/(\d+) bytes in\/out, (\d+) ms/

export const say = (s: string): void => {
  console.error(s)
}
export const sleep = async (ms: number): Promise<void> => {
  await new Promise(r => setTimeout(r, ms))
}
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

export interface Options {
  readonly sizes: number[]
  readonly trials: number
  readonly startTimeoutMs: number
  readonly catchupTimeoutMs: number
  readonly idsetRuns: number
  readonly cpuProf: string | undefined
  readonly newcomer: boolean
  /** ms the --history open newcomer is watched after its claim; 0 leaves it out. */
  readonly openWatchMs: number
  readonly cli: CliMode
}

/** One finished sync session, as the node's sync service logged it. */
export interface SyncSession {
  readonly at: number
  readonly direction: string
  readonly peer: string
  readonly rounds: number
  readonly eventsIn: number
  readonly eventsOut: number
  readonly bytesIn: number
  readonly bytesOut: number
  readonly ms: number
}

export interface Started {
  readonly peerId: string
  readonly addresses: string[]
  readonly mcp?: string
  readonly mcpToken?: string
}

export interface Node {
  readonly name: string
  readonly pid: number
  readonly http: string
  readonly httpPort: number
  readonly spawnedAt: number
  readonly syncs: SyncSession[]
  /** Sessions that failed, as logged: when, how long they ran, why. */
  readonly syncFailures: Array<{ at: number; ms: number; error: string }>
  /** The `started` line (stdout, --json), once printed. */
  started(): Started | undefined
  exitInfo(): string | undefined
  stderrTail(): string
  stop(graceMs?: number): Promise<void>
}

const live = new Set<ChildProcess>()
const dirs = new Set<string>()
let hooked = false

/** Remove `dir` when this process exits, however it exits (the copies of a 1M store are gigabytes). */
export function removeOnExit(dir: string): () => void {
  hookExit()
  dirs.add(dir)
  return () => {
    dirs.delete(dir)
    rmSync(dir, { recursive: true, force: true })
  }
}

function hookExit(): void {
  if (hooked) return
  hooked = true
  const killAll = (): void => {
    for (const p of live)
      try {
        if (p.pid !== undefined) process.kill(-p.pid, 'SIGKILL')
      } catch {
        /* gone */
      }
  }
  process.on('exit', () => {
    killAll()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(sig, () => {
      killAll()
      process.exit(130)
    })
}

let setpriv: boolean | undefined
function hasSetpriv(): boolean {
  setpriv ??= spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' }).status === 0
  return setpriv
}

export async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>(r => srv.listen(0, '127.0.0.1', r))
  const port = (srv.address() as AddressInfo).port
  await new Promise<void>(r => srv.close(() => r()))
  return port
}

function cliArgv(mode: CliMode, prof: string | undefined): string[] {
  const flags = prof === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${prof}`]
  return mode === 'tsx'
    ? [process.execPath, ...flags, '--import', 'tsx', join(REPO, 'src', 'cli.ts')]
    : [process.execPath, ...flags, join(REPO, 'dist', 'src', 'cli.js')]
}

/**
 * A CLI node in a process group of its own. Its stdout is read and dropped
 * (a node prints every plan of /status every 5 s: at 10k plans, megabytes a
 * line), except the `started` line; its stderr is scanned for the sync
 * service's session lines.
 */
export async function spawnNode(
  o: Options,
  name: string,
  role: string,
  dir: string,
  home: string,
  extra: readonly string[],
  prof?: string
): Promise<Node> {
  hookExit()
  const httpPort = await freePort()
  const argv = [
    ...cliArgv(o.cli, prof),
    '--role',
    role,
    '--swarm',
    HISTORY_SWARM,
    '--no-mdns',
    '--listen',
    '/ip4/127.0.0.1/tcp/0',
    '--data-dir',
    dir,
    '--http',
    `127.0.0.1:${httpPort}`,
    '--json',
    '--provider',
    'offline',
    ...extra
  ]
  const full = hasSetpriv() ? ['setpriv', '--pdeathsig', 'KILL', '--', ...argv] : argv
  const env = cliEnv(home, { DEBUG: 'plan-swarm:sync', PLAN_SWARM_MCP_TOKEN: MCP_TOKEN })
  const spawnedAt = Date.now()
  const proc = spawn(full[0] as string, full.slice(1), {
    cwd: REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  live.add(proc)
  let started: Started | undefined
  let exitInfo: string | undefined
  let tail = ''
  const syncs: SyncSession[] = []
  const syncFailures: Array<{ at: number; ms: number; error: string }> = []
  createInterface({ input: proc.stdout! }).on('line', line => {
    if (started !== undefined || !line.slice(0, 80).includes('"event":"started"')) return
    const o = JSON.parse(line) as Record<string, unknown>
    started = {
      peerId: o.peerId as string,
      addresses: o.addresses as string[],
      mcp: o.mcp as string | undefined,
      mcpToken: o.mcpToken as string | undefined
    }
  })
  createInterface({ input: proc.stderr! }).on('line', line => {
    const f = SYNC_FAILED.exec(line)
    if (f !== null) syncFailures.push({ at: Date.now(), ms: Number(f[3]), error: (f[4] as string).slice(0, 200) })
    const m = SYNC_LINE.exec(line)
    if (m === null) {
      tail = (tail + line + '\n').slice(-4_000)
      return
    }
    const n = (i: number): number => Number(m[i])
    syncs.push({
      at: Date.now(),
      direction: m[1] as string,
      peer: m[2] as string,
      rounds: n(3),
      eventsIn: n(4),
      eventsOut: n(5),
      bytesIn: n(6),
      bytesOut: n(7),
      ms: n(8)
    })
  })
  const exited = new Promise<void>(r => {
    proc.on('close', (code, signal) => {
      live.delete(proc)
      exitInfo = `exited (code ${code}, signal ${signal})`
      r()
    })
  })
  const pid = proc.pid ?? -1
  return {
    name,
    pid,
    http: `http://127.0.0.1:${httpPort}`,
    httpPort,
    spawnedAt,
    syncs,
    syncFailures,
    started: () => started,
    exitInfo: () => exitInfo,
    stderrTail: () => tail,
    async stop(graceMs = 60_000) {
      if (exitInfo !== undefined) return
      const kill = (sig: NodeJS.Signals): void => {
        try {
          process.kill(-pid, sig)
        } catch {
          /* gone */
        }
      }
      kill('SIGTERM')
      const timer = setTimeout(() => kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
      kill('SIGKILL')
    }
  }
}

export async function getJson<T>(url: string, timeoutMs = 60_000): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`)
  return (await res.json()) as T
}

/** A sample of /metrics (`name` with its labels, as written there), or undefined when it does not answer. */
export async function metric(n: Node, name: string): Promise<number | undefined> {
  try {
    const res = await fetch(`${n.http}/metrics`, { signal: AbortSignal.timeout(30_000) })
    const line = (await res.text()).split('\n').find(l => l.startsWith(`${name} `))
    return line === undefined ? undefined : Number(line.slice(name.length + 1))
  } catch {
    return undefined
  }
}

/** plan_swarm_events_stored from /metrics (the events the node holds), or undefined when it does not answer. */
export async function storedEvents(n: Node): Promise<number | undefined> {
  return await metric(n, 'plan_swarm_events_stored')
}

export interface StatusSeen {
  readonly ms: number
  readonly peerId: string
  readonly held: number
  readonly plans: number
  readonly cpuMs: number
  readonly rssMb: number
}

/** Poll /status every 100 ms from spawn: ms until it first answers, or undefined after `timeoutMs`. */
export async function awaitStatus(n: Node, timeoutMs: number): Promise<StatusSeen | undefined> {
  let told = Date.now()
  for (;;) {
    if (n.exitInfo() !== undefined) throw new Error(`${n.name} ${n.exitInfo()}: ${n.stderrTail()}`)
    try {
      const s = await getJson<{ peerId: string; events: { held: number }; plans: unknown[] }>(`${n.http}/status`)
      const ms = Date.now() - n.spawnedAt
      const p = sampleProc(n.pid)
      return {
        ms,
        peerId: s.peerId,
        held: s.events.held,
        plans: s.plans.length,
        cpuMs: p?.cpuMs ?? NaN,
        rssMb: p?.rssMb ?? NaN
      }
    } catch {
      /* not yet */
    }
    const waited = Date.now() - n.spawnedAt
    if (waited > timeoutMs) return undefined
    if (Date.now() - told > 5_000) {
      told = Date.now()
      const p = sampleProc(n.pid)
      say(
        `    ${n.name}: no /status yet after ${seconds(waited)} (CPU ${seconds(p?.cpuMs ?? 0)}, ` +
          `RSS ${Math.round(p?.rssMb ?? 0)} MB, load ${loadNow().join(' ')})`
      )
    }
    await sleep(100)
  }
}

/** Wait until `pred` holds, polling every `everyMs`; `what` names it in the progress lines. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs: number,
  progress?: () => string,
  watch: readonly Node[] = []
): Promise<T | undefined> {
  const t0 = Date.now()
  let told = t0
  for (;;) {
    const v = await fn()
    if (v !== undefined) return v
    const dead = watch.find(n => n.exitInfo() !== undefined)
    if (dead !== undefined)
      throw new Error(`${dead.name} ${dead.exitInfo()} while ${what}: ${dead.stderrTail().slice(-1_500)}`)
    if (Date.now() - t0 > timeoutMs) return undefined
    if (Date.now() - told > 5_000) {
      told = Date.now()
      say(`    ${what}: ${seconds(Date.now() - t0)}${progress === undefined ? '' : `, ${progress()}`}`)
    }
    await sleep(everyMs)
  }
}

/** Bytes on a process's established TCP connections (kernel counters), less those of its HTTP port. */
export function connectionBytes(
  pid: number,
  skipPorts: readonly number[]
): { in: number; out: number; sockets: number } {
  let text = ''
  try {
    text = execFileSync('ss', ['-tinpH', 'state', 'established'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  } catch {
    return { in: NaN, out: NaN, sockets: 0 }
  }
  const lines = text.split('\n')
  let bin = 0
  let bout = 0
  let sockets = 0
  for (let i = 0; i < lines.length; i++) {
    const head = lines[i] as string
    if (/^\s/.test(head) || !head.includes(`pid=${pid},`)) continue
    const cols = head.trim().split(/\s+/)
    const local = cols[2] ?? ''
    const port = Number(local.slice(local.lastIndexOf(':') + 1))
    if (skipPorts.includes(port)) continue
    const detail = lines[i + 1] ?? ''
    const num = (k: string): number => Number(new RegExp(`${k}:(\\d+)`).exec(detail)?.[1] ?? 0)
    bin += num('bytes_received')
    bout += num('bytes_sent')
    sockets++
  }
  return { in: bin, out: bout, sockets }
}
