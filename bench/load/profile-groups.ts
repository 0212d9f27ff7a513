/**
 * Where a profiled process's time goes, by group: the table that maps a V8 CPU profile's frame (its source file after
 * the bundle's source map, and its function name) to what the node was doing. Kept apart from the code that reads the
 * profiles so it can be kept up to date as files move: a frame no rule matches takes its caller's group (a hash or a
 * CBOR call made by the fold is the fold's), and a frame with no matching caller is `other`.
 */

export const GROUPS = [
  'gossipsub and its validators',
  'decode',
  'signature verify',
  'store writes (SQLite)',
  'fold',
  'decide (roles)',
  '/status and the dashboard stream',
  'presence and sync',
  'libp2p streams and transport',
  'logging',
  'GC',
  'idle',
  'other'
] as const

export type Group = (typeof GROUPS)[number]

/**
 * One rule: a frame whose source path matches `path` (and whose function name matches `fn`, when given) is in
 * `group`. First match wins, so the narrower rules come first. `inherit` marks shared helpers whose time belongs
 * to whoever called them (the tree's derivation, hashing): they take the caller's group even when a broader rule
 * below would match them.
 *
 * Paths are as the source map names them, from `src/`, `roles/` or `node_modules/`, or Node's own `node:...`.
 */
export interface GroupRule {
  readonly path?: RegExp
  readonly fn?: RegExp
  readonly group: Group | 'inherit'
}

export const GROUP_RULES: readonly GroupRule[] = [
  { fn: /^\(idle\)$/, group: 'idle' },
  { fn: /^\(garbage collector\)$/, group: 'GC' },
  { fn: /^\(program\)$/, group: 'other' },
  // Signature checks: ours, Node's crypto under it, and libp2p's keys (used by gossipsub's own StrictSign, if on).
  { path: /^src\/runtime\/verify\.ts$/, group: 'signature verify' },
  { path: /^node:internal\/crypto\/(sig|keys)/, group: 'signature verify' },
  { path: /^node_modules\/@libp2p\/crypto\/.*\/ed25519\//, group: 'signature verify' },
  { path: /^node_modules\/@noble\/curves\//, group: 'signature verify' },
  // Shared helpers: the caller's.
  {
    path: /^src\/core\/(derive|view|tree|tree-nodes|tree-hash|task-view|node-tasks|task-chain|task-results|plan-status)\.ts$/,
    group: 'inherit'
  },
  { path: /^node_modules\/@noble\/hashes\//, group: 'inherit' },
  { path: /^src\/sync\/native-hash\.ts$/, group: 'inherit' },
  { path: /^node:internal\/crypto\/hash/, group: 'inherit' },
  // Decoding the wire bytes (and checking their shape).
  { path: /^src\/wire\//, group: 'decode' },
  { path: /^node_modules\/(cborg|@ipld\/dag-cbor)\//, group: 'decode' },
  // Gossip: the router, its protobufs and our validators in front of the replica.
  { path: /^node_modules\/@(libp2p|chainsafe)\/(libp2p-)?gossipsub\//, group: 'gossipsub and its validators' },
  { path: /^src\/net\/gossip-/, group: 'gossipsub and its validators' },
  // SQLite and the write queue in front of it.
  { path: /^src\/store\//, group: 'store writes (SQLite)' },
  { path: /^src\/runtime\/write-queue\.ts$/, group: 'store writes (SQLite)' },
  { path: /^node_modules\/better-sqlite3\//, group: 'store writes (SQLite)' },
  // The fold and the replica's ingest around it.
  { path: /^src\/core\//, group: 'fold' },
  {
    path: /^src\/runtime\/(replica|ingest-verdicts|plan-lifecycle|catch-up|open-plans|quiet-plans)\.ts$/,
    group: 'fold'
  },
  // What the roles decide, and the model calls they make.
  { path: /^roles\//, group: 'decide (roles)' },
  { path: /^src\/(llm|offline|tools|author)\//, group: 'decide (roles)' },
  { path: /^node_modules\/@anthropic-ai\//, group: 'decide (roles)' },
  // /status, the dashboard's stream and what they list.
  { path: /^src\/http\//, group: '/status and the dashboard stream' },
  { path: /^src\/runtime\/plan-lines\.ts$/, group: '/status and the dashboard stream' },
  { path: /^node:(internal\/)?_?http/, group: '/status and the dashboard stream' },
  // The background: presence, rosters, neighbours, sync sessions.
  { path: /^src\/sync\//, group: 'presence and sync' },
  { path: /^src\/net\/(presence|roster|neighbours|redialer|rate-limit)/, group: 'presence and sync' },
  // Logging and spans.
  { path: /^node_modules\/(debug|@libp2p\/logger)\//, group: 'logging' },
  { path: /^src\/telemetry\//, group: 'logging' },
  { path: /^node:internal\/console\//, group: 'logging' },
  // The rest of libp2p: connections, streams, encryption, multiplexing.
  {
    path: /^node_modules\/(@libp2p|@chainsafe|@multiformats|it-[a-z-]+|uint8arraylist|uint8arrays|protons-runtime|p-queue|main-event|race-signal|abort-error|weald|multiformats)\//,
    group: 'libp2p streams and transport'
  },
  { path: /^node:(net|internal\/stream_base_commons|internal\/streams\/)/, group: 'libp2p streams and transport' }
]

/** The group of one frame by the rules alone (undefined: no rule, or `inherit`: the caller's). */
export function ruleGroup(path: string, fn: string): Group | 'inherit' | undefined {
  for (const r of GROUP_RULES) {
    if (r.path !== undefined && !r.path.test(path)) continue
    if (r.fn !== undefined && !r.fn.test(fn)) continue
    return r.group
  }
  return undefined
}

/**
 * A source path as the rules see it: from `src/`, `roles/` or `node_modules/` (the last one, for nested packages),
 * or a `node:` module as it is; a path outside all of them stays as it came.
 */
export function normalPath(source: string): string {
  if (source.startsWith('node:')) return source
  const s = source.replace(/^file:\/\//, '').replace(/\\/g, '/')
  const nm = s.lastIndexOf('node_modules/')
  if (nm >= 0) return s.slice(nm)
  const m = /(?:^|\/)((?:src|roles)\/.*)$/.exec(s)
  return m?.[1] ?? s
}
