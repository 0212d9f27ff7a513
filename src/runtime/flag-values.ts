/**
 * Checks of single flag values, each turning a bad value into a ConfigError
 * that names the flag, what it expected and an example.
 */
import { multiaddr } from '@multiformats/multiaddr'
import { ConfigError } from '../errors.js'

/** A whole-number option within bounds, or its default; a ConfigError saying the range otherwise. */
export function boundedInt(
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

/** `HOST:PORT` (an IPv6 host in brackets) of `--http`, `--mcp-http` or `--a2a`, as the server binds it. */
export function parseHostPort(value: string, what: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value)
  const port = m === null ? NaN : Number(m[2])
  if (m === null || !(port >= 0 && port <= 65535))
    throw new ConfigError(`${what} ${JSON.stringify(value)}: expected HOST:PORT, e.g. 127.0.0.1:7070`)
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port }
}

/** A `--listen`, `--bootstrap` or `--announce` address, checked as a multiaddr (a bootstrap one must name its peer). */
export function checkMultiaddr(value: string, flag: string): string {
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
