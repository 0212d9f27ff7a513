import { logger } from '@libp2p/logger'
import type { LlmProvider } from '../src/llm/types.js'
import type { ToolBox, ToolLoopLimits } from '../src/llm/types.js'
import type { PlanTree } from '../src/core/tree.js'
import type { NodeView } from '../src/ports/node-view.js'
import type { Cancel } from '../src/ports/scheduler.js'
import type { PlanId } from '../src/core/events.js'
import { planOf } from '../src/core/event-set.js'
import { compareHlc } from '../src/core/hlc.js'
import { isIdle } from './plan-context.js'

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
   * W ms costs W, not up to W + pollMs. Reading it clears it: the driver
   * reads it after deciding each plan, so a wake belongs to that plan, which
   * is decided again then even if nothing else changed.
   */
  nextWakeAt?: () => number | null
  /**
   * What the role's decisions read beyond a plan's tree and the timers it
   * reports (the live peers it ranks among, whether its view of them is
   * stable), as a string: when it changes, every plan is decided again.
   */
  viewKey?: (nowMs: number) => string
  stop?: () => void
}

export interface RoleDriverOptions {
  /** Re-evaluate at least this often, for the timers and views a role reports (ballot windows, staggers, leases). */
  readonly pollMs?: number
  /** At most this many acts (LLM calls) at once. */
  readonly concurrency?: number
  /** After a failed act, wait this long before trying the same intent again. */
  readonly retryAfterMs?: number
}

/** What the driver holds of one plan between passes: what the role last decided, and when to decide again. */
interface Decision {
  readonly tree: PlanTree
  readonly intents: Intent[]
  readonly at: number
  /** Decide again at this time even without news (a timer the role reported, a retry coming due). */
  readonly dueAt: number
  /** Taking no new work (finished, cancelled, out of budget) when it was decided. */
  readonly idle: boolean
}

/** No timer of its own: a plan decided so is decided again when it changes. */
const NEVER = Infinity

/**
 * Runs a role. A pass decides again only the plans that changed: those that
 * folded events since, those whose own timer came due (a stagger, a lease,
 * a ballot window, a retry), the held plans of an author one of whose plans
 * just finished, and all of them when the role's view (`viewKey`) changed.
 * Every other plan stays as decided, so the cost of an event does not grow
 * with the plans open. Then, while there are free slots, it serves the
 * decided intents in fair shares: authors in turn (round-robin by goal
 * author), within an author the oldest plan first, within a plan in the
 * role's own order (an executor's: longest chain to the plan's end first).
 * A plan held (NodeView.held: by the open-plan limit per author, or as
 * history while the node catches up) is left alone. Each intent runs at most once at a time.
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
  const decided = new Map<PlanId, Decision>()
  /** Plans to decide again at the next pass. */
  const dirty = new Set<PlanId>()
  /** Held plans, by author: decided again when one of the author's plans finishes. */
  const heldBy = new Map<string, Set<PlanId>>()
  let everything = true
  let started = false
  let lastViewKey: string | undefined
  let wasCatchingUp = false
  /** The author served last: the next turn goes to the one after. */
  let lastServed = ''
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
    const key = handler.viewKey?.(now)
    if (key !== lastViewKey) {
      lastViewKey = key
      everything = true
    }
    // Plans left alone while history streamed in are decided again once it stops.
    const catchingUp = view.catchingUp()
    if (catchingUp !== wasCatchingUp) {
      wasCatchingUp = catchingUp
      everything = true
    }
    decideChanged(now)
    serve(now)
    let next = Infinity
    for (const d of decided.values()) if (d.dueAt < next) next = d.dueAt
    if (next < wakeAt && next - now < pollMs) {
      cancelWake?.()
      wakeAt = next
      cancelWake = scheduler.after(Math.max(0, next - view.now()) + 1, () => {
        wakeAt = Infinity
        schedule()
      })
    }
  }

  /** Decide one plan now and keep what it said; returns the decision (undefined once the plan left memory). */
  const decideOne = (plan: PlanId, now: number): Decision | undefined => {
    const before = decided.get(plan)
    const tree = view.tree(plan)
    if (tree === undefined) {
      decided.delete(plan)
      return undefined
    }
    const author = tree.author as string
    const held = view.held(plan) !== null
    const byAuthor = heldBy.get(author)
    if (held) {
      if (byAuthor === undefined) heldBy.set(author, new Set([plan]))
      else byAuthor.add(plan)
    } else if (byAuthor?.delete(plan) === true && byAuthor.size === 0) heldBy.delete(author)
    let intents: Intent[] = []
    if (!held) {
      try {
        intents = handler.decide(tree, now)
      } catch (err) {
        log.error('decide failed for plan %s: %s', plan, (err as Error).stack)
      }
    }
    let dueAt = handler.nextWakeAt?.() ?? NEVER
    for (const intent of intents) {
      const failed = failedAt.get(intent.key)
      if (failed !== undefined && now - failed < retryAfterMs) dueAt = Math.min(dueAt, failed + retryAfterMs)
    }
    const idle = isIdle(tree)
    // One of the author's plans stopped taking work: their held plans may go on now.
    if (idle && before !== undefined && !before.idle) for (const p of heldBy.get(author) ?? []) dirty.add(p)
    const d: Decision = { tree, intents, at: now, dueAt, idle }
    // A plan that takes no work and waits for nothing is forgotten until it folds something again.
    if (idle && intents.length === 0 && dueAt === NEVER) decided.delete(plan)
    else decided.set(plan, d)
    return d
  }

  const decideChanged = (now: number): void => {
    // Every plan at the start; after that the open plans (an idle one only changes by folding something).
    const plans = everything ? (started ? [...decided.keys(), ...dirty] : view.plans()) : [...dirty]
    everything = false
    started = true
    dirty.clear()
    for (const [plan, d] of decided) if (d.dueAt <= now) plans.push(plan)
    for (const plan of new Set(plans)) decideOne(plan, now)
  }

  /** Start intents while there are free slots: authors in turn, each author's oldest plan first. */
  const serve = (now: number): void => {
    if (running.size >= concurrency) return
    const queues = new Map<string, Array<[PlanId, Decision]>>()
    for (const [plan, d] of decided) {
      if (d.intents.length === 0) continue
      const author = d.tree.author as string
      const q = queues.get(author)
      if (q === undefined) queues.set(author, [[plan, d]])
      else q.push([plan, d])
    }
    if (queues.size === 0) return
    const authors = [...queues.keys()].sort()
    for (const q of queues.values())
      q.sort(([pa, a], [pb, b]) => compareHlc(a.tree.submittedAt, b.tree.submittedAt) || (pa < pb ? -1 : 1))
    // Each author's next intent, taken in turn; an author whose queue runs dry drops out of the rotation.
    const cursors = new Map(authors.map(a => [a, { plan: 0, intent: 0 }]))
    let turn = authors.findIndex(a => a > lastServed)
    if (turn < 0) turn = 0
    while (running.size < concurrency && cursors.size > 0) {
      const author = authors[turn % authors.length] as string
      turn++
      const cursor = cursors.get(author)
      if (cursor === undefined) continue
      const intent = nextIntent(queues.get(author) as Array<[PlanId, Decision]>, cursor, now)
      if (intent === undefined) {
        cursors.delete(author)
        continue
      }
      start(intent.intent, intent.tree, intent.plan)
      lastServed = author
    }
  }

  /** The next intent of one author's queue that may start now (deciding a stale plan again first). */
  const nextIntent = (
    queue: ReadonlyArray<[PlanId, Decision]>,
    cursor: { plan: number; intent: number },
    now: number
  ): { intent: Intent; tree: PlanTree; plan: PlanId } | undefined => {
    for (; cursor.plan < queue.length; cursor.plan++, cursor.intent = 0) {
      const [plan] = queue[cursor.plan] as [PlanId, Decision]
      let d = decided.get(plan)
      // Decided at an earlier pass: time has passed since (a lease may have been renewed by now, a wait run out).
      if (d !== undefined && d.at !== now && cursor.intent === 0) d = decideOne(plan, now)
      if (d === undefined) continue
      while (cursor.intent < d.intents.length) {
        const intent = d.intents[cursor.intent++] as Intent
        if (running.has(intent.key)) continue
        const failed = failedAt.get(intent.key)
        if (failed !== undefined && now - failed < retryAfterMs) continue
        return { intent, tree: d.tree, plan }
      }
    }
    return undefined
  }

  const start = (intent: Intent, tree: PlanTree, plan: PlanId): void => {
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
        dirty.add(plan)
        schedule()
      })
    running.set(intent.key, p)
  }

  const schedule = (): void => {
    if (scheduled || stopped) return
    scheduled = true
    scheduler.after(5, evaluate)
  }
  const unsubscribe = view.onFolded(events => {
    for (const e of events) dirty.add(planOf(e))
    schedule()
  })
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
