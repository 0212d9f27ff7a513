import { createOfflineProvider } from '../offline/index.js'
import { LlmAbortedError } from '../llm/errors.js'
import { ZERO_USAGE } from '../llm/types.js'

import { callKey } from './latency.js'
import type { CallOptions, ExecuteInput, LlmProvider } from '../llm/types.js'
import type { Scheduler } from '../ports/scheduler.js'
import type { CallKind } from './latency.js'

/** LLM calls the simulated swarm made, all nodes together. */
export interface LlmCalls {
  decompose: number
  score: number
  execute: number
  review: number
  /** Executions per task (path, title and kind): more than one is a duplicate execution. */
  readonly executions: Map<string, number>
}

export function emptyLlmCalls(): LlmCalls {
  return { decompose: 0, score: 0, execute: 0, review: 0, executions: new Map() }
}

/** Duplicate executions: calls beyond the first for the same task. */
export function duplicateExecutions(calls: LlmCalls): number {
  let n = 0
  for (const c of calls.executions.values()) n += c - 1
  return n
}

/** One call as the simulator made it (WorldOptions.record): on the caller's clock, from its start to its end or abort. */
export interface CallRecord {
  readonly kind: CallKind
  readonly key: string
  readonly startMs: number
  endMs: number
  aborted: boolean
}

/** Where a provider records its calls (WorldOptions.record), stamped by the world's own time (virtual ms from the start). */
export interface CallRecorder {
  readonly now: () => number
  readonly add: (call: CallRecord) => void
}

/**
 * A call's latency: a fixed number of virtual ms, or a function of the call's
 * identity (src/sim/latency.ts), so that the same call takes the same time
 * whoever makes it and whenever.
 */
export type SimLatency = number | ((kind: CallKind, key: string) => number)

/**
 * The simulator's model: the offline heuristics (deterministic: same input,
 * same output on every node) behind a latency in virtual time, with every
 * call counted. An aborted call (an executor that lost its claim) stops at
 * once, as the real SDK call would, and still counts as made. `caller` is
 * the calling node's peer id (a decomposition's or ballot's latency is the
 * caller's own), `record` told of every call with its times.
 */
export function createSimProvider(
  scheduler: Scheduler,
  latency: SimLatency,
  calls: LlmCalls,
  caller = '',
  record?: CallRecorder
): LlmProvider {
  const offline = createOfflineProvider()
  const wait = async (
    opts: CallOptions | undefined,
    kind: CallKind,
    input: { goal: string; path: readonly string[] },
    title: string
  ): Promise<void> => {
    const own = kind === 'decompose' || kind === 'score' || kind === 'review'
    const key =
      typeof latency === 'number' && record === undefined
        ? ''
        : callKey(kind, own ? caller : null, input.goal, [...input.path, title])
    const ms = typeof latency === 'number' ? latency : latency(kind, key)
    const rec: CallRecord | undefined =
      record === undefined ? undefined : { kind, key, startMs: record.now(), endMs: record.now() + ms, aborted: false }
    if (rec !== undefined) record?.add(rec)
    await new Promise<void>((resolve, reject) => {
      const signal = opts?.signal
      const cancel = scheduler.after(ms, () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      })
      const onAbort = (): void => {
        cancel()
        if (rec !== undefined) {
          rec.aborted = true
          rec.endMs = record?.now() ?? rec.endMs
        }
        reject(new LlmAbortedError(ZERO_USAGE))
      }
      if (signal?.aborted === true) {
        onAbort()
        return
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }
  const countExecution = (input: ExecuteInput): void => {
    calls.execute++
    const key = `${input.kind}:${[...input.path, input.task.title].join(' / ')}`
    calls.executions.set(key, (calls.executions.get(key) ?? 0) + 1)
  }
  const provider: LlmProvider = {
    name: offline.name,
    model: offline.model,
    cheapModel: null,
    withModel: () => provider,
    downgrade: () => provider,
    decompose: async (input, opts) => {
      calls.decompose++
      await wait(opts, 'decompose', input, input.node.title)
      return await offline.decompose(input, opts)
    },
    score: async (input, opts) => {
      calls.score++
      await wait(opts, 'score', input, input.node.title)
      return await offline.score(input, opts)
    },
    execute: async (input, opts) => {
      countExecution(input)
      await wait(opts, input.kind === 'leaf' ? 'execute-leaf' : 'execute-rollup', input, input.task.title)
      return await offline.execute(input, opts)
    },
    executeWithTools: async (input, opts) => {
      countExecution(input)
      await wait(opts, input.kind === 'leaf' ? 'execute-leaf' : 'execute-rollup', input, input.task.title)
      return await offline.executeWithTools(input, opts)
    },
    review: async (input, opts) => {
      calls.review++
      await wait(opts, 'review', input, input.task.title)
      return await offline.review(input, opts)
    }
  }
  return provider
}
