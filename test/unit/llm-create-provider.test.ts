/**
 * Provider selection from flags and environment, as the design says: a key
 * means Anthropic, no key means offline (and the banner says so), and an
 * explicit choice that cannot work is an error that says what to do.
 */
import { describe, expect, it } from 'vitest'
import { createProvider } from '../../src/app/create-provider.js'
import { ProviderConfigError } from '../../src/llm/index.js'
import { OFFLINE_BANNER } from '../../src/offline/index.js'

describe('createProvider', () => {
  it('is offline, and says so, without ANTHROPIC_API_KEY', () => {
    const { provider, banner } = createProvider({ env: {} })
    expect(provider.name).toBe('offline')
    expect(banner).toBe(OFFLINE_BANNER)
    expect(createProvider({ env: { ANTHROPIC_API_KEY: '  ' } }).provider.name).toBe('offline')
  })

  it('is anthropic with ANTHROPIC_API_KEY, with a cheap model on the official API', () => {
    const { provider, banner } = createProvider({ env: { ANTHROPIC_API_KEY: 'k' } })
    expect(provider).toMatchObject({ name: 'anthropic', model: 'claude-sonnet-5-5', cheapModel: 'claude-haiku-5-5' })
    expect(banner).toBe('anthropic: model claude-sonnet-5-5 (cheap: claude-haiku-5-5) at https://api.anthropic.com')
    expect(provider.downgrade().model).toBe('claude-haiku-5-5')
  })

  it('reaches a local Messages API server through ANTHROPIC_BASE_URL or --base-url, with no default cheap model', () => {
    const viaEnv = createProvider({
      model: 'qwen3',
      env: { ANTHROPIC_API_KEY: 'ollama', ANTHROPIC_BASE_URL: 'http://127.0.0.1:11434/' }
    })
    expect(viaEnv.banner).toBe('anthropic: model qwen3 at http://127.0.0.1:11434')
    expect(viaEnv.provider.cheapModel).toBeNull()
    expect(viaEnv.provider.downgrade()).toBe(viaEnv.provider)
    const viaFlag = createProvider({
      provider: 'anthropic',
      baseUrl: 'http://localhost:8080',
      cheapModel: 'small',
      env: { ANTHROPIC_API_KEY: 'x', ANTHROPIC_BASE_URL: 'http://ignored' }
    })
    expect(viaFlag.banner).toBe('anthropic: model claude-sonnet-5-5 (cheap: small) at http://localhost:8080')
  })

  it('refuses --provider anthropic without a key, and says what to do', () => {
    expect(() => createProvider({ provider: 'anthropic', env: {} })).toThrow(ProviderConfigError)
    expect(() => createProvider({ provider: 'anthropic', env: {} })).toThrow(
      /set ANTHROPIC_API_KEY.*or use --provider offline/
    )
  })

  it('honours an explicit offline choice even with a key', () => {
    const { provider, banner } = createProvider({ provider: 'offline', env: { ANTHROPIC_API_KEY: 'k' } })
    expect(provider.name).toBe('offline')
    expect(banner).toMatch(/offline heuristics, not a language model/)
  })

  it('builds an OpenAI-compatible provider, and needs a key or a base URL', () => {
    expect(createProvider({ provider: 'openai', env: { OPENAI_API_KEY: 'sk' } }).banner).toBe(
      'openai-compatible: model gpt-4o-mini at https://api.openai.com/v1'
    )
    expect(
      createProvider({
        provider: 'openai',
        env: { OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1', OPENAI_MODEL: 'llama' }
      }).banner
    ).toBe('openai-compatible: model llama at http://127.0.0.1:8000/v1')
    expect(() => createProvider({ provider: 'openai', env: {} })).toThrow(/needs OPENAI_API_KEY/)
  })

  it.each([
    [
      { provider: 'gpt', env: {} },
      /unknown provider "gpt"; use --provider anthropic, --provider openai, --provider offline/
    ],
    [{ provider: 'openai', baseUrl: 'localhost:8000', env: {} }, /--base-url "localhost:8000" must be an http/],
    [{ provider: 'openai', baseUrl: 'not a url', env: {} }, /is not a URL/],
    [{ model: 'm'.repeat(101), env: { ANTHROPIC_API_KEY: 'k' } }, /longer than 100 characters/]
  ])('refuses bad options: %o', (opts, message) => {
    const err = (() => {
      try {
        createProvider(opts)
        return null
      } catch (e) {
        return e
      }
    })()
    expect(err).toBeInstanceOf(ProviderConfigError)
    expect(err).toMatchObject({
      name: 'ProviderConfigError',
      exitCode: 2,
      message: expect.stringMatching(message) as unknown
    })
  })
})
