import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { helpText } from '../../src/runtime/config.js'
import { VERSION } from '../../src/runtime/version.js'

const ROOT = join(import.meta.dirname, '..', '..')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }

describe('the release comes from package.json alone', () => {
  it('is what a node announces and names itself as', () => {
    expect(VERSION).toBe(`plan-swarm/${pkg.version}`)
  })

  it('`--version` prints it, alone or beside a role, and --help lists the option', async () => {
    const run = async (...args: string[]): Promise<string> =>
      (
        await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
          cwd: ROOT,
          timeout: 60_000
        })
      ).stdout
    expect(await run('--version')).toBe(`${VERSION}\n`)
    expect(await run('--role', 'scorer', '--version')).toBe(`${VERSION}\n`)
    expect(helpText()).toContain('--version')
  }, 120_000)

  it('CHANGELOG.md has an entry for it', () => {
    expect(readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8')).toMatch(
      new RegExp(`^## ${pkg.version.replace(/\./g, '\\.')}\\b`, 'm')
    )
  })
})
