import { logger } from '@libp2p/logger'
import type { LlmProvider } from '../src/llm/types.js'
import type { ToolBox, ToolLoopLimits } from '../src/llm/types.js'
import type { PlanTree } from '../src/core/tree.js'
import type { NodeView } from '../src/ports/node-view.js'
import type { Cancel } from '../src/ports/scheduler.js'

const log = logger('plan-swarm:role')

/**
 * An executor's tools (`--tools FILE`, served by src/tools over MCP): the
 * box the loop calls, what it offers now (capability names, announced in
 * presence), and the loop's limits.
 */
export interface ExecutorTools {
  readonly box: ToolBox
  readonly offers: () => readonly string[]
  readonly limits: ToolLoopLimits
}

/**
 * What a role may use: its node's view (trees, roster, clock and timers,
 * publish), its model, a line printer, and (an executor's) tools.
 */
export interface RoleContext {
  readonly view: NodeView
  readonly provider: LlmProvider
  readonly say: (line: string) => void
  readonly tools?: ExecutorTools
}

/** Something a role wants to do; `key` names it so it runs once at a time. */
export interface Intent {
  readonly key: string
}

/**
 * A role: a pure `decide(tree, now) -> intents` plus `act`, the thin part
 * that calls the model and publishes. Acting changes the tree (the role's own
 * event is folded before `act` returns), so the next `decide` no longer asks
 * for the same thing.
 */
export interface RoleHandler {
  decide: (tree: PlanTree, nowMs: number) => Intent[]
  act: (intent: never, tree: PlanTree) => Promise<void>
  /** Called on every pass, for timers of work in flight (e.g. lease renewals). */
  tick?: (nowMs: number) => void
  /**
   * After a pass: the earliest time at which a decision this pass put off
   * (a claim's stagger, a ballot window) comes due, or null. The driver
   * evaluates again at that moment instead of at the next poll, so a wait of
   * W ms costs W, not up to W + pollMs. Reading it clears it.
   */
  nextWakeAt?: () => number | null
  stop?: () => void
}

export interface RoleDriverOptions {
  /** Re-evaluate at least this often, for decisions that wait on time (ballot windows, lapsed leases). */
  readonly pollMs?: number
  /** At most this many acts (LLM calls) at once. */
  readonly concurrency?: number
  /** After a failed act, wait this long before trying the same intent again. */
  readonly retryAfterMs?: number
}

/**
 * Runs a role: evaluates it whenever events fold (coalesced) and on a slow
 * poll, and runs each intent at most once at a time.
 */
export function startRole(
  ctx: RoleContext,
  handler: RoleHandler,
  opts: RoleDriverOptions = {}
): { stop: () => Promise<void>; idle: () => boolean } {
  const pollMs = opts.pollMs ?? 250
  const concurrency = opts.concurrency ?? 4
  const retryAfterMs = opts.retryAfterMs ?? 5_000
  const running = new Map<string, Promise<void>>()
  const failedAt = new Map<string, number>()
  let stopped = false
  let scheduled = false
  let cancelWake: Cancel | undefined
  let wakeAt = Infinity
  const view = ctx.view
  const scheduler = view.scheduler

  const evaluate = (): void => {
    scheduled = false
    if (stopped) return
    const now = view.now()
    handler.tick?.(now)
    pass(now)
    const next = handler.nextWakeAt?.() ?? null
    if (next !== null && next < wakeAt && next - now < pollMs) {
      cancelWake?.()
      wakeAt = next
      cancelWake = scheduler.after(Math.max(0, next - view.now()) + 1, () => {
        wakeAt = Infinity
        schedule()
      })
    }
  }
  const pass = (now: number): void => {
    for (const plan of view.plans()) {
      const tree = view.tree(plan)
      if (tree === undefined) continue
      let intents: Intent[]
      try {
        intents = handler.decide(tree, now)
      } catch (err) {
        log.error('decide failed for plan %s: %s', plan, (err as Error).stack)
        continue
      }
      for (const intent of intents) {
        if (running.size >= concurrency) return
        if (running.has(intent.key)) continue
        const failed = failedAt.get(intent.key)
        if (failed !== undefined && now - failed < retryAfterMs) continue
        const p = handler
          .act(intent as never, tree)
          .then(
            () => {
              failedAt.delete(intent.key)
            },
            (err: Error) => {
              failedAt.set(intent.key, view.now())
              ctx.say(`could not ${intent.key.split(':')[0] ?? 'act'}: ${err.message}`)
              log.error('act %s failed: %s', intent.key, err.stack)
            }
          )
          .finally(() => {
            running.delete(intent.key)
            schedule()
          })
        running.set(intent.key, p)
      }
    }
  }
  const schedule = (): void => {
    if (scheduled || stopped) return
    scheduled = true
    scheduler.after(5, evaluate)
  }
  const unsubscribe = view.onFolded(schedule)
  const stopPoll = scheduler.every(pollMs, schedule)
  schedule()
  return {
    idle: () => running.size === 0,
    stop: async () => {
      stopped = true
      unsubscribe()
      stopPoll()
      cancelWake?.()
      handler.stop?.()
      await Promise.allSettled([...running.values()])
    }
  }
}
