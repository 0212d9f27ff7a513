/**
 * Model calls, measured and traced (src/telemetry/llm-spans.ts), through the
 * real Anthropic provider against the fake Messages API: one span per call
 * with the GenAI convention's attribute names, under the span of the work
 * it serves; HTTP retries attributed to the call they happened in (not to a
 * call running beside it); failures with their error type and the tokens
 * they cost; every call counted in the node's metrics, traced or not.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as semconv from '@opentelemetry/semantic-conventions/incubating'
import { createProvider } from '../../src/app/create-provider.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { createLlmTelemetry } from '../../src/telemetry/llm-spans.js'
import { proposalSpanId, reviewSpanId, spanIdOfId, traceIdOf } from '../../src/telemetry/ids.js'
import {
  ATTR,
  ERROR_TYPE,
  GEN_AI_OPERATION_CHAT,
  GEN_AI_OPERATION_NAME,
  GEN_AI_PROVIDER_NAME,
  GEN_AI_REQUEST_MAX_TOKENS,
  GEN_AI_REQUEST_MODEL,
  GEN_AI_RESPONSE_MODEL,
  GEN_AI_USAGE_INPUT_TOKENS,
  GEN_AI_USAGE_OUTPUT_TOKENS
} from '../../src/telemetry/span.js'
import { startFakeLlm, type FakeLlm, type RecordedRequest, type ScriptStep } from '../helpers/fake-llm.js'
import type { EventId, NodeId, PeerIdString, PlanId } from '../../src/core/events.js'
import type { LlmProvider } from '../../src/llm/types.js'
import type { LlmSpanTarget } from '../../src/telemetry/llm-spans.js'
import type { SpanSpec } from '../../src/telemetry/span.js'

const PLAN = 'ab'.repeat(32) as PlanId
const NODE = 'cd'.repeat(32) as NodeId
const CLAIM = 'ef'.repeat(32) as EventId
const RESULT = '12'.repeat(32) as EventId
const ME = '12D3KooWTestPeer' as PeerIdString
const MODEL = 'fake-model'

const DECOMPOSE = {
  goal: 'plan a picnic',
  path: [],
  node: { title: 'plan a picnic', detail: '' },
  angle: 'by place',
  minChildren: 2,
  maxChildren: 3,
  leafHint: true,
  notes: []
}
const EXECUTE = {
  goal: 'plan a picnic',
  path: ['plan a picnic'],
  task: { title: 'buy bread', detail: '' },
  kind: 'leaf' as const,
  inputs: []
}

let fake: FakeLlm
let spans: SpanSpec[]
let starts: Array<{ span: string; ms: number }>
let metrics: NodeMetrics

const target = (): LlmSpanTarget => ({
  me: ME,
  emit: s => {
    spans.push(s)
  },
  noteWorkStart: (span, ms) => {
    starts.push({ span, ms })
  }
})

function traced(
  script: (req: RecordedRequest) => ScriptStep,
  opts: { tracer?: boolean; maxTries?: number } = {}
): LlmProvider {
  fake.setScript(script)
  const tel = createLlmTelemetry()
  const { provider } = createProvider({
    provider: 'anthropic',
    env: { ANTHROPIC_API_KEY: 'test' },
    baseUrl: fake.url,
    model: MODEL,
    hooks: tel.retryHooks,
    retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 20 },
    ...(opts.maxTries === undefined ? {} : { maxTries: opts.maxTries })
  })
  return tel.instrument(provider, {
    meter: metrics,
    ...(opts.tracer === false ? {} : { tracer: target() }),
    clock: { now: () => Date.now(), monotonic: () => performance.now() }
  })
}

beforeEach(async () => {
  fake = await startFakeLlm()
  spans = []
  starts = []
  metrics = new NodeMetrics()
})
afterEach(async () => {
  await fake.close()
})

describe('model-call spans', () => {
  it('name their attributes as the GenAI convention of @opentelemetry/semantic-conventions does', () => {
    expect(GEN_AI_OPERATION_NAME).toBe(semconv.ATTR_GEN_AI_OPERATION_NAME)
    expect(GEN_AI_PROVIDER_NAME).toBe(semconv.ATTR_GEN_AI_PROVIDER_NAME)
    expect(GEN_AI_REQUEST_MODEL).toBe(semconv.ATTR_GEN_AI_REQUEST_MODEL)
    expect(GEN_AI_REQUEST_MAX_TOKENS).toBe(semconv.ATTR_GEN_AI_REQUEST_MAX_TOKENS)
    expect(GEN_AI_RESPONSE_MODEL).toBe(semconv.ATTR_GEN_AI_RESPONSE_MODEL)
    expect(GEN_AI_USAGE_INPUT_TOKENS).toBe(semconv.ATTR_GEN_AI_USAGE_INPUT_TOKENS)
    expect(GEN_AI_USAGE_OUTPUT_TOKENS).toBe(semconv.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS)
    expect(GEN_AI_OPERATION_CHAT).toBe(semconv.GEN_AI_OPERATION_NAME_VALUE_CHAT)
    expect(ERROR_TYPE).toBe(semconv.ATTR_ERROR_TYPE)
    expect('anthropic').toBe(semconv.GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC)
  })

  it('hang under the slot the call fills, carry the GenAI attributes and the tokens the provider reported', async () => {
    const p = traced(() => ({ kind: 'auto' }))
    const before = Date.now()
    const out = await p.decompose(DECOMPOSE, {
      trace: { plan: PLAN, for: { slot: 'proposal', node: NODE, attempt: 2 } },
      maxOutputTokens: 900
    })
    expect(spans).toHaveLength(1)
    const s = spans[0] as SpanSpec
    expect(s).toMatchObject({
      traceId: traceIdOf(PLAN),
      parentSpanId: proposalSpanId(ME, NODE, 2),
      kind: 'client',
      name: `chat ${MODEL}`,
      status: 'unset'
    })
    expect(s.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(s.attributes).toMatchObject({
      [GEN_AI_OPERATION_NAME]: 'chat',
      [GEN_AI_PROVIDER_NAME]: 'anthropic',
      [GEN_AI_REQUEST_MODEL]: MODEL,
      [GEN_AI_RESPONSE_MODEL]: out.model,
      [GEN_AI_REQUEST_MAX_TOKENS]: 900,
      [GEN_AI_USAGE_INPUT_TOKENS]: out.usage.inputTokens,
      [GEN_AI_USAGE_OUTPUT_TOKENS]: out.usage.outputTokens,
      [ATTR.question]: 'decompose',
      [ATTR.retried]: false,
      [ATTR.retries]: 0,
      [ATTR.plan]: PLAN,
      [ATTR.peer]: ME,
      [ATTR.node]: NODE,
      [ATTR.attempt]: 2
    })
    expect(out.usage.inputTokens).toBeGreaterThan(0)
    expect(s.startMs).toBeGreaterThanOrEqual(before)
    expect(s.endMs).toBeGreaterThan(s.startMs)
    // The proposal's span starts with the call: the tracer is told.
    expect(starts).toEqual([{ span: proposalSpanId(ME, NODE, 2), ms: s.startMs }])
  })

  it('put executions under their claim (not a slot) and say roll-up for a roll-up', async () => {
    const p = traced(() => ({ kind: 'auto' }))
    await p.execute(EXECUTE, { trace: { plan: PLAN, for: { slot: 'claim', claim: CLAIM } } })
    await p.execute({ ...EXECUTE, kind: 'rollup' }, { trace: { plan: PLAN, for: { slot: 'claim', claim: CLAIM } } })
    await p.review(
      { goal: 'g', path: [], task: { title: 't', detail: '' }, output: 'o' },
      { trace: { plan: PLAN, for: { slot: 'review', result: RESULT, committee: CLAIM } } }
    )
    expect(spans.map(s => [s.parentSpanId, s.attributes[ATTR.question]])).toEqual([
      [spanIdOfId(CLAIM), 'execute'],
      [spanIdOfId(CLAIM), 'roll-up'],
      [reviewSpanId(ME, RESULT, CLAIM), 'review']
    ])
    expect(starts.map(s => s.span)).toEqual([reviewSpanId(ME, RESULT, CLAIM)])
  })

  it('count HTTP retries on the call that retried, not on one running beside it', async () => {
    let failed = false
    const p = traced(req => {
      if (req.tool === 'report_result' && !failed) {
        failed = true
        return { kind: 'status', status: 429, retryAfterMs: 20 }
      }
      return { kind: 'auto', delayMs: 60 }
    })
    await Promise.all([
      p.decompose(DECOMPOSE, { trace: { plan: PLAN, for: { slot: 'proposal', node: NODE, attempt: 1 } } }),
      p.execute(EXECUTE, { trace: { plan: PLAN, for: { slot: 'claim', claim: CLAIM } } })
    ])
    const byQuestion: Record<string, SpanSpec | undefined> = Object.fromEntries(
      spans.map(s => [String(s.attributes[ATTR.question]), s])
    )
    expect(byQuestion.execute?.attributes).toMatchObject({ [ATTR.retried]: true, [ATTR.retries]: 1 })
    expect(byQuestion.execute?.events.map(e => [e.name, e.attributes['plan_swarm.llm.retry_status']])).toEqual([
      ['retry', 429]
    ])
    expect(byQuestion.decompose?.attributes).toMatchObject({ [ATTR.retried]: false, [ATTR.retries]: 0 })
    expect(await metrics.text()).toMatch(new RegExp(`plan_swarm_llm_retries_total\\{model="${MODEL}"\\} 1`))
  })

  it('mark a failed call as an error with its type and the tokens its bad answers cost', async () => {
    const p = traced(() => ({ kind: 'malformed', usage: { input_tokens: 7, output_tokens: 3 } }), { maxTries: 2 })
    await expect(p.execute(EXECUTE, { trace: { plan: PLAN, for: { slot: 'claim', claim: CLAIM } } })).rejects.toThrow()
    expect(spans).toHaveLength(1)
    expect(spans[0]).toMatchObject({ status: 'error' })
    expect(spans[0]?.attributes).toMatchObject({
      [ERROR_TYPE]: 'LlmOutputError',
      [GEN_AI_USAGE_INPUT_TOKENS]: 14,
      [GEN_AI_USAGE_OUTPUT_TOKENS]: 6,
      [ATTR.outcome]: 'error'
    })
    expect(await metrics.text()).toMatch(
      new RegExp(`plan_swarm_llm_call_seconds_count\\{operation="execute",model="${MODEL}",outcome="error"\\} 1`)
    )
  })

  it('are not made without tracing or without a trace option, while the metrics count every call', async () => {
    const untraced = traced(() => ({ kind: 'auto' }), { tracer: false })
    const a = await untraced.decompose(DECOMPOSE, {
      trace: { plan: PLAN, for: { slot: 'proposal', node: NODE, attempt: 1 } }
    })
    const b = await traced(() => ({ kind: 'auto' })).execute(EXECUTE)
    expect(spans).toEqual([])
    expect(starts).toEqual([])
    const text = await metrics.text()
    expect(text).toMatch(
      new RegExp(
        `plan_swarm_llm_tokens_total\\{model="${MODEL}",direction="input"\\} ${a.usage.inputTokens + b.usage.inputTokens}`
      )
    )
    expect(text).toMatch(
      new RegExp(
        `plan_swarm_llm_tokens_total\\{model="${MODEL}",direction="output"\\} ${a.usage.outputTokens + b.usage.outputTokens}`
      )
    )
    expect(text).toMatch(
      new RegExp(`plan_swarm_llm_call_seconds_count\\{operation="decompose",model="${MODEL}",outcome="ok"\\} 1`)
    )
    expect(text).toMatch(/plan_swarm_llm_call_seconds_bucket\{le="0.05",operation="execute"/)
  })

  it('stay measured on the cheap model and on another model', async () => {
    fake.setScript(() => ({ kind: 'auto' }))
    const tel = createLlmTelemetry()
    const { provider } = createProvider({
      provider: 'anthropic',
      env: { ANTHROPIC_API_KEY: 'test' },
      baseUrl: fake.url,
      model: MODEL,
      cheapModel: 'fake-cheap',
      hooks: tel.retryHooks
    })
    const p = tel.instrument(provider, {
      meter: metrics,
      tracer: target(),
      clock: { now: () => Date.now(), monotonic: () => performance.now() }
    })
    await p.downgrade().execute(EXECUTE, { trace: { plan: PLAN, for: { slot: 'claim', claim: CLAIM } } })
    await p.withModel('fake-other').execute(EXECUTE, { trace: { plan: PLAN, for: { slot: 'claim', claim: CLAIM } } })
    expect(spans.map(s => s.attributes[GEN_AI_REQUEST_MODEL])).toEqual(['fake-cheap', 'fake-other'])
  })
})
