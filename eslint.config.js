// @ts-check
import tseslint from 'typescript-eslint'

/** Modules that do I/O, keep time or draw randomness: the pure core must not touch them. */
const IMPURE_MODULES = [
  'node:*', 'fs', 'fs/*', 'net', 'http', 'https', 'child_process', 'os', 'path', 'crypto', 'worker_threads', 'timers', 'timers/*',
  'libp2p', 'libp2p/*', '@libp2p/tcp', '@libp2p/mdns', '@libp2p/bootstrap', '@libp2p/gossipsub', '@libp2p/logger',
  'better-sqlite3', '@anthropic-ai/sdk', 'prom-client'
]

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', 'bench/zz-*'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error'
    }
  },
  {
    files: ['src/core/**/*.ts', 'src/wire/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: IMPURE_MODULES, message: 'src/core and src/wire are pure: pass I/O, time and randomness in as arguments.' }]
      }],
      'no-restricted-globals': ['error',
        { name: 'setTimeout', message: 'pure code takes no timers' },
        { name: 'setInterval', message: 'pure code takes no timers' },
        { name: 'setImmediate', message: 'pure code takes no timers' },
        { name: 'process', message: 'pure code reads no process state' },
        { name: 'performance', message: 'pure code takes no clock' }
      ],
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'pure code takes no clock: pass now in' },
        { object: 'Math', property: 'random', message: 'pure code draws no randomness: pass a seeded rng in' }
      ],
      'no-restricted-syntax': ['error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'pure code takes no clock: pass now in' }
      ]
    }
  }
)
