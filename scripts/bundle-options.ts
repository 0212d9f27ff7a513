/**
 * The esbuild options every bundle of this repository shares: the CLI's
 * (scripts/build.ts) and the benchmark's baselines (bench/net/bundle.ts), so
 * a baseline loads the way a deployed node does. ESM for Node 20, a chunk
 * per lazy `import()`, native addons external, a `require` for CommonJS
 * dependencies, and dependencies that find files beside their own module
 * rewritten or refused.
 */
import { readFile } from 'node:fs/promises'
import type { BuildOptions, Plugin } from 'esbuild'

/** Native addons: loaded from node_modules as they are, never bundled. */
const EXTERNAL = ['better-sqlite3']

const REQUIRE_BANNER =
  "import { createRequire as __planSwarmCreateRequire } from 'node:module'; const require = __planSwarmCreateRequire(import.meta.url);"

const FILE_BESIDE_MODULE = /import\.meta\.url|__dirname|__filename/
const CREATE_REQUIRE = /\b(?:const|let|var)\s+(\w+)\s*=\s*createRequire\(import\.meta\.url\);?/

/**
 * Dependencies that find files beside their own module (import.meta.url,
 * __dirname, __filename) would look beside the bundle instead, and fail only
 * when that line runs. The one way in use, `const req =
 * createRequire(import.meta.url); req('../../package.json')`
 * (@achingbrain/ssdp, for its version), becomes a plain `require` of the
 * same path, which esbuild resolves and inlines. Any other use fails the
 * build, naming the file.
 */
export const besideOwnModule: Plugin = {
  name: 'beside-own-module',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async args => {
      const source = await readFile(args.path, 'utf8')
      if (!FILE_BESIDE_MODULE.test(source)) return undefined
      const decl = CREATE_REQUIRE.exec(source)
      const name = decl?.[1]
      const contents =
        decl === null || name === undefined
          ? source
          : source
              .replace(decl[0], '')
              .replace(new RegExp(`\\b${name}\\(\\s*('[^']+'|"[^"]+")\\s*\\)`, 'g'), 'require($1)')
      if (FILE_BESIDE_MODULE.test(contents) || (name !== undefined && new RegExp(`\\b${name}\\b`).test(contents))) {
        throw new Error(
          `${args.path} finds files beside its own module, which the bundle moves: make it external ` +
            `in scripts/bundle-options.ts, or teach besideOwnModule its pattern`
        )
      }
      return { contents, loader: 'js' }
    })
  }
}

/** What both bundles set alike; each adds its entry points, output directory and output options. */
export const BUNDLE_OPTIONS: BuildOptions = {
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
}
