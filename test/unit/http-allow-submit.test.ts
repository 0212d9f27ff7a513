/**
 * `--allow-submit` (and PLAN_SWARM_ALLOW_SUBMIT): only for an observer that
 * serves --http, off by default; anything else is a configuration error
 * that says what to change.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, helpText, parseNodeArgs } from '../../src/runtime/config.js'

describe('--allow-submit', () => {
  it('is off unless asked for, and then on for an observer with --http', () => {
    expect(parseNodeArgs(['--role', 'observer', '--http', '127.0.0.1:8080'], {}).allowSubmit).toBe(false)
    expect(parseNodeArgs(['--role', 'observer', '--http', '127.0.0.1:8080', '--allow-submit'], {}).allowSubmit).toBe(
      true
    )
    expect(
      parseNodeArgs([], {
        PLAN_SWARM_ROLE: 'observer',
        PLAN_SWARM_HTTP: '0.0.0.0:8080',
        PLAN_SWARM_ALLOW_SUBMIT: 'true'
      }).allowSubmit
    ).toBe(true)
    expect(
      parseNodeArgs([], {
        PLAN_SWARM_ROLE: 'observer',
        PLAN_SWARM_HTTP: '0.0.0.0:8080',
        PLAN_SWARM_ALLOW_SUBMIT: 'false'
      }).allowSubmit
    ).toBe(false)
  })

  it('is refused, saying why, on another role or without --http', () => {
    expect(() => parseNodeArgs(['--role', 'scorer', '--http', '127.0.0.1:8080', '--allow-submit'], {})).toThrow(
      ConfigError
    )
    expect(() => parseNodeArgs(['--role', 'scorer', '--http', '127.0.0.1:8080', '--allow-submit'], {})).toThrow(
      /--allow-submit is for the observer/
    )
    expect(() => parseNodeArgs(['--role', 'observer', '--allow-submit'], {})).toThrow(/needs --http/)
    expect(() => parseNodeArgs([], { PLAN_SWARM_ROLE: 'observer', PLAN_SWARM_ALLOW_SUBMIT: 'maybe' })).toThrow(
      /PLAN_SWARM_ALLOW_SUBMIT=maybe: expected true or false/
    )
  })

  it('is in --help, with its variable', () => {
    expect(helpText()).toMatch(/--allow-submit\s+observer: let the dashboard submit goals/)
    expect(helpText()).toContain('PLAN_SWARM_ALLOW_SUBMIT')
  })
})
