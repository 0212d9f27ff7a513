import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'

export function median (xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m] as number : ((s[m - 1] as number) + (s[m] as number)) / 2
}

export function percentile (xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))] as number
}

/** A seeded Fisher-Yates shuffle (mulberry32), so runs are repeatable. */
export function shuffle<T> (xs: readonly T[], seed: number): T[] {
  const out = [...xs]
  let a = seed >>> 0
  const rnd = (): number => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1))
    const tmp = out[i] as T
    out[i] = out[j] as T
    out[j] = tmp
  }
  return out
}

export function machine (): Record<string, unknown> {
  const c = cpus()
  return { cpu: c[0]?.model ?? 'unknown', cores: c.length, memGb: Math.round(totalmem() / 2 ** 30), node: process.version, date: new Date().toISOString() }
}

/** How a benchmark's processes run the CLI: `built` is `node dist/src/cli.js` (the bundle a deployment runs), `tsx` the sources as `npm start` runs them. */
export type CliMode = 'built' | 'tsx'

/** `--cli=`'s value (`flag` names where it came from, for the error). */
export function cliMode (v: string, flag = '--cli'): CliMode {
  if (v !== 'built' && v !== 'tsx') throw new Error(`${flag}=${v}: use built (node dist/src/cli.js, the bundle) or tsx (the sources through node --import tsx)`)
  return v
}

/** `npm run build` in the repository: the bundle `built` runs (a rebuild from unchanged sources leaves dist/ as it is). */
export function buildCli (): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'ignore', 'inherit'] })
}

/** Write a benchmark's figures to bench/results/<name>.json and return them. */
export function report (name: string, figures: Record<string, unknown>): Record<string, unknown> {
  const dir = join(import.meta.dirname, 'results')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(figures, null, 2) + '\n')
  return figures
}
