/**
 * Tracing switched on and off (src/telemetry/tracing.ts), the exporter
 * (otel-export.ts) against a test OTLP/HTTP receiver, and where the endpoint
 * comes from (--otlp, OTEL_EXPORTER_OTLP_*):
 *   - no endpoint: the SDK loader is never called and the view is not even
 *     watched; no module but otel-export.ts names the SDK, so nothing on a
 *     node's startup path can load it (test/e2e/tracing.test.ts checks the
 *     same of a real process's loaded modules);
 *   - an endpoint: the loader is called once, and the tracer sends the
 *     spans of the node's own events, not of others'; an attempt, settled
 *     only once others' ballots arrive, is sent once: by its winning
 *     proposal's author however the ballots arrive, by its last ballot's
 *     author when it failed;
 *   - the exporter sends OTLP/JSON whose ids, parents, links, times,
 *     events, status and resource are exactly the spans given.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { realScheduler } from '../../src/ports/scheduler.js'
import { ConfigError, otlpTracesUrl, parseNodeArgs } from '../../src/runtime/config.js'
import { createOtlpSink } from '../../src/telemetry/otel-export.js'
import { attemptSpanId, planSpanId, spanIdOfId, traceIdOf } from '../../src/telemetry/ids.js'
import { startPlanTracer } from '../../src/telemetry/plan-tracer.js'
import { TRACING_OFF, startTracing } from '../../src/telemetry/tracing.js'
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js'
import { PlanBuilder, subgoals } from '../helpers/plan-builder.js'
import { makeCast } from '../helpers/fold-fixtures.js'
import { REPO_ROOT } from '../helpers/cli-process.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'
import type { NodeView } from '../../src/ports/node-view.js'
import type { SpanSpec } from '../../src/telemetry/span.js'
import type { LoadExporter } from '../../src/telemetry/tracing.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

let receiver: OtlpReceiver | undefined
afterEach(async () => {
  await receiver?.close()
  receiver = undefined
})

/** Just enough of a node's view for the tracer: a fold, its listeners, a real scheduler. */
function fakeView(me: PeerIdString): { view: NodeView; fold: (...events: PlanEvent[]) => void; watched: () => number } {
  const fold = new Fold()
  const listeners = new Set<(events: readonly PlanEvent[]) => void>()
  let subscriptions = 0
  const view = {
    me,
    role: 'executor',
    swarm: 'test',
    scheduler: realScheduler(),
    tree: (plan: PlanId) => fold.tree(plan),
    loadTree: (plan: PlanId) => fold.tree(plan),
    event: (id: string) => fold.events.get(id as never),
    onFolded: (fn: (events: readonly PlanEvent[]) => void) => {
      subscriptions++
      listeners.add(fn)
      return () => {
        listeners.delete(fn)
      }
    }
  } as unknown as NodeView
  return {
    view,
    fold: (...events) => {
      for (const e of events) fold.add(e, NO_CLOCK)
      for (const fn of listeners) fn(events)
    },
    watched: () => subscriptions
  }
}

describe('tracing off', () => {
  it('loads no SDK and watches nothing without an endpoint', async () => {
    const load = vi.fn<LoadExporter>()
    const { view, watched } = fakeView(cast.author)
    const t = await startTracing({ url: undefined, view, version: 'plan-swarm/0.1.0', load })
    expect(t).toBe(TRACING_OFF)
    expect(t.tracer).toBeUndefined()
    expect(load).not.toHaveBeenCalled()
    expect(watched()).toBe(0)
    await t.stop()
  })

  it('has no module but otel-export.ts that imports OpenTelemetry, and only tracing.ts loads that one, dynamically', () => {
    const files: string[] = []
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name)
        if (statSync(p).isDirectory()) walk(p)
        else if (/\.(ts|js|mjs)$/.test(name)) files.push(p)
      }
    }
    walk(join(REPO_ROOT, 'src'))
    walk(join(REPO_ROOT, 'roles'))
    const naming = files.filter(f =>
      /from\s+['"]@opentelemetry\/|import\s*\(\s*['"]@opentelemetry\/|require\s*\(\s*['"]@opentelemetry\//.test(
        readFileSync(f, 'utf8')
      )
    )
    expect(naming.map(f => relative(REPO_ROOT, f))).toEqual(['src/telemetry/otel-export.ts'])
    const loading = files.filter(f =>
      /otel-export(\.js)?['"]/.test(readFileSync(f, 'utf8').replace(/^\s*import type .*$/gm, ''))
    )
    expect(loading.map(f => relative(REPO_ROOT, f))).toEqual(['src/telemetry/tracing.ts'])
    expect(readFileSync(join(REPO_ROOT, 'src/telemetry/tracing.ts'), 'utf8')).toMatch(
      /await import\('\.\/otel-export\.js'\)/
    )
  })
})

describe('tracing on', () => {
  it("loads the exporter once and sends the spans of this node's own events only", async () => {
    const [s0, s1, s2] = cast.scorers
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const emitted: SpanSpec[] = []
    let shutdown = 0
    const load = vi.fn<LoadExporter>(async () => ({
      createOtlpSink: () => ({
        emit: s => {
          emitted.push(s)
        },
        forceFlush: async () => {},
        shutdown: async () => {
          shutdown++
        }
      })
    }))
    const { view, fold } = fakeView(cast.author)
    const t = await startTracing({ url: 'http://127.0.0.1:1/v1/traces', view, version: 'plan-swarm/0.1.0', load })
    expect(load).toHaveBeenCalledTimes(1)
    expect(t.enabled).toBe(true)
    fold(b.goal, b.propose(cast.decomposers[0], b.root, 1, subgoals(['A', 'B']), 2000))
    const cancel = b.cancel(2500)
    fold(cancel)
    await new Promise(resolve => setImmediate(resolve))
    // The decomposer's proposal is not this node's; the goal has no span of its own; the cancel closes the plan.
    expect(emitted.map(s => [s.name, s.spanId]).sort()).toEqual(
      [
        ['goal-cancelled', spanIdOfId(cancel.id)],
        ['plan', planSpanId(b.plan)]
      ].sort()
    )
    await t.stop()
    expect(shutdown).toBe(1)
  })
})

describe('the plan tracer', () => {
  it("emits a won attempt once, from the winner's author, though which ballot decided changes as ballots arrive", async () => {
    // Seen in a 9-process run: with ballots c < a < b in the total order, the scorer of b, holding only c and b,
    // saw its own ballot decide; the scorer of a, holding c and a, saw its own. Only the winner is final.
    const [s0, s1, s2] = cast.scorers
    const d0 = cast.decomposers[0]
    const b = new PlanBuilder(cast.author, [s0, s1, s2])
    const p = b.propose(d0, b.root, 1, subgoals(['A', 'B']), 2000)
    const c = b.ballot(s2, { node: b.root, attempt: 1 }, p, 2100)
    const a = b.ballot(s0, { node: b.root, attempt: 1 }, p, 2200)
    const late = b.ballot(s1, { node: b.root, attempt: 1 }, p, 2300)
    const views = [d0, s0, s1, s2].map(me => ({ me, ...fakeView(me) }))
    const got: Array<SpanSpec & { by: string }> = []
    const tracers = views.map(v =>
      startPlanTracer(v.view, {
        emit: s => {
          got.push({ ...s, by: v.me })
        }
      })
    )
    const tick = async (): Promise<void> => {
      await new Promise(resolve => setImmediate(resolve))
    }
    for (const v of views) v.fold(b.goal, p)
    const [vd, v0, v1, v2] = views as [(typeof views)[0], (typeof views)[0], (typeof views)[0], (typeof views)[0]]
    v2.fold(c)
    v0.fold(a)
    v1.fold(late)
    await tick()
    // The decomposer hears the late ballot first, then c: decided, by `late` as it sees it.
    vd.fold(late)
    await tick()
    expect(got.filter(s => s.name === 'decomposition-attempt')).toEqual([])
    vd.fold(c)
    v1.fold(c)
    v0.fold(c)
    await tick()
    vd.fold(a)
    v1.fold(a)
    v0.fold(late)
    v2.fold(a, late)
    await tick()
    const attempts = got.filter(s => s.name === 'decomposition-attempt')
    expect(attempts.map(s => [s.spanId, s.by, s.endMs])).toEqual([[attemptSpanId(b.root, 1), d0, 2300]])
    expect(
      got
        .filter(s => s.name === 'ballot-cast')
        .map(s => s.by)
        .sort()
    ).toEqual([s0, s1, s2].sort())
    for (const t of tracers) t.stop()
  })

  it('emits a failed attempt once, from the author of its last ballot, when ballots cross', async () => {
    const [s0, s1] = cast.scorers
    const b = new PlanBuilder(cast.author, [s0, s1], { quorum: 2 })
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['A', 'B']), 2000)
    const v0 = fakeView(s0)
    const v1 = fakeView(s1)
    const got: Array<SpanSpec & { by: string }> = []
    const t0 = startPlanTracer(v0.view, {
      emit: s => {
        got.push({ ...s, by: s0 })
      }
    })
    const t1 = startPlanTracer(v1.view, {
      emit: s => {
        got.push({ ...s, by: s1 })
      }
    })
    v0.fold(b.goal, p)
    v1.fold(b.goal, p)
    const ballot0 = b.ballot(s0, { node: b.root, attempt: 1 }, null, 2100, { judged: [p] })
    const ballot1 = b.ballot(s1, { node: b.root, attempt: 1 }, null, 2101, { judged: [p] })
    // Each folds its own ballot first: neither sees the failure yet.
    v0.fold(ballot0)
    v1.fold(ballot1)
    await new Promise(resolve => setImmediate(resolve))
    expect(got.filter(s => s.name === 'decomposition-attempt')).toEqual([])
    // Then each hears the other's: every member voted, none won; the last ballot's author says so.
    v0.fold(ballot1)
    v1.fold(ballot0)
    await new Promise(resolve => setImmediate(resolve))
    const attempts = got.filter(s => s.name === 'decomposition-attempt')
    expect(attempts.map(s => [s.spanId, s.by, s.endMs, s.attributes['plan_swarm.outcome']])).toEqual([
      [attemptSpanId(b.root, 1), s1, 2101, 'failed']
    ])
    t0.stop()
    t1.stop()
  })
})

describe('the OTLP exporter', () => {
  it('sends OTLP/JSON with the ids, parents, links, times, events, status and resource it was given', async () => {
    receiver = await startOtlpReceiver()
    const sink = createOtlpSink({
      url: `${receiver.url}/v1/traces`,
      version: '0.1.0',
      resource: { 'service.name': 'plan-swarm-executor', 'service.instance.id': 'peer-1' }
    })
    const traceId = traceIdOf('0123456789abcdef'.repeat(4) as PlanId)
    const root: SpanSpec = {
      traceId,
      spanId: '0123456789abcdef',
      parentSpanId: null,
      name: 'plan',
      kind: 'internal',
      startMs: 1_000_000.5,
      endMs: 1_004_000,
      attributes: { 'plan_swarm.plan.id': 'p', n: 3, ok: true },
      links: [],
      events: [],
      status: 'ok'
    }
    const call: SpanSpec = {
      traceId,
      spanId: 'fedcba9876543210',
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      name: 'chat m',
      kind: 'client',
      startMs: 1_001_000,
      endMs: 1_001_250.25,
      attributes: { 'gen_ai.usage.input_tokens': 12 },
      links: [{ spanId: 'bbbbbbbbbbbbbbbb', attributes: { 'plan_swarm.event.id': 'e' } }],
      events: [{ name: 'retry', timeMs: 1_001_100, attributes: { 'plan_swarm.llm.retry': 1 } }],
      status: 'error',
      statusMessage: 'boom'
    }
    sink.emit(root)
    sink.emit(call)
    await sink.shutdown()
    expect(receiver.requests.every(r => r.contentType.startsWith('application/json'))).toBe(true)
    const [a, c] = [receiver.spans.find(s => s.name === 'plan'), receiver.spans.find(s => s.name === 'chat m')]
    expect(a).toMatchObject({
      traceId,
      spanId: root.spanId,
      parentSpanId: null,
      kind: 1,
      startMs: 1_000_000.5,
      endMs: 1_004_000,
      status: { code: 1 },
      scope: 'plan-swarm'
    })
    expect(a?.attributes).toMatchObject({ 'plan_swarm.plan.id': 'p', n: 3, ok: true })
    expect(a?.resource).toMatchObject({ 'service.name': 'plan-swarm-executor', 'service.instance.id': 'peer-1' })
    expect(c).toMatchObject({
      traceId,
      spanId: call.spanId,
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      kind: 3,
      startMs: 1_001_000,
      endMs: 1_001_250.25,
      status: { code: 2, message: 'boom' }
    })
    expect(c?.links).toEqual([{ traceId, spanId: 'bbbbbbbbbbbbbbbb', attributes: { 'plan_swarm.event.id': 'e' } }])
    expect(c?.events).toEqual([{ name: 'retry', timeMs: 1_001_100, attributes: { 'plan_swarm.llm.retry': 1 } }])
  })
})

describe('the endpoint', () => {
  it(
    'comes from --otlp, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else ' +
      'OTEL_EXPORTER_OTLP_ENDPOINT, with /v1/traces on a base URL',
    () => {
      expect(otlpTracesUrl(undefined, {})).toBeUndefined()
      expect(otlpTracesUrl('http://127.0.0.1:4318/', {})).toBe('http://127.0.0.1:4318/v1/traces')
      expect(otlpTracesUrl(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' })).toBe(
        'http://jaeger:4318/v1/traces'
      )
      expect(
        otlpTracesUrl(undefined, {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom'
        })
      ).toBe('http://b:4318/custom')
      expect(otlpTracesUrl('http://flag:4318', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom' })).toBe(
        'http://flag:4318/v1/traces'
      )
      expect(
        otlpTracesUrl(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' })
      ).toBeUndefined()
      expect(() => otlpTracesUrl('localhost:4318', {})).toThrow(ConfigError)
      expect(() => otlpTracesUrl(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
        /OTEL_EXPORTER_OTLP_ENDPOINT/
      )
      expect(parseNodeArgs(['--role', 'executor', '--otlp', 'http://127.0.0.1:4318'], {}).otlp).toBe(
        'http://127.0.0.1:4318/v1/traces'
      )
      expect(parseNodeArgs(['--role', 'executor'], { PLAN_SWARM_OTLP: 'http://127.0.0.1:4318' }).otlp).toBe(
        'http://127.0.0.1:4318/v1/traces'
      )
      expect(parseNodeArgs(['--role', 'executor'], {}).otlp).toBeUndefined()
    }
  )
})
