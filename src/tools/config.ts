/**
 * The tools file: which MCP servers an executor starts and offers. The
 * format is the one Claude Desktop and Claude Code read (`mcpServers`, each
 * a command to run on stdio or an `http` URL), so an operator can reuse a
 * file they have, plus two keys of ours per server: `allow` (only these
 * tools are offered) and `tags` (capability names the operator gives, such
 * as "browser", that subgoals can say they need).
 *
 * `${VAR}` and `${VAR:-default}` expand from the environment in command,
 * args, env values, cwd, url and header values, as Claude Code does. Every
 * problem is a ConfigError naming the file, the server and what to fix.
 */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { MAX_NEED_CHARS, NEED_PATTERN } from '../core/limits.js'
import { ConfigError } from '../errors.js'

interface ServerCommon {
  /** Its key in `mcpServers`: a capability name too (a subgoal may need the server). */
  readonly name: string
  /** Only these tools are offered; null offers every tool the server lists. */
  readonly allow: readonly string[] | null
  /** Capability tags the operator gives the server. */
  readonly tags: readonly string[]
}

/** A server run as a child process, spoken to over its stdin and stdout. */
export interface StdioServerConfig extends ServerCommon {
  readonly kind: 'stdio'
  readonly command: string
  readonly args: readonly string[]
  /** Added to the SDK's safe default environment (PATH, HOME, ...); the host's other variables are not passed. */
  readonly env: Readonly<Record<string, string>>
  /** Absolute; null runs it in the host's working directory. */
  readonly cwd: string | null
}

/** A server reached over Streamable HTTP. */
export interface HttpServerConfig extends ServerCommon {
  readonly kind: 'http'
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
}

export type ServerConfig = StdioServerConfig | HttpServerConfig

export interface ToolsConfig {
  /** The file as the operator named it, for messages. */
  readonly file: string
  /** In the file's order. */
  readonly servers: readonly ServerConfig[]
}

type Env = Readonly<Record<string, string | undefined>>

/** A capability name: NEED_PATTERN without the `server/tool` form, at most MAX_NEED_CHARS. */
export function isCapabilityName(s: string): boolean {
  return s.length <= MAX_NEED_CHARS && !s.includes('/') && NEED_PATTERN.test(s)
}

const NAME_RULE = `letters, digits, ".", "_" and "-", starting with a letter or digit, at most ${MAX_NEED_CHARS} characters`

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Reads and parses a tools file (see parseToolsConfig). */
export function loadToolsFile(path: string, env: Env = process.env): ToolsConfig {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'there is no such file' : (err as Error).message
    throw new ConfigError(`tools file ${path}: cannot read it (${why}); give the path of an mcpServers JSON file`)
  }
  return parseToolsConfig(text, path, env)
}

/**
 * Parses the text of a tools file named `file` (relative `cwd`s are taken
 * from its folder). Unknown keys are ignored; a key of the wrong type, a bad
 * name or an unset variable is a ConfigError.
 */
export function parseToolsConfig(text: string, file: string, env: Env = process.env): ToolsConfig {
  const fail = (what: string): never => {
    throw new ConfigError(`tools file ${file}: ${what}`)
  }
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    return fail(`is not JSON (${(err as Error).message}); it must be {"mcpServers": {"<name>": {...}}}`)
  }
  if (!isRecord(doc) || !isRecord(doc.mcpServers))
    return fail(
      'must be a JSON object with an "mcpServers" object, as in {"mcpServers": {"<name>": {"command": "..."}}}'
    )
  const entries = Object.entries(doc.mcpServers)
  if (entries.length === 0) fail('lists no servers: add one under "mcpServers", or drop the tools file')
  const folder = dirname(resolve(file))
  return { file, servers: entries.map(([name, raw]) => parseServer(name, raw, folder, env, fail)) }
}

function parseServer(
  name: string,
  raw: unknown,
  folder: string,
  env: Env,
  failFile: (what: string) => never
): ServerConfig {
  if (!isCapabilityName(name)) failFile(`server name ${JSON.stringify(name)} is not a valid name: use ${NAME_RULE}`)
  const fail = (what: string): never => failFile(`server "${name}": ${what}`)
  if (!isRecord(raw)) return fail('must be an object, e.g. {"command": "...", "args": [...]}')
  const key = (k: string): string => `"${k}"`
  const str = (k: string): string | undefined => {
    const v = raw[k]
    if (v === undefined) return undefined
    if (typeof v !== 'string') fail(`${key(k)} must be a string`)
    return expand(v as string, env, where => fail(`${key(k)} ${where}`))
  }
  const strings = (k: string): string[] | undefined => {
    const v = raw[k]
    if (v === undefined) return undefined
    if (!Array.isArray(v) || v.some(s => typeof s !== 'string')) return fail(`${key(k)} must be an array of strings`)
    return v as string[]
  }
  const stringMap = (k: string): Record<string, string> => {
    const v = raw[k]
    if (v === undefined) return {}
    if (!isRecord(v) || Object.values(v).some(s => typeof s !== 'string'))
      return fail(`${key(k)} must be an object of string values, e.g. {"TOKEN": "\${TOKEN}"}`)
    const out: Record<string, string> = {}
    for (const [n, s] of Object.entries(v as Record<string, string>))
      out[n] = expand(s, env, where => fail(`${key(k)} value of ${n} ${where}`))
    return out
  }

  const allow = strings('allow') ?? null
  if (allow !== null && allow.length === 0)
    fail('"allow" lists no tools: name the tools to offer, or drop "allow" to offer all')
  const tags = strings('tags') ?? []
  for (const t of tags)
    if (!isCapabilityName(t)) fail(`tag ${JSON.stringify(t)} in "tags" is not a valid name: use ${NAME_RULE}`)
  const common = { name, allow: allow === null ? null : [...new Set(allow)], tags: [...new Set(tags)] }

  const type = raw.type
  if (type !== undefined && typeof type !== 'string') fail('"type" must be a string: "stdio" or "http"')
  if (type === 'sse')
    fail(
      '"type": "sse" (the old HTTP+SSE transport) is not supported: give the URL of the server\'s Streamable HTTP ' +
        'endpoint with "type": "http"'
    )
  let kind: 'stdio' | 'http'
  if (type === 'stdio') kind = 'stdio'
  else if (type === 'http' || type === 'streamable-http') kind = 'http'
  else if (type !== undefined) return fail(`unknown "type" ${JSON.stringify(type)}: use "stdio" or "http"`)
  else if (raw.command !== undefined && raw.url !== undefined)
    return fail('has both "command" and "url": set "type" to "stdio" or "http"')
  else if (raw.command !== undefined) kind = 'stdio'
  else if (raw.url !== undefined) kind = 'http'
  else return fail('needs a "command" (a server run on stdio) or "type": "http" with a "url"')

  if (kind === 'http') {
    const url = str('url')
    if (url === undefined) return fail('"type": "http" needs a "url", e.g. "https://example.com/mcp"')
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return fail(`"url" ${JSON.stringify(url)} is not a URL: give one such as "https://example.com/mcp"`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      fail(`"url" ${JSON.stringify(url)} must be http:// or https://`)
    return { ...common, kind, url, headers: stringMap('headers') }
  }
  const command = str('command')
  if (command === undefined || command.trim() === '')
    return fail('needs a "command": the program that runs the server, e.g. "npx" or "/usr/local/bin/my-server"')
  const args = (strings('args') ?? []).map((a, i) => expand(a, env, where => fail(`"args"[${i}] ${where}`)))
  const cwd = str('cwd')
  return { ...common, kind, command, args, env: stringMap('env'), cwd: cwd === undefined ? null : resolve(folder, cwd) }
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/**
 * `${VAR}` and `${VAR:-default}` replaced from `env` (the default when VAR is
 * unset or empty, as in a shell). An unset variable without a default is an
 * error, reported through `fail` with the variable's name.
 */
export function expand(value: string, env: Env, fail: (where: string) => never): string {
  return value.replace(VARIABLE, (_all, name: string, fallback: string | undefined) => {
    const v = env[name]
    if (fallback !== undefined) return v === undefined || v === '' ? fallback : v
    if (v === undefined) fail(`uses \${${name}}, which is not set: set ${name}, or write \${${name}:-default}`)
    return v as string
  })
}
