/**
 * `npm run build`: the CLI as one esbuild bundle, `dist/src/cli.js`, plus a
 * chunk per lazy `import()` (MCP, the model providers, the node itself,
 * OpenTelemetry), so each stays off the start path of a command that does
 * not need it. Why a bundle: loading libp2p and the rest as thousands of
 * small ESM files cost about 1.1 s of CPU per start; on 2 cores, starting 40
 * nodes took most of the 30 s the scale figure allows (ADR-0031).
 *
 * What the bundle keeps working, and how:
 * - better-sqlite3 stays external (a native addon found through `bindings`
 *   from its own package directory), resolved from node_modules at run time.
 * - CommonJS dependencies (ws, prom-client, debug, ...) call `require` for
 *   Node's modules; ESM output has none, so every output file opens with one
 *   made by createRequire (the banner).
 * - The dashboard reads its files from `static/` beside the module holding
 *   src/http/dashboard/routes.ts (STATIC_DIR, from import.meta.url): they
 *   are copied, with their folders (js/ holds the page's modules), beside
 *   whichever output file esbuild put that module in.
 * - A dependency that finds a file beside its own module would look beside
 *   the bundle instead: see besideOwnModule (scripts/bundle-options.ts,
 *   with the options the benchmark's bundles share).
 * - Every file's text is ASCII, comments included (oneByteText): V8 keeps a
 *   module's source in memory, at two bytes a character if one is not.
 * - The verify workers run source text (`eval: true`), so there is no
 *   worker file to bundle.
 *
 * Types are checked by `npm run typecheck`, not here: esbuild only strips them.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { BUNDLE_OPTIONS, oneByteText } from './bundle-options.js'

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const DIST = join(REPO_ROOT, 'dist')
const OUT_DIR = join(DIST, 'src')
const ROUTES = 'src/http/dashboard/routes.ts'
const STATIC_SRC = join(REPO_ROOT, 'src', 'http', 'dashboard', 'static')

const result = await build({
  ...BUNDLE_OPTIONS,
  absWorkingDir: REPO_ROOT,
  entryPoints: { cli: 'src/cli.ts' },
  outdir: OUT_DIR,
  sourcemap: 'linked',
  metafile: true,
  write: false
})

const withRoutes = Object.entries(result.metafile.outputs)
  .filter(([, out]) => out.inputs[ROUTES] !== undefined)
  .map(([file]) => file)
if (withRoutes.length !== 1)
  throw new Error(
    `expected ${ROUTES} in exactly one output file, found it in ${withRoutes.length}: ${withRoutes.join(', ')}`
  )
const staticDir = join(REPO_ROOT, dirname(withRoutes[0] as string), 'static')

const files = new Map<string, Uint8Array>(
  await Promise.all(result.outputFiles.map(async f => [f.path, Buffer.from(await oneByteText(f))] as const))
)
for (const name of readdirSync(STATIC_SRC, { recursive: true, encoding: 'utf8' })) {
  const from = join(STATIC_SRC, name)
  if (statSync(from).isFile()) files.set(join(staticDir, name), readFileSync(from))
}
for (const [path, bytes] of files) writeIfChanged(path, bytes)
pruneExcept(DIST, new Set(files.keys()))

/**
 * Writes only what changed, each file by rename, and removes what the build
 * no longer makes: a build from unchanged sources leaves dist/ as it was, so
 * the processes of a test or benchmark that runs dist/src/cli.js meanwhile
 * (and load their lazy chunks later) never see a missing or half-written file.
 */
function writeIfChanged(path: string, bytes: Uint8Array): void {
  if (existsSync(path) && Buffer.from(bytes).equals(readFileSync(path))) return
  mkdirSync(dirname(path), { recursive: true })
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, bytes)
  renameSync(tmp, path)
}

/** Removes every file under `dir` but `keep` (and another build's files in flight), then the directories left empty. */
function pruneExcept(dir: string, keep: ReadonlySet<string>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) pruneExcept(path, keep)
    else if (!keep.has(path) && !entry.name.endsWith('.tmp')) rmSync(path, { force: true })
  }
  if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true, force: true })
}
