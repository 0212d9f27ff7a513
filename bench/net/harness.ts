/**
 * The parent side of the network benchmark: spawning children
 * (bench/net/child.ts), talking to them, reading their CPU and memory from
 * /proc, network namespaces, and making sure nothing outlives the run.
 */
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { REPO } from '../common/util.js'
import type { ChildCfg } from './proto.js'

const CHILD = join(REPO, 'bench', 'net', 'child.ts')

export const log = (msg: string): void => {
  process.stderr.write(`net: ${msg}\n`)
}
export const sleep = async (ms: number): Promise<void> => {
  await new Promise(resolve => setTimeout(resolve, ms))
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Line = Record<string, any>

export interface Child {
  readonly name: string
  readonly proc: ChildProcess
  readonly pid: number
  readonly peerId: string
  readonly addrs: string[]
  /** Send a command and wait for its reply (throws the child's error). */
  request(cmd: Record<string, unknown>, timeoutMs?: number): Promise<Line>
  /** Call `fn` with every line of event `ev` from now on. */
  on(ev: string, fn: (line: Line) => void): void
  /** Resolve with the first future line matching `pred`. */
  waitLine(pred: (line: Line) => boolean, timeoutMs: number): Promise<Line>
  stderrTail(): string
  /** Polite exit, SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>
}

const live = new Set<ChildProcess>()
const namespaces = new Set<string>()
const tempDirs = new Set<string>()

/** SIGKILL every child still running (synchronous: safe in an exit handler). */
export function killAll(): void {
  for (const p of live) {
    try {
      p.kill('SIGKILL')
    } catch {
      /* already gone */
    }
  }
  live.clear()
}

/** Count a process spawned elsewhere (bench/net/footprint.ts) among those killAll kills. */
export function adopt(proc: ChildProcess): void {
  hookExit()
  live.add(proc)
  proc.on('close', () => {
    live.delete(proc)
  })
}

export function cleanupAll(): void {
  killAll()
  for (const ns of namespaces) {
    try {
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    } catch {
      /* gone */
    }
  }
  namespaces.clear()
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true })
  tempDirs.clear()
}

let hooked = false
function hookExit(): void {
  if (hooked) return
  hooked = true
  process.on('exit', cleanupAll)
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      cleanupAll()
      process.exit(130)
    })
  }
}

/** A fresh directory under `base` (default the system's temp directory), removed by cleanupAll. */
export function tempDir(prefix: string, base = tmpdir()): string {
  hookExit()
  const d = mkdtempSync(join(base, prefix))
  tempDirs.add(d)
  return d
}

/**
 * Spawn a child (optionally inside a network namespace) and wait for its
 * ready line. It runs bench/net/child.ts through tsx, or `script`, that file
 * bundled (bench/net/bundle.ts), without tsx.
 */
export async function spawnChild(
  name: string,
  mode: 'peer' | 'bare',
  cfg: ChildCfg,
  opts: { netns?: string; readyTimeoutMs?: number; script?: string } = {}
): Promise<Child> {
  hookExit()
  const entry = opts.script === undefined ? ['--import', 'tsx', CHILD] : [opts.script]
  const nodeArgs = [
    process.execPath,
    ...(process.env.NET_CHILD_PROF !== undefined && mode === 'peer'
      ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.NET_CHILD_PROF]
      : []),
    ...entry,
    mode,
    JSON.stringify(cfg)
  ]
  const proc =
    opts.netns === undefined
      ? spawn(nodeArgs[0] as string, nodeArgs.slice(1), { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn('ip', ['netns', 'exec', opts.netns, ...nodeArgs], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
  live.add(proc)
  let stderr = ''
  proc.stderr!.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-8_000)
    if (process.env.NET_DEBUG !== undefined) process.stderr.write(`[${name}] ${b.toString()}`)
  })
  const listeners = new Map<string, Array<(l: Line) => void>>()
  const waiters = new Set<{ pred: (l: Line) => boolean; resolve: (l: Line) => void }>()
  const replies = new Map<number, { resolve: (l: Line) => void; reject: (e: Error) => void }>()
  let exitInfo: string | undefined
  const exited = new Promise<void>(resolve => {
    proc.on('close', (code, signal) => {
      live.delete(proc)
      exitInfo = `exited (code ${code}, signal ${signal})`
      const err = new Error(`${name} ${exitInfo}; stderr: ${stderr.slice(-2_000)}`)
      for (const r of replies.values()) r.reject(err)
      replies.clear()
      resolve()
    })
  })
  let readyLine: Line | undefined
  const ready = new Promise<Line>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`${name} not ready in ${opts.readyTimeoutMs ?? 180_000} ms; stderr: ${stderr.slice(-2_000)}`)),
      opts.readyTimeoutMs ?? 180_000
    )
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`${name} ${exitInfo ?? 'exited'} before ready; stderr: ${stderr.slice(-2_000)}`))
    })
    createInterface({ input: proc.stdout! }).on('line', raw => {
      let l: Line
      try {
        l = JSON.parse(raw) as Line
      } catch {
        return
      }
      if (l.ev === 'ready') {
        readyLine = l
        clearTimeout(timer)
        resolve(l)
        return
      }
      if (l.ev === 'reply') {
        const r = replies.get(l.rid as number)
        if (r !== undefined) {
          replies.delete(l.rid as number)
          if (typeof l.error === 'string') r.reject(new Error(`${name}: ${l.error}`))
          else r.resolve(l)
        }
        return
      }
      for (const fn of listeners.get(l.ev as string) ?? []) fn(l)
      for (const w of waiters)
        if (w.pred(l)) {
          waiters.delete(w)
          w.resolve(l)
        }
    })
  })
  let rid = 0
  try {
    await ready
  } catch (err) {
    proc.kill('SIGKILL')
    throw err
  }
  const info = readyLine as Line
  if (info.pid !== proc.pid) log(`warning: ${name} reports pid ${info.pid as number}, spawned pid ${proc.pid ?? '?'}`)
  return {
    name,
    proc,
    pid: info.pid as number,
    peerId: info.peerId as string,
    addrs: info.addrs as string[],
    request(cmd, timeoutMs = 120_000) {
      if (exitInfo !== undefined) return Promise.reject(new Error(`${name} ${exitInfo}`))
      const id = ++rid
      return new Promise<Line>((resolve, reject) => {
        const timer = setTimeout(() => {
          replies.delete(id)
          reject(new Error(`${name}: no reply to ${String(cmd.cmd)} in ${timeoutMs} ms`))
        }, timeoutMs)
        replies.set(id, {
          resolve: l => {
            clearTimeout(timer)
            resolve(l)
          },
          reject: e => {
            clearTimeout(timer)
            reject(e)
          }
        })
        proc.stdin!.write(JSON.stringify({ ...cmd, rid: id }) + '\n')
      })
    },
    on(ev, fn) {
      const list = listeners.get(ev) ?? []
      list.push(fn)
      listeners.set(ev, list)
    },
    waitLine(pred, timeoutMs) {
      return new Promise<Line>((resolve, reject) => {
        const w = {
          pred,
          resolve: (l: Line) => {
            clearTimeout(timer)
            resolve(l)
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(w)
          reject(new Error(`${name}: no matching line in ${timeoutMs} ms`))
        }, timeoutMs)
        waiters.add(w)
      })
    },
    stderrTail: () => stderr,
    async stop(graceMs = 4_000) {
      if (exitInfo !== undefined) return
      try {
        proc.stdin!.end()
      } catch {
        /* closed */
      }
      const timer = setTimeout(() => {
        try {
          proc.kill('SIGKILL')
        } catch {
          /* gone */
        }
      }, graceMs)
      await exited
      clearTimeout(timer)
    }
  }
}

export async function stopChildren(children: readonly Child[]): Promise<void> {
  await Promise.all(
    children.map(async c => {
      await c.stop()
    })
  )
}

/** Poll every child's state until `ok` holds for all of them. */
export async function waitAll(
  what: string,
  children: readonly Child[],
  ok: (s: Line, c: Child) => boolean,
  timeoutMs: number
): Promise<Line[]> {
  const deadline = Date.now() + timeoutMs
  let states: Line[] = []
  for (;;) {
    states = await Promise.all(children.map(async c => await c.request({ cmd: 'state' })))
    if (states.every((s, i) => ok(s, children[i] as Child))) return states
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting ` +
          (`for ${what}: ` +
            JSON.stringify(
              states.map(s => ({
                connected: s.connected,
                topicPeers: s.topicPeers,
                meshPeers: s.meshPeers,
                held: s.held,
                recv: s.recv
              }))
            ))
      )
    await sleep(250)
  }
}

let clkTck: number | undefined
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim())
    } catch {
      clkTck = 100
    }
    if (!(clkTck > 0)) clkTck = 100
  }
  return clkTck
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // After "pid (comm) ": state is field 3, so utime (14) and stime (15) are rest[11] and rest[12].
  return (Number(rest[11]) + Number(rest[12])) / ticksPerSecond()
}

/** Resident set size in MiB (VmRSS). */
export function rssMb(pid: number): number {
  return rssParts(pid).rss
}

/** VmRSS and its anonymous and file-backed parts (RssAnon, RssFile), in MiB. */
export function rssParts(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string): number => {
    const m = new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(status)
    return m === null ? NaN : Number(m[1]) / 1024
  }
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') }
}

export function sh(cmd: string, args: readonly string[]): void {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** A network namespace with loopback up, deleted by cleanupAll. */
export function makeNetns(name: string): string {
  hookExit()
  sh('ip', ['netns', 'add', name])
  namespaces.add(name)
  sh('ip', ['-n', name, 'link', 'set', 'lo', 'up'])
  return name
}

export function deleteNetns(name: string): void {
  try {
    sh('ip', ['netns', 'del', name])
  } catch {
    /* gone */
  }
  namespaces.delete(name)
}
