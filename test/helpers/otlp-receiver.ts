/**
 * A test OTLP/HTTP trace receiver on 127.0.0.1: `POST /v1/traces` with
 * OTLP/JSON (what @opentelemetry/exporter-trace-otlp-http sends by default,
 * gzip or not), parsed into flat spans with their resource attributes, so
 * tests can assert what a swarm of processes exported. Protobuf bodies are
 * counted and answered 415, so a test that expects JSON notices.
 *
 * No test-framework imports.
 */
import { createServer, type IncomingMessage } from 'node:http'
import { gunzipSync } from 'node:zlib'
import type { AddressInfo } from 'node:net'

export type AttrValue = string | number | boolean | null | AttrValue[]

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  /** null for a root span. */
  readonly parentSpanId: string | null
  readonly name: string
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number
  readonly startMs: number
  readonly endMs: number
  readonly attributes: Readonly<Record<string, AttrValue>>
  readonly links: ReadonlyArray<{
    readonly traceId: string
    readonly spanId: string
    readonly attributes: Readonly<Record<string, AttrValue>>
  }>
  readonly events: ReadonlyArray<{
    readonly name: string
    readonly timeMs: number
    readonly attributes: Readonly<Record<string, AttrValue>>
  }>
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message?: string }
  /** The exporting process's resource (service.name, service.instance.id, ...). */
  readonly resource: Readonly<Record<string, AttrValue>>
  readonly scope: string
}

export interface OtlpReceiver {
  /** The base URL: what OTEL_EXPORTER_OTLP_ENDPOINT or --otlp take. */
  readonly url: string
  readonly spans: ReceivedSpan[]
  /** Export requests received, by content type. */
  readonly requests: Array<{ readonly contentType: string; readonly spans: number }>
  close: () => Promise<void>
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function value(v: any): AttrValue {
  if (v === null || v === undefined) return null
  if ('stringValue' in v) return String(v.stringValue)
  if ('boolValue' in v) return Boolean(v.boolValue)
  if ('intValue' in v) return Number(v.intValue)
  if ('doubleValue' in v) return Number(v.doubleValue)
  if ('arrayValue' in v) return ((v.arrayValue?.values ?? []) as any[]).map(value)
  return null
}

function attrs(list: any): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {}
  for (const kv of (list ?? []) as any[]) out[String(kv.key)] = value(kv.value)
  return out
}

/** OTLP/JSON ids are hex; accept base64 too (some encoders use it). */
function id(raw: unknown, hexChars: number): string {
  const s = typeof raw === 'string' ? raw : ''
  if (s === '') return ''
  if (new RegExp(`^[0-9a-f]{${hexChars}}$`, 'i').test(s)) return s.toLowerCase()
  return Buffer.from(s, 'base64').toString('hex')
}

function nanosToMs(raw: unknown): number {
  const n = BigInt(String(raw ?? '0'))
  return Number(n / 1_000n) / 1_000
}

/** Flat spans of one ExportTraceServiceRequest in OTLP/JSON. */
export function parseOtlpJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = []
  for (const rs of (body?.resourceSpans ?? []) as any[]) {
    const resource = attrs(rs?.resource?.attributes)
    for (const ss of (rs?.scopeSpans ?? []) as any[]) {
      const scope = String(ss?.scope?.name ?? '')
      for (const s of (ss?.spans ?? []) as any[]) {
        const parent = id(s.parentSpanId, 16)
        out.push({
          traceId: id(s.traceId, 32),
          spanId: id(s.spanId, 16),
          parentSpanId: parent === '' ? null : parent,
          name: String(s.name),
          kind: Number(s.kind ?? 0),
          startMs: nanosToMs(s.startTimeUnixNano),
          endMs: nanosToMs(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          links: ((s.links ?? []) as any[]).map(l => ({
            traceId: id(l.traceId, 32),
            spanId: id(l.spanId, 16),
            attributes: attrs(l.attributes)
          })),
          events: ((s.events ?? []) as any[]).map(e => ({
            name: String(e.name),
            timeMs: nanosToMs(e.timeUnixNano),
            attributes: attrs(e.attributes)
          })),
          status: {
            code: Number(s.status?.code ?? 0),
            ...(s.status?.message === undefined ? {} : { message: String(s.status.message) })
          },
          resource,
          scope
        })
      }
    }
  }
  return out
}
/* eslint-enable @typescript-eslint/no-explicit-any */

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  const raw = Buffer.concat(chunks)
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const requests: Array<{ contentType: string; spans: number }> = []
  const server = createServer((req, res) => {
    void (async () => {
      const contentType = String(req.headers['content-type'] ?? '')
      const body = await readBody(req)
      if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      if (!contentType.startsWith('application/json')) {
        requests.push({ contentType, spans: 0 })
        res.writeHead(415, { 'content-type': 'text/plain' }).end('this test receiver takes OTLP/JSON only')
        return
      }
      let got: ReceivedSpan[]
      try {
        got = parseOtlpJson(JSON.parse(body.toString('utf8')))
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad OTLP/JSON: ${(err as Error).message}`)
        return
      }
      spans.push(...got)
      requests.push({ contentType, spans: got.length })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    }
  }
}
