/**
 * Backoff arithmetic, retry-after parsing and the retry loop, with an injected
 * sleep and jitter so no test waits.
 */
import { describe, expect, it } from 'vitest'
import { LlmAbortedError, LlmRequestError } from '../../src/llm/errors.js'
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  sendWithRetries,
  type RequestFailure,
  type RetryEvent
} from '../../src/llm/retry.js'

const policy = { maxRetries: 5, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 5_000 }
const zero = { inputTokens: 0, outputTokens: 0 }

describe('backoffDelayMs', () => {
  it.each([
    [1, 0, 50],
    [1, 0.999, 100],
    [2, 0.5, 150],
    [3, 0, 200],
    [5, 0.5, 750],
    [9, 0.999, 1000]
  ])('retry %i with random %f waits %i ms', (retry, random, ms) => {
    expect(backoffDelayMs(retry, policy, () => random, null)).toBe(ms)
  })

  it('obeys retry-after up to its cap', () => {
    expect(backoffDelayMs(1, policy, () => 0.9, 2_500)).toBe(2_500)
    expect(backoffDelayMs(1, policy, () => 0.9, 99_000)).toBe(5_000)
  })
})

describe('parseRetryAfter', () => {
  const h =
    (headers: Record<string, string>) =>
    (n: string): string | null =>
      headers[n] ?? null
  it.each([
    [{ 'retry-after-ms': '250' }, 250],
    [{ 'retry-after': '2' }, 2_000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after': 'Thu, 01 Jan 1970 00:00:10 GMT' }, 4_000],
    [{ 'retry-after': 'soon' }, null],
    [{}, null]
  ])('%o -> %s', (headers, ms) => {
    expect(parseRetryAfter(h(headers), 6_000)).toBe(ms)
  })
})

describe('sendWithRetries', () => {
  const failure = (over: Partial<RequestFailure>): RequestFailure => ({
    status: 503,
    retryable: true,
    timedOut: false,
    aborted: false,
    retryAfterMs: null,
    detail: 'HTTP 503',
    ...over
  })

  it('retries retryable failures with growing delays, then succeeds', async () => {
    const slept: number[] = []
    const events: RetryEvent[] = []
    let n = 0
    const out = await sendWithRetries({
      provider: 'p',
      send: async () => {
        if (++n < 4) throw new Error('x')
        return 'ok'
      },
      classify: () => failure({}),
      policy,
      hooks: {
        sleep: async ms => {
          slept.push(ms)
        },
        random: () => 0,
        onRetry: e => events.push(e)
      },
      usageSoFar: zero
    })
    expect(out).toBe('ok')
    expect(slept).toEqual([50, 100, 200])
    expect(events.map(e => e.retry)).toEqual([1, 2, 3])
  })

  it('stops at the retry limit with the usage so far', async () => {
    const err = await sendWithRetries({
      provider: 'p',
      send: async () => {
        throw new Error('x')
      },
      classify: () => failure({ status: 429, detail: 'HTTP 429' }),
      policy: { ...policy, maxRetries: 2 },
      hooks: { sleep: async () => {} },
      usageSoFar: { inputTokens: 5, outputTokens: 1 }
    }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LlmRequestError)
    expect(err).toMatchObject({ status: 429, requests: 3, usage: { inputTokens: 5, outputTokens: 1 } })
    expect((err as Error).message).toMatch(/rate limited/)
  })

  it('turns an abort during the backoff wait into LlmAbortedError', async () => {
    const ac = new AbortController()
    const pending = sendWithRetries({
      provider: 'p',
      send: async () => {
        throw new Error('x')
      },
      classify: () => failure({}),
      policy: { ...DEFAULT_RETRY_POLICY, baseDelayMs: 60_000 },
      hooks: { onRetry: () => ac.abort() },
      signal: ac.signal,
      usageSoFar: zero
    })
    await expect(pending).rejects.toBeInstanceOf(LlmAbortedError)
  })
})
