/**
 * A node's and an author command's flags, each falling back to its
 * PLAN_SWARM_<NAME> variable, parsed and validated into a NodeConfig: every
 * bad flag is a ConfigError (exit code 2) before anything starts. The tables
 * of options are cli-options.ts; this module re-exports them, the value
 * checks and `helpText`, so callers import the command line from one place.
 */
import { parseArgs } from 'node:util'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../errors.js'
import { MAX_TURNS } from '../core/limits.js'
import { DEFAULT_OPEN_PLANS_PER_AUTHOR } from '../core/admission.js'
import { DEFAULT_KEEP_ARCHIVES_DAYS } from './retention.js'
import { CLIENT_OPTIONS, OPTIONS, ROLES, envName } from './cli-options.js'
import type { OptionName, Role } from './cli-options.js'
import { boundedInt, checkMultiaddr, otlpTracesUrl, parseHostPort } from './flag-values.js'
import { DEFAULT_TOOL_LIMITS, type ToolLoopLimits } from '../llm/types.js'
import type { NetworkOptions } from '../net/nat.js'

export { ConfigError } from '../errors.js'
export { CLIENT_OPTIONS, COMMANDS, EXIT_CODE_MEANINGS, OPTIONS, ROLES, envName, optionEnv } from './cli-options.js'
export type { CommandName, Role } from './cli-options.js'
export { otlpTracesUrl, parseHostPort } from './flag-values.js'
export { helpText } from './help-text.js'

/** Goals one node takes from its dashboard and MCP in any 60 s (`--goals-per-minute`, src/author/goal-rate.ts). */
export const DEFAULT_GOALS_PER_MINUTE = 60

/** What a node (or an author command's short-lived client) runs with, once its flags are checked. */
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

/** An option's PLAN_SWARM_<NAME> variable, read as the option's kind (a boolean, a list, a string). */
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
