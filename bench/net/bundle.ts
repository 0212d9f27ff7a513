/**
 * The benchmark's own processes as esbuild bundles, built as scripts/build.ts
 * builds the CLI (ESM, node20, a chunk per lazy import, better-sqlite3
 * external, the createRequire banner, dependencies that find files beside
 * their own module rewritten or refused), so a baseline started from one
 * loads the way a deployed node does: a few files, no tsx, no module-loader
 * thread. The options are scripts/bundle-options.ts's, as the CLI's, and so
 * is the ASCII text of each file (oneByteText).
 *
 * Put the output inside the repository (bench/net/footprint.ts uses
 * node_modules/.cache), so an external package resolves from the
 * repository's node_modules as it does for dist/src/cli.js.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { build } from 'esbuild'
import { BUNDLE_OPTIONS, oneByteText } from '../../scripts/bundle-options.js'
import { REPO } from '../common/util.js'

/**
 * Bundles `entries` (output name -> source path from the repository root)
 * into `outDir`; returns the absolute path of each entry's output file.
 */
export async function bundleEntries(entries: Record<string, string>, outDir: string): Promise<Record<string, string>> {
  const result = await build({
    ...BUNDLE_OPTIONS,
    absWorkingDir: REPO,
    entryPoints: entries,
    outdir: outDir,
    write: false
  })
  for (const f of result.outputFiles) {
    mkdirSync(dirname(f.path), { recursive: true })
    writeFileSync(f.path, await oneByteText(f))
  }
  return Object.fromEntries(Object.keys(entries).map(name => [name, join(outDir, `${name}.js`)]))
}
