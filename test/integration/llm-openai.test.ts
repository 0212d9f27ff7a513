/**
 * The OpenAI-compatible provider (plain fetch to /chat/completions) against
 * the fake server: forced function calls, bad arguments fed back as a `tool`
 * message, HTTP retries, usage.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createOpenAiProvider, LlmOutputError, type LlmProvider, type RetryEvent } from '../../src/llm/index.js'
import { createProvider } from '../../src/app/create-provider.js'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js'

const goal = 'plan a two-week trip to Japan'
const root = { title: goal, detail: '' }
const decomposeInput = {
  goal,
  path: [],
  node: root,
  angle: 'by time',
  minChildren: 2,
  maxChildren: 4,
  leafHint: true,
  notes: ['too vague']
}

let fake: FakeLlm
let retries: RetryEvent[]

function provider(apiKey?: string): LlmProvider {
  return createOpenAiProvider({
    apiKey,
    baseUrl: fake.openaiUrl,
    model: 'local-model',
    timeoutMs: 2_000,
    retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    hooks: { onRetry: e => retries.push(e), random: () => 0 }
  })
}

beforeEach(async () => {
  fake = await startFakeLlm()
  retries = []
})

afterEach(async () => {
  await fake.close()
})

function reply(args: string, usage = { prompt_tokens: 50, completion_tokens: 5 }): unknown {
  return {
    id: 'x',
    model: 'local-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'propose_split', arguments: args } }]
        },
        finish_reason: 'tool_calls'
      }
    ],
    usage
  }
}

describe('openai-compatible provider against the fake server', () => {
  it('forces the function call and parses its arguments', async () => {
    const out = await provider('sk-test').decompose(decomposeInput)
    expect(out.subgoals).toHaveLength(3)
    expect(out.subgoals.every(s => s.leaf)).toBe(true)
    const req = fake.requests[0]
    expect(req?.path).toBe('/v1/chat/completions')
    expect(req?.headers.authorization).toBe('Bearer sk-test')
    expect(req?.body.tool_choice).toEqual({ type: 'function', function: { name: 'propose_split' } })
    expect(req?.body.messages[0]).toMatchObject({ role: 'system' })
    expect(req?.body.messages[1].content).toContain('<note>too vague</note>')
    expect(req?.body.messages[1].content).toContain('leaf-hint="true"')
    expect(req?.body.tools[0].function.parameters.properties.subgoals.maxItems).toBe(4)
    expect(out.usage.inputTokens).toBeGreaterThan(0)
  })

  it('sends no authorization header without a key', async () => {
    await provider().review({ goal, path: [], task: root, output: 'x' })
    expect(fake.requests[0]?.headers.authorization).toBeUndefined()
  })

  it('feeds arguments that are not JSON back as a tool message and retries; usage is summed', async () => {
    fake.setScript([{ kind: 'raw', body: reply('{"subgoals": [') }])
    const out = await provider().decompose(decomposeInput)
    expect(out.subgoals).toHaveLength(3)
    const msgs = fake.requests[1]?.body.messages
    expect(msgs).toHaveLength(4)
    expect(msgs[2]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_1' }] })
    expect(msgs[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
    expect(msgs[3].content).toMatch(/Invalid answer: the arguments of propose_split are not valid JSON/)
    expect(out.usage.inputTokens).toBe(50 + Math.ceil((fake.requests[1]?.raw.length ?? 0) / 4))
  })

  it('retries 429 and 503, then answers', async () => {
    fake.setScript([
      { kind: 'status', status: 429, retryAfterMs: 60 },
      { kind: 'status', status: 503 }
    ])
    const out = await provider().execute({
      goal,
      path: [],
      task: { title: 'Book flights', detail: '' },
      kind: 'leaf',
      inputs: []
    })
    expect(out.output).toBe('result of Book flights')
    expect(retries.map(r => [r.status, r.delayMs])).toEqual([
      [429, 60],
      [503, 10]
    ])
  })

  it('gives up with LlmOutputError when every answer is invalid', async () => {
    fake.setScript(() => ({ kind: 'malformed' }))
    await expect(provider().review({ goal, path: [], task: root, output: 'x' })).rejects.toBeInstanceOf(LlmOutputError)
    expect(fake.requests).toHaveLength(3)
  })

  it('is what createProvider builds for --provider openai --base-url', async () => {
    const { provider: p, banner } = createProvider({
      provider: 'openai',
      baseUrl: fake.openaiUrl,
      model: 'm1',
      env: {}
    })
    expect(banner).toBe(`openai-compatible: model m1 at ${fake.openaiUrl}`)
    const out = await p.review({ goal, path: [], task: root, output: 'x' })
    expect(out).toMatchObject({ verdict: 'accept', model: 'm1' })
  })
})
