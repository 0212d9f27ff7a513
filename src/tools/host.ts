/**
 * The executor's tool host: it starts the MCP servers of a tools file (child
 * processes on stdio, or Streamable HTTP sessions), lists their tools, and
 * serves them to the tool loop as a ToolBox. At start every server must come
 * up with well-formed tools, or the start fails with what to fix. After
 * that a server that dies leaves the offer at once and is restarted with
 * exponential backoff; a call never throws for a tool's failure (a hang, a
 * crash, an error result): the model reads what went wrong and goes on.
 */
import { Client, ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { ConfigError } from '../errors.js'
import { findCommand } from './command.js'
import { outcomeOf } from './content.js'
import { listServerTools } from './listing.js'
import type { ServerConfig, ToolsConfig } from './config.js'
import type { ToolBox, ToolDef, ToolOutcome } from '../llm/types.js'

export interface ToolHostOptions {
  /** Lines for the operator: deaths, restarts, a server's stderr. */
  readonly log?: (line: string) => void
  /** How long a server may take to start and list its tools (default 20 s). */
  readonly connectTimeoutMs?: number
  /** Backoff between restarts of a dead server: the first wait, doubling up to the last (default 1 s to 60 s). */
  readonly restart?: { readonly firstMs: number; readonly maxMs: number }
  /** The client version told to servers (default 0.0.0). */
  readonly version?: string
}

/** One server as /status shows it. */
export interface ToolServerState {
  readonly name: string
  readonly up: boolean
  readonly tools: number
  /** Why it is down (or null). */
  readonly error: string | null
}

export interface ToolHost extends ToolBox {
  /** Capabilities offered now: tags, server names and `server/tool`, for servers that are up; sorted, distinct. */
  offers(): string[]
  /** `fn` is told whenever offers() changes; the result stops telling it. */
  onChange(fn: () => void): () => void
  servers(): ToolServerState[]
  /** Stops every server process and closes every session. */
  close(): Promise<void>
}

/** A connected server. */
interface Live {
  readonly client: Client
  readonly tools: readonly ToolDef[]
  readonly since: number
  /** Whether the connection closed before the host watched it (between connecting and install). */
  readonly gone: () => boolean
}

interface Slot {
  readonly config: ServerConfig
  live: Live | null
  error: string | null
  delay: number
  timer: ReturnType<typeof setTimeout> | null
  connecting: Promise<void> | null
}

/** Lines of a server's stderr kept for messages, each cut to STDERR_LINE_CHARS. */
const STDERR_LINES = 12
const STDERR_LINE_CHARS = 300

/** SDK errors that mean the connection is gone, not that one call failed. */
const LOST_CODES = new Set<string>([SdkErrorCode.ConnectionClosed, SdkErrorCode.SendFailed, SdkErrorCode.NotConnected])

const seconds = (ms: number): string => String(Math.round(ms / 100) / 10)
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

/** Why connecting failed, with the server's own words when it gave any. */
function connectFailure(config: ServerConfig, err: unknown, exited: boolean, timeoutMs: number, tail: string): string {
  const stderr = tail === '' ? '' : `; its last stderr lines:\n${tail}`
  if (config.kind === 'stdio') {
    if (exited) return `the server exited before it finished starting${stderr}`
    if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout)
      return `the server did not initialize within ${seconds(timeoutMs)} s: check that it is an MCP server on stdio${stderr}`
    return `the server failed to start: ${message(err)}${stderr}`
  }
  if (err instanceof SdkHttpError)
    return (
      `${config.url} refused with HTTP ${err.status}${err.statusText === undefined ? '' : ` ${err.statusText}`}: ` +
      'check the url (the Streamable HTTP endpoint) and the headers (a token?)'
    )
  if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout)
    return `${config.url} did not answer within ${seconds(timeoutMs)} s: check the url and that the server is up`
  const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : ''
  return `cannot reach ${config.url}: ${message(err)}${cause}; check the url and that the server is up`
}

/**
 * Connects every server of `config` concurrently. Rejects with a ConfigError
 * (naming the file, each failed server and what to fix) when any fails,
 * after stopping those that came up.
 */
export async function startToolHost(config: ToolsConfig, opts: ToolHostOptions = {}): Promise<ToolHost> {
  const log = opts.log ?? (() => {})
  const connectTimeoutMs = opts.connectTimeoutMs ?? 20_000
  const backoff = opts.restart ?? { firstMs: 1_000, maxMs: 60_000 }
  const version = opts.version ?? '0.0.0'
  const slots = new Map<string, Slot>()
  for (const c of config.servers)
    slots.set(c.name, { config: c, live: null, error: null, delay: backoff.firstMs, timer: null, connecting: null })
  const listeners = new Set<() => void>()
  let closed = false

  const offers = (): string[] => {
    const out = new Set<string>()
    for (const s of slots.values()) {
      if (s.live === null) continue
      for (const t of s.config.tags) out.add(t)
      out.add(s.config.name)
      for (const t of s.live.tools) out.add(`${s.config.name}/${t.name}`)
    }
    return [...out].sort()
  }
  let shown = ''
  const changed = (): void => {
    const now = offers().join('\n')
    if (now === shown) return
    shown = now
    for (const fn of [...listeners])
      try {
        fn()
      } catch (err) {
        log(`a listener of the tool offer threw: ${message(err)}`)
      }
  }

  /** Connects one server and lists its tools; throws an Error saying what went wrong. */
  const connect = async (slot: Slot): Promise<Live> => {
    const c = slot.config
    const tail: string[] = []
    let transport: StdioClientTransport | StreamableHTTPClientTransport
    if (c.kind === 'stdio') {
      const found = findCommand(c.command, c.cwd, c.env.PATH ?? process.env.PATH)
      if (found instanceof Error) throw found
      const stdio = new StdioClientTransport({
        command: found,
        args: [...c.args],
        env: { ...c.env },
        ...(c.cwd === null ? {} : { cwd: c.cwd }),
        stderr: 'pipe'
      })
      let partial = ''
      stdio.stderr?.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n')
        partial = lines.pop() ?? ''
        for (const line of lines) {
          if (line.trim() === '') continue
          const cut = line.length > STDERR_LINE_CHARS ? `${line.slice(0, STDERR_LINE_CHARS)}...` : line
          tail.push(cut)
          if (tail.length > STDERR_LINES) tail.shift()
          log(`[${c.name}] ${cut}`)
        }
      })
      transport = stdio
    } else {
      transport = new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: { ...c.headers } } })
    }
    const client = new Client({ name: 'plan-swarm executor', version }, { capabilities: {} })
    let exited = false
    client.onclose = () => {
      exited = true
    }
    try {
      await client.connect(transport, { timeout: connectTimeoutMs })
    } catch (err) {
      const why = connectFailure(c, err, exited, connectTimeoutMs, tail.join('\n'))
      await client.close().catch(() => {})
      throw new Error(why)
    }
    try {
      const tools = await listServerTools(client, c, connectTimeoutMs)
      return { client, tools, since: Date.now(), gone: () => exited }
    } catch (err) {
      const stderr = exited && tail.length > 0 ? `; its last stderr lines:\n${tail.join('\n')}` : ''
      const why = exited ? `the server exited while listing its tools${stderr}` : message(err)
      await client.close().catch(() => {})
      throw new Error(why)
    }
  }

  /** Puts a connected server in the offer and watches it for death. */
  const install = (slot: Slot, live: Live): void => {
    slot.live = live
    slot.error = null
    const why = slot.config.kind === 'stdio' ? 'the server process exited' : 'the session closed'
    live.client.onclose = () => {
      died(slot, live, why)
    }
    live.client.onerror = err => {
      log(`tool server "${slot.config.name}": ${err.message}`)
    }
    changed()
    if (live.gone()) died(slot, live, why)
  }

  const died = (slot: Slot, live: Live, why: string): void => {
    if (slot.live !== live) return
    slot.live = null
    slot.error = why
    live.client.onclose = undefined
    void live.client.close().catch(() => {})
    if (Date.now() - live.since >= backoff.maxMs) slot.delay = backoff.firstMs
    log(`tool server "${slot.config.name}" is down: ${why}; restarting in ${seconds(slot.delay)} s`)
    changed()
    scheduleRestart(slot)
  }

  const scheduleRestart = (slot: Slot): void => {
    if (closed || slot.timer !== null) return
    const wait = slot.delay
    slot.delay = Math.min(slot.delay * 2, backoff.maxMs)
    slot.timer = setTimeout(() => {
      slot.timer = null
      slot.connecting = (async () => {
        try {
          const live = await connect(slot)
          if (closed) {
            await live.client.close().catch(() => {})
            return
          }
          log(`tool server "${slot.config.name}" is back with ${live.tools.length} tools`)
          install(slot, live)
        } catch (err) {
          slot.error = message(err)
          if (closed) return
          log(
            `tool server "${slot.config.name}" did not come back: ${slot.error}; next try in ${seconds(slot.delay)} s`
          )
          scheduleRestart(slot)
        }
      })().finally(() => {
        slot.connecting = null
      })
    }, wait)
  }

  const offeredText = (): string => {
    const up = [...slots.values()].filter(s => s.live !== null)
    if (up.length === 0) return 'no tools are offered now'
    return `the tools offered now: ${up.flatMap(s => (s.live?.tools ?? []).map(t => `${s.config.name}/${t.name}`)).join(', ')}`
  }

  /** What a call that threw comes to, for the model; a lost connection also takes the server down. */
  const failure = (slot: Slot, live: Live, err: unknown, timeoutMs: number): ToolOutcome => {
    const name = slot.config.name
    if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout)
      return { ok: false, text: `the tool did not answer within ${seconds(timeoutMs)} s` }
    if (err instanceof ProtocolError)
      return { ok: false, text: `tool server "${name}" refused the call: ${err.message}` }
    if (closed) return { ok: false, text: 'the tool host was closed during the call' }
    const lost =
      slot.live !== live ||
      (err instanceof SdkError && LOST_CODES.has(err.code)) ||
      (slot.config.kind === 'http' && err instanceof TypeError)
    if (!lost) return { ok: false, text: `the call to ${name} failed: ${message(err)}` }
    const why =
      slot.config.kind === 'stdio'
        ? `tool server "${name}" exited during the call`
        : `the connection to tool server "${name}" was lost during the call (${message(err)})`
    died(slot, live, why)
    return { ok: false, text: `${why}; it is being restarted, so the tool may answer again later` }
  }

  const results = await Promise.allSettled([...slots.values()].map(async s => ({ slot: s, live: await connect(s) })))
  const failed = results.flatMap((r, i) =>
    r.status === 'rejected'
      ? [`tools file ${config.file}: server "${config.servers[i]?.name}": ${message(r.reason)}`]
      : []
  )
  if (failed.length > 0) {
    await Promise.all(results.map(async r => (r.status === 'fulfilled' ? r.value.live.client.close() : undefined)))
    throw new ConfigError(failed.join('\n'))
  }
  for (const r of results) if (r.status === 'fulfilled') install(r.value.slot, r.value.live)

  return {
    list: () => [...slots.values()].flatMap(s => s.live?.tools ?? []),
    offers,
    onChange: fn => {
      listeners.add(fn)
      return () => {
        listeners.delete(fn)
      }
    },
    servers: () =>
      [...slots.values()].map(s => ({
        name: s.config.name,
        up: s.live !== null,
        tools: s.live?.tools.length ?? 0,
        error: s.error
      })),
    call: async (server, tool, args, { timeoutMs, signal }) => {
      if (signal?.aborted === true) throw abortReason(signal)
      const slot = slots.get(server)
      if (slot === undefined) return { ok: false, text: `there is no tool server "${server}"; ${offeredText()}` }
      const live = slot.live
      if (live === null || closed)
        return { ok: false, text: `tool server "${server}" is down (${slot.error ?? 'closed'}); ${offeredText()}` }
      if (!live.tools.some(t => t.name === tool))
        return {
          ok: false,
          text: `tool server "${server}" offers no tool "${tool}"; it offers: ${live.tools.map(t => t.name).join(', ')}`
        }
      const cancel = new AbortController()
      return await new Promise<ToolOutcome>((resolve, reject) => {
        const onAbort = (): void => {
          if (signal === undefined) return
          cancel.abort(signal.reason)
          reject(abortReason(signal))
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        const params = { name: tool, ...(args === undefined ? {} : { arguments: args as Record<string, unknown> }) }
        live.client
          .callTool(params, { timeout: timeoutMs, maxTotalTimeout: timeoutMs, signal: cancel.signal })
          .then(
            result => {
              resolve(outcomeOf(result))
            },
            (err: unknown) => {
              resolve(failure(slot, live, err, timeoutMs))
            }
          )
          .finally(() => {
            signal?.removeEventListener('abort', onAbort)
          })
      })
    },
    close: async () => {
      if (closed) return
      closed = true
      for (const s of slots.values()) if (s.timer !== null) clearTimeout(s.timer)
      await Promise.allSettled([...slots.values()].flatMap(s => (s.connecting === null ? [] : [s.connecting])))
      await Promise.allSettled(
        [...slots.values()].map(async s => {
          const live = s.live
          s.live = null
          if (live === null) return
          live.client.onclose = undefined
          await live.client.close()
        })
      )
      changed()
    }
  }
}

/** What an aborted call rejects with: the signal's reason, or an AbortError. */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('the call was aborted', 'AbortError')
}
