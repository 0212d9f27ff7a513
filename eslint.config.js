// @ts-check
import tseslint from 'typescript-eslint'
import { builtinRules } from 'eslint/use-at-your-own-risk'

/** Modules that do I/O, keep time or draw randomness: the pure core must not touch them. */
const IMPURE_MODULES = [
  'node:*', 'fs', 'fs/*', 'net', 'http', 'https', 'child_process', 'os', 'path', 'crypto', 'worker_threads', 'timers', 'timers/*',
  'libp2p', 'libp2p/*', '@libp2p/tcp', '@libp2p/mdns', '@libp2p/bootstrap', '@libp2p/gossipsub', '@libp2p/logger',
  'better-sqlite3', '@anthropic-ai/sdk', 'prom-client', '@opentelemetry/*', '@modelcontextprotocol/*'
]

/**
 * The layer rule: ESLint's own no-restricted-imports under a name of its
 * own, so a layer block and the purity block above can both hold for the
 * same file (two settings of one rule name would replace each other).
 */
const layers = { rules: { 'no-restricted-imports': /** @type {import('eslint').Rule.RuleModule} */ (builtinRules.get('no-restricted-imports')) } }

/** Import patterns naming these project folders, from wherever the importing file sits. */
const folders = (/** @type {string[]} */ ...names) => names.map(n => `**/${n}/**`)

/**
 * The layers, lowest first (docs/architecture.md). Each may import only
 * what lies below it; the composition roots (src/app, src/sim, src/commands,
 * src/cli.ts) sit on top and are not listed.
 */
const LAYERS = [
  {
    files: ['src/errors.ts'],
    forbid: folders('core', 'wire', 'ports', 'runtime', 'net', 'store', 'sync', 'llm', 'http', 'author', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/errors.ts is a leaf every layer may throw from: it imports nothing of the project.'
  },
  {
    files: ['src/core/**/*.ts', 'src/wire/**/*.ts'],
    forbid: folders('ports', 'runtime', 'net', 'store', 'sync', 'llm', 'http', 'author', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/core and src/wire are the pure base: they import only each other, so the fold and the codec run anywhere (the simulator, a browser, a property test).'
  },
  {
    files: ['src/ports/**/*.ts'],
    forbid: folders('runtime', 'net', 'store', 'sync', 'llm', 'http', 'author', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/ports holds the seams (NodeView, Transport, EventStore, Scheduler): it may name types of src/core and src/wire only, so either side of a seam can change without the other.'
  },
  {
    files: ['src/net/**/*.ts', 'src/store/**/*.ts', 'src/sync/**/*.ts', 'src/llm/**/*.ts'],
    forbid: folders('runtime', 'http', 'author', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/net, src/store, src/sync and src/llm are adapters below the runtime: they implement ports and never reach up to the replica, the roles or the HTTP server.'
  },
  {
    files: ['src/runtime/**/*.ts'],
    forbid: folders('http', 'author', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/runtime serves the NodeView: what sits above it (roles, HTTP, author actions, commands, composition roots) is wired in by src/app or src/sim, never imported.'
  },
  {
    files: ['src/author/**/*.ts'],
    forbid: folders('runtime', 'net', 'store', 'sync', 'http', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/author acts through a NodeView only (publish, me, roster): the same code serves the commands, the dashboard and the simulator.'
  },
  {
    files: ['src/http/**/*.ts'],
    forbid: folders('runtime', 'net', 'store', 'sync', 'roles', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'src/http reads and publishes through a NodeView only (and src/author for submit and cancel), so it serves a libp2p peer and a simulated node alike.'
  },
  {
    files: ['src/mcp/**/*.ts'],
    forbid: folders('runtime', 'net', 'store', 'sync', 'http', 'app', 'sim', 'commands'),
    message: 'src/mcp serves the swarm as MCP tools through a NodeView (with src/author for the author\'s actions and the outside executor of roles/), so it runs over any node; src/app starts it.'
  },
  {
    files: ['src/telemetry/**/*.ts'],
    forbid: folders('runtime', 'net', 'store', 'sync', 'http', 'author', 'roles', 'app', 'sim', 'commands', 'mcp'),
    message: 'src/telemetry turns what a node authors and its model calls into spans: it sees the node through a NodeView and wraps an LlmProvider (core, wire, ports, llm only), so it can trace a libp2p peer and a simulated node alike; src/app wires it in.'
  },
  {
    files: ['roles/**/*.ts'],
    forbid: folders('runtime', 'net', 'store', 'sync', 'http', 'author', 'app', 'sim', 'commands', 'telemetry', 'mcp'),
    message: 'roles see their node through a NodeView only (RoleContext.view), so the same roles run on a libp2p peer and in the seeded simulator.'
  }
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
    files: ['src/core/**/*.ts', 'src/wire/**/*.ts', 'src/sync/reconcile/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: IMPURE_MODULES, message: 'src/core, src/wire and src/sync/reconcile are pure: pass I/O, time and randomness in as arguments.' }]
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
  },
  {
    // The node above the pure core runs in the simulator on virtual time: it takes time, timers and
    // randomness from its injected Scheduler (src/ports/scheduler.ts), never from the globals.
    files: ['src/runtime/**/*.ts', 'src/sync/**/*.ts', 'roles/**/*.ts', 'src/sim/**/*.ts', 'src/author/**/*.ts'],
    ignores: ['src/sync/reconcile/**', 'src/sync/libp2p-*.ts', 'src/runtime/verify.ts', 'src/sim/virtual-time.ts', 'src/sim/run.ts'],
    rules: {
      'no-restricted-globals': ['error',
        { name: 'setTimeout', message: 'use the injected Scheduler (after), so the simulator can run this on virtual time' },
        { name: 'setInterval', message: 'use the injected Scheduler (every)' },
        { name: 'setImmediate', message: 'use the injected Scheduler (soon)' }
      ],
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'use the injected Scheduler (now)' },
        { object: 'Math', property: 'random', message: 'use the injected Scheduler (random): a seed must replay the run' }
      ]
    }
  },
  ...LAYERS.map(l => ({
    files: l.files,
    plugins: { layers },
    rules: { 'layers/no-restricted-imports': ['error', { patterns: [{ group: l.forbid, message: l.message }] }] }
  }))
)
