/**
 * Vitest's globalSetup (vitest.config.ts): builds the CLI bundle,
 * dist/src/cli.js (`npm run build`, scripts/build.ts), once per test run and
 * before any test file starts, so the tests that spawn the CLI run the
 * bundle (test/helpers/cli-process.ts) instead of paying tsx's transpile
 * and thousands of module loads at every process start.
 *
 * The build is skipped when dist/ is fresh: its stamp (dist/.built, written
 * here) is newer than every file the bundle is made from (src/, roles/,
 * package.json, the build script and its options, and the installed
 * dependencies' lock). A fresh clone has no dist/, so `npm test` builds it;
 * an edit to a source file makes the next run build again. The build writes
 * only the files that changed, each by rename (scripts/build.ts), so a run
 * that builds while another run's processes use dist/ does them no harm.
 */
import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync, utimesSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const STAMP = join(REPO_ROOT, 'dist', '.built')
const BUNDLE = join(REPO_ROOT, 'dist', 'src', 'cli.js')
/** What the bundle is made from: folders walked whole, and single files. */
const INPUT_DIRS = ['src', 'roles']
const INPUT_FILES = [
  'package.json',
  'package-lock.json',
  'scripts/build.ts',
  'scripts/bundle-options.ts',
  'node_modules/.package-lock.json'
]

/** The newest modification time (ms) of the bundle's inputs. */
function newestInput(): number {
  let newest = 0
  const visit = (path: string): void => {
    const st = statSync(path, { throwIfNoEntry: false })
    if (st === undefined) return
    if (st.isDirectory()) {
      newest = Math.max(newest, st.mtimeMs)
      for (const name of readdirSync(path)) visit(join(path, name))
    } else newest = Math.max(newest, st.mtimeMs)
  }
  for (const dir of INPUT_DIRS) visit(join(REPO_ROOT, dir))
  for (const file of INPUT_FILES) visit(join(REPO_ROOT, file))
  return newest
}

/** True when dist/ was built after the last change to any input. */
export function bundleIsFresh(): boolean {
  if (!existsSync(BUNDLE)) return false
  const stamp = statSync(STAMP, { throwIfNoEntry: false })
  return stamp !== undefined && stamp.mtimeMs > newestInput()
}

/** Builds dist/ unless it is fresh; throws with the build's output when the build fails. */
export function buildCliOnce(): void {
  if (bundleIsFresh()) return
  // The stamp takes the time the build started: a source edited during the build makes the next run build again.
  const started = new Date()
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'scripts', 'build.ts')], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe']
  })
  if (r.status !== 0)
    throw new Error(
      `building the CLI bundle for the tests failed (exit ${r.status ?? r.signal}); ` +
        `run \`npm run build\` to see why\n${r.stdout}${r.stderr}`
    )
  mkdirSync(dirname(STAMP), { recursive: true })
  closeSync(openSync(STAMP, 'w'))
  utimesSync(STAMP, started, started)
}

export default function setup(): void {
  buildCliOnce()
}
