/**
 * The esbuild options every bundle of this repository shares: the CLI's
 * (scripts/build.ts) and the benchmark's baselines (bench/net/bundle.ts), so
 * a baseline loads the way a deployed node does. ESM for Node 20, a chunk
 * per lazy `import()`, native addons external, a `require` for CommonJS
 * dependencies, and dependencies that find files beside their own module
 * rewritten or refused. Both write each output through {@link oneByteText}.
 */
import { readFile } from 'node:fs/promises'
import { transform } from 'esbuild'
import type { BuildOptions, OutputFile, Plugin } from 'esbuild'

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

/** Any character outside ASCII (a surrogate pair is two: one `?` for each keeps every column where it was). */
const NOT_ASCII = /[^\x00-\x7f]/

/** `code` without comments or layout, as esbuild prints it: equal for two texts that differ only in comments. */
async function stripped(code: string): Promise<string> {
  return (await transform(code, { loader: 'js', minifyWhitespace: true, legalComments: 'none', charset: 'ascii' })).code
}

/**
 * An output file's text with every character outside ASCII made `?`, so V8
 * keeps the module's source (for lazy compilation and `toString`, as long as
 * the process lives) at one byte a character, not two. esbuild escapes such
 * characters in strings and names (`charset: 'ascii'`, its default) but
 * prints comments, and regular expressions for Node 20, as they are: one `P₄`
 * in a comment of gossipsub made the main chunk, 1.8 MB of text, cost 3.6 MB
 * of every node's heap. A file that has any left is checked: without
 * comments and layout it must print as before, so only comments changed.
 * If not (a character in a regular expression), the file stays as it was,
 * with a warning naming it. Columns stay where they were: the source map
 * still holds.
 */
export async function oneByteText(file: Pick<OutputFile, 'path' | 'text'>): Promise<string> {
  const text = file.text
  if (!file.path.endsWith('.js') || !NOT_ASCII.test(text)) return text
  const ascii = text.replace(new RegExp(NOT_ASCII, 'g'), '?')
  if ((await stripped(text)) === (await stripped(ascii))) return ascii
  console.warn(`${file.path}: a character outside ASCII outside comments; its text stays two bytes a character`)
  return text
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
