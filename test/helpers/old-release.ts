/**
 * An earlier release of plan-swarm, for tests of mixed swarms: the source as
 * it was just before a change (the parent of the first commit that added
 * `marker` to `file`, e.g. PROTOCOL_VERSION_3 to src/core/events.ts), taken
 * from git into a temporary folder that borrows this checkout's
 * node_modules (neighbouring releases use the same packages). Undefined
 * when the checkout has no git history to take it from.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from './cli-process.js'

export interface OldRelease {
  readonly version: string
  readonly commit: string
  readonly dir: string
  /** argv to run its CLI: node --import tsx <dir>/src/cli.ts */
  readonly cli: readonly string[]
}

const git = (args: string[]): string => execFileSync('git', ['-C', REPO_ROOT, ...args], { encoding: 'utf8' }).trim()

export function sourceBefore(marker: string, file: string, into: string): OldRelease | undefined {
  let commit: string
  let version: string
  try {
    const added = git(['log', '--reverse', '--format=%H', '-S', marker, '--', file]).split('\n')[0] ?? ''
    if (added === '') return undefined
    commit = git(['rev-parse', `${added}^`])
    version = (JSON.parse(git(['show', `${commit}:package.json`])) as { version: string }).version
  } catch {
    return undefined
  }
  const dir = join(into, `plan-swarm-${version}`)
  mkdirSync(dir, { recursive: true })
  execFileSync('sh', ['-c', `git -C "${REPO_ROOT}" archive ${commit} src roles package.json | tar -x -C "${dir}"`])
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'))
  return { version, commit, dir, cli: [process.execPath, '--import', 'tsx', join(dir, 'src', 'cli.ts')] }
}
