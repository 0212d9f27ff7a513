// prom-client's files one by one, not its index: the index also loads its Pushgateway (node:http, node:https,
// node:zlib), Summary (two more packages), cluster aggregation and the process metrics (perf_hooks and
// @opentelemetry/api), about 150 KB of source and Node's HTTP and TLS modules that a node without --http never uses
// (prom-client-lib.d.ts gives them the index's types).
import Counter from 'prom-client/lib/counter.js'
import Gauge from 'prom-client/lib/gauge.js'
import Histogram from 'prom-client/lib/histogram.js'
import Registry from 'prom-client/lib/registry.js'
import type { LoopSlices } from '../ports/loop-slices.js'

/**
 * A node's Prometheus metrics, on a registry of its own (several nodes can
 * share a process in tests without mixing their figures).
 */
export class NodeMetrics {
  readonly registry = new Registry()
  readonly accepted = new Counter({
    name: 'plan_swarm_events_accepted_total',
    help: 'Events folded, by how they arrived',
    labelNames: ['source'] as const,
    registers: [this.registry]
  })
  readonly rejected = new Counter({
    name: 'plan_swarm_events_rejected_total',
    help: 'Events rejected, by reason',
    labelNames: ['reason', 'source'] as const,
    registers: [this.registry]
  })
  readonly ignored = new Counter({
    name: 'plan_swarm_events_ignored_total',
    help: 'Events not folded yet or already held, by why',
    labelNames: ['why', 'source'] as const,
    registers: [this.registry]
  })
  readonly parked = new Gauge({
    name: 'plan_swarm_events_parked',
    help: 'Events waiting for deps or for the clock',
    registers: [this.registry]
  })
  readonly stored = new Gauge({ name: 'plan_swarm_events_stored', help: 'Events held', registers: [this.registry] })
  readonly plans = new Gauge({
    name: 'plan_swarm_plans',
    help: 'Plans held, by where: in memory, or finished and out of memory (on disk only)',
    labelNames: ['where'] as const,
    registers: [this.registry]
  })
  readonly peers = new Gauge({ name: 'plan_swarm_peers', help: 'Connected peers', registers: [this.registry] })
  readonly syncRounds = new Counter({
    name: 'plan_swarm_sync_sessions_total',
    help: 'Sync sessions, by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry]
  })
  readonly syncEvents = new Counter({
    name: 'plan_swarm_sync_events_received_total',
    help: 'Events received through sync',
    registers: [this.registry]
  })
  readonly syncQuotaLeft = new Counter({
    name: 'plan_swarm_sync_quota_left_total',
    help: "Ids a sync session left for a later one because the peer's pull quota was spent",
    registers: [this.registry]
  })
  readonly signatureChecks = new Counter({
    name: 'plan_swarm_signature_checks_total',
    help: 'Event signatures checked (gossip, sync, imports; not the events this node signs)',
    registers: [this.registry]
  })
  readonly foldSeconds = new Histogram({
    name: 'plan_swarm_fold_seconds',
    help: 'Time to derive a plan tree',
    buckets: [0.0005, 0.002, 0.01, 0.05, 0.2, 1],
    registers: [this.registry]
  })
  readonly llmTokens = new Counter({
    name: 'plan_swarm_llm_tokens_total',
    help: "Tokens this node's model calls used, by model asked and direction (input, output)",
    labelNames: ['model', 'direction'] as const,
    registers: [this.registry]
  })
  readonly llmSeconds = new Histogram({
    name: 'plan_swarm_llm_call_seconds',
    help: 'Model call latency (its HTTP retries and re-asks included), by question, model asked and outcome',
    labelNames: ['operation', 'model', 'outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry]
  })
  readonly llmRetries = new Counter({
    name: 'plan_swarm_llm_retries_total',
    help: 'HTTP retries inside model calls, by model asked',
    labelNames: ['model'] as const,
    registers: [this.registry]
  })

  /** Rejected events by reason, also kept as plain numbers for the observer's printout. */
  readonly rejectedByReason = new Map<string, number>()

  /** Count a rejected event (metrics and the plain tally). */
  reject(reason: string, source: string): void {
    this.rejected.inc({ reason, source })
    this.rejectedByReason.set(reason, (this.rejectedByReason.get(reason) ?? 0) + 1)
  }

  /** Count one model call: tokens by model, latency by question (src/telemetry/llm-spans.ts calls it for every call). */
  llmCall(c: {
    operation: string
    model: string
    usage: { inputTokens: number; outputTokens: number }
    seconds: number
    outcome: string
    retries: number
  }): void {
    if (c.usage.inputTokens > 0) this.llmTokens.inc({ model: c.model, direction: 'input' }, c.usage.inputTokens)
    if (c.usage.outputTokens > 0) this.llmTokens.inc({ model: c.model, direction: 'output' }, c.usage.outputTokens)
    if (c.retries > 0) this.llmRetries.inc({ model: c.model }, c.retries)
    this.llmSeconds.observe({ operation: c.operation, model: c.model, outcome: c.outcome }, c.seconds)
  }

  /** The event work waiting for a turn of the loop (src/ports/loop-slices.ts), and how much was put off so far. */
  watchSlices(slices: LoopSlices): void {
    new Gauge({
      name: 'plan_swarm_loop_slices_waiting',
      help: 'Items of event work (a gossiped event, a chunk of a sync batch) waiting for a later turn of the event loop',
      registers: [this.registry],
      collect() {
        this.set(slices.waiting)
      }
    })
    new Gauge({
      name: 'plan_swarm_loop_slices_deferred',
      help: 'Items of event work put off to a later turn of the event loop since start',
      registers: [this.registry],
      collect() {
        this.set(slices.counts.deferred)
      }
    })
  }

  /**
   * Adds prom-client's process metrics (CPU, memory, event loop lag, GC, handles), loaded only now: they watch the
   * event loop and the collector from then on, which is worth it only where /metrics can be read (--http).
   */
  async addProcessMetrics(): Promise<void> {
    const { default: collectDefaultMetrics } = await import('prom-client/lib/defaultMetrics.js')
    collectDefaultMetrics({ register: this.registry, prefix: 'plan_swarm_' })
  }

  async text(): Promise<string> {
    return await this.registry.metrics()
  }
}
