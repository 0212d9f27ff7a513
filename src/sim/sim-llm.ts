import { createOfflineProvider } from '../llm/offline/provider.js'
import { LlmAbortedError } from '../llm/errors.js'
import { ZERO_USAGE } from '../llm/types.js'

import type { CallOptions, ExecuteInput, LlmProvider } from '../llm/types.js'
import type { Scheduler } from '../ports/scheduler.js'

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

/**
 * The simulator's model: the offline heuristics (deterministic: same input,
 * same output on every node) behind a latency in virtual time, with every
 * call counted. An aborted call (an executor that lost its claim) stops at
 * once, as the real SDK call would, and still counts as made.
 */
export function createSimProvider(scheduler: Scheduler, latencyMs: number, calls: LlmCalls): LlmProvider {
  const offline = createOfflineProvider()
  const wait = async (opts: CallOptions | undefined): Promise<void> => {
    await new Promise<void>((resolve, reject) => {
      const signal = opts?.signal
      const cancel = scheduler.after(latencyMs, () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      })
      const onAbort = (): void => {
        cancel()
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
      await wait(opts)
      return await offline.decompose(input, opts)
    },
    score: async (input, opts) => {
      calls.score++
      await wait(opts)
      return await offline.score(input, opts)
    },
    execute: async (input, opts) => {
      countExecution(input)
      await wait(opts)
      return await offline.execute(input, opts)
    },
    executeWithTools: async (input, opts) => {
      countExecution(input)
      await wait(opts)
      return await offline.executeWithTools(input, opts)
    },
    review: async (input, opts) => {
      calls.review++
      await wait(opts)
      return await offline.review(input, opts)
    }
  }
  return provider
}
