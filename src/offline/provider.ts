/**
 * The provider used when no model is configured. It runs deterministic
 * heuristics (text splitting, templates, word-count measures), says so in
 * every rationale, note and output, reports zero tokens and the source
 * 'offline', and never claims to have carried out a task. Same input, same
 * output, on every node: offline swarms converge as easily as real ones.
 * With tools it makes fixed calls (tools.ts) and quotes what they returned.
 */
import { LlmAbortedError } from '../llm/errors.js'
import type { CallOptions, LlmProvider } from '../llm/types.js'
import { ZERO_USAGE } from '../llm/types.js'
import { decomposeOffline } from './decompose.js'
import { executeOffline, reviewOffline } from './execute.js'
import { scoreOffline } from './score.js'
import { executeWithToolsOffline } from './tools.js'

/** What the CLI prints when it falls back to the offline provider. */
export const OFFLINE_BANNER = 'no ANTHROPIC_API_KEY: offline heuristics, not a language model'

/** The `model` offline results report. */
export const OFFLINE_MODEL = 'offline-heuristics'

function notAborted(opts: CallOptions | undefined): void {
  if (opts?.signal?.aborted === true) throw new LlmAbortedError(ZERO_USAGE)
}

export function createOfflineProvider(): LlmProvider {
  const provider: LlmProvider = {
    name: 'offline',
    model: OFFLINE_MODEL,
    cheapModel: null,
    withModel: () => provider,
    downgrade: () => provider,
    decompose: async (input, opts) => {
      notAborted(opts)
      return { ...decomposeOffline(input), usage: ZERO_USAGE, model: OFFLINE_MODEL }
    },
    score: async (input, opts) => {
      notAborted(opts)
      return { ...scoreOffline(input), usage: ZERO_USAGE, model: OFFLINE_MODEL }
    },
    execute: async (input, opts) => {
      notAborted(opts)
      return { output: executeOffline(input), usage: ZERO_USAGE, model: OFFLINE_MODEL, source: 'offline' }
    },
    executeWithTools: async (input, opts) => ({
      ...(await executeWithToolsOffline(input, opts)),
      model: OFFLINE_MODEL
    }),
    review: async (input, opts) => {
      notAborted(opts)
      return { ...reviewOffline(input), usage: ZERO_USAGE, model: OFFLINE_MODEL }
    }
  }
  return provider
}
