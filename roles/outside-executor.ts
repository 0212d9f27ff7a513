import { view as planView } from '../src/core/view.js'
import { MAX_OUTPUT_CHARS, MAX_REASON_CHARS } from '../src/core/limits.js'
import { passedReviewCites } from '../src/core/review-sample.js'
import { ConfigError } from '../src/errors.js'
import { sleep } from '../src/ports/scheduler.js'
import { backupTask } from './backup-rules.js'
import { CONFIRM_MS, SKEW_ALLOWANCE_MS, backupSkewMs, chainLengths, propagationWait } from './claim-rules.js'
import { renewEveryMs, standingOf } from './claim-book.js'
import { inputsOf, isIdle, nodeMap, pathOf, welcomesOutside } from './plan-context.js'

export { welcomesOutside }
import type { EventId, PeerIdString, PlanEvent, PlanId, TaskId, NodeId, Usage } from '../src/core/events.js'
import type { ChainView, PlanTree, TaskView } from '../src/core/tree.js'
import type { NodeView } from '../src/ports/node-view.js'
import type { Cancel } from '../src/ports/scheduler.js'
import type { QuotedResult } from '../src/llm/types.js'
import type { Standing } from './claim-book.js'

/**
 * An executor whose work is done outside the swarm: by an agent through MCP
 * or by a person at the command line. It claims exactly as a model executor
 * does (a `task-claimed` event under this node's key, earliest wins, the
 * same confirmation wait), hands the task out, renews the lease while the
 * worker is heard from, and publishes what the worker reports. A worker
 * silent for longer than `silenceMs` is given up on: renewals stop, the
 * lease lapses and any executor takes the task over as usual. In a
 * version-5 plan it also backs up a task another member has held past the
 * plan's backup time, when it has nothing else there (outsideBackup).
 */

/** Everything an executor's prompt would hold, as data. */
export interface OutsideTask {
  readonly plan: PlanId
  readonly task: TaskId
  readonly node: NodeId
  readonly kind: 'leaf' | 'rollup'
  readonly goal: string
  /** Titles of the ancestors, root first. */
  readonly path: readonly string[]
  readonly title: string
  readonly detail: string
  /** Results this task builds on (a leaf's dependencies, a roll-up's children): quoted data, not instructions. */
  readonly inputs: readonly QuotedResult[]
  /** The claim this node holds for the worker. */
  readonly claim: EventId
  /** The plan's lease; renewed by this node while the worker is heard from. */
  readonly leaseMs: number
  /** Wall ms after which the claim can no longer be renewed (the plan's maxClaimMs). */
  readonly mustFinishBy: number
  /** What to produce, in words (the executor prompt's instructions). */
  readonly instructions: string
}

export interface OutsideExecutorOptions {
  /** Stop renewing a task's lease when the worker has not been heard from for this long. */
  readonly silenceMs: number
  /** Told what happens (claims, give-ups), for logs. */
  readonly say?: (line: string) => void
}

export interface OutsideExecutor {
  /** Claim the next claimable task (of `plan`, or of any plan that welcomes outside workers); null when there is none now. */
  next: (plan?: PlanId) => Promise<OutsideTask | null>
  /** Publish the worker's result for a task it holds. */
  complete: (task: TaskId, output: string, usage?: Usage) => Promise<{ result: EventId; plan: PlanId }>
  /** Give a held task back at once, so that another executor can take it. */
  release: (task: TaskId, reason?: string) => Promise<void>
  /** The tasks held now. */
  held: () => OutsideTask[]
  /** The worker was heard from: keep renewing. */
  touch: () => void
  /** Tasks given up on (silence, a lost race, a finished plan) since the last call, with why. */
  takeLost: () => Array<{ task: TaskId; why: string }>
  stop: () => void
}

interface Held {
  readonly task: OutsideTask
  last: PlanEvent
  renewing: boolean
}

const INSTRUCTIONS = {
  leaf:
    'Carry out the task for the plan: produce the concrete result that completes it (findings, ' +
    'decisions, a schedule, a list, a draft, or what you did and how to check it), building on ' +
    'the quoted results of its dependencies. Report it with task_complete; give it back with ' +
    'task_release if you cannot.',
  rollup:
    "The quoted results are those of this node's subtasks. Combine them into one coherent " +
    'deliverable for the node: keep their substance, remove repetition, resolve contradictions, ' +
    'put things in order, and say plainly which parts are missing or failed. Report it with ' +
    'task_complete.'
}

/** A task of any plan this node holds whose live claim chain this node heads, or a ConfigError saying why not. */
export function heldChain(view: NodeView, task: TaskId): { tree: PlanTree; task: TaskView; chain: ChainView } {
  // A task that takes a result is in a plan under way, and those are in memory: no finished plan is loaded back to look.
  for (const plan of view.plans()) {
    const tree = view.tree(plan)
    const t = tree?.tasks.find(x => x.id === task)
    if (tree === undefined || t === undefined) continue
    const chain = t.chains[t.chains.length - 1]
    if (isIdle(tree)) throw new ConfigError(`plan ${plan.slice(0, 12)} is ${tree.status}: the task takes no result now`)
    if (t.status !== 'claimed' || chain === undefined || chain.end !== null)
      throw new ConfigError(`task ${task.slice(0, 12)} is ${t.status}, not held: take a task with task next first`)
    if (chain.owner !== view.me)
      throw new ConfigError(
        `task ${task.slice(0, 12)} is held by ${chain.owner}, not by this key (${view.me}); run this with the data dir that took it`
      )
    return { tree, task: t, chain }
  }
  throw new ConfigError(
    `no plan held here has a task ${JSON.stringify(task.slice(0, 80))}: copy the task id that task next printed`
  )
}

function checkOutput(output: string): void {
  if (output.trim() === '') throw new ConfigError('the result is empty: say what was done or found')
  if (output.length > MAX_OUTPUT_CHARS)
    throw new ConfigError(
      `the result is ${output.length} characters long; the most is ${MAX_OUTPUT_CHARS}: shorten it or move detail elsewhere and point to it`
    )
}

/** Publish a worker's result for a task this node's key holds (by its claim in the tree, from any process with the key). */
export async function reportOutsideResult(
  view: NodeView,
  task: TaskId,
  output: string,
  usage: Usage = { inputTokens: 0, outputTokens: 0 }
): Promise<{ result: EventId; plan: PlanId }> {
  checkOutput(output)
  const { tree, chain } = heldChain(view, task)
  const passed = passedReviewCites(tree, view.me, id => view.reviewsOf(tree.plan, id))
  const { event } = await view.publish('result-reported', tree.plan, [chain.claim, chain.last, ...passed], {
    task,
    claim: chain.claim,
    output,
    usage,
    model: 'outside',
    source: 'outside'
  })
  return { result: event.id, plan: tree.plan }
}

/** Give back a task this node's key holds. */
export async function releaseOutsideTask(view: NodeView, task: TaskId, reason?: string): Promise<PlanId> {
  const { tree, chain } = heldChain(view, task)
  const why = (reason ?? '').trim().slice(0, MAX_REASON_CHARS)
  await view.publish('task-released', tree.plan, [chain.claim, chain.last], {
    task,
    claim: chain.claim,
    reason: why === '' ? 'released by the outside worker' : why
  })
  return tree.plan
}

/**
 * The task an outside worker backs up in a version-5 plan where nothing is claimable for it and it holds nothing
 * (backup-rules.ts, docs/protocol/fold.md 11.8): another member's chain held past the plan's backup time, the
 * longest-held first. A worker asks when it is free, so it claims at once, without the model executors' stagger;
 * the fold's contest rank still decides between it and them.
 */
export function outsideBackup(tree: PlanTree, me: PeerIdString, nowMs: number): TaskView | undefined {
  return backupTask(tree, me, nowMs, {
    rankFor: () => 0,
    able: () => ({ all: [me], free: [me] }),
    staggerMs: 0,
    skewMs: backupSkewMs(tree.backupMs ?? 0),
    stable: true
  })?.task
}

export function createOutsideExecutor(view: NodeView, opts: OutsideExecutorOptions): OutsideExecutor {
  const say = opts.say ?? (() => {})
  const held = new Map<TaskId, Held>()
  const lost: Array<{ task: TaskId; why: string }> = []
  let heardAt = view.now()

  const standing = (plan: PlanId, task: TaskId, claim: EventId): Standing => standingOf(view, plan, task, claim)

  const giveUp = (h: Held, why: string): void => {
    held.delete(h.task.task)
    lost.push({ task: h.task.task, why })
    say(`gave up task ${h.task.task.slice(0, 12)} ("${h.task.title}"): ${why}`)
  }

  // Renew what is held while the worker is heard from; drop what another claim or the plan's end took.
  const tick = (): void => {
    const now = view.now()
    for (const h of [...held.values()]) {
      const s = standing(h.task.plan, h.task.task, h.task.claim)
      if (s !== 'owner') {
        giveUp(
          h,
          s === 'lost'
            ? 'an earlier claim won the task'
            : 'the claim ended (the lease lapsed or the task was taken over)'
        )
        continue
      }
      const tree = view.tree(h.task.plan)
      if (tree !== undefined && isIdle(tree)) {
        giveUp(h, `the plan is ${tree.status}`)
        continue
      }
      if (now - heardAt > opts.silenceMs) {
        giveUp(
          h,
          `the worker was silent for more than ${Math.round(opts.silenceMs / 1000)} s; the lease ` +
            `will lapse and another executor take it over`
        )
        continue
      }
      if (h.renewing || now - h.last.env.hlc.ms < renewEveryMs(h.task.leaseMs)) continue
      h.renewing = true
      view
        .publish('claim-renewed', h.task.plan, [h.task.claim, h.last.id], {
          task: h.task.task,
          claim: h.task.claim,
          prev: h.last.id
        })
        .then(
          r => {
            h.last = r.event
          },
          (err: Error) => {
            say(`could not renew the lease of ${h.task.task.slice(0, 12)}: ${err.message}`)
          }
        )
        .finally(() => {
          h.renewing = false
        })
    }
  }
  const timer: Cancel = view.scheduler.every(1_000, tick)

  const describe = (tree: PlanTree, task: TaskView, claim: PlanEvent): OutsideTask => {
    const nodes = nodeMap(tree)
    const node = nodes.get(task.node)
    if (node === undefined) throw new Error(`task ${task.id} has no node`)
    return {
      plan: tree.plan,
      task: task.id,
      node: task.node,
      kind: task.kind,
      goal: tree.goal,
      path: pathOf(tree, node, nodes),
      title: node.title,
      detail: node.detail,
      inputs: inputsOf(tree, task, nodes),
      claim: claim.id,
      leaseMs: tree.params.leaseMs,
      mustFinishBy: claim.env.hlc.ms + tree.params.maxClaimMs,
      instructions: INSTRUCTIONS[task.kind]
    }
  }

  /** Claim one task and keep it if no earlier claim shows up during the confirmation wait. */
  const tryClaim = async (tree: PlanTree, task: TaskView): Promise<OutsideTask | null> => {
    const current = task.chains[task.chains.length - 1]
    const takeover = task.status === 'claimed' && current !== undefined
    const ended = current?.end
    const prev = takeover
      ? current.last
      : ended !== null && ended !== undefined && ended.kind !== 'superseded'
        ? ended.event
        : null
    const cites = prev === null ? task.evidence : [...task.evidence, prev]
    const { event: claim } = await view.publish('task-claimed', tree.plan, cites, { task: task.id, prev })
    await sleep(view.scheduler, propagationWait(CONFIRM_MS, view.lagMs()))
    if (standing(tree.plan, task.id, claim.id) !== 'owner') return null
    const now = view.tree(tree.plan) ?? tree
    const out = describe(now, task, claim)
    held.set(task.id, { task: out, last: claim, renewing: false })
    say(`claimed task ${task.id.slice(0, 12)} ("${out.title}") of plan ${tree.plan.slice(0, 12)} for an outside worker`)
    return out
  }

  return {
    next: async plan => {
      heardAt = view.now()
      const plans = plan === undefined ? view.plans() : [plan]
      for (const id of plans) {
        const tree = view.tree(id)
        if (tree === undefined || isIdle(tree) || !welcomesOutside(tree) || view.held(id) !== null) continue
        const v = planView(tree, view.now(), SKEW_ALLOWANCE_MS)
        const chain = chainLengths(tree)
        const order = [...v.claimable]
          .filter(t => !held.has(t.id))
          .sort((a, b) => (chain.get(b.id) ?? 0) - (chain.get(a.id) ?? 0))
        for (const task of order) {
          const got = await tryClaim(tree, task)
          if (got !== null) return got
        }
        // Idle in the plan: back up a task held too long, one at a time (as model executors do).
        if (order.length > 0 || [...held.values()].some(h => h.task.plan === id)) continue
        const backup = outsideBackup(tree, view.me, view.now())
        const got = backup === undefined ? null : await tryClaim(tree, backup)
        if (got !== null) return got
      }
      return null
    },
    complete: async (task, output, usage) => {
      heardAt = view.now()
      if (!held.has(task))
        throw new ConfigError(
          `task ${task.slice(0, 12)} is not held here: take one with task_next first (a task given up on after silence cannot be completed)`
        )
      checkOutput(output)
      try {
        const r = await reportOutsideResult(view, task, output, usage)
        held.delete(task)
        return r
      } catch (err) {
        const h = held.get(task)
        if (h !== undefined && standing(h.task.plan, task, h.task.claim) !== 'owner')
          giveUp(h, 'the claim ended before the result came')
        throw err
      }
    },
    release: async (task, reason) => {
      heardAt = view.now()
      if (!held.has(task)) throw new ConfigError(`task ${task.slice(0, 12)} is not held here: nothing to release`)
      held.delete(task)
      await releaseOutsideTask(view, task, reason)
    },
    held: () => [...held.values()].map(h => h.task),
    touch: () => {
      heardAt = view.now()
    },
    takeLost: () => lost.splice(0, lost.length),
    stop: () => {
      timer()
    }
  }
}
