import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, parseClientArgs } from '../runtime/config.js'
import {
  createOutsideExecutor,
  heldChain,
  releaseOutsideTask,
  reportOutsideResult,
  welcomesOutside
} from '../../roles/outside-executor.js'
import { TimeoutError, confirmHeld, deadlineOf, until, withClient } from './client.js'
import type { NodeView } from '../ports/node-view.js'
import type { PlanId, TaskId } from '../core/events.js'
import type { Say, Values } from './client.js'
import type { NodeConfig } from '../runtime/config.js'

/**
 * `task next | done | release`: a person as an executor, from the command
 * line, for plans submitted with `--executors outside` (or `any`). `task
 * next` claims a task under the caller's key (the client data dir, as for
 * submit), prints it, and stays in the foreground renewing the lease until
 * `task done` or `task release` in another terminal hands it the result or
 * the release (through files in `<swarm dir>/tasks/`, so that one key never
 * runs in two nodes at once); Ctrl-C gives the task back. With no `task
 * next` holding the task, `task done` publishes itself, if the claim holds.
 */

/** Where a running `task next` and the other terminal's `task done` / `task release` meet. */
function handoffDir(config: NodeConfig): string {
  return join(config.dataRoot, 'tasks')
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The pid of a live `task next` holding the task, or undefined. */
function holderOf(config: NodeConfig, task: TaskId): number | undefined {
  try {
    const pid = Number(readFileSync(join(handoffDir(config), `${task}.held`), 'utf8'))
    return Number.isSafeInteger(pid) && alive(pid) ? pid : undefined
  } catch {
    return undefined
  }
}

/** Write a file whole or not at all (the reader never sees half of it). */
function writeWhole(path: string, text: string): void {
  writeFileSync(`${path}.tmp-${process.pid}`, text)
  renameSync(`${path}.tmp-${process.pid}`, path)
}

/** Hand a result or a release to the running `task next`, and wait for its answer. */
async function handOver(
  config: NodeConfig,
  values: Values,
  task: TaskId,
  kind: 'result' | 'release',
  text: string,
  say: Say
): Promise<number> {
  const dir = handoffDir(config)
  const answer = join(dir, `${task}.answer`)
  rmSync(answer, { force: true })
  writeWhole(join(dir, `${task}.${kind}`), text)
  say(`handed the ${kind} to the running \`task next\` (pid ${holderOf(config, task) ?? '?'}), which holds the task`)
  const deadline = deadlineOf(values, 60)
  while (Date.now() < deadline) {
    if (existsSync(answer)) {
      const a = JSON.parse(readFileSync(answer, 'utf8')) as { ok: boolean; message: string }
      rmSync(answer, { force: true })
      if (!a.ok) throw new ConfigError(a.message)
      say(a.message)
      return 0
    }
    if (holderOf(config, task) === undefined && !existsSync(answer))
      throw new ConfigError(
        `the \`task next\` that held task ${task.slice(0, 12)} stopped before it answered; run this again`
      )
    await new Promise(resolve => setTimeout(resolve, 200))
  }
  throw new TimeoutError(
    `the running \`task next\` did not answer within the time allowed; the ${kind} is left in ${dir}`
  )
}
export async function task(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === 'next') return await next(rest)
  if (sub === 'done') return await done(rest)
  if (sub === 'release') return await release(rest)
  throw new ConfigError(
    `task ${JSON.stringify(sub ?? '')}: expected task next [--plan ID], task done <task-id> ` +
      `--file FILE, or task release <task-id> [--reason TEXT]`
  )
}

function taskIdArg(raw: string | undefined): TaskId {
  if (raw === undefined || !/^[0-9a-f]{64}$/.test(raw))
    throw new ConfigError(
      `expected a task id (64 hex digits, as task next printed it), got ${JSON.stringify(raw ?? '')}`
    )
  return raw as TaskId
}

/** Catch up until this client holds the task (or gives up at the deadline). */
async function waitForTask(view: NodeView, id: TaskId, deadline: number, say: Say): Promise<void> {
  const holds = (): boolean => view.plans().some(p => view.tree(p)?.tasks.some(t => t.id === id) === true)
  await until(
    `the plan of task ${id.slice(0, 12)} to arrive`,
    holds,
    deadline,
    say,
    () => `${view.health().peers} peers connected, ${view.plans().length} plans held`
  )
}

async function next(argv: readonly string[]): Promise<number> {
  return await withClient(argv, async (view, positionals, values, say, json, config) => {
    if (positionals.length > 0)
      throw new ConfigError(
        `task next takes no positional arguments (got ${positionals.join(' ')}); use --plan ID for one plan`
      )
    const planArg = values.plan === undefined ? undefined : String(values.plan)
    if (planArg !== undefined && !/^[0-9a-f]{64}$/.test(planArg))
      throw new ConfigError(`--plan ${JSON.stringify(planArg)}: expected a plan id (64 hex digits)`)
    const deadline = deadlineOf(values, 60)
    const outside = createOutsideExecutor(view, { silenceMs: config.workerSilenceMs, say })
    try {
      await view.syncOnce()
      let got = null
      let lastSaid = 0
      while (got === null) {
        got = await outside.next(planArg as PlanId | undefined)
        if (got !== null) break
        if (Date.now() > deadline) {
          const open = view.plans().filter(p => {
            const t = view.tree(p)
            return t !== undefined && welcomesOutside(t)
          }).length
          say(
            `no task to take: ${open} plan(s) here take outside workers, none has a claimable task now ` +
              `(plans must be submitted with --executors outside or any)`
          )
          return 1
        }
        if (Date.now() - lastSaid > 2_000) {
          say(`waiting for a claimable task: ${view.health().peers} peers connected, ${view.plans().length} plans held`)
          lastSaid = Date.now()
        }
        await new Promise(resolve => setTimeout(resolve, 500))
      }
      if (json) console.log(JSON.stringify(got))
      else {
        console.log(
          [
            `task ${got.task}`,
            `plan ${got.plan}`,
            `goal: ${got.goal}`,
            `path: ${got.path.join(' > ') || '(the root)'}`,
            `${got.kind === 'rollup' ? 'roll-up' : 'task'}: ${got.title}`,
            ...(got.detail === '' ? [] : [`  ${got.detail}`]),
            ...got.inputs.map(i => `\n--- result of "${i.title}" (quoted) ---\n${i.output}`),
            '',
            got.instructions.replace('task_complete', '`task done`').replace('task_release', '`task release`')
          ].join('\n')
        )
      }
      say(
        `holding task ${got.task.slice(0, 12)}: write the result, then in another terminal run\n  ` +
          `npm start -- task done ${got.task} --file result.md\n(Ctrl-C here gives the task back; the ` +
          `lease is renewed while this runs, until ${new Date(got.mustFinishBy).toISOString()})`
      )
      const id = got.task
      const dir = handoffDir(config)
      mkdirSync(dir, { recursive: true })
      const held = join(dir, `${id}.held`)
      writeWhole(held, String(process.pid))
      const answer = (ok: boolean, message: string): void => {
        writeWhole(join(dir, `${id}.answer`), JSON.stringify({ ok, message }))
      }
      let interrupted = false
      const onSignal = (): void => {
        interrupted = true
      }
      process.once('SIGINT', onSignal)
      process.once('SIGTERM', onSignal)
      try {
        while (true) {
          outside.touch()
          const t = view.tree(got.plan)?.tasks.find(x => x.id === id)
          const chain = t?.chains.find(c => c.claim === got.claim)
          if (chain?.end !== null && chain?.end !== undefined) {
            say(
              chain.end.kind === 'result'
                ? `the result of task ${id.slice(0, 12)} is in; done`
                : `the claim ended (${chain.end.kind})`
            )
            return chain.end.kind === 'result' ? 0 : 1
          }
          if (outside.held().length === 0) {
            say(
              outside
                .takeLost()
                .map(l => l.why)
                .join('; ') || 'the task is no longer held'
            )
            return 1
          }
          // What another terminal handed over: the result, or a release.
          for (const kind of ['result', 'release'] as const) {
            const file = join(dir, `${id}.${kind}`)
            if (!existsSync(file)) continue
            const text = readFileSync(file, 'utf8')
            rmSync(file, { force: true })
            try {
              if (kind === 'result') {
                const r = await outside.complete(id, text)
                const holder = await confirmHeld(view, Date.now() + 30_000, say)
                answer(
                  true,
                  `reported the result of task ${id.slice(0, 12)} in plan ${r.plan.slice(0, 12)}; held by ${holder}`
                )
              } else {
                await outside.release(id, text)
                const holder = await confirmHeld(view, Date.now() + 30_000, say)
                answer(true, `released task ${id.slice(0, 12)}; held by ${holder}`)
              }
            } catch (err) {
              answer(false, (err as Error).message)
            }
          }
          if (interrupted) {
            await outside.release(id, 'given back from the command line')
            await confirmHeld(view, Date.now() + 15_000, say)
            say(`gave task ${id.slice(0, 12)} back`)
            return 130
          }
          await new Promise(resolve => setTimeout(resolve, 250))
        }
      } finally {
        process.off('SIGINT', onSignal)
        process.off('SIGTERM', onSignal)
        rmSync(held, { force: true })
      }
    } finally {
      outside.stop()
    }
  })
}

function readResult(file: string | undefined): string {
  if (file === undefined)
    throw new ConfigError('task done needs --file FILE with the result (or --file - to read stdin)')
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (err) {
    throw new ConfigError(
      `--file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`
    )
  }
}

async function done(argv: readonly string[]): Promise<number> {
  const { config, values, positionals } = parseClientArgs(argv)
  const id = taskIdArg(positionals[0])
  const output = readResult(values.file === undefined ? undefined : String(values.file))
  if (holderOf(config, id) !== undefined) return await handOver(config, values, id, 'result', output, sayOf(config))
  return await withClient(argv, async (view, _positionals, values, say, json) => {
    const deadline = deadlineOf(values, 60)
    await waitForTask(view, id, deadline, say)
    heldChain(view, id)
    const r = await reportOutsideResult(view, id, output)
    const holder = await confirmHeld(view, deadline, say)
    if (json) console.log(JSON.stringify({ task: id, plan: r.plan, result: r.result, heldBy: holder }))
    say(`reported the result of task ${id.slice(0, 12)} in plan ${r.plan.slice(0, 12)}; held by ${holder}`)
    return 0
  })
}

async function release(argv: readonly string[]): Promise<number> {
  const { config, values, positionals } = parseClientArgs(argv)
  const id = taskIdArg(positionals[0])
  if (holderOf(config, id) !== undefined)
    return await handOver(
      config,
      values,
      id,
      'release',
      values.reason === undefined ? '' : String(values.reason),
      sayOf(config)
    )
  return await withClient(argv, async (view, _positionals, values, say) => {
    const deadline = deadlineOf(values, 60)
    await waitForTask(view, id, deadline, say)
    const plan = await releaseOutsideTask(view, id, values.reason === undefined ? undefined : String(values.reason))
    const holder = await confirmHeld(view, deadline, say)
    say(`released task ${id.slice(0, 12)} of plan ${plan.slice(0, 12)}; held by ${holder}`)
    return 0
  })
}

function sayOf(config: NodeConfig): Say {
  return line => {
    console.error(config.json ? JSON.stringify({ progress: line }) : line)
  }
}
