import { parseArgs } from 'node:util'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { multiaddr } from '@multiformats/multiaddr'
import { ConfigError } from '../errors.js'
import { MAX_TURNS } from '../core/limits.js'
import { DEFAULT_OPEN_PLANS_PER_AUTHOR } from '../core/admission.js'
import { DEFAULT_KEEP_ARCHIVES_DAYS } from './retention.js'

/** Goals one node takes from its dashboard and MCP in any 60 s (`--goals-per-minute`, src/author/goal-rate.ts). */
export const DEFAULT_GOALS_PER_MINUTE = 60
import { DEFAULT_TOOL_LIMITS, type ToolLoopLimits } from '../llm/types.js'
import type { NetworkOptions } from '../net/nat.js'

export { ConfigError } from '../errors.js'

export const ROLES = ['decomposer', 'scorer', 'executor', 'observer'] as const
/** A node's role; 'client' is the short-lived peer of submit, cancel and the other author commands. */
export type Role = (typeof ROLES)[number] | 'client'

/**
 * Every command besides running a node (`--role`), as `npm start -- <usage>`: the source of `--help`,
 * of the unknown-command error and of docs/cli.md, so none of them can name a command that does not exist.
 */
export const COMMANDS = [
  { name: 'submit', usage: 'submit "<goal>" [--wait] [plan options]', help: 'publish a goal (prints the plan id)' },
  { name: 'cancel', usage: 'cancel <plan-id> [--reason TEXT]', help: "cancel a plan, as the goal's author" },
  {
    name: 'amend',
    usage: 'amend <plan-id> --committee ID,... [--quorum N]',
    help: "change a plan's committee, as its author"
  },
  {
    name: 'raise-budget',
    usage: 'raise-budget <plan-id> --budget N',
    help: "raise a plan's token budget, as its author"
  },
  { name: 'retry', usage: 'retry <plan-id> <task-id>', help: "run a failed task again, as the plan's author" },
  {
    name: 'export',
    usage: 'export <plan-id> --markdown [FILE] | --json',
    help: 'write a plan and its deliverable out'
  },
  { name: 'mcp', usage: 'mcp [options]', help: 'an MCP server on stdio, with a swarm node of its own (role client)' },
  {
    name: 'task',
    usage: 'task next [--plan ID] | done <task-id> --file FILE | release <task-id>',
    help: 'do a task yourself (plans with --executors outside|any)'
  },
  { name: 'id', usage: 'id', help: "this key's peer id, for another author's --committee or --approver" },
  { name: 'inbox', usage: 'inbox', help: 'splits and results that wait for this key' },
  {
    name: 'vote',
    usage: 'vote <plan-id> <node-id> --choose P1|none [--notes TEXT]',
    help: "cast a person's ballot on a split"
  },
  {
    name: 'review',
    usage: 'review <plan-id> <task-id> --accept|--reject [--notes TEXT]',
    help: 'accept or reject a result'
  },
  {
    name: 'import',
    usage: 'import <archive.jsonl> --data-dir DIR',
    help: "put an expired plan's archive back into a stopped node's store, checking every event"
  },
  { name: 'keygen', usage: 'keygen [FILE]', help: 'write a new pre-shared swarm key to FILE (or stdout)' }
] as const

export type CommandName = (typeof COMMANDS)[number]['name']

/** Every long option, its kind, and what it is for (also the source of `--help`). */
export const OPTIONS = {
  role: { type: 'string', help: 'decomposer | scorer | executor | observer' },
  swarm: { type: 'string', help: 'swarm name; peers only talk within one swarm (default "default")' },
  listen: { type: 'string', multiple: true, help: 'multiaddr to listen on (repeatable; default /ip4/0.0.0.0/tcp/0)' },
  bootstrap: { type: 'string', multiple: true, help: 'multiaddr of a peer to dial and keep redialing (repeatable)' },
  'no-mdns': { type: 'boolean', help: 'do not discover peers by mDNS on the LAN' },
  announce: {
    type: 'string',
    multiple: true,
    help:
      'public multiaddr to announce instead of the ones found (repeatable; env comma-separated), ' +
      'e.g. /ip4/203.0.113.7/tcp/4001 on a VM or behind a port forward'
  },
  relay: {
    type: 'boolean',
    help: 'serve circuit relay v2 to swarm members behind NAT (run it on a node others can dial)'
  },
  upnp: { type: 'boolean', help: 'ask the router for a port forward by UPnP (IGD)' },
  websockets: {
    type: 'boolean',
    help: 'also dial (and, with a /ws --listen address, accept) WebSockets, for networks that let only HTTP-like traffic out'
  },
  'swarm-key': { type: 'string', help: 'pre-shared key file (from `keygen`): only peers with the same key connect' },
  'allow-peers': { type: 'string', help: 'file of peer ids (one per line): only these peers may connect' },
  'max-peers': {
    type: 'string',
    help: 'connections this node keeps at most (default 24); the gossip mesh reaches everyone else'
  },
  'data-dir': {
    type: 'string',
    help: 'where events and the identity key live (default: lowest free ~/.plan-swarm/<swarm>/<role>-<n>)'
  },
  http: {
    type: 'string',
    help: "HOST:PORT for /status, /plans/<id>, /metrics, and the observer's live dashboard at / (e.g. 127.0.0.1:7070)"
  },
  'mcp-http': {
    type: 'string',
    help: 'HOST:PORT for an MCP server over Streamable HTTP on this node (at /mcp; needs the bearer token it prints)'
  },
  a2a: {
    type: 'string',
    help:
      'HOST:PORT for an A2A (Agent2Agent v1.0) server on this node: JSON-RPC at /a2a, its Agent Card at ' +
      '/.well-known/agent-card.json (needs the bearer token it prints)'
  },
  'a2a-agent': {
    type: 'string',
    help:
      'executor: URL of an A2A agent (its Agent Card, or the base URL that serves /.well-known/agent-card.json) ' +
      'that does every task this executor takes'
  },
  'worker-silence-s': {
    type: 'string',
    help:
      "MCP, `task` and --a2a-agent: stop renewing an outside worker's lease after it is silent this many seconds " +
      '(default 600)'
  },
  'allow-submit': {
    type: 'boolean',
    help:
      "observer: let the dashboard submit goals, cancel plans, vote and review (signed with this observer's key; " +
      'needs the token it prints)'
  },
  tools: {
    type: 'string',
    help: 'executor: an MCP client config (mcpServers, as Claude Desktop reads it) of the tools it offers to plans'
  },
  'max-steps': { type: 'string', help: 'executor with --tools: model turns per task before it fails (default 20)' },
  'tool-timeout-s': { type: 'string', help: 'executor with --tools: seconds one tool call may take (default 60)' },
  'tool-result-bytes': {
    type: 'string',
    help: 'executor with --tools: bytes of one tool result the model sees; the rest is cut, saying so (default 16384)'
  },
  'goals-per-minute': {
    type: 'string',
    help: 'goals this node takes from its dashboard, MCP and A2A in any minute (default 60; 0: no limit); more are refused'
  },
  'keep-archives': {
    type: 'string',
    help:
      'days this node keeps the archive of each expired plan in <data-dir>/archive (default 30; 0: none; forever: ' +
      "every one). Expiry itself follows each goal's retain-days on every node"
  },
  history: {
    type: 'string',
    help:
      'all (default): fetch the whole history from peers; open: keep only the plans under way and those seen ' +
      'finishing here, never fetching finished plans (for a node that joins a swarm with a long history)'
  },
  'open-plans-per-author': {
    type: 'string',
    help:
      "plans one author may have under way (default 20; 0: no limit): a goal beyond them waits for the author's " +
      'earlier plans to finish. Give every node the same value'
  },
  provider: {
    type: 'string',
    help: 'anthropic | openai | offline (default: anthropic when ANTHROPIC_API_KEY is set, else offline)'
  },
  model: { type: 'string', help: 'model name for the provider' },
  'cheap-model': { type: 'string', help: 'cheaper model used when a plan has less than 20% of its budget left' },
  otlp: {
    type: 'string',
    help: 'OTLP/HTTP endpoint to export trace spans to, e.g. http://127.0.0.1:4318 (also OTEL_EXPORTER_OTLP_ENDPOINT); off when unset'
  },
  'base-url': { type: 'string', help: 'provider base URL (Ollama, llama.cpp, a proxy)' },
  json: { type: 'boolean', help: 'print JSON lines instead of text' },
  once: { type: 'boolean', help: 'observer: print the trees once (after catching up) and exit' },
  markdown: { type: 'string', help: 'observer: write finished plans as Markdown to this file' },
  expand: {
    type: 'boolean',
    help: "observer: print every node; by default a big plan's finished and quiet subtrees print as one line of counts"
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
  version: { type: 'boolean', help: 'print the release (from package.json) and exit' }
} as const

type OptionName = keyof typeof OPTIONS | keyof typeof CLIENT_OPTIONS

export interface NodeConfig {
  readonly role: Role
  readonly swarm: string
  readonly listen: readonly string[]
  readonly bootstrap: readonly string[]
  readonly mdns: boolean
  readonly swarmKeyFile: string | undefined
  readonly allowPeersFile: string | undefined
  /** undefined: pick the default under a lock. */
  readonly dataDir: string | undefined
  readonly dataRoot: string
  readonly http: { host: string; port: number } | undefined
  /** Observer: the dashboard may publish goals and cancellations, on explicit user action, with the printed token. */
  readonly allowSubmit: boolean
  readonly provider: string | undefined
  readonly model: string | undefined
  readonly cheapModel: string | undefined
  readonly once: boolean
  readonly markdown: string | undefined
  readonly expand: boolean
  readonly baseUrl: string | undefined
  readonly json: boolean
  /** Across NATs: --announce, --relay, --upnp, --websockets. */
  readonly network: NetworkOptions
  /** Test hook: milliseconds added to this node's wall clock (PLAN_SWARM_CLOCK_OFFSET_MS). */
  readonly clockOffsetMs: number
  /** `--max-peers`: connections kept at most; undefined: DEFAULT_MAX_PEERS. */
  readonly maxPeers: number | undefined
  /** The OTLP/HTTP traces URL (`--otlp` or OTEL_EXPORTER_OTLP_ENDPOINT, plus /v1/traces); undefined: no tracing. */
  readonly otlp: string | undefined
  /** `--mcp-http HOST:PORT`: serve MCP over Streamable HTTP there. */
  readonly mcpHttp: { host: string; port: number } | undefined
  /** `--a2a HOST:PORT`: serve the A2A JSON-RPC binding and the Agent Card there. */
  readonly a2a: { host: string; port: number } | undefined
  /** `--a2a-agent URL` (executor): the remote A2A agent that does this executor's tasks; undefined: none. */
  readonly a2aAgent: string | undefined
  /** `--worker-silence-s`, in ms: an outside worker silent this long loses its task's lease renewals. */
  readonly workerSilenceMs: number
  /** `--tools FILE` (executor): the MCP servers whose tools it offers; undefined: none. */
  readonly toolsFile: string | undefined
  /** `--max-steps`, `--tool-timeout-s`, `--tool-result-bytes`: the limits of a task's tool loop. */
  readonly toolLimits: ToolLoopLimits
  /** `--open-plans-per-author`: plans one author may have under way before their next goal waits; 0: no limit. */
  readonly openPlansPerAuthor: number
  /** `--keep-archives`: days an expired plan's archive is kept; Infinity: forever. */
  readonly keepArchivesDays: number
  /** `--history`: all fetches every plan from peers; open only the plans under way. */
  readonly history: 'all' | 'open'
  /** `--goals-per-minute`: goals the dashboard and MCP take in any 60 s before refusing more; 0: no limit. */
  readonly goalsPerMinute: number
}

/** A whole-number option within bounds, or its default; a ConfigError saying the range otherwise. */
function boundedInt(
  raw: string | undefined,
  flag: string,
  min: number,
  max: number,
  fallback: number,
  unit: string
): number {
  if (raw === undefined) return fallback
  const n = Number(raw)
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new ConfigError(`--${flag} ${JSON.stringify(raw)}: expected a whole number of ${unit} from ${min} to ${max}`)
  return n
}

/** `PLAN_SWARM_<NAME>` for an option name: `--data-dir` reads PLAN_SWARM_DATA_DIR. */
export function envName(option: string): string {
  return `PLAN_SWARM_${option.replace(/-/g, '_').toUpperCase()}`
}

/** The variable an option may also be given as; none for --version, which would stop every node it reached. */
export function optionEnv(option: string): string | undefined {
  return option === 'version' ? undefined : envName(option)
}

function envValue(env: NodeJS.ProcessEnv, name: OptionName): string | string[] | boolean | undefined {
  const raw = env[envName(name)]
  if (raw === undefined || raw === '') return undefined
  const spec =
    name in OPTIONS ? OPTIONS[name as keyof typeof OPTIONS] : CLIENT_OPTIONS[name as keyof typeof CLIENT_OPTIONS]
  if (spec.type === 'boolean') {
    if (/^(1|true|yes|on)$/i.test(raw)) return true
    if (/^(0|false|no|off)$/i.test(raw)) return false
    throw new ConfigError(`${envName(name)}=${raw}: expected true or false`)
  }
  return 'multiple' in spec && spec.multiple ? raw.split(/[\s,]+/).filter(Boolean) : raw
}

export function parseHostPort(value: string, what: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value)
  const port = m === null ? NaN : Number(m[2])
  if (m === null || !(port >= 0 && port <= 65535))
    throw new ConfigError(`${what} ${JSON.stringify(value)}: expected HOST:PORT, e.g. 127.0.0.1:7070`)
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port }
}

function checkMultiaddr(value: string, flag: string): string {
  try {
    multiaddr(value)
  } catch (err) {
    throw new ConfigError(
      `--${flag} ${JSON.stringify(value)} is not a multiaddr (${(err as Error).message}); ` +
        `e.g. ${flag === 'announce' ? '/ip4/203.0.113.7/tcp/4001' : '/ip4/127.0.0.1/tcp/4001'}` +
        (flag === 'bootstrap' ? '/p2p/12D3KooW...' : '')
    )
  }
  if (flag === 'bootstrap' && !value.includes('/p2p/'))
    throw new ConfigError(`--bootstrap ${value} must end in /p2p/<peer id>: copy an address from the peer's /status`)
  return value
}

/**
 * Where trace spans go: `--otlp` (an OTLP base URL, like
 * OTEL_EXPORTER_OTLP_ENDPOINT), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as
 * given, else OTEL_EXPORTER_OTLP_ENDPOINT; a base URL gets /v1/traces.
 * OTEL_SDK_DISABLED=true turns the environment's endpoint off.
 */
export function otlpTracesUrl(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const nonEmpty = (v: string | undefined): string | undefined =>
    v === undefined || v.trim() === '' ? undefined : v.trim()
  const disabled = /^true$/i.test(env.OTEL_SDK_DISABLED ?? '')
  const full = flag === undefined && !disabled ? nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) : undefined
  const base = nonEmpty(flag) ?? (disabled ? undefined : nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT))
  const url = full ?? (base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`)
  if (url === undefined) return undefined
  const from =
    flag !== undefined
      ? '--otlp'
      : full !== undefined
        ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
        : 'OTEL_EXPORTER_OTLP_ENDPOINT'
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ConfigError(
      `${from} ${JSON.stringify(full ?? base)} is not a URL; give the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318`
    )
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new ConfigError(
      `${from} ${JSON.stringify(full ?? base)}: OTLP/HTTP needs an http:// or https:// URL, e.g. http://127.0.0.1:4318`
    )
  return url
}

/** Options of `submit`, `cancel`, `amend`, `raise-budget` and `retry`: the plan parameters and how to follow a plan. */
export const CLIENT_OPTIONS = {
  wait: { type: 'boolean', help: 'submit: follow the plan to its end and print the deliverable' },
  timeout: { type: 'string', help: 'give up waiting after this many seconds (exit code 6)' },
  committee: { type: 'string', help: 'comma-separated scorer peer ids (default: the scorers this peer sees)' },
  quorum: { type: 'string', help: 'ballots that accept a split (default: a majority of the committee)' },
  'max-depth': { type: 'string', help: 'depth of the deepest leaves (root = 0; default 3)' },
  'min-children': { type: 'string', help: 'fewest subgoals per split (default 2)' },
  'max-children': { type: 'string', help: 'most subgoals per split (default 7)' },
  'max-attempts': { type: 'string', help: 'decomposition and execution attempts (default 3)' },
  'lease-ms': { type: 'string', help: 'a claim holds a task this long between renewals (default 15000)' },
  'max-claim-ms': { type: 'string', help: 'no claim lasts longer (default 600000)' },
  'max-nodes': { type: 'string', help: 'largest tree (default 200)' },
  'retain-days': {
    type: 'string',
    help: 'submit: whole days every node keeps the plan once it is finished, 1-3650 (default 30; then archived and removed)'
  },
  budget: { type: 'string', help: 'token budget (default 2000000)' },
  'max-tokens-per-call': { type: 'string', help: 'most tokens one event may count (default 16000)' },
  'max-claims-per-executor': { type: 'string', help: 'live claims one executor may hold in this plan (default 2)' },
  review: { type: 'boolean', help: 'results need a committee quorum of accepting reviews' },
  approver: {
    type: 'string',
    multiple: true,
    help: 'submit: a person (peer id) whose ballot is needed besides the quorum (repeatable; added to the committee)'
  },
  approve: {
    type: 'string',
    help: 'submit: what approvers approve: splits | results | both (default both; splits without --review)'
  },
  executors: {
    type: 'string',
    help: 'submit: who executes tasks: model | outside | any (default model; outside: agents and people, through MCP or `task`)'
  },
  'use-tools': {
    type: 'boolean',
    help: "submit: the plan uses executors' tools: leaves may name what they need and go to executors that offer it"
  },
  reason: { type: 'string', help: 'cancel, task release: why (shown to everyone)' },
  plan: { type: 'string', help: 'task next: take a task of this plan only' },
  file: { type: 'string', help: 'task done: the file holding the result (- for stdin)' },
  choose: {
    type: 'string',
    help: 'vote: P1, P2, ... (as inbox lists the proposals), a proposal id, or none (with --notes)'
  },
  notes: { type: 'string', help: 'vote, review: what to change or redo (shown to the decomposers and executors)' },
  accept: { type: 'boolean', help: 'review: accept the result' },
  reject: { type: 'boolean', help: 'review: reject the result (with --notes); the task is redone' }
} as const

interface Parsed {
  readonly config: NodeConfig & { help: boolean; version: boolean }
  readonly values: Record<string, string | string[] | boolean | undefined>
  readonly positionals: string[]
}

function parseWith(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  extra: Record<string, { type: 'string' | 'boolean' }>,
  client: boolean
): Parsed {
  let parsed
  try {
    parsed = parseArgs({ args: [...argv], options: { ...OPTIONS, ...extra }, strict: true, allowPositionals: client })
  } catch (err) {
    throw new ConfigError(
      `${(err as Error).message.replace(/\. To specify a positional argument.*$/, '')}; see --help for the options`
    )
  }
  const v = parsed.values as Record<string, string | string[] | boolean | undefined>
  const get = <T>(name: OptionName): T | undefined => (v[name] ?? envValue(env, name)) as T | undefined
  const help = get<boolean>('help') === true
  const version = v.version === true
  const role = client ? 'client' : get<string>('role')
  if (!client && !help && !version && role === undefined)
    throw new ConfigError(`--role is required: one of ${ROLES.join(', ')}`)
  if (!client && role !== undefined && !(ROLES as readonly string[]).includes(role))
    throw new ConfigError(`--role ${role}: expected one of ${ROLES.join(', ')}`)
  const swarm = get<string>('swarm') ?? 'default'
  if (!/^[a-z0-9._-]{1,64}$/.test(swarm))
    throw new ConfigError(`--swarm ${JSON.stringify(swarm)}: use 1-64 characters of a-z, 0-9, '.', '_' or '-'`)
  const listen = (get<string[]>('listen') ?? ['/ip4/0.0.0.0/tcp/0']).map(a => checkMultiaddr(a, 'listen'))
  const bootstrap = (get<string[]>('bootstrap') ?? []).map(a => checkMultiaddr(a, 'bootstrap'))
  const announce = (get<string[]>('announce') ?? []).map(a => checkMultiaddr(a, 'announce'))
  if (announce.some(a => a.includes('/p2p-circuit')))
    throw new ConfigError(
      "--announce takes this node's own public address, not a relay (/p2p-circuit) address: a " +
        'relayed address is announced by itself once a relay holds a slot for this node'
    )
  const network: NetworkOptions = {
    announce,
    relay: get<boolean>('relay') === true,
    upnp: get<boolean>('upnp') === true,
    websockets: get<boolean>('websockets') === true
  }
  const httpValue = get<string>('http')
  const allowSubmit = !client && get<boolean>('allow-submit') === true
  if (allowSubmit && !help && role !== 'observer')
    throw new ConfigError(
      `--allow-submit is for the observer's dashboard, not --role ${role ?? ''}; drop it, or run it on an observer`
    )
  if (allowSubmit && !help && httpValue === undefined)
    throw new ConfigError('--allow-submit needs --http HOST:PORT: the dashboard that submits is served there')
  const maxPeersRaw = get<string>('max-peers')
  const maxPeers = maxPeersRaw === undefined ? undefined : Number(maxPeersRaw)
  if (maxPeers !== undefined && !(Number.isSafeInteger(maxPeers) && maxPeers >= 1 && maxPeers <= 10_000))
    throw new ConfigError(
      `--max-peers ${JSON.stringify(maxPeersRaw)}: expected a whole number from 1 to 10000 (connections this node keeps)`
    )
  const mcpHttpValue = get<string>('mcp-http')
  const silenceRaw = get<string>('worker-silence-s')
  const silence = silenceRaw === undefined ? 600 : Number(silenceRaw)
  if (!(Number.isSafeInteger(silence) && silence >= 1 && silence <= 86_400))
    throw new ConfigError(
      `--worker-silence-s ${JSON.stringify(silenceRaw)}: expected a whole number of seconds from 1 to 86400`
    )
  const toolsFile = get<string>('tools')
  if (toolsFile !== undefined && !help && role !== 'executor')
    throw new ConfigError(
      `--tools is for executors, not --role ${role ?? ''}: an executor offers tools to the tasks it takes`
    )
  const a2aValue = get<string>('a2a')
  const a2aAgent = get<string>('a2a-agent')
  if (a2aAgent !== undefined && !help) {
    if (role !== 'executor')
      throw new ConfigError(
        `--a2a-agent is for executors, not --role ${role ?? ''}: an executor hands the tasks it takes to that agent`
      )
    if (toolsFile !== undefined)
      throw new ConfigError(
        '--a2a-agent and --tools do not go together: the remote agent does the whole task with its own tools; ' +
          'run a second executor for --tools'
      )
    let url: URL | undefined
    try {
      url = new URL(a2aAgent)
    } catch {
      url = undefined
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new ConfigError(
        `--a2a-agent ${JSON.stringify(a2aAgent)}: expected an http(s) URL of an A2A agent, ` +
          'e.g. http://127.0.0.1:9999 or http://127.0.0.1:9999/.well-known/agent-card.json'
      )
  }
  const toolLimits: ToolLoopLimits = {
    maxSteps: boundedInt(get<string>('max-steps'), 'max-steps', 1, MAX_TURNS, DEFAULT_TOOL_LIMITS.maxSteps, 'turns'),
    toolTimeoutMs:
      1_000 *
      boundedInt(
        get<string>('tool-timeout-s'),
        'tool-timeout-s',
        1,
        3_600,
        DEFAULT_TOOL_LIMITS.toolTimeoutMs / 1_000,
        'seconds'
      ),
    maxResultBytes: boundedInt(
      get<string>('tool-result-bytes'),
      'tool-result-bytes',
      256,
      1_048_576,
      DEFAULT_TOOL_LIMITS.maxResultBytes,
      'bytes'
    )
  }
  const openPlansPerAuthor = boundedInt(
    get<string>('open-plans-per-author'),
    'open-plans-per-author',
    0,
    1_000_000,
    DEFAULT_OPEN_PLANS_PER_AUTHOR,
    'plans'
  )
  const goalsPerMinute = boundedInt(
    get<string>('goals-per-minute'),
    'goals-per-minute',
    0,
    1_000_000,
    DEFAULT_GOALS_PER_MINUTE,
    'goals'
  )
  const keepRaw = get<string>('keep-archives')
  const keepArchivesDays =
    keepRaw?.trim() === 'forever'
      ? Infinity
      : boundedInt(keepRaw, 'keep-archives', 0, 1_000_000, DEFAULT_KEEP_ARCHIVES_DAYS, 'days (or forever)')
  const historyRaw = get<string>('history')?.trim() ?? 'all'
  if (historyRaw !== 'all' && historyRaw !== 'open')
    throw new ConfigError(
      `--history ${JSON.stringify(historyRaw)}: expected all (fetch every plan from peers, the default) or open ` +
        '(only the plans under way)'
    )
  const otlp = otlpTracesUrl(get<string>('otlp'), env)
  const offset = Number(env.PLAN_SWARM_CLOCK_OFFSET_MS ?? 0)
  if (!Number.isFinite(offset)) throw new ConfigError('PLAN_SWARM_CLOCK_OFFSET_MS must be a number of milliseconds')
  const config = {
    help,
    version,
    role: (role ?? 'observer') as Role,
    swarm,
    listen,
    bootstrap,
    mdns: get<boolean>('no-mdns') !== true,
    swarmKeyFile: get<string>('swarm-key'),
    allowPeersFile: get<string>('allow-peers'),
    dataDir: get<string>('data-dir'),
    dataRoot: join(env.PLAN_SWARM_HOME ?? join(homedir(), '.plan-swarm'), swarm),
    http: httpValue === undefined ? undefined : parseHostPort(httpValue, '--http'),
    allowSubmit,
    provider: get<string>('provider'),
    model: get<string>('model'),
    cheapModel: get<string>('cheap-model'),
    once: get<boolean>('once') === true,
    markdown: get<string>('markdown'),
    expand: get<boolean>('expand') === true,
    baseUrl: get<string>('base-url'),
    json: get<boolean>('json') === true,
    network,
    clockOffsetMs: offset,
    maxPeers,
    otlp,
    mcpHttp: mcpHttpValue === undefined ? undefined : parseHostPort(mcpHttpValue, '--mcp-http'),
    a2a: a2aValue === undefined ? undefined : parseHostPort(a2aValue, '--a2a'),
    a2aAgent,
    workerSilenceMs: silence * 1_000,
    toolsFile,
    toolLimits,
    openPlansPerAuthor,
    keepArchivesDays,
    history: historyRaw as 'all' | 'open',
    goalsPerMinute
  }
  const values: Record<string, string | string[] | boolean | undefined> = {}
  for (const name of Object.keys(extra)) values[name] = v[name] ?? envValue(env, name as OptionName)
  return { config, values, positionals: parsed.positionals }
}

/** Parse a node's flags (falling back to PLAN_SWARM_* variables) into a validated config. */
export function parseNodeArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env
): NodeConfig & { help: boolean; version: boolean } {
  return parseWith(argv, env, {}, false).config
}

/** Parse a client command's flags and positionals (`submit "goal"`, `cancel <plan>`, ...). */
export function parseClientArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Parsed {
  return parseWith(argv, env, CLIENT_OPTIONS, true)
}

/** A non-negative integer flag, or undefined when absent. */
export function intOption(values: Parsed['values'], name: string): number | undefined {
  const raw = values[name]
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (typeof raw !== 'string' || !/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n))
    throw new ConfigError(`--${name} ${JSON.stringify(raw)}: expected a whole number`)
  return n
}

/** What each exit code of the CLI means (src/cli.ts maps errors to them). */
export const EXIT_CODE_MEANINGS: ReadonlyArray<readonly [number, string]> = [
  [0, 'ok'],
  [1, 'failure (or the plan failed)'],
  [2, 'bad flags or configuration'],
  [3, 'data dir in use'],
  [4, 'port in use'],
  [5, 'the plan was cancelled'],
  [6, 'timed out waiting']
]

export function helpText(): string {
  const lines = Object.entries(OPTIONS).map(([name, spec]) => {
    const flag = `--${name}${spec.type === 'string' ? ' <value>' : ''}`
    const variable = optionEnv(name)
    const env = variable === undefined ? '' : `\n  ${''.padEnd(26)} (env ${variable})`
    return `  ${flag.padEnd(26)} ${spec.help}${env}`
  })
  return [
    'plan-swarm: a leaderless planning swarm of libp2p peers.',
    '',
    'Usage:',
    '  npm start -- --role <decomposer|scorer|executor|observer> [options]',
    ...COMMANDS.map(c => `  npm start -- ${c.usage}\n      ${c.help}`),
    '  npm start -- --version',
    '      print the release',
    '  npm run demo [-- "<goal>"]',
    '      a whole local swarm, offline unless ANTHROPIC_API_KEY is set',
    '',
    'Options:',
    ...lines,
    '',
    'Options of submit and the author commands (also PLAN_SWARM_<NAME>):',
    ...Object.entries(CLIENT_OPTIONS).map(
      ([name, spec]) => `  ${`--${name}${spec.type === 'string' ? ' <value>' : ''}`.padEnd(26)} ${spec.help}`
    ),
    '',
    'Examples:',
    '  npm start -- --role scorer --http 127.0.0.1:7070',
    '  npm start -- --role observer --http 127.0.0.1:8080 --allow-submit   (open the printed dashboard URL)',
    '  npm start -- --role executor --no-mdns --bootstrap /ip4/10.0.0.5/tcp/4001/p2p/12D3KooW...',
    '  npm start -- --role observer --relay --listen /ip4/0.0.0.0/tcp/4001 --announce /ip4/203.0.113.7/tcp/4001   (a public relay)',
    '  PLAN_SWARM_ROLE=observer PLAN_SWARM_SWARM_KEY=swarm.key npm start',
    '',
    `Exit codes: ${EXIT_CODE_MEANINGS.map(([code, meaning]) => `${code} ${meaning}`).join(', ')}.`
  ].join('\n')
}
