// @ts-check
/**
 * The layers of the project, declared once. Each layer is a folder or a file
 * under src/ or roles/ and lists the layers its files may import (an
 * allow-list: a layer not on it is refused, and so is a folder no layer
 * covers). eslint.config.js builds its import rule from this module, and
 * `npm run docs:layers` writes the table in docs/architecture.md from it;
 * test/unit/layers.test.ts fails when that table is stale or when a folder
 * under src/ is in no layer.
 *
 * Plain JavaScript with JSDoc types, so the ESLint config loads it without
 * a TypeScript loader and the tests import it as they are.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * @typedef {object} Layer
 * @property {string} name the folder (`src/core`) or file (`src/errors.ts`) it covers, relative to the repository
 * @property {string} what what lives there, for the table in docs/architecture.md
 * @property {readonly string[]} mayImport the layers its files may import (besides its own files)
 * @property {boolean} [typesOnly] true when its imports of other layers must be `import type`
 * @property {string} why one sentence: why it may import only these
 */

/** The folders whose every file must sit in a layer. */
export const LAYERED_ROOTS = ['src', 'roles']

/** The layers below the composition roots; a composition root may import any of them. */
const LIBRARY = [
  'src/errors.ts',
  'src/core',
  'src/wire',
  'src/ports',
  'src/sync',
  'src/store',
  'src/net',
  'src/llm',
  'src/offline',
  'src/tools',
  'src/runtime',
  'src/author',
  'src/http',
  'src/telemetry',
  'roles',
  'src/mcp',
  'src/a2a'
]

/** @type {readonly Layer[]} Lowest first: a layer may import only layers listed before it. */
export const LAYERS = [
  {
    name: 'src/errors.ts',
    what: '`ConfigError`, the one user-input error class (exit code 2); `src/runtime/config.ts` re-exports it.',
    mayImport: [],
    why: 'a leaf that the runtime, the author actions, roles and MCP all throw from, so it can import nothing.'
  },
  {
    name: 'src/core',
    what:
      'The pure fold: event types, HLC, dep rules, `Fold`, `EventSet`, `derivePlan`, `treeHash`, `view`, and ' +
      'the ordered id set with range fingerprints (`IdSet`, and the `SyncIds` interface a store may keep instead) ' +
      'that sync reconciles. No I/O, no clock, no randomness.',
    mayImport: [],
    why: 'the fold is a pure function of the set of events, so it runs anywhere (the simulator, a property test).'
  },
  {
    name: 'src/wire',
    what: 'Pure bytes: the canonical codec, `decodeEvent`, ids, signatures, peer keys, shapes, topic names, varints.',
    mayImport: ['src/core'],
    why: "the codec encodes the core's event types and nothing else, so it stays pure and runs anywhere."
  },
  {
    name: 'src/ports',
    what:
      'The seams: `NodeView`, `Transport` and `TransportHost`, `EventStore`, `Scheduler` ' +
      '(`realScheduler`, `seededRandom`).',
    mayImport: ['src/core', 'src/wire'],
    typesOnly: true,
    why: 'a seam names only the types of the pure base, so either side of it can change without the other.'
  },
  {
    name: 'src/sync',
    what: 'Set reconciliation (pure, in `reconcile/`) and the sync stream, sessions and libp2p protocol beside it.',
    mayImport: ['src/core', 'src/wire', 'src/ports'],
    why: 'an adapter below the runtime: it reconciles through the ports and never reaches up to the replica.'
  },
  {
    name: 'src/store',
    what:
      'The SQLite event store (WAL) with the sync id set it keeps on disk (`StoredIds`), the memory store, the ' +
      'identity key and the data-dir lock.',
    mayImport: ['src/core', 'src/wire', 'src/ports'],
    why: 'an adapter below the runtime: it implements `EventStore` and never reaches up to the replica.'
  },
  {
    name: 'src/net',
    what:
      'The libp2p shell: node assembly, gossip and its validators, discovery, admission, presence, roster, ' +
      'neighbours, relay and NAT.',
    mayImport: ['src/core', 'src/wire', 'src/ports', 'src/sync'],
    why: 'an adapter below the runtime: it implements `Transport`, mounts the sync protocol, and never reaches up.'
  },
  {
    name: 'src/llm',
    what:
      'The provider interface, the model providers (Anthropic, OpenAI-compatible), prompts, validation and the ' +
      'tool loop.',
    mayImport: ['src/core', 'src/wire', 'src/ports'],
    why: "an adapter below the runtime: a provider turns a plan's text into answers and knows no node."
  },
  {
    name: 'src/offline',
    what:
      'The offline provider (`createOfflineProvider`): deterministic heuristics that stand in for a model: a ' +
      "goal's kind read from cue words, a plan shape per kind, step guides by verb, fixed tool calls.",
    mayImport: ['src/core', 'src/wire', 'src/llm'],
    why:
      "it is one more provider, so it builds on src/llm's interface and tool loop and knows no node; only the " +
      'composition roots, which choose a provider, import it.'
  },
  {
    name: 'src/tools',
    what:
      "The executor's tools over MCP: the tools file (`parseToolsConfig`, `loadToolsFile`: Claude's `mcpServers` " +
      'format plus `allow` and `tags`) and `startToolHost`, which runs the stdio and HTTP servers, restarts ' +
      'those that die and serves their tools as a `ToolBox`.',
    mayImport: ['src/errors.ts', 'src/core', 'src/llm'],
    why:
      "an adapter below the runtime: it serves the executor's tools over MCP through the ToolBox of src/llm " +
      'and knows no node.'
  },
  {
    name: 'src/runtime',
    what:
      'The replica loop (`Replica`: decode, verify, fold, store, notify), config, metrics, the version. ' +
      '`startNodeRuntime` wires a store and a transport to a replica and serves the `NodeView`.',
    mayImport: ['src/errors.ts', 'src/core', 'src/wire', 'src/ports', 'src/sync', 'src/store', 'src/net', 'src/llm'],
    why: 'it serves the NodeView; what sits above it is wired in by src/app or src/sim, never imported.'
  },
  {
    name: 'src/author',
    what:
      "The author's actions (`planParams`, `parseCommittee`, `scorersInSight`, `publishGoal`, `checkAuthor`, " +
      '`publishCancel`; `publishAmend`, `publishRaiseBudget`, `publishRetry` in plan-actions.ts) and a ' +
      "person's (`castVote`, `castReview`, `awaitingMe` in person-events.ts), done through a `NodeView`.",
    mayImport: ['src/errors.ts', 'src/core', 'src/wire', 'src/ports', 'src/llm'],
    why: 'it acts through a NodeView only, so the same code serves the commands, the dashboard and the simulator.'
  },
  {
    name: 'src/http',
    what:
      '`startHttpServer(host, port, view)`: `/status`, `/plans`, `/plans/<id>`, `/plans/<id>/events`, `/plans/<id>/summary`, ' +
      "`/metrics`; and the observer's dashboard (`dashboardSource(view)`, `createDashboard`).",
    mayImport: ['src/core', 'src/wire', 'src/ports', 'src/llm', 'src/author'],
    why:
      'it reads and publishes through a NodeView (and src/author), so it serves a libp2p peer and a ' +
      'simulated node alike.'
  },
  {
    name: 'src/telemetry',
    what:
      'OpenTelemetry: spans derived from the events a node authors (trace id from the plan id, span ids ' +
      'from event ids) and model-call spans around an `LlmProvider`; otel-export.ts alone loads the SDK, ' +
      'when an OTLP endpoint is set.',
    mayImport: ['src/core', 'src/wire', 'src/ports', 'src/llm'],
    why:
      'it sees the node through a NodeView and wraps an LlmProvider, so it traces a libp2p peer and a ' +
      'simulated node alike; src/app wires it in.'
  },
  {
    name: 'roles',
    what:
      '`startRole(ctx, handler)` with `RoleContext = { view, provider, say }`; the decomposer, scorer and ' +
      'executor (`decide(tree, now)` gives intents, then `act`; the claim rules and the claim book that the model, ' +
      'A2A and outside executors share); the outside executor ' +
      '(`createOutsideExecutor(view, opts)`: claims, renewals and results for agents and people); the observer ' +
      '(`startObserver(view, opts)`) and `renderTree` / `renderMarkdown`.',
    mayImport: ['src/errors.ts', 'src/core', 'src/wire', 'src/ports', 'src/llm'],
    why:
      'roles see their node through a NodeView only, so the same roles run on a libp2p peer and in the ' +
      'seeded simulator.'
  },
  {
    name: 'src/mcp',
    what:
      'The swarm as MCP tools and resources (`createSwarmMcp(tools, version)`: a factory of McpServers ' +
      'over one node) and the Streamable HTTP endpoint with its token, Origin and Host checks (`startMcpHttp`).',
    mayImport: ['src/errors.ts', 'src/core', 'src/wire', 'src/ports', 'src/llm', 'src/author', 'roles'],
    why:
      'it serves tools through a NodeView, the author actions and the outside executor of roles/, so it ' +
      'runs over any node; src/app starts it.'
  },
  {
    name: 'src/a2a',
    what:
      'The swarm over A2A (Agent2Agent v1.0): an A2A server whose tasks are plans (`startA2aHttp`), and an ' +
      'executor that hands the tasks it takes to a remote A2A agent (`startA2aExecutor`).',
    mayImport: ['src/errors.ts', 'src/core', 'src/wire', 'src/ports', 'src/llm', 'src/author', 'roles', 'src/mcp'],
    why:
      'like MCP it serves a NodeView through the author actions and the outside executor of roles/, and shares ' +
      "MCP's plan summaries and HTTP checks, so it runs over any node; src/app starts it."
  },
  {
    name: 'src/polyfill.ts',
    what: "`Promise.withResolvers` for Node 20, imported first by every entry point and by vitest's setup.",
    mayImport: [],
    why: 'it must run before anything else is loaded, so it imports nothing.'
  },
  {
    name: 'src/app',
    what:
      'A composition root: `startPeer` puts libp2p, SQLite and HTTP around the node runtime; `runNode` ' +
      "starts a role, the observer or the dashboard on a peer's `view`; `runMcp` serves MCP on stdio over a " +
      'peer of its own; `createProvider` picks the model provider (or the offline one) from flags and environment.',
    mayImport: LIBRARY,
    why: 'a composition root wires the layers below together; the other roots build on it, not it on them.'
  },
  {
    name: 'src/sim',
    what:
      'A composition root: the deterministic simulator, the same node runtime and roles over a virtual ' +
      'network and clock.',
    mayImport: LIBRARY,
    why: 'a composition root wires the layers below together, over a simulated network instead of libp2p.'
  },
  {
    name: 'src/commands',
    what:
      'A composition root: the client commands (`submit`, `cancel`, `amend`, `raise-budget`, `retry`, ' +
      '`export`, `task`, `id`, `inbox`, `vote`, `review`), each over `startPeer` and `peer.view`.',
    mayImport: [...LIBRARY, 'src/app'],
    why: 'a command is a short-lived peer (src/app) that acts through the layers below it.'
  },
  {
    name: 'src/cli.ts',
    what: 'The entry point: it parses arguments and dispatches to src/app and src/commands.',
    mayImport: [...LIBRARY, 'src/polyfill.ts', 'src/app', 'src/sim', 'src/commands'],
    why: 'the top of the program: it may import every layer and nothing imports it.'
  }
]

// Each layer may import only layers declared before it, so no import can close a circle.
LAYERS.forEach((l, i) => {
  for (const m of l.mayImport) {
    const at = LAYERS.findIndex(o => o.name === m)
    if (at < 0) throw new Error(`scripts/layers.js: ${l.name} may import ${m}, which is no layer`)
    if (at >= i) throw new Error(`scripts/layers.js: ${l.name} may import ${m}, which is not below it`)
  }
})

/** @param {string} p */
const withoutExtension = p => p.replace(/\.[cm]?[jt]sx?$/, '')

/**
 * The layer a repository-relative path (forward slashes) belongs to, or
 * undefined. A path to a file layer matches with any of .ts or .js, so an
 * import specifier (`../errors.js`) and the file (`src/errors.ts`) agree.
 * @param {string} path
 * @returns {Layer | undefined}
 */
export function layerOf(path) {
  const bare = withoutExtension(path)
  return LAYERS.find(l =>
    /\.[jt]s$/.test(l.name) ? withoutExtension(l.name) === bare : path === l.name || path.startsWith(`${l.name}/`)
  )
}

/**
 * Whether a repository-relative path lies where every file must be in a layer.
 * @param {string} path
 */
export function isLayered(path) {
  return LAYERED_ROOTS.some(r => path.startsWith(`${r}/`))
}

/**
 * What to add to this module for a path no layer covers: its top folder
 * under src/ (or the file itself when it sits directly in src/).
 * @param {string} path
 */
export function unplacedName(path) {
  const parts = path.split('/')
  return parts.length > 2 ? parts.slice(0, 2).join('/') : path
}

/**
 * The sentence a refused import reports: what the layer may import, and why.
 * @param {Layer} layer
 */
export function allowance(layer) {
  const list = layer.mayImport.length === 0 ? 'nothing of the project' : layer.mayImport.join(', ')
  const kind = layer.typesOnly === true ? ' (types only)' : ''
  return `${layer.name} may import ${list}${kind}: ${layer.why}`
}

/** @param {string} s */
const cell = s => s.replaceAll('|', '\\|')

/** @param {string} name */
const code = name => `\`${name}${/\.[jt]s$/.test(name) ? '' : '/'}\``

/**
 * The layer table of docs/architecture.md, lowest layer first.
 * @returns {string}
 */
export function renderLayerTable() {
  const rows = LAYERS.map(l => {
    const imports =
      l.mayImport.length === 0
        ? 'nothing of the project'
        : l.mayImport.map(code).join(', ') + (l.typesOnly === true ? ' (types only)' : '')
    return `| ${code(l.name)} | ${cell(l.what)} | ${imports} | ${cell(l.why)} |`
  })
  return ['| Layer | What it is | May import | Why |', '| --- | --- | --- | --- |', ...rows].join('\n')
}

export const TABLE_START = '<!-- layers:start: generated from scripts/layers.js by `npm run docs:layers` -->'
export const TABLE_END = '<!-- layers:end -->'

/**
 * The document with the text between the two markers replaced by the table.
 * @param {string} doc
 * @returns {string}
 */
export function withLayerTable(doc) {
  const start = doc.indexOf(TABLE_START)
  const end = doc.indexOf(TABLE_END)
  if (start < 0 || end < start) throw new Error(`the document lacks the markers ${TABLE_START} ... ${TABLE_END}`)
  return `${doc.slice(0, start + TABLE_START.length)}\n${renderLayerTable()}\n${doc.slice(end)}`
}

/** The architecture page, relative to this module. */
export const ARCHITECTURE_DOC = fileURLToPath(new URL('../docs/architecture.md', import.meta.url))

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const before = readFileSync(ARCHITECTURE_DOC, 'utf8')
  const after = withLayerTable(before)
  if (after !== before) writeFileSync(ARCHITECTURE_DOC, after)
  console.log(`docs/architecture.md: ${after === before ? 'the layer table is current' : 'layer table written'}`)
}
