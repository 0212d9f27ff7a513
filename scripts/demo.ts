import '../src/polyfill.js'
import { spawn } from 'node:child_process'
import { parseArgs } from 'node:util'
import { mkdtempSync, readFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { renderTree } from '../roles/render.js'
import type { ChildProcess } from 'node:child_process'
import type { PlanTree } from '../src/core/tree.js'

/**
 * `npm run demo [-- "goal"]`: a whole swarm of real processes on 127.0.0.1
 * (2 decomposers, 3 scorers, 3 executors, 1 observer), joined by bootstrap
 * addresses, a goal submitted, the tree shown live, the deliverable printed.
 * `npm run demo -- --tools`: one of the executors gets the example tools
 * (examples/tools.json: the notes server over examples/notes/), the plan
 * uses tools, and the leaves that need the notes go to that executor.
 * `npm run demo -- --trust`: the goal is a protocol 5 plan, folded by the
 * rules that hold against a dishonest member (docs/security.md).
 * `npm run demo -- --built`: the nodes run the bundle `npm run build` wrote
 * (dist/src/cli.js) instead of the sources through tsx; each starts in a
 * fraction of the CPU (the demo's end-to-end test uses it).
 * Exit 0 when the plan completes; Ctrl-C stops every child.
 */
const USAGE = `npm run demo [-- "goal"] [-- --tools] [-- --trust] [-- --built]`
const ROOT = resolve(import.meta.dirname, '..')
const { values: flags, positionals } = (() => {
  try {
    return parseArgs({
      options: {
        tools: { type: 'boolean' },
        trust: { type: 'boolean' },
        built: { type: 'boolean' },
        help: { type: 'boolean' }
      },
      allowPositionals: true
    })
  } catch (err) {
    console.error(`${(err as Error).message}\nusage: ${USAGE}`)
    process.exit(2)
  }
})()
if (flags.help === true) {
  console.log(`usage: ${USAGE}`)
  process.exit(0)
}
const withTools = flags.tools === true
const BUILT_CLI = join(ROOT, 'dist/src/cli.js')
if (flags.built === true && !existsSync(BUILT_CLI)) {
  console.error(`--built: ${BUILT_CLI} is missing; run \`npm run build\` first`)
  process.exit(2)
}
/** The argv that runs the CLI: the bundle with --built, else the sources through tsx (as `npm start`). */
const CLI = flags.built === true ? [BUILT_CLI] : ['--import', 'tsx', join(ROOT, 'src/cli.ts')]
const TOOLS_FILE = join(ROOT, 'examples/tools.json')
const goal =
  positionals.join(' ').trim() ||
  (withTools ? "turn the team's notes into a plan for the offsite" : 'plan a two-week trip to Japan')
const timeoutS = Number(process.env.DEMO_TIMEOUT_S ?? 600)
const dir = mkdtempSync(join(tmpdir(), 'plan-swarm-demo-'))
const swarm = 'demo'
const children: ChildProcess[] = []
const tty = process.stdout.isTTY

function node(name: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [...CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, PLAN_SWARM_HOME: join(dir, 'home') },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  children.push(child)
  child.stderr?.on('data', (d: Buffer) => {
    if (process.env.DEMO_VERBOSE !== undefined) process.stderr.write(`[${name}] ${d.toString()}`)
  })
  return child
}

function firstJson(
  child: ChildProcess,
  match: (o: Record<string, unknown>) => boolean
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream })
    rl.on('line', line => {
      try {
        const o = JSON.parse(line) as Record<string, unknown>
        if (match(o)) resolve(o)
      } catch {
        /* not JSON */
      }
    })
    child.once('exit', code => {
      reject(new Error(`a demo process exited early (code ${code}); rerun with DEMO_VERBOSE=1 to see why`))
    })
  })
}

let stopping = false
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
    const deadline = Date.now() + 5_000
    while (children.some(c => c.exitCode === null && c.signalCode === null) && Date.now() < deadline)
      await new Promise(r => setTimeout(r, 100))
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  }
  process.exit(code)
}
process.on('SIGINT', () => {
  console.log('\nstopping the swarm...')
  void stopAll(130)
})
process.on('SIGTERM', () => {
  void stopAll(143)
})

const common = ['--swarm', swarm, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0', '--json']
console.log(`plan-swarm demo: 2 decomposers, 3 scorers, 3 executors and an observer on 127.0.0.1 (data in ${dir})`)
if (withTools) console.log(`executor-1 offers the tools of ${TOOLS_FILE}; the plan uses tools (--use-tools)`)
if (process.env.ANTHROPIC_API_KEY === undefined)
  console.log('no ANTHROPIC_API_KEY: offline heuristics, not a language model (set the key to plan with Claude)')

const markdown = join(dir, 'plan.md')
const observer = node('observer', [
  '--role',
  'observer',
  ...common,
  '--data-dir',
  join(dir, 'observer'),
  '--http',
  '127.0.0.1:0',
  '--markdown',
  markdown
])
const started = await firstJson(observer, o => o.event === 'started')
const seed = (started.addresses as string[])[0] as string
const http = started.http as string
const roles = [
  ['decomposer', 2],
  ['scorer', 3],
  ['executor', 3]
] as const
const ready: Array<Promise<unknown>> = []
for (const [role, n] of roles) {
  for (let i = 1; i <= n; i++) {
    const child = node(`${role}-${i}`, [
      '--role',
      role,
      ...common,
      '--data-dir',
      join(dir, `${role}-${i}`),
      '--bootstrap',
      seed,
      ...(withTools && role === 'executor' && i === 1 ? ['--tools', TOOLS_FILE] : [])
    ])
    ready.push(firstJson(child, o => o.event === 'started'))
  }
}
await Promise.all(ready)
console.log(`swarm up; observer status at ${http}/status`)

const submit = node('submit', [
  'submit',
  goal,
  '--wait',
  '--swarm',
  swarm,
  '--no-mdns',
  '--listen',
  '/ip4/127.0.0.1/tcp/0',
  '--bootstrap',
  seed,
  '--data-dir',
  join(dir, 'client'),
  '--json',
  '--timeout',
  String(timeoutS),
  '--max-depth',
  '2',
  ...(withTools ? ['--use-tools'] : []),
  ...(flags.trust === true ? ['--trust'] : [])
])
const submitted = await firstJson(submit, o => typeof o.plan === 'string' && o.status === undefined)
const plan = submitted.plan as string
console.log(`submitted "${goal}" as plan ${plan}`)
const finished = firstJson(submit, o => o.status !== undefined)

let last = ''
const draw = setInterval(
  () => {
    fetch(`${http}/plans/${plan}`)
      .then(async r => (r.ok ? ((await r.json()) as { tree: PlanTree; treeHash: string }) : undefined))
      .then(body => {
        if (body === undefined) return
        const screen = renderTree(body.tree, Date.now(), { treeHash: body.treeHash })
        if (screen === last) return
        last = screen
        process.stdout.write(tty ? `\x1b[H\x1b[2J${screen}\n` : `${screen}\n\n`)
      })
      .catch(() => {
        /* the observer may be busy; try again */
      })
  },
  tty ? 500 : 2_000
)

const result = await Promise.race([
  finished,
  new Promise<Record<string, unknown>>((_resolve, reject) =>
    submit.once('exit', code => {
      reject(new Error(`submit exited with code ${code}`))
    })
  )
]).catch((err: Error) => {
  console.error(`demo failed: ${err.message}`)
  return undefined
})
clearInterval(draw)
if (result === undefined) await stopAll(1)
// The last draw may have come before the plan finished, and a finished subtree folds into one line: show the whole
// tree once more, every node with who did it and the tools it called (its deliverable follows below).
const final = await fetch(`${http}/plans/${plan}`)
  .then(async r => (r.ok ? ((await r.json()) as { tree: PlanTree; treeHash: string }) : undefined))
  .catch(() => undefined)
if (final !== undefined)
  console.log(
    `\n${renderTree({ ...final.tree, deliverable: null }, Date.now(), { treeHash: final.treeHash, expand: true })}`
  )
console.log(`\nplan ${String(result?.status)}; treeHash ${String(result?.treeHash)}`)
if (typeof result?.deliverable === 'string') console.log(`\ndeliverable:\n${result.deliverable}\n`)
const deadline = Date.now() + 5_000
while (!existsSync(markdown) && Date.now() < deadline) await new Promise(r => setTimeout(r, 200))
if (existsSync(markdown)) console.log(`markdown export: ${markdown} (${readFileSync(markdown).length} bytes)`)
await stopAll(result?.status === 'completed' ? 0 : 1)
