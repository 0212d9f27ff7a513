/**
 * Tracing on or off for a node. With an OTLP endpoint, the node loads the
 * OpenTelemetry SDK (otel-export.ts, by dynamic import: nothing of it is on
 * the startup path) and exports the spans of what it authors and of its
 * model calls. Without one, nothing is loaded, nothing is watched, and the
 * provider is only measured for /metrics.
 */
import { startPlanTracer } from './plan-tracer.js'
import type { NodeView } from '../ports/node-view.js'
import type { PlanTracer } from './plan-tracer.js'
import type { OtlpSink, OtlpSinkOptions } from './otel-export.js'

/** What startTracing loads when tracing is on (a test seam: a unit test swaps it to see it is never called when off). */
export type LoadExporter = () => Promise<{ createOtlpSink: (opts: OtlpSinkOptions) => OtlpSink }>

/** The SDK, loaded on demand. */
export const loadOtelExporter: LoadExporter = async () => await import('./otel-export.js')

export interface TracingOptions {
  /** The OTLP/HTTP traces URL (…/v1/traces); undefined turns tracing off. */
  readonly url: string | undefined
  readonly view: NodeView
  /** The node's VERSION (`plan-swarm/x.y.z`). */
  readonly version: string
  /** OTEL_SERVICE_NAME; default `plan-swarm-<role>`. */
  readonly serviceName?: string
  readonly load?: LoadExporter
}

export interface Tracing {
  readonly enabled: boolean
  /** The traces URL spans go to, when on. */
  readonly url: string | undefined
  /** The plan tracer (for the model-call wrapper), when on. */
  readonly tracer: PlanTracer | undefined
  /** Stop watching, send what is left, stop the exporter. */
  stop: () => Promise<void>
}

/** How long stopping waits for the last spans to be sent. */
export const STOP_FLUSH_MS = 5_000

export const TRACING_OFF: Tracing = Object.freeze({
  enabled: false,
  url: undefined,
  tracer: undefined,
  stop: async () => {}
})

/** Start tracing for a node, or do nothing at all when no endpoint is set. */
export async function startTracing(opts: TracingOptions): Promise<Tracing> {
  if (opts.url === undefined) return TRACING_OFF
  const { createOtlpSink } = await (opts.load ?? loadOtelExporter)()
  const view = opts.view
  const version = opts.version.replace(/^plan-swarm\//, '')
  const sink = createOtlpSink({
    url: opts.url,
    version,
    resource: {
      'service.name': opts.serviceName ?? `plan-swarm-${view.role}`,
      'service.version': version,
      'service.instance.id': view.me,
      'plan_swarm.role': view.role,
      'plan_swarm.swarm': view.swarm
    }
  })
  const tracer = startPlanTracer(view, sink)
  let stopped = false
  return {
    enabled: true,
    url: opts.url,
    tracer,
    stop: async () => {
      if (stopped) return
      stopped = true
      tracer.stop()
      // A collector that does not answer must not hold the node's exit for the exporter's own timeouts.
      await new Promise<void>(resolve => {
        const cancel = view.scheduler.after(STOP_FLUSH_MS, resolve)
        sink
          .shutdown()
          .catch(() => {})
          .finally(() => {
            cancel()
            resolve()
          })
      })
    }
  }
}
