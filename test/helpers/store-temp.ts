/**
 * Temp dirs and child processes for the store's integration tests.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
/** The repository root, the children's cwd (so `--import tsx` resolves). */
export const REPO_ROOT = resolve(here, '..', '..')
const CHILD = join(here, 'store-child.ts')

/** Rows per putMany in the writer child. */
export const BATCH = 50

/** The id of the n-th event the writer child stores under `seed`, so the test can recompute it. */
export function writerId(seed: string, n: number): string {
  return createHash('sha256').update(`${seed}:${n}`).digest('hex')
}

export { removeTempDirs, tempDir } from './cli-process.js'

/** A running store-child.ts with its stdout split into lines. */
export interface Child {
  readonly proc: ChildProcess
  readonly pid: number
  /** Every stdout line so far. */
  readonly lines: string[]
  /** Resolves with the first line (past or future) matching `pred`; rejects on exit or timeout. */
  waitForLine(pred: (line: string) => boolean, timeoutMs?: number): Promise<string>
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>
}

/** Children not yet reaped, killed by `killChildren` in an afterEach. */
const running = new Set<Child>()

export function spawnStoreChild(args: readonly string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: REPO_ROOT,
    stdio: ['pipe', 'pipe', 'pipe']
  })
  const pid = proc.pid
  if (pid === undefined) throw new Error('could not spawn the store child process')
  const lines: string[] = []
  let stderr = ''
  const waiters = new Set<{ pred: (line: string) => boolean; resolve: (line: string) => void }>()
  createInterface({ input: proc.stdout }).on('line', line => {
    lines.push(line)
    for (const w of waiters) {
      if (w.pred(line)) {
        waiters.delete(w)
        w.resolve(line)
      }
    }
  })
  proc.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(resolve => {
    // 'close' comes after stdout is drained, so `lines` is complete by then.
    proc.on('close', (code, signal) => resolve({ code, signal }))
  })

  const child: Child = {
    proc,
    pid,
    lines,
    exited,
    waitForLine(pred, timeoutMs = 20_000) {
      const seen = lines.find(pred)
      if (seen !== undefined) return Promise.resolve(seen)
      return new Promise<string>((resolve, reject) => {
        const w = {
          pred,
          resolve: (line: string) => {
            clearTimeout(timer)
            resolve(line)
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(w)
          reject(
            new Error(
              `store child ${pid} printed no matching line in ${timeoutMs} ms; stdout: ${lines.slice(-5).join(' | ')}; stderr: ${stderr}`
            )
          )
        }, timeoutMs)
        waiters.add(w)
        void exited.then(({ code, signal }) => {
          if (!waiters.has(w)) return
          waiters.delete(w)
          clearTimeout(timer)
          reject(
            new Error(
              `store child ${pid} exited (code ${code}, signal ${signal}) without a matching line; stderr: ${stderr}`
            )
          )
        })
      })
    },
    async kill() {
      proc.kill('SIGKILL')
      await exited
      running.delete(child)
    }
  }
  running.add(child)
  void exited.then(() => running.delete(child))
  return child
}

/** SIGKILLs every child still running. */
export async function killChildren(): Promise<void> {
  await Promise.all([...running].map(async c => c.kill()))
}
