/**
 * What Anthropic prompt caching saves a task run with tools: a ten-step task
 * (nine tool calls, each returning a page of text, then the result) against
 * the fake Messages API, once with the loop's cache_control breakpoints and
 * once without. The fake accounts cached prefixes as the API does in outline
 * (test/helpers/fake-llm.ts, cacheAccount), with tokens approximated as
 * ceil(chars / 4); the billed-equivalent input prices cache reads at 0.1x and
 * cache writes at 1.25x plain input, Anthropic's published multipliers for
 * the 5-minute cache.
 */
import { createAnthropicProvider } from '../../src/llm/anthropic.js'
import type { CacheUsage, ToolBox } from '../../src/llm/types.js'
import type { ExecuteInput } from '../../src/llm/types.js'
import { startFakeLlm, type RecordedRequest, type ScriptStep } from '../../test/helpers/fake-llm.js'
import { report } from '../common/util.js'

const STEPS = 10
/** Characters of each page the tool returns. */
const PAGE_CHARS = 3_000
const READ_MULTIPLIER = 0.1
const WRITE_MULTIPLIER = 1.25

const TASK: ExecuteInput = {
  goal: 'plan a two-week trip to Japan',
  path: ['plan a two-week trip to Japan'],
  task: { title: 'Compare rail passes', detail: 'read the rail operator pages and pick the pass that fits' },
  kind: 'leaf',
  inputs: []
}

function page(n: number): string {
  const line = `Page ${n}: fares, zones and validity of the regional passes, with the conditions that apply. `
  return line.repeat(Math.ceil(PAGE_CHARS / line.length)).slice(0, PAGE_CHARS)
}

const tools: ToolBox = {
  list: () => [
    {
      server: 'docs',
      name: 'read_page',
      description: 'Read one page of the rail operator documentation.',
      schema: { type: 'object', properties: { page: { type: 'integer', minimum: 1 } }, required: ['page'] }
    }
  ],
  call: async (_server, _tool, args) => ({ ok: true, text: page(Number((args as { page?: unknown }).page ?? 1)) })
}

/** Turns 1..9 read pages 1..9; the last turn (report_result forced) is the fake's auto answer. */
function script(req: RecordedRequest): ScriptStep {
  return req.tool === 'report_result'
    ? { kind: 'auto' }
    : { kind: 'tool', name: 'docs__read_page', input: { page: req.index + 1 } }
}

interface RunFigures {
  readonly steps: number
  readonly toolCalls: number
  /** Every input token, as usage reports it (plain input + cache reads + cache writes). */
  readonly inputTokens: number
  readonly uncachedInputTokens: number
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
  readonly outputTokens: number
  /** Input priced in plain-input tokens: uncached + 0.1 x reads + 1.25 x writes. */
  readonly billedEquivalentInput: number
}

async function run(promptCache: boolean): Promise<RunFigures> {
  const fake = await startFakeLlm({ script })
  try {
    const provider = createAnthropicProvider({
      apiKey: 'bench',
      baseURL: fake.url,
      model: 'claude-bench',
      promptCache
    })
    const out = await provider.executeWithTools(TASK, {
      tools,
      limits: { maxSteps: STEPS, toolTimeoutMs: 10_000, maxResultBytes: 16_384 }
    })
    const cache: CacheUsage = out.cache
    const uncached = out.usage.inputTokens - cache.readTokens - cache.writeTokens
    return {
      steps: out.steps,
      toolCalls: out.calls.length,
      inputTokens: out.usage.inputTokens,
      uncachedInputTokens: uncached,
      cacheReadTokens: cache.readTokens,
      cacheWriteTokens: cache.writeTokens,
      outputTokens: out.usage.outputTokens,
      billedEquivalentInput: Math.round(
        uncached + READ_MULTIPLIER * cache.readTokens + WRITE_MULTIPLIER * cache.writeTokens
      )
    }
  } finally {
    await fake.close()
  }
}

export async function benchToolCache(): Promise<Record<string, unknown>> {
  const withCache = await run(true)
  console.error(`tool-cache: with cache_control: ${JSON.stringify(withCache)}`)
  const withoutCache = await run(false)
  console.error(`tool-cache: without cache_control: ${JSON.stringify(withoutCache)}`)
  const saving = 1 - withCache.billedEquivalentInput / withoutCache.billedEquivalentInput
  return report('tool-cache', {
    steps: STEPS,
    pageChars: PAGE_CHARS,
    withCache,
    withoutCache,
    /** 1 - billed-equivalent input with caching / without. */
    savingRatio: Math.round(saving * 1000) / 1000,
    multipliers: { cacheRead: READ_MULTIPLIER, cacheWrite: WRITE_MULTIPLIER },
    note:
      "token counts come from the fake Messages API's approximation (ceil(chars / 4) of the serialized request, " +
      'cached prefixes per cache_control breakpoint), not from a real tokenizer or the real API'
  })
}
