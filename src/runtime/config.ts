import { parseArgs } from 'node:util'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { multiaddr } from '@multiformats/multiaddr'

/** A bad command line or environment: the message says what to change. Exit code 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  readonly exitCode = 2
}

export const ROLES = ['decomposer', 'scorer', 'executor', 'observer'] as const
export type Role = typeof ROLES[number]

/** Every long option, its kind, and what it is for (also the source of `--help`). */
export const OPTIONS = {
  role: { type: 'string', help: 'decomposer | scorer | executor | observer' },
  swarm: { type: 'string', help: 'swarm name; peers only talk within one swarm (default "default")' },
  listen: { type: 'string', multiple: true, help: 'multiaddr to listen on (repeatable; default /ip4/0.0.0.0/tcp/0)' },
  bootstrap: { type: 'string', multiple: true, help: 'multiaddr of a peer to dial and keep redialing (repeatable)' },
  'no-mdns': { type: 'boolean', help: 'do not discover peers by mDNS on the LAN' },
  'swarm-key': { type: 'string', help: 'pre-shared key file (from `keygen`): only peers with the same key connect' },
  'allow-peers': { type: 'string', help: 'file of peer ids (one per line): only these peers may connect' },
  'data-dir': { type: 'string', help: 'where events and the identity key live (default: lowest free ~/.plan-swarm/<swarm>/<role>-<n>)' },
  http: { type: 'string', help: 'HOST:PORT for /status, /plans/<id>, /metrics (e.g. 127.0.0.1:7070)' },
  provider: { type: 'string', help: 'anthropic | openai | offline' },
  model: { type: 'string', help: 'model name for the provider' },
  'base-url': { type: 'string', help: 'provider base URL (Ollama, llama.cpp, a proxy)' },
  json: { type: 'boolean', help: 'print JSON lines instead of text' },
  help: { type: 'boolean', short: 'h', help: 'show this help' }
} as const

type OptionName = keyof typeof OPTIONS

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
  readonly http: { host: string, port: number } | undefined
  readonly provider: string | undefined
  readonly model: string | undefined
  readonly baseUrl: string | undefined
  readonly json: boolean
  /** Test hook: milliseconds added to this node's wall clock (PLAN_SWARM_CLOCK_OFFSET_MS). */
  readonly clockOffsetMs: number
}

/** `PLAN_SWARM_<NAME>` for an option name: `--data-dir` reads PLAN_SWARM_DATA_DIR. */
export function envName (option: string): string {
  return `PLAN_SWARM_${option.replace(/-/g, '_').toUpperCase()}`
}

function envValue (env: NodeJS.ProcessEnv, name: OptionName): string | string[] | boolean | undefined {
  const raw = env[envName(name)]
  if (raw === undefined || raw === '') return undefined
  const spec = OPTIONS[name]
  if (spec.type === 'boolean') {
    if (/^(1|true|yes|on)$/i.test(raw)) return true
    if (/^(0|false|no|off)$/i.test(raw)) return false
    throw new ConfigError(`${envName(name)}=${raw}: expected true or false`)
  }
  return 'multiple' in spec && spec.multiple ? raw.split(/[\s,]+/).filter(Boolean) : raw
}

export function parseHostPort (value: string, what: string): { host: string, port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value)
  const port = m === null ? NaN : Number(m[2])
  if (m === null || !(port >= 0 && port <= 65535)) throw new ConfigError(`${what} ${JSON.stringify(value)}: expected HOST:PORT, e.g. 127.0.0.1:7070`)
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port }
}

function checkMultiaddr (value: string, flag: string): string {
  try {
    multiaddr(value)
  } catch (err) {
    throw new ConfigError(`--${flag} ${JSON.stringify(value)} is not a multiaddr (${(err as Error).message}); e.g. /ip4/127.0.0.1/tcp/4001${flag === 'bootstrap' ? '/p2p/12D3KooW...' : ''}`)
  }
  if (flag === 'bootstrap' && !value.includes('/p2p/')) throw new ConfigError(`--bootstrap ${value} must end in /p2p/<peer id>: copy an address from the peer's /status`)
  return value
}

/** Parse a node's flags (falling back to PLAN_SWARM_* variables) into a validated config. */
export function parseNodeArgs (argv: readonly string[], env: NodeJS.ProcessEnv = process.env): NodeConfig & { help: boolean } {
  let parsed
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false })
  } catch (err) {
    throw new ConfigError(`${(err as Error).message.replace(/\. To specify a positional argument.*$/, '')}; see --help for the options`)
  }
  const v = parsed.values as Record<string, string | string[] | boolean | undefined>
  const get = <T>(name: OptionName): T | undefined => (v[name] ?? envValue(env, name)) as T | undefined
  const help = get<boolean>('help') === true
  const role = get<string>('role')
  if (!help && role === undefined) throw new ConfigError(`--role is required: one of ${ROLES.join(', ')}`)
  if (role !== undefined && !(ROLES as readonly string[]).includes(role)) throw new ConfigError(`--role ${role}: expected one of ${ROLES.join(', ')}`)
  const swarm = get<string>('swarm') ?? 'default'
  if (!/^[a-z0-9._-]{1,64}$/.test(swarm)) throw new ConfigError(`--swarm ${JSON.stringify(swarm)}: use 1-64 characters of a-z, 0-9, '.', '_' or '-'`)
  const listen = (get<string[]>('listen') ?? ['/ip4/0.0.0.0/tcp/0']).map(a => checkMultiaddr(a, 'listen'))
  const bootstrap = (get<string[]>('bootstrap') ?? []).map(a => checkMultiaddr(a, 'bootstrap'))
  const httpValue = get<string>('http')
  const offset = Number(env.PLAN_SWARM_CLOCK_OFFSET_MS ?? 0)
  if (!Number.isFinite(offset)) throw new ConfigError('PLAN_SWARM_CLOCK_OFFSET_MS must be a number of milliseconds')
  return {
    help,
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
    provider: get<string>('provider'),
    model: get<string>('model'),
    baseUrl: get<string>('base-url'),
    json: get<boolean>('json') === true,
    clockOffsetMs: offset
  }
}

export function helpText (): string {
  const lines = Object.entries(OPTIONS).map(([name, spec]) => {
    const flag = `--${name}${spec.type === 'string' ? ' <value>' : ''}`
    return `  ${flag.padEnd(26)} ${spec.help}\n  ${''.padEnd(26)} (env ${envName(name)})`
  })
  return [
    'plan-swarm: a leaderless planning swarm of libp2p peers.',
    '',
    'Usage:',
    '  npm start -- --role <decomposer|scorer|executor|observer> [options]',
    '  npm start -- keygen > swarm.key          write a new pre-shared swarm key',
    '',
    'Options:',
    ...lines,
    '',
    'Examples:',
    '  npm start -- --role scorer --http 127.0.0.1:7070',
    '  npm start -- --role executor --no-mdns --bootstrap /ip4/10.0.0.5/tcp/4001/p2p/12D3KooW...',
    '  PLAN_SWARM_ROLE=observer PLAN_SWARM_SWARM_KEY=swarm.key npm start',
    '',
    'Exit codes: 0 ok, 1 runtime failure, 2 bad flags or configuration, 3 data dir in use, 4 port in use.'
  ].join('\n')
}
