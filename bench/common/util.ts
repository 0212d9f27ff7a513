import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join, resolve } from 'node:path'

/** The repository's root, whatever folder of bench/ a module sits in: where processes run and paths start. */
export const REPO = resolve(import.meta.dirname, '..', '..')

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length === 0 ? NaN : s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
}

/** Rounded to one, two or three decimals, as the figures are reported. */
export const r1 = (x: number): number => Math.round(x * 10) / 10
export const r2 = (x: number): number => Math.round(x * 100) / 100
export const r3 = (x: number): number => Math.round(x * 1000) / 1000

/** The load averages (1, 5, 15 minutes) now, to two decimals: reported beside every figure. */
export const loadNow = (): number[] => loadavg().map(r2)

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(p * s.length))] as number)
}

export function machine(): Record<string, unknown> {
  const c = cpus()
  return {
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    memGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    date: new Date().toISOString()
  }
}

/**
 * How a benchmark's processes run the CLI: `built` is `node dist/src/cli.js` (the bundle a deployment runs), `tsx` the
 * sources as `npm start` runs them.
 */
export type CliMode = 'built' | 'tsx'

/** `--cli=`'s value (`flag` names where it came from, for the error). */
export function cliMode(v: string, flag = '--cli'): CliMode {
  if (v !== 'built' && v !== 'tsx')
    throw new Error(
      `${flag}=${v}: use built (node dist/src/cli.js, the bundle) or tsx (the sources through node --import tsx)`
    )
  return v
}

/** `npm run build` in the repository: the bundle `built` runs (a rebuild from unchanged sources leaves dist/ as it is). */
export function buildCli(): void {
  execFileSync('npm', ['run', '--silent', 'build'], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'inherit']
  })
}

const results = { dir: join(REPO, 'bench', 'results') }

/**
 * bench/results/, created if missing. Git ignores it: a run's outputs are the run's own, and the figures a
 * reader needs are in BENCHMARKS.md.
 */
export function resultsDir(): string {
  mkdirSync(results.dir, { recursive: true })
  return results.dir
}

/**
 * Where `report` and `resultsDir` write from now on: `npm run bench -- quick` runs other benchmarks with smaller
 * options and keeps their outputs in a folder of its own, so a short run never replaces a full run's files.
 */
export function setResultsDir(dir: string): void {
  results.dir = dir
}

/** Write a benchmark's figures to bench/results/<name>.json and return them. */
export function report(name: string, figures: Record<string, unknown>): Record<string, unknown> {
  writeFileSync(join(resultsDir(), `${name}.json`), JSON.stringify(figures, null, 2) + '\n')
  return figures
}

/** A system tool a benchmark runs, and the Debian package that has it. */
export interface Tool {
  readonly cmd: string
  readonly pkg: string
}

export const IP: Tool = { cmd: 'ip', pkg: 'iproute2' }
export const SS: Tool = { cmd: 'ss', pkg: 'iproute2' }
export const NFT: Tool = { cmd: 'nft', pkg: 'nftables' }

/** Thrown when a benchmark cannot run here; bench/run.ts prints its message alone, as one line. */
export class BenchUnavailable extends Error {}

const onPath = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0
const isRoot = (): boolean => process.getuid?.() === 0

/**
 * Make sure `tools` are here before `what` starts, as .ci/run does for the tests: as root with apt-get at hand,
 * installs the missing packages; otherwise throws one line that says what to install. `root`: `what` needs root
 * itself (network namespaces).
 */
export function requireTools(what: string, tools: readonly Tool[], opts: { root?: boolean } = {}): void {
  if (opts.root === true && !isRoot()) {
    throw new BenchUnavailable(`${what} needs root (it builds network namespaces): run it as root`)
  }
  const missing = tools.filter(t => !onPath(t.cmd))
  if (missing.length === 0) return
  const pkgs = [...new Set(missing.map(t => t.pkg))]
  const cmds = missing.map(t => t.cmd).join(', ')
  const install = `apt-get install -y ${pkgs.join(' ')}`
  if (!isRoot() || !onPath('apt-get')) throw new BenchUnavailable(`${what} needs ${cmds}, not found: ${install}`)
  console.error(`${what}: ${cmds} not found; installing ${pkgs.join(' ')} (apt-get)`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const apt = (args: string[]): boolean =>
    spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'inherit'] }).status === 0
  if (!apt(['update', '-qq']) || !apt(['install', '-y', '-qq', ...pkgs])) {
    throw new BenchUnavailable(`${what} needs ${cmds}, and ${install} failed`)
  }
  const still = missing.filter(t => !onPath(t.cmd))
  if (still.length > 0)
    throw new BenchUnavailable(`${what}: ${still.map(t => t.cmd).join(', ')} still not found after ${install}`)
}
