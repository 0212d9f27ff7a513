/**
 * Child processes for the network tests, with stdout split into lines and a
 * registry so an afterEach/afterAll can kill whatever is still running.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
/** The repository root, the children's cwd (so `--import tsx` resolves). */
export const REPO_ROOT = resolve(here, '..', '..')
/** Absolute path of a helper script in test/helpers. */
export function helperPath(name: string): string {
  return resolve(here, name)
}

export interface NetChild {
  readonly proc: ChildProcess
  readonly lines: string[]
  /** stderr so far (for failure messages). */
  stderr(): string
  /** The first line (past or future) matching `pred`; rejects on exit or after `timeoutMs`. */
  waitForLine(pred: (line: string) => boolean, timeoutMs?: number): Promise<string>
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Closes stdin (the polite stop), then SIGKILLs after `graceMs`; resolves on exit. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const running = new Set<NetChild>()

/** Spawns `command args` with piped stdio, cwd at the repository root. */
export function spawnNetChild(command: string, args: readonly string[]): NetChild {
  const proc = spawn(command, args, { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
  const lines: string[] = []
  let stderr = ''
  const waiters = new Set<{ pred: (line: string) => boolean; resolve: (line: string) => void }>()
  createInterface({ input: proc.stdout! }).on('line', line => {
    lines.push(line)
    for (const w of waiters) {
      if (w.pred(line)) {
        waiters.delete(w)
        w.resolve(line)
      }
    }
  })
  proc.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(resolve => {
    proc.on('close', (code, signal) => resolve({ code, signal }))
  })
  const child: NetChild = {
    proc,
    lines,
    exited,
    stderr: () => stderr,
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
              `${command} printed no matching line in ${timeoutMs} ms; last ` +
                `lines: ${lines.slice(-5).join(' | ')}; stderr: ${stderr.slice(-2000)}`
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
              `${command} exited (code ${code}, signal ${signal}) without a matching line; stderr: ${stderr.slice(-2000)}`
            )
          )
        })
      })
    },
    async stop(graceMs = 5_000) {
      proc.stdin?.end()
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs)
      const result = await exited
      clearTimeout(timer)
      running.delete(child)
      return result
    }
  }
  running.add(child)
  void exited.then(() => running.delete(child))
  return child
}

/** Stops every child still running (stdin closed, SIGKILL after a grace period). */
export async function stopNetChildren(graceMs = 3_000): Promise<void> {
  await Promise.all([...running].map(async c => c.stop(graceMs)))
}
