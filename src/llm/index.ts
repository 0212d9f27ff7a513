/**
 * The LLM layer: what roles import. See types.ts for the provider interface,
 * prompts.ts for how quoted data enters prompts, agent-loop.ts for tasks run
 * with tools. The offline heuristics sit above it (src/offline), and
 * src/app/create-provider.ts chooses among them all.
 */
export type {
  CallOptions,
  DecomposeInput,
  DecomposeOutput,
  ExecuteInput,
  ExecuteOutput,
  KnownAngle,
  LlmProvider,
  NodeText,
  PlanContext,
  ProposalText,
  ProviderName,
  QuotedResult,
  ReviewInput,
  ReviewOutput,
  ScoreInput,
  ScoreOutput,
  CacheUsage,
  ToolBox,
  ToolDef,
  ToolLoopLimits,
  ToolLoopOptions,
  ToolLoopOutput,
  ToolOutcome
} from './types.js'
export { ANGLES, DEFAULT_TOOL_LIMITS, PROVIDER_NAMES, ZERO_USAGE, addUsage } from './types.js'
export { LlmAbortedError, LlmOutputError, LlmRequestError, ProviderConfigError, ToolLoopError } from './errors.js'
export { cutToBytes, exposeTools, MODEL_TOOL_NAME, stepLimitReason, toolRecord } from './agent-loop.js'
export type { ExposedTool } from './agent-loop.js'
export {
  createAnthropicProvider,
  DEFAULT_ANTHROPIC_BASE_URL,
  DEFAULT_ANTHROPIC_CHEAP_MODEL,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_REQUEST_TIMEOUT_MS
} from './anthropic.js'
export type { AnthropicProviderOptions } from './anthropic.js'
export { createOpenAiProvider, DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL } from './openai.js'
export type { OpenAiProviderOptions } from './openai.js'
export { DEFAULT_RETRY_POLICY } from './retry.js'
export type { RetryEvent, RetryHooks, RetryPolicy } from './retry.js'
export { DEFAULT_MAX_TRIES, MAX_OUTPUT_TOKENS } from './model-provider.js'
export {
  buildDecomposePrompt,
  buildExecutePrompt,
  buildReviewPrompt,
  buildScorePrompt,
  buildToolLoopPrompt,
  quoteAttr,
  quoteText,
  quoteToolResult,
  SYSTEM_PROMPT,
  TOOL_LOOP_SYSTEM_PROMPT
} from './prompts.js'
