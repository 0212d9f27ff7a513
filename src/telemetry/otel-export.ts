/**
 * The one module that loads the OpenTelemetry SDK: it turns finished spans
 * (SpanSpec, plain data) into SDK spans and exports them over OTLP/HTTP with
 * a batching processor. tracing.ts imports it dynamically, and only when an
 * endpoint is set, so a node without one never loads the SDK.
 *
 * The SDK draws span and trace ids from its IdGenerator; ours hands it the
 * ids derived from the plan (ids.ts), set just before each synchronous
 * startSpan. Parents are passed as remote span contexts: the parent span is
 * usually another node's.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { HrTime, Link } from '@opentelemetry/api'
import type { IdGenerator } from '@opentelemetry/sdk-trace-base'
import type { SpanSink, SpanSpec } from './span.js'

/** An OTLP exporter of SpanSpecs. */
export interface OtlpSink extends SpanSink {
  /** Send what is batched now. */
  forceFlush: () => Promise<void>
  /** Send what is batched, then stop. */
  shutdown: () => Promise<void>
}

export interface OtlpSinkOptions {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  readonly url: string
  /** Resource attributes: service.name, service.instance.id and the like. */
  readonly resource: Readonly<Record<string, string>>
  /** The instrumentation scope's version. */
  readonly version: string
}

/** Hands out the ids set for the next span; random ones if nothing was set (never the case here). */
class DerivedIds implements IdGenerator {
  private traceId = ''
  private spanId = ''

  set(traceId: string, spanId: string): void {
    this.traceId = traceId
    this.spanId = spanId
  }

  generateTraceId(): string {
    return this.traceId !== '' ? this.traceId : randomHex(32)
  }

  generateSpanId(): string {
    const id = this.spanId !== '' ? this.spanId : randomHex(16)
    this.spanId = ''
    return id
  }
}

function randomHex(chars: number): string {
  let s = ''
  while (s.length < chars)
    s += Math.floor(Math.random() * 0x1_0000_0000)
      .toString(16)
      .padStart(8, '0')
  return s.slice(0, chars)
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000)
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)]
}

export function createOtlpSink(opts: OtlpSinkOptions): OtlpSink {
  const ids = new DerivedIds()
  const provider = new BasicTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes(opts.resource)),
    idGenerator: ids,
    // Batching (OTEL_BSP_* variables apply): a node emits spans in bursts as events fold.
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: opts.url }))]
  })
  const tracer = provider.getTracer('plan-swarm', opts.version)

  return {
    emit: (s: SpanSpec): void => {
      const parent =
        s.parentSpanId === null
          ? ROOT_CONTEXT
          : trace.setSpanContext(ROOT_CONTEXT, {
              traceId: s.traceId,
              spanId: s.parentSpanId,
              traceFlags: TraceFlags.SAMPLED,
              isRemote: true
            })
      const links: Link[] = s.links.map(l => ({
        context: { traceId: s.traceId, spanId: l.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true },
        attributes: l.attributes
      }))
      ids.set(s.traceId, s.spanId)
      const span = tracer.startSpan(
        s.name,
        {
          kind: s.kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL,
          startTime: hrTime(s.startMs),
          attributes: s.attributes,
          links,
          root: s.parentSpanId === null
        },
        parent
      )
      for (const e of s.events) span.addEvent(e.name, e.attributes, hrTime(e.timeMs))
      if (s.status !== 'unset')
        span.setStatus({
          code: s.status === 'error' ? SpanStatusCode.ERROR : SpanStatusCode.OK,
          ...(s.statusMessage === undefined ? {} : { message: s.statusMessage })
        })
      span.end(hrTime(s.endMs))
    },
    forceFlush: async () => {
      await provider.forceFlush()
    },
    shutdown: async () => {
      await provider.shutdown()
    }
  }
}
