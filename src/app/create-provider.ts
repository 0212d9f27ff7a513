/**
 * Choosing the provider from flags and environment:
 * Anthropic when ANTHROPIC_API_KEY is set (ANTHROPIC_BASE_URL or --base-url
 * reaching Ollama or llama.cpp servers that speak the Messages API), an
 * OpenAI-compatible endpoint by flag, otherwise the offline heuristics with a
 * banner that says plainly they are not a model. An explicit choice that
 * cannot work is a ProviderConfigError, never a silent fallback.
 */
import { MAX_MODEL_CHARS } from '../core/limits.js'
import {
  createAnthropicProvider,
  DEFAULT_ANTHROPIC_BASE_URL,
  DEFAULT_ANTHROPIC_CHEAP_MODEL,
  DEFAULT_ANTHROPIC_MODEL
} from '../llm/anthropic.js'
import { ProviderConfigError } from '../llm/errors.js'
import { createOfflineProvider, OFFLINE_BANNER } from '../offline/provider.js'
import { createOpenAiProvider, DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL } from '../llm/openai.js'
import type { RetryHooks, RetryPolicy } from '../llm/retry.js'
import { PROVIDER_NAMES, type LlmProvider, type ProviderName } from '../llm/types.js'

export interface CreateProviderOptions {
  /** --provider; unset picks anthropic when ANTHROPIC_API_KEY is set, else offline. */
  readonly provider?: ProviderName | (string & {})
  /** --model */
  readonly model?: string
  /** The model for budget downgrades; defaults to Claude Haiku on api.anthropic.com, none elsewhere. */
  readonly cheapModel?: string
  /** --base-url */
  readonly baseUrl?: string
  readonly env: NodeJS.ProcessEnv
  /** Per HTTP request; retried on expiry. */
  readonly timeoutMs?: number
  readonly retry?: Partial<RetryPolicy>
  readonly hooks?: RetryHooks
  /** Answers per question before LlmOutputError. */
  readonly maxTries?: number
  readonly fetch?: typeof fetch
}

export interface ProviderChoice {
  readonly provider: LlmProvider
  /** One line for the terminal: which provider, model and endpoint, or that no model runs at all. */
  readonly banner: string
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim()
}

function checkModel(model: string, flag: string): string {
  if (model.length > MAX_MODEL_CHARS)
    throw new ProviderConfigError(
      `${flag} "${model.slice(0, 40)}..." is longer than ${MAX_MODEL_CHARS} characters; give a model name`
    )
  return model
}

function checkUrl(url: string, from: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ProviderConfigError(`${from} "${url}" is not a URL; give one like http://127.0.0.1:11434`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ProviderConfigError(`${from} "${url}" must be an http:// or https:// URL`)
  }
  return url.replace(/\/+$/, '')
}

export function createProvider(opts: CreateProviderOptions): ProviderChoice {
  const env = opts.env
  const requested = nonEmpty(opts.provider)
  if (requested !== undefined && !(PROVIDER_NAMES as readonly string[]).includes(requested)) {
    throw new ProviderConfigError(
      `unknown provider "${requested}"; use --provider ${PROVIDER_NAMES.join(', --provider ')}`
    )
  }
  const anthropicKey = nonEmpty(env.ANTHROPIC_API_KEY)
  const name: ProviderName =
    (requested as ProviderName | undefined) ?? (anthropicKey !== undefined ? 'anthropic' : 'offline')
  const model = nonEmpty(opts.model)
  const common = {
    timeoutMs: opts.timeoutMs,
    retry: opts.retry,
    hooks: opts.hooks,
    maxTries: opts.maxTries,
    fetch: opts.fetch
  }

  switch (name) {
    case 'offline':
      return {
        provider: createOfflineProvider(),
        banner:
          anthropicKey === undefined ? OFFLINE_BANNER : '--provider offline: offline heuristics, not a language model'
      }
    case 'anthropic': {
      if (anthropicKey === undefined) {
        throw new ProviderConfigError(
          '--provider anthropic needs an API key: set ANTHROPIC_API_KEY (any non-empty value for a ' +
            'local server such as Ollama), or use --provider offline'
        )
      }
      const explicitUrl = nonEmpty(opts.baseUrl) ?? nonEmpty(env.ANTHROPIC_BASE_URL)
      const baseURL =
        explicitUrl === undefined
          ? DEFAULT_ANTHROPIC_BASE_URL
          : checkUrl(explicitUrl, nonEmpty(opts.baseUrl) !== undefined ? '--base-url' : 'ANTHROPIC_BASE_URL')
      const official = baseURL === DEFAULT_ANTHROPIC_BASE_URL
      const m = checkModel(model ?? DEFAULT_ANTHROPIC_MODEL, '--model')
      const cheap = nonEmpty(opts.cheapModel) ?? (official ? DEFAULT_ANTHROPIC_CHEAP_MODEL : undefined)
      const provider = createAnthropicProvider({
        ...common,
        apiKey: anthropicKey,
        baseURL,
        model: m,
        cheapModel: cheap === undefined ? null : checkModel(cheap, 'cheap model')
      })
      return {
        provider,
        banner: `anthropic: model ${m}${cheap === undefined ? '' : ` (cheap: ${cheap})`} at ${baseURL}`
      }
    }
    case 'openai': {
      const explicitUrl = nonEmpty(opts.baseUrl) ?? nonEmpty(env.OPENAI_BASE_URL)
      const baseUrl =
        explicitUrl === undefined
          ? DEFAULT_OPENAI_BASE_URL
          : checkUrl(explicitUrl, nonEmpty(opts.baseUrl) !== undefined ? '--base-url' : 'OPENAI_BASE_URL')
      const apiKey = nonEmpty(env.OPENAI_API_KEY)
      if (apiKey === undefined && baseUrl === DEFAULT_OPENAI_BASE_URL) {
        throw new ProviderConfigError(
          '--provider openai without --base-url talks to api.openai.com and needs OPENAI_API_KEY: ' +
            'set it, give --base-url for a local server, or use --provider offline'
        )
      }
      const m = checkModel(model ?? nonEmpty(env.OPENAI_MODEL) ?? DEFAULT_OPENAI_MODEL, '--model')
      const cheap = nonEmpty(opts.cheapModel)
      const provider = createOpenAiProvider({
        ...common,
        apiKey,
        baseUrl,
        model: m,
        cheapModel: cheap === undefined ? null : checkModel(cheap, 'cheap model')
      })
      return {
        provider,
        banner: `openai-compatible: model ${m}${cheap === undefined ? '' : ` (cheap: ${cheap})`} at ${baseUrl}`
      }
    }
    default: {
      const unreachable: never = name
      throw new ProviderConfigError(`unknown provider ${String(unreachable)}`)
    }
  }
}
