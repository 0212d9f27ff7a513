import { executorOffers, needsPhrase, unmetNeeds } from '../core/needs.js'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isFinished } from '../core/view.js'
import {
  checkAuthor,
  parseCommittee,
  planParams,
  publishCancel,
  publishGoal,
  scorersInSight
} from '../author/author-events.js'
import { publishAmend, publishRaiseBudget, publishRetry } from '../author/plan-actions.js'
import { committeeWarnings, defaultCommittee } from '../author/committee.js'
import { startPeer, VERSION } from '../app/peer.js'
import { startTracing } from '../telemetry/tracing.js'
import { ConfigError, intOption, parseClientArgs } from '../runtime/config.js'
import type { Peer } from '../app/peer.js'
import type { NodeConfig } from '../runtime/config.js'
import type { NodeView } from '../ports/node-view.js'
import type { PlanId } from '../core/events.js'
import type { PlanTree } from '../core/tree.js'

/** Exit codes of the client commands beyond the common ones (0 ok, 1 failure, 2 configuration, 3 data dir). */
export const EXIT_CANCELLED = 5
export const EXIT_TIMEOUT = 6

export class TimeoutError extends Error {
  override readonly name = 'TimeoutError'
  readonly exitCode = EXIT_TIMEOUT
}

export type Values = ReturnType<typeof parseClientArgs>['values']
export type Say = (line: string) => void

/**
 * A wait on the process's own timer. Commands see their peer only through
 * its view, but keep time with Date.now and setTimeout: they only ever run
 * for real, and a wait must hold the process open (the scheduler's timers
 * do not).
 */
async function pause(ms: number): Promise<void> {
  await new Promise(resolve => setTimeout(resolve, ms))
}

/**
 * The author's key lives in `--data-dir`, or `<swarm dir>/client-1` by
 * default, so `cancel` and the other author commands sign as the submitter.
 * When that dir is in use (a `submit --wait` still running), the command
 * borrows its key and keeps its own events in a scratch dir beside it.
 */
async function startClient(config: NodeConfig, say: Say): Promise<Peer> {
  const authorDir = config.dataDir ?? join(config.dataRoot, 'client-1')
  try {
    return await startPeer({ ...config, dataDir: authorDir }, { syncIntervalMs: 2_000, presenceIntervalMs: 1_000 })
  } catch (err) {
    // By name: the store's error class stays below the composition root.
    if (!(err instanceof Error && err.name === 'DataDirLockedError')) throw err
    const scratch = join(config.dataRoot, `client-scratch-${process.pid}`)
    say(`${authorDir} is in use; signing with its key from a scratch dir ${scratch}`)
    return await startPeer(
      { ...config, dataDir: scratch },
      { syncIntervalMs: 2_000, presenceIntervalMs: 1_000, identityDir: authorDir }
    )
  }
}

export async function until(
  what: string,
  check: () => boolean,
  deadline: number,
  say: Say,
  progress: () => string
): Promise<void> {
  let lastSaid = 0
  while (!check()) {
    if (Date.now() > deadline)
      throw new TimeoutError(
        `gave up waiting for ${what} (${progress()}); check that peers are running and reachable (--bootstrap, mDNS, --swarm-key)`
      )
    if (Date.now() - lastSaid > 2_000) {
      say(`waiting for ${what}: ${progress()}`)
      lastSaid = Date.now()
    }
    await pause(100)
  }
}

/** Make sure at least one other peer holds what we published: a sync session with it that succeeds pulls it across. */
export async function confirmHeld(view: NodeView, deadline: number, say: Say): Promise<string> {
  while (Date.now() < deadline) {
    const holder = await view.syncOnce()
    if (holder !== null) return holder
    say('waiting for a peer to take the event...')
    await pause(500)
  }
  throw new TimeoutError('no peer took the event; it is stored here and will reach the swarm when a peer connects')
}

export function deadlineOf(values: Values, fallbackSeconds: number): number {
  return Date.now() + 1_000 * (intOption(values, 'timeout') ?? fallbackSeconds)
}

/** Print a plan's progress whenever it changes, until it ends; returns the final tree. */
async function follow(view: NodeView, plan: PlanId, deadline: number, say: Say): Promise<PlanTree> {
  let last = ''
  while (true) {
    const tree = view.loadTree(plan)
    if (tree !== undefined) {
      const done = tree.nodes.filter(n => n.status === 'done').length
      // Tasks that need a tool no executor in sight offers say so (protocol 3): the author knows what is missing.
      const unmet = [...unmetNeeds(tree, executorOffers(view.roster())).entries()]
      const waits = unmet.map(([id, needs]) => {
        const title = tree.nodes.find(n => n.id === id)?.title ?? id.slice(0, 8)
        return `; "${title}" waits for ${needsPhrase(needs)}`
      })
      // Over the open-plan limit per author (src/core/admission.ts): the whole plan waits its turn.
      const held = view.held(plan)
      if (held !== null) waits.unshift(`; the plan ${held}`)
      const line = `${tree.status}: ${done}/${tree.nodes.length} nodes done, ${tree.spentTokens} tokens${waits.join('')}`
      if (line !== last) {
        say(line)
        last = line
      }
      if (isFinished(tree)) return tree
    }
    if (Date.now() > deadline)
      throw new TimeoutError(
        `the plan did not finish in time (${last}); it goes on in the swarm: follow it with the observer`
      )
    await pause(250)
  }
}

export async function withClient<T>(
  argv: readonly string[],
  run: (
    view: NodeView,
    positionals: string[],
    values: Values,
    say: Say,
    json: boolean,
    config: NodeConfig
  ) => Promise<T>
): Promise<T> {
  const { config, values, positionals } = parseClientArgs(argv)
  const say: Say = line => {
    console.error(config.json ? JSON.stringify({ progress: line }) : line)
  }
  const peer = await startClient(config, say)
  // What the author and a person publish (a cancel, a ballot, a result) gets its span too, with an OTLP endpoint.
  const tracing = await startTracing({ url: config.otlp, view: peer.view, version: VERSION })
  try {
    return await run(peer.view, positionals, values, say, config.json, config)
  } finally {
    await tracing.stop()
    await peer.stop()
  }
}

/** `submit "goal"`: publish a goal once a scorer and a peer to hold it are in sight; `--wait` follows it to the end. */
export async function submit(argv: readonly string[]): Promise<number> {
  return await withClient(argv, async (view, positionals, values, say, json) => {
    const text = positionals.join(' ').trim()
    if (text === '')
      throw new ConfigError('submit needs the goal, e.g. npm start -- submit "plan a two-week trip to Japan"')
    const deadline = deadlineOf(values, values.wait === true ? 1_800 : 60)
    const scorers = (): string[] => scorersInSight(view)
    const given = parseCommittee(values.committee)
    // Refuse bad parameters before waiting for peers (a --quorum without --committee is checked once scorers are seen).
    if (given !== undefined || values.quorum === undefined) planParams(values, given ?? [view.me])
    await until(
      'a scorer and a peer to hold the goal',
      () => (given !== undefined || scorers().length > 0) && view.health().topicPeers > 0,
      deadline,
      say,
      () => `${view.health().peers} peers connected, ${scorers().length} scorers seen`
    )
    const drawn = given === undefined ? defaultCommittee(view) : undefined
    const committee = given ?? drawn?.committee ?? []
    const params = planParams(values, committee)
    const plan = await publishGoal(view, text, params)
    const holder = await confirmHeld(view, deadline, say)
    const waits = view.held(plan)
    if (json) console.log(JSON.stringify({ plan, committee, quorum: params.quorum, heldBy: holder, waits }))
    else console.log(plan)
    say(`submitted plan ${plan} (committee of ${committee.length}, quorum ${params.quorum}); held by ${holder}`)
    if (waits !== null) say(`the plan ${waits}; it starts by itself then`)
    for (const w of drawn?.warnings ?? committeeWarnings(params.committee)) say(`warning: ${w}`)
    if (values.wait !== true) return 0
    const tree = await follow(view, plan, deadline, say)
    if (json)
      console.log(
        JSON.stringify({
          plan,
          status: tree.status,
          deliverable: tree.deliverable?.output ?? null,
          treeHash: view.treeHash(plan)
        })
      )
    else if (tree.deliverable !== null) console.log(`\n${tree.deliverable.output}`)
    say(`plan ${tree.status}: ${tree.statusReason}`)
    return tree.status === 'completed' ? 0 : tree.status === 'cancelled' ? EXIT_CANCELLED : 1
  })
}

/** Wait until this client holds the plan, synced from the swarm. */
async function waitForPlan(view: NodeView, planArg: string | undefined, deadline: number, say: Say): Promise<PlanTree> {
  if (planArg === undefined || !/^[0-9a-f]{64}$/.test(planArg))
    throw new ConfigError(
      `expected a plan id (64 hex digits, as printed by submit), got ${JSON.stringify(planArg ?? '')}`
    )
  const plan = planArg as PlanId
  await until(
    `plan ${plan.slice(0, 12)} to arrive`,
    () => view.loadTree(plan) !== undefined,
    deadline,
    say,
    () => `${view.health().peers} peers connected`
  )
  return view.loadTree(plan) as PlanTree
}

/** Wait until this client holds the plan and check that it is its author. */
async function authorOf(view: NodeView, planArg: string | undefined, deadline: number, say: Say): Promise<PlanTree> {
  const tree = await waitForPlan(view, planArg, deadline, say)
  checkAuthor(view, tree, "run this from the submitter's --data-dir")
  return tree
}

async function authorCommand(
  argv: readonly string[],
  act: (view: NodeView, tree: PlanTree, positionals: string[], values: Values) => Promise<string>
): Promise<number> {
  return await withClient(argv, async (view, positionals, values, say) => {
    const deadline = deadlineOf(values, 60)
    const tree = await authorOf(view, positionals[0], deadline, say)
    const done = await act(view, tree, positionals.slice(1), values)
    const holder = await confirmHeld(view, deadline, say)
    say(`${done}; held by ${holder}`)
    return 0
  })
}

export async function cancel(argv: readonly string[]): Promise<number> {
  return await authorCommand(argv, async (view, tree, _rest, values) => {
    await publishCancel(view, tree, values.reason === undefined ? undefined : String(values.reason))
    return `cancelled plan ${tree.plan}`
  })
}

export async function amend(argv: readonly string[]): Promise<number> {
  return await authorCommand(argv, async (view, tree, _rest, values) => {
    const committee = parseCommittee(values.committee)
    if (committee === undefined) throw new ConfigError('amend needs --committee <peer ids> (and optionally --quorum)')
    return await publishAmend(view, tree, committee, intOption(values, 'quorum'))
  })
}

export async function raiseBudget(argv: readonly string[]): Promise<number> {
  return await authorCommand(argv, async (view, tree, _rest, values) => {
    if (intOption(values, 'budget') === undefined)
      throw new ConfigError(`raise-budget needs --budget above the current ${tree.budgetTokens} tokens`)
    return await publishRaiseBudget(view, tree, intOption(values, 'budget'))
  })
}

export async function retry(argv: readonly string[]): Promise<number> {
  return await authorCommand(argv, async (view, tree, rest) => await publishRetry(view, tree, rest[0]))
}

/**
 * `export <plan-id> --markdown [FILE]`: fetch the plan from the swarm and
 * write it as Markdown (to FILE, or to stdout), or as JSON with `--json`.
 */
export async function exportPlan(argv: readonly string[]): Promise<number> {
  const args = argv.flatMap((a, i) =>
    a === '--markdown' && (argv[i + 1] === undefined || argv[i + 1]?.startsWith('--') === true) ? ['--markdown=-'] : [a]
  )
  return await withClient(args, async (view, positionals, values, say, json, config) => {
    const tree = await waitForPlan(view, positionals[0], deadlineOf(values, 60), say)
    const { renderMarkdown } = await import('../../roles/render.js')
    const file = config.markdown
    const text = json
      ? JSON.stringify({ treeHash: view.treeHash(tree.plan), tree }, null, 2) + '\n'
      : renderMarkdown(tree)
    if (file === undefined || file === '-' || json) process.stdout.write(text)
    else {
      writeFileSync(file, text)
      say(`wrote ${file}`)
    }
    return 0
  })
}
