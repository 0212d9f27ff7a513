/**
 * The benchmark's own processes as esbuild bundles, built as scripts/build.ts
 * builds the CLI (ESM, node20, a chunk per lazy import, better-sqlite3
 * external, the createRequire banner, dependencies that find files beside
 * their own module rewritten or refused), so a baseline started from one
 * loads the way a deployed node does: a few files, no tsx, no module-loader
 * thread. scripts/build.ts runs its build when imported, so its options are
 * repeated here: keep the two alike.
 *
 * Put the output inside the repository (bench/net-footprint.ts uses
 * node_modules/.cache), so an external package resolves from the
 * repository's node_modules as it does for dist/src/cli.js.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { build } from 'esbuild'
import type { Plugin } from 'esbuild'
import { REPO } from './net-harness.js'

const EXTERNAL = ['better-sqlite3']
const REQUIRE_BANNER = "import { createRequire as __planSwarmCreateRequire } from 'node:module'; const require = __planSwarmCreateRequire(import.meta.url);"
const FILE_BESIDE_MODULE = /import\.meta\.url|__dirname|__filename/
const CREATE_REQUIRE = /\b(?:const|let|var)\s+(\w+)\s*=\s*createRequire\(import\.meta\.url\);?/

/** scripts/build.ts's besideOwnModule, unchanged. */
const besideOwnModule: Plugin = {
  name: 'beside-own-module',
  setup (b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async args => {
      const source = await readFile(args.path, 'utf8')
      if (!FILE_BESIDE_MODULE.test(source)) return undefined
      const decl = CREATE_REQUIRE.exec(source)
      const name = decl?.[1]
      const contents = decl === null || name === undefined
        ? source
        : source.replace(decl[0], '').replace(new RegExp(`\\b${name}\\(\\s*('[^']+'|"[^"]+")\\s*\\)`, 'g'), 'require($1)')
      if (FILE_BESIDE_MODULE.test(contents) || (name !== undefined && new RegExp(`\\b${name}\\b`).test(contents))) {
        throw new Error(`${args.path} finds files beside its own module, which the bundle moves (see scripts/build.ts)`)
      }
      return { contents, loader: 'js' }
    })
  }
}

/**
 * Bundles `entries` (output name -> source path from the repository root)
 * into `outDir`; returns the absolute path of each entry's output file.
 */
export async function bundleEntries (entries: Record<string, string>, outDir: string): Promise<Record<string, string>> {
  await build({
    absWorkingDir: REPO,
    entryPoints: entries,
    outdir: outDir,
    entryNames: '[name]',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    banner: { js: REQUIRE_BANNER },
    plugins: [besideOwnModule],
    logLevel: 'warning'
  })
  return Object.fromEntries(Object.keys(entries).map(name => [name, join(outDir, `${name}.js`)]))
}
