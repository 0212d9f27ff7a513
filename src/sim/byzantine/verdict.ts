import { isFinished } from '../../core/view.js'
import { planOf } from '../../core/event-set.js'
import { compareHlc } from '../../core/hlc.js'
import { JUNK_MARK } from './executor-policies.js'
import { SIM_EPOCH_MS } from '../virtual-time.js'
import type { PeerIdString, PlanEvent, PlanId } from '../../core/events.js'
import type { PlanTree } from '../../core/tree.js'
import type { NodeRuntime } from '../../runtime/node-runtime.js'
import type { SimNode } from '../sim-node.js'
import type { World } from '../world.js'

/** A plan's outcome as an honest node first saw it finished. */
interface Finish {
  readonly status: string
  readonly deliverable: string | null
}

/** One honest node seeing a finished plan change its status or deliverable afterwards. */
export interface FinishChange {
  readonly node: number
  readonly plan: PlanId
  readonly from: Finish
  readonly to: Finish
  /** On the node's own clock, ms since the run's start. */
  readonly atMs: number
}

const finishOf = (t: PlanTree): Finish => ({ status: t.status, deliverable: t.deliverable?.result ?? null })

/**
 * Watches every honest node as it folds: the first time a plan is finished there it records the status and the
 * deliverable, and every later fold that changes either is a FinishChange. Installed through
 * Dishonesty.booted, so a restarted node is watched again (its first record is kept).
 */
export class FinishWatch {
  readonly changes: FinishChange[] = []
  private readonly first = new Map<string, Finish>()

  constructor(private readonly honest: (node: SimNode) => boolean) {}

  booted(node: SimNode, runtime: NodeRuntime): void {
    if (!this.honest(node)) return
    const view = runtime.view
    view.onFolded(events => {
      const plans = new Set<PlanId>()
      for (const e of events) plans.add(planOf(e as PlanEvent))
      for (const plan of plans) {
        const t = view.tree(plan)
        if (t === undefined) continue
        const key = `${node.index}/${plan}`
        const seen = this.first.get(key)
        const now = finishOf(t)
        if (seen === undefined) {
          if (isFinished(t)) this.first.set(key, now)
        } else if (seen.status !== now.status || seen.deliverable !== now.deliverable) {
          this.changes.push({
            node: node.index,
            plan,
            from: seen,
            to: now,
            atMs: Math.round(view.now() - SIM_EPOCH_MS)
          })
          this.first.set(key, now)
        }
      }
    })
  }
}

/** What a dishonest run is judged by (the run's own checks aside). */
export interface ByzVerdict {
  /** Every plan completed on every honest node. */
  readonly completed: boolean
  /** Every honest node has one treeHash per plan. */
  readonly honestAgree: boolean
  /** Nodes down at the end, or whose view threw: a crash the harness caught. */
  readonly problems: string[]
  /** Plans whose status or deliverable changed on an honest node after it first saw them finished. */
  readonly plansChangedAfterFinish: number
  readonly finishChanges: number
  /** The first few of those changes, to say what changed (a status, a deliverable) where and when. */
  readonly firstChanges: readonly FinishChange[]
  /** Tasks with an accepted result, and those whose accepted result is a dishonest member's. */
  readonly tasks: number
  readonly tasksWonByDishonest: number
  /** tasksWonByDishonest / tasks, against the dishonest members' share of the attacked role. */
  readonly dishonestShare: number
  readonly fairShare: number
  /** Junk results accepted before and after their author's first rejected result. */
  readonly junkAcceptedBefore: number
  readonly junkAcceptedAfter: number
}

/** Judge a dishonest run from the honest nodes' trees and what the watch saw. */
export function judge(
  w: World,
  honest: (n: SimNode) => boolean,
  authors: ReadonlySet<PeerIdString>,
  fairShare: number,
  watch: FinishWatch
): ByzVerdict {
  const problems: string[] = []
  let completed = true
  let honestAgree = true
  const trees: PlanTree[] = []
  for (const plan of w.plans) {
    let hash: string | undefined
    for (const n of w.nodes.filter(honest)) {
      const v = n.runtime?.view
      if (v === undefined) {
        problems.push(`honest node ${n.index} is down at the end`)
        honestAgree = false
        continue
      }
      const t = v.loadTree(plan)
      if (t?.status !== 'completed') completed = false
      if (t !== undefined && hash === undefined) trees.push(t)
      const h = v.treeHash(plan)
      if (hash === undefined) hash = h
      else if (h !== hash) honestAgree = false
    }
  }
  if (w.plans.length === 0) completed = false
  let tasks = 0
  let won = 0
  const junkResults: Array<{ at: PlanEvent['env']['hlc']; author: string; accepted: boolean }> = []
  const firstRejection = new Map<string, PlanEvent['env']['hlc']>()
  for (const t of trees)
    for (const task of t.tasks) {
      const acc = task.results.find(r => r.accepted)
      if (acc !== undefined) {
        tasks++
        if (authors.has(acc.author)) won++
      }
      for (const r of task.results) {
        if (!authors.has(r.author)) continue
        if (r.review === 'rejected') {
          const f = firstRejection.get(r.author)
          if (f === undefined || compareHlc(r.at, f) < 0) firstRejection.set(r.author, r.at)
        }
        if (r.output.startsWith(JUNK_MARK)) junkResults.push({ at: r.at, author: r.author, accepted: r.accepted })
      }
    }
  let before = 0
  let after = 0
  for (const j of junkResults) {
    if (!j.accepted) continue
    const f = firstRejection.get(j.author)
    if (f !== undefined && compareHlc(j.at, f) > 0) after++
    else before++
  }
  return {
    completed,
    honestAgree,
    problems,
    plansChangedAfterFinish: new Set(watch.changes.map(c => c.plan)).size,
    finishChanges: watch.changes.length,
    firstChanges: watch.changes.slice(0, 3),
    tasks,
    tasksWonByDishonest: won,
    dishonestShare: tasks === 0 ? 0 : won / tasks,
    fairShare,
    junkAcceptedBefore: before,
    junkAcceptedAfter: after
  }
}
