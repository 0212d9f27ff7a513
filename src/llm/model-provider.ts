/**
 * The four questions, asked of a real model through any transport: builds the
 * prompt, forces the matching tool, validates the answer; and a task run with
 * tools, through the agent loop (agent-loop.ts). Shared by the Anthropic and
 * OpenAI-compatible providers, which differ only in transport.
 */
import { MAX_MODEL_CHARS } from '../core/limits.js'
import { runToolLoop, type LoopTransport } from './agent-loop.js'
import {
  buildDecomposePrompt,
  buildExecutePrompt,
  buildReviewPrompt,
  buildScorePrompt,
  proposalLabel
} from './prompts.js'
import { DEFAULT_RETRY_POLICY, type RetryHooks, type RetryPolicy } from './retry.js'
import { callTool, type ToolCallSettings, type ToolTransport } from './tool-call.js'
import { resultTool, reviewTool, scoreTool, splitTool } from './tools.js'
import type {
  CallOptions,
  DecomposeInput,
  DecomposeOutput,
  ExecuteInput,
  ExecuteOutput,
  LlmProvider,
  ProviderName,
  ReviewInput,
  ReviewOutput,
  ScoreInput,
  ScoreOutput,
  ToolLoopOptions,
  ToolLoopOutput
} from './types.js'
import { checkOutput, checkReview, checkScore, checkSplit } from './validate.js'

/** Output token limits per question, unless the caller asks for less. */
export const MAX_OUTPUT_TOKENS = Object.freeze({ decompose: 4_096, score: 4_096, execute: 12_000, review: 1_024 })

/** Answers (tool calls) per question before LlmOutputError. */
export const DEFAULT_MAX_TRIES = 3

export interface ModelProviderSettings {
  readonly model: string
  readonly cheapModel?: string | null
  /** Answers per question (the first and the corrected ones) before giving up. */
  readonly maxTries?: number
  readonly retry?: Partial<RetryPolicy>
  readonly hooks?: RetryHooks
}

function limit(defaultTokens: number, opts: CallOptions | undefined): number {
  const asked = opts?.maxOutputTokens
  return asked !== undefined && asked > 0 ? Math.min(defaultTokens, Math.floor(asked)) : defaultTokens
}

/** The reported model name, or the configured one when the endpoint's does not fit the wire's cap. */
function modelName(reported: string, configured: string): string {
  return reported.length <= MAX_MODEL_CHARS ? reported : configured.slice(0, MAX_MODEL_CHARS)
}

function mergePolicy(given: Partial<RetryPolicy> | undefined): RetryPolicy {
  const defined = Object.fromEntries(Object.entries(given ?? {}).filter(([, v]) => v !== undefined))
  return { ...DEFAULT_RETRY_POLICY, ...defined }
}

export function createModelProvider(
  name: ProviderName,
  transport: ToolTransport & LoopTransport,
  settings: ModelProviderSettings
): LlmProvider {
  const call: ToolCallSettings = {
    maxTries: settings.maxTries ?? DEFAULT_MAX_TRIES,
    policy: mergePolicy(settings.retry),
    hooks: settings.hooks ?? {}
  }
  const model = settings.model
  const cheapModel = settings.cheapModel ?? null

  const provider: LlmProvider = {
    name,
    model,
    cheapModel,
    withModel: (m: string) => createModelProvider(name, transport, { ...settings, model: m }),
    downgrade: () => (cheapModel === null || cheapModel === model ? provider : provider.withModel(cheapModel)),

    async decompose(input: DecomposeInput, opts?: CallOptions): Promise<DecomposeOutput> {
      const r = await callTool(transport, call, {
        operation: 'decompose',
        prompt: buildDecomposePrompt(input),
        tool: splitTool(input.minChildren, input.maxChildren, input.tools ?? []),
        model,
        maxOutputTokens: limit(MAX_OUTPUT_TOKENS.decompose, opts),
        validate: v => checkSplit(v, input.minChildren, input.maxChildren, input.tools ?? []),
        signal: opts?.signal
      })
      return {
        subgoals: r.value.subgoals,
        rationale: r.value.rationale,
        usage: r.usage,
        model: modelName(r.model, model)
      }
    },

    async score(input: ScoreInput, opts?: CallOptions): Promise<ScoreOutput> {
      const labels = input.proposals.map((_p, i) => proposalLabel(i))
      const ids = input.proposals.map(p => p.id)
      const r = await callTool(transport, call, {
        operation: 'score',
        prompt: buildScorePrompt(input),
        tool: scoreTool(labels),
        model,
        maxOutputTokens: limit(MAX_OUTPUT_TOKENS.score, opts),
        validate: v => checkScore(v, labels, ids),
        signal: opts?.signal
      })
      return { ...r.value, usage: r.usage, model: modelName(r.model, model) }
    },

    async execute(input: ExecuteInput, opts?: CallOptions): Promise<ExecuteOutput> {
      const r = await callTool(transport, call, {
        operation: input.kind === 'leaf' ? 'execute' : 'roll-up',
        prompt: buildExecutePrompt(input),
        tool: resultTool(),
        model,
        maxOutputTokens: limit(MAX_OUTPUT_TOKENS.execute, opts),
        validate: checkOutput,
        signal: opts?.signal
      })
      return { output: r.value.output, usage: r.usage, model: modelName(r.model, model), source: 'llm' }
    },

    async executeWithTools(input: ExecuteInput, opts: ToolLoopOptions): Promise<ToolLoopOutput> {
      const r = await runToolLoop(
        transport,
        { policy: call.policy, hooks: call.hooks },
        { input, model, maxOutputTokens: limit(MAX_OUTPUT_TOKENS.execute, opts), opts }
      )
      return { ...r, model: modelName(r.model, model), source: 'llm' }
    },

    async review(input: ReviewInput, opts?: CallOptions): Promise<ReviewOutput> {
      const r = await callTool(transport, call, {
        operation: 'review',
        prompt: buildReviewPrompt(input),
        tool: reviewTool(),
        model,
        maxOutputTokens: limit(MAX_OUTPUT_TOKENS.review, opts),
        validate: checkReview,
        signal: opts?.signal
      })
      return { ...r.value, usage: r.usage, model: modelName(r.model, model) }
    }
  }
  return provider
}
