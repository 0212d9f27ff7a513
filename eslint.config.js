// @ts-check
import tseslint from 'typescript-eslint'
import { dirname, relative, resolve, sep } from 'node:path'
import { allowance, isLayered, layerOf, unplacedName } from './scripts/layers.js'

/** Modules that do I/O, keep time or draw randomness: the pure core must not touch them. */
const IMPURE_MODULES = [
  'node:*',
  'fs',
  'fs/*',
  'net',
  'http',
  'https',
  'child_process',
  'os',
  'path',
  'crypto',
  'worker_threads',
  'timers',
  'timers/*',
  'libp2p',
  'libp2p/*',
  '@libp2p/tcp',
  '@libp2p/mdns',
  '@libp2p/bootstrap',
  '@libp2p/gossipsub',
  '@libp2p/logger',
  'better-sqlite3',
  '@anthropic-ai/sdk',
  'prom-client',
  '@opentelemetry/*',
  '@modelcontextprotocol/*'
]

/** A repository-relative path with forward slashes, whatever the platform. */
const fromRoot = (/** @type {string} */ file) =>
  relative(import.meta.dirname, file)
    .split(sep)
    .join('/')

/**
 * The layer rule, read from scripts/layers.js: a file under src/ or roles/
 * must sit in a declared layer, and each relative import it makes must land
 * in its own layer or in one its layer may import (an allow-list, so a new
 * folder is refused until it is placed).
 * @type {import('eslint').Rule.RuleModule}
 */
const layerImports = {
  meta: { type: 'problem', schema: [], docs: { description: 'imports follow the layers of scripts/layers.js' } },
  create(context) {
    const file = fromRoot(context.filename)
    if (!isLayered(file)) return {}
    const layer = layerOf(file)
    if (layer === undefined) {
      return {
        Program: node =>
          context.report({
            node,
            message: `${file} is in no layer: place ${unplacedName(file)} in scripts/layers.js (what it may import and why)`
          })
      }
    }
    /**
     * @param {import('estree').Node} node
     * @param {unknown} spec
     * @param {boolean} typeOnly
     */
    const check = (node, spec, typeOnly) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return
      const target = fromRoot(resolve(dirname(context.filename), spec))
      if (!isLayered(target)) return
      const to = layerOf(target)
      if (to === layer) return
      if (to === undefined) {
        context.report({ node, message: `${spec} is in no layer: place ${unplacedName(target)} in scripts/layers.js` })
      } else if (!layer.mayImport.includes(to.name)) {
        context.report({ node, message: `${layer.name} may not import ${to.name}. ${allowance(layer)}` })
      } else if (layer.typesOnly === true && !typeOnly) {
        const message = `${layer.name} imports only types (import type) of ${to.name}. ${allowance(layer)}`
        context.report({ node, message })
      }
    }
    // `import type` only: under verbatimModuleSyntax `import { type X }` still loads the module.
    const kind = (/** @type {any} */ node) => node.importKind === 'type' || node.exportKind === 'type'
    return {
      ImportDeclaration: node => check(node.source, node.source.value, kind(node)),
      ExportNamedDeclaration: node => {
        if (node.source) check(node.source, node.source.value, kind(node))
      },
      ExportAllDeclaration: node => check(node.source, node.source.value, kind(node)),
      ImportExpression: node => {
        if (node.source.type === 'Literal') check(node.source, node.source.value, false)
      },
      /** @param {any} node `import('...').T` in a type */
      TSImportType: node => check(node, node.argument?.literal?.value, true)
    }
  }
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', 'bench/zz-*'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // A file of code past 450 lines (blank lines and comments not counted) is refused: split it by concern. Test
      // files are lists of cases and are exempt (below).
      'max-lines': ['error', { max: 450, skipBlankLines: true, skipComments: true }],
      // Prettier wraps code at 120 columns (.prettierrc.json); this holds what it cannot wrap: comments and long
      // strings, which are split into pieces (URLs and regular expressions may run longer).
      'max-len': ['error', { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true }]
    }
  },
  {
    files: ['test/**/*.ts'],
    rules: { 'max-lines': 'off' }
  },
  {
    files: ['src/core/**/*.ts', 'src/wire/**/*.ts', 'src/sync/reconcile/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: IMPURE_MODULES,
              message:
                'src/core, src/wire and src/sync/reconcile are pure: pass I/O, time and randomness in as arguments.'
            }
          ]
        }
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'pure code takes no timers' },
        { name: 'setInterval', message: 'pure code takes no timers' },
        { name: 'setImmediate', message: 'pure code takes no timers' },
        { name: 'process', message: 'pure code reads no process state' },
        { name: 'performance', message: 'pure code takes no clock' }
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'pure code takes no clock: pass now in' },
        { object: 'Math', property: 'random', message: 'pure code draws no randomness: pass a seeded rng in' }
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'pure code takes no clock: pass now in'
        }
      ]
    }
  },
  {
    // The node above the pure core runs in the simulator on virtual time: it takes time, timers and
    // randomness from its injected Scheduler (src/ports/scheduler.ts), never from the globals.
    files: ['src/runtime/**/*.ts', 'src/sync/**/*.ts', 'roles/**/*.ts', 'src/sim/**/*.ts', 'src/author/**/*.ts'],
    ignores: [
      'src/sync/reconcile/**',
      'src/sync/libp2p-*.ts',
      'src/runtime/verify.ts',
      'src/sim/virtual-time.ts',
      'src/sim/run.ts'
    ],
    rules: {
      'no-restricted-globals': [
        'error',
        {
          name: 'setTimeout',
          message: 'use the injected Scheduler (after), so the simulator can run this on virtual time'
        },
        { name: 'setInterval', message: 'use the injected Scheduler (every)' },
        { name: 'setImmediate', message: 'use the injected Scheduler (soon)' }
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'use the injected Scheduler (now)' },
        {
          object: 'Math',
          property: 'random',
          message: 'use the injected Scheduler (random): a seed must replay the run'
        }
      ]
    }
  },
  {
    files: ['**/*.{ts,js,mjs}'],
    plugins: { layers: { rules: { imports: layerImports } } },
    rules: { 'layers/imports': 'error' }
  },
  {
    // Type-aware rules: a promise nobody awaits or catches is an error, wherever it is.
    files: [
      'src/**/*.ts',
      'roles/**/*.ts',
      'scripts/**/*.{ts,js}',
      'bench/**/*.ts',
      'test/**/*.ts',
      'examples/**/*.ts'
    ],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error'
    }
  }
)
