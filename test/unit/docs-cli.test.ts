import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CLI_DOC, ENVIRONMENT, renderCliDoc } from '../../scripts/cli-docs.js'
import { CLIENT_OPTIONS, COMMANDS, OPTIONS, optionEnv } from '../../src/runtime/config.js'

/**
 * The manual cannot drift from the CLI: docs/cli.md is the rendering of the CLI's own tables, and every command
 * line in README.md and docs/ names only commands, scripts and options that exist.
 */
const ROOT = join(import.meta.dirname, '..', '..')

/** Every file under `dir` whose name ends in `ext`. */
function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter(name => name.endsWith(ext))
    .map(name => join(dir, name))
}

/** The pages a user follows today; decision records and the benchmarks' history may name what was since retired. */
const PAGES = [join(ROOT, 'README.md'), join(ROOT, 'CHANGELOG.md'), ...filesUnder(join(ROOT, 'docs'), '.md')]
  .filter(p => p !== CLI_DOC)
  .filter(p => !relative(ROOT, p).startsWith('docs/adr/') && !p.endsWith('benchmarks-history.md'))

/** Every piece of code in a page: each line of a fenced block, and each inline code span, with its line number. */
function codeIn(text: string): Array<{ line: number; code: string }> {
  const out: Array<{ line: number; code: string }> = []
  let fenced = false
  text.split('\n').forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced
      return
    }
    if (fenced || /^\s{4,}\S/.test(line)) {
      out.push({ line: i + 1, code: line })
      return
    }
    for (const m of line.matchAll(/`([^`]+)`/g)) out.push({ line: i + 1, code: m[1] as string })
  })
  return out
}

const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
const NODE_OPTIONS = new Set(Object.keys(OPTIONS))
const ALL_CLI_OPTIONS = new Set([...NODE_OPTIONS, ...Object.keys(CLIENT_OPTIONS)])
const COMMAND_NAMES = new Set<string>(COMMANDS.map(c => c.name))

/** The options a script parses: the keys of its parseArgs table, or the flags its help text lists. */
function scriptOptions(file: string): Set<string> {
  const source = readFileSync(join(ROOT, file), 'utf8')
  const keys = [...source.matchAll(/['"]?([a-z][a-z0-9-]*)['"]?: \{ type: '(?:string|boolean)'/g)].map(
    m => m[1] as string
  )
  const help = /const (?:HELP|USAGE) = `([^`]*)`/.exec(source)?.[1] ?? ''
  return new Set([...keys, ...[...help.matchAll(/--([a-z][a-z0-9-]*)/g)].map(m => m[1] as string)])
}
const SCRIPT_OPTIONS: Record<string, Set<string>> = {
  demo: scriptOptions('scripts/demo.ts'),
  sim: scriptOptions('scripts/sim.ts'),
  bench: scriptOptions('bench/run.ts')
}
/** What docker-compose.yml reads from the shell that runs it. */
const COMPOSE_VARIABLES = [
  ...readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8').matchAll(/\$\{(PLAN_SWARM_[A-Z0-9_]+)/g)
].map(m => m[1] as string)
const ANY_OPTION = new Set([...ALL_CLI_OPTIONS, ...Object.values(SCRIPT_OPTIONS).flatMap(s => [...s])])

/** The words after a command up to the end of that shell command. */
function argsAfter(code: string, start: number): string[] {
  const rest = code.slice(start).split(/\s(?:&&|\|\||;|>|2>|#)\s|\s\|\s/)[0] ?? ''
  return rest.split(/\s+/).filter(w => w !== '')
}

const flagsOf = (words: readonly string[]): string[] =>
  words.filter(w => /^--[a-z]/.test(w)).map(w => w.slice(2).replace(/[=[\]].*$/, ''))

/** What is wrong with one piece of code: commands, scripts or options that do not exist. */
function problems(code: string): string[] {
  const found: string[] = []
  for (const m of code.matchAll(/(?:npm start (?:-s )?--|(?:^\$ |npx )plan-swarm|bin\/plan-swarm\.mjs)\s+/g)) {
    const words = argsAfter(code, (m.index ?? 0) + m[0].length)
    const first = words[0]
    if (first === undefined || first.startsWith('<')) continue
    const node = first.startsWith('-')
    if (!node && !COMMAND_NAMES.has(first)) found.push(`command ${JSON.stringify(first)} does not exist`)
    const allowed = node ? NODE_OPTIONS : ALL_CLI_OPTIONS
    for (const f of flagsOf(words))
      if (!allowed.has(f)) found.push(`option --${f} is not an option of ${node ? 'a node' : first}`)
  }
  for (const m of code.matchAll(/npm run ([a-z][a-z0-9:-]*)/g)) {
    const script = m[1] as string
    if (PACKAGE.scripts[script] === undefined) {
      found.push(`npm script ${script} does not exist`)
      continue
    }
    const words = argsAfter(code, (m.index ?? 0) + m[0].length)
    if (words[0] !== '--') continue
    const known = SCRIPT_OPTIONS[script] ?? new Set<string>()
    for (const f of flagsOf(words)) if (!known.has(f)) found.push(`option --${f} is not an option of npm run ${script}`)
  }
  const lone = /^--([a-z][a-z0-9-]*)(?:[ =]|$)/.exec(code)
  const nodeFlag = lone !== null && process.allowedNodeEnvironmentFlags.has(`--${lone[1] as string}`)
  if (lone !== null && !nodeFlag && !ANY_OPTION.has(lone[1] as string))
    found.push(`--${lone[1] as string} is no option of the CLI or a script`)
  const known = new Set([
    ...[...ALL_CLI_OPTIONS].flatMap(name => optionEnv(name) ?? []),
    ...ENVIRONMENT.map(([name]) => name),
    ...COMPOSE_VARIABLES
  ])
  for (const m of code.matchAll(/\b(PLAN_SWARM_[A-Z0-9_]+)\b/g)) {
    const name = m[1] as string
    if (!known.has(name) && name !== 'PLAN_SWARM_') found.push(`${name} is not a variable the CLI reads`)
  }
  return found
}

describe('the manual against the CLI', () => {
  it("docs/cli.md is the rendering of the CLI's tables (run `npm run docs:cli` after changing them)", () => {
    expect(readFileSync(CLI_DOC, 'utf8')).toBe(renderCliDoc())
  })

  it('README.md and docs/ name only commands, scripts, options and variables that exist', () => {
    expect(PAGES.length).toBeGreaterThan(1)
    const wrong = PAGES.flatMap(page =>
      codeIn(readFileSync(page, 'utf8')).flatMap(({ line, code }) =>
        problems(code).map(p => `${relative(ROOT, page)}:${line}: ${p} (in \`${code.trim()}\`)`)
      )
    )
    expect(wrong).toEqual([])
  })

  it('the check itself refuses what does not exist', () => {
    expect(problems('npm start -- --role scorer --http 127.0.0.1:7070')).toEqual([])
    expect(problems('npm start -- submit "a goal" --wait --max-depth 2')).toEqual([])
    expect(problems('npm start -- --role scorer --frobnicate')).toHaveLength(1)
    expect(problems('npm start -- --role scorer --wait')).toHaveLength(1)
    expect(problems('npm start -- publish "a goal"')).toHaveLength(1)
    expect(problems('npm run nothing-here')).toHaveLength(1)
    expect(problems('npm run sim -- --nodes 20 --seed 3')).toEqual([])
    expect(problems('npm run sim -- --nodez 20')).toHaveLength(1)
    expect(problems('--no-such-flag')).toHaveLength(1)
    expect(problems('--max-depth 2')).toEqual([])
    expect(problems('PLAN_SWARM_NO_SUCH=1 npm start -- --role observer')).toHaveLength(1)
    expect(problems('PLAN_SWARM_ROLE=observer npm start')).toEqual([])
  })

  it('every environment variable the code reads is documented in docs/cli.md', () => {
    const read = new Set(
      filesUnder(join(ROOT, 'src'), '.ts').flatMap(path =>
        [...readFileSync(path, 'utf8').matchAll(/env\.([A-Z][A-Z0-9_]+)/g)].map(m => m[1] as string)
      )
    )
    const documented = new Set(ENVIRONMENT.map(([name]) => name))
    expect([...read].filter(name => !documented.has(name))).toEqual([])
  })
})
