/**
 * Retries of failed HTTP requests (429, 5xx, timeouts, dropped connections)
 * with exponential backoff and jitter, honouring the server's retry-after.
 *
 * We run our own loop rather than the SDK's `maxRetries` so that both
 * providers behave the same, every retry is observable (`onRetry`), and tests
 * can inject the clock (`sleep`) and the jitter (`random`).
 */
import type { Usage } from '../core/events.js'
import { LlmAbortedError, LlmRequestError } from './errors.js'

export interface RetryPolicy {
  /** Retries after the first request; 0 disables retrying. */
  readonly maxRetries: number
  /** The first retry waits about this long; each later one doubles it. */
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  /** A server's retry-after is obeyed up to this long. */
  readonly maxRetryAfterMs: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxRetries: 4,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 60_000
})

/** What went wrong with one request, as a provider classifies its transport's errors. */
export interface RequestFailure {
  readonly status: number | null
  readonly retryable: boolean
  readonly timedOut: boolean
  readonly aborted: boolean
  readonly retryAfterMs: number | null
  readonly detail: string
}

export interface RetryEvent {
  /** 1 for the first retry. */
  readonly retry: number
  readonly delayMs: number
  readonly status: number | null
  readonly timedOut: boolean
  readonly retryAfterMs: number | null
  readonly detail: string
}

export interface RetryHooks {
  /** Called before each backoff wait. */
  readonly onRetry?: (event: RetryEvent) => void
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  /** Uniform in [0, 1): the jitter source. */
  readonly random?: () => number
}

/**
 * The wait before retry number `retry` (1-based): the server's retry-after when
 * it gave one (capped), else `base * 2^(retry-1)` capped at maxDelayMs, scaled
 * by a jitter factor in [0.5, 1) so that many clients do not retry in step.
 */
export function backoffDelayMs(
  retry: number,
  policy: RetryPolicy,
  random: () => number,
  retryAfterMs: number | null
): number {
  if (retryAfterMs !== null) return Math.min(Math.max(0, retryAfterMs), policy.maxRetryAfterMs)
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1))
  return Math.round(exp * (0.5 + random() / 2))
}

/** Parse `retry-after-ms`, or `retry-after` (seconds or an HTTP date), into milliseconds. */
export function parseRetryAfter(get: (name: string) => string | null | undefined, nowMs: number): number | null {
  const ms = get('retry-after-ms')
  if (ms != null && ms !== '') {
    const n = Number(ms)
    if (Number.isFinite(n) && n >= 0) return n
  }
  const after = get('retry-after')
  if (after == null || after === '') return null
  const seconds = Number(after)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  const date = Date.parse(after)
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs)
}

/** HTTP statuses worth retrying: request timeout, conflict, rate limit, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500
}

export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error)
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason as Error)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

/**
 * Run `send` until it succeeds, retrying retryable failures per the policy.
 * Throws LlmRequestError when a failure is not retryable or retries run out,
 * LlmAbortedError when the signal fires. `usageSoFar` only labels the error.
 */
export async function sendWithRetries<T>(opts: {
  provider: string
  send: () => Promise<T>
  classify: (err: unknown) => RequestFailure
  policy: RetryPolicy
  hooks: RetryHooks
  signal?: AbortSignal
  usageSoFar: Usage
}): Promise<T> {
  const sleep = opts.hooks.sleep ?? defaultSleep
  const random = opts.hooks.random ?? Math.random
  for (let retry = 0; ; retry++) {
    if (aborted(opts.signal)) throw new LlmAbortedError(opts.usageSoFar)
    try {
      return await opts.send()
    } catch (err) {
      const f = opts.classify(err)
      if (f.aborted || aborted(opts.signal)) throw new LlmAbortedError(opts.usageSoFar)
      if (!f.retryable || retry >= opts.policy.maxRetries) {
        throw new LlmRequestError({
          provider: opts.provider,
          status: f.status,
          retryable: f.retryable,
          timedOut: f.timedOut,
          requests: retry + 1,
          usage: opts.usageSoFar,
          detail: f.detail
        })
      }
      const delayMs = backoffDelayMs(retry + 1, opts.policy, random, f.retryAfterMs)
      opts.hooks.onRetry?.({
        retry: retry + 1,
        delayMs,
        status: f.status,
        timedOut: f.timedOut,
        retryAfterMs: f.retryAfterMs,
        detail: f.detail
      })
      try {
        await sleep(delayMs, opts.signal)
      } catch {
        throw new LlmAbortedError(opts.usageSoFar)
      }
    }
  }
}
