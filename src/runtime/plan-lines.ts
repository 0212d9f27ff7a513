import { summarizeTree } from '../core/fold.js'
import { needsPhrase, unmetNeeds } from '../core/needs.js'
import { isFinished } from '../core/view.js'
import type { NodeId, PlanId } from '../core/events.js'
import type { PlanSummary } from '../core/fold.js'
import type { RetentionFacts } from '../core/retention.js'
import type { PlanTree, TreeNode } from '../core/tree.js'
import type { PlanLine, PlanScope } from '../ports/node-view.js'
import { PlanLineCache, offersKey } from './plan-line-cache.js'

/** Waiting nodes a plan's /status line names at most. */
export const STATUS_WAITING_MAX = 5

/** The finished plans /status lists at most, those with the latest last event (GET /plans lists every one). */
export const STATUS_FINISHED_MAX = 100

/** The lines' parts kept per tree (see PlanLineCache): trees are the fold's own objects, so one cache serves all. */
const LINE_CACHE = new PlanLineCache()

/**
 * What the /status lines read of a node's plans (the replica answers from
 * its fold). The lines are a function of these answers and of `nowMs`, so
 * the same source at the same time gives the same lines.
 */
export interface PlanLineSource {
  /** Every plan held, in memory or evicted, in the order the lines list them. */
  plans(): readonly PlanId[]
  /** The plan's tree while it is in memory; undefined once evicted. */
  tree(plan: PlanId): PlanTree | undefined
  /** The summary an evicted plan answers from. */
  summary(plan: PlanId): PlanSummary | undefined
  treeHash(plan: PlanId): string | undefined
  /** Status and last stamp, in memory or evicted: what picks the finished plans shown. */
  facts(plan: PlanId): RetentionFacts | undefined
  /** Why the roles leave the plan alone at `nowMs`, or null (see `Replica.heldReason`). */
  heldReason(plan: PlanId, nowMs: number): string | null
}

/**
 * The lines of the plans of `scope` (see PlanScope), one per plan, as
 * /status shows them. `waiting` says why a plan cannot go on where it stands
 * (nodes waiting for proposals, ballots or an executor; at most
 * STATUS_WAITING_MAX of them), and is empty once the plan is finished: an
 * evicted plan is finished, so it answers from its summary. `cache` null
 * computes every line afresh (the cache's property test compares the two).
 */
export function planLines(
  source: PlanLineSource,
  executorOffers: readonly ReadonlySet<string>[],
  scope: PlanScope,
  nowMs: number,
  cache: PlanLineCache | null = LINE_CACHE
): PlanLine[] {
  const lines: PlanLine[] = []
  const offers = cache === null ? '' : offersKey(executorOffers)
  const ids = source.plans()
  const shown = scope === 'all' ? undefined : recentlyFinished(source, ids, STATUS_FINISHED_MAX)
  for (const id of ids) {
    const t = source.tree(id)
    if (shown !== undefined && (t === undefined || isFinished(t)) && !shown.has(id)) continue
    const s = t === undefined ? (source.summary(id) as PlanSummary) : (cache?.summary(t) ?? summarizeTree(t))
    lines.push({
      id,
      goal: s.goal,
      status: s.status,
      treeHash: source.treeHash(id) as string,
      nodes: s.nodes,
      done: s.done,
      spentTokens: s.spentTokens,
      budgetTokens: s.budgetTokens,
      waiting:
        t === undefined || isFinished(t)
          ? []
          : waitingOf(t, executorOffers, source.heldReason(t.plan, nowMs), c =>
              cache === null ? c() : cache.waitingLines(t, offers, c)
            )
    })
  }
  return lines
}

/** A plan's waiting lines, led by why the roles hold it (`held`) when they do. */
function waitingOf(
  t: PlanTree,
  executorOffers: readonly ReadonlySet<string>[],
  held: string | null,
  kept: (compute: () => string[]) => readonly string[]
): string[] {
  const lines = kept(() => waitingLines(t, unmetNeeds(t, executorOffers)))
  return held === null ? [...lines] : [`the plan ${held}`, ...lines.slice(0, STATUS_WAITING_MAX - 1)]
}

/** The `max` finished plans of `plans` whose last event is the latest. */
function recentlyFinished(source: PlanLineSource, plans: readonly PlanId[], max: number): Set<PlanId> {
  const finished: Array<{ plan: PlanId; last: number }> = []
  for (const plan of plans) {
    const f = source.facts(plan)
    if (f !== undefined && isFinished(f)) finished.push({ plan, last: f.lastStampMs })
  }
  finished.sort((a, b) => b.last - a.last || (a.plan < b.plan ? -1 : 1))
  return new Set(finished.slice(0, max).map(x => x.plan))
}

/**
 * Why the plan's nodes wait, a line each, at most STATUS_WAITING_MAX: the
 * ready tasks whose needs no live executor meets (`unmet`) first, saying so.
 */
export function waitingLines(t: PlanTree, unmet: ReadonlyMap<NodeId, readonly string[]>): string[] {
  return t.nodes
    .filter(n => n.waiting !== null && n.status !== 'blocked')
    .sort((a, b) => Number(unmet.has(b.id)) - Number(unmet.has(a.id)))
    .slice(0, STATUS_WAITING_MAX)
    .map(n => {
      const needs = unmet.get(n.id)
      const why = needs === undefined ? (n.waiting as string) : `waits for ${needsPhrase(needs)}`
      return `"${n.title}": ${why}${reviewersAwaited(t, n)}`
    })
}

/** Whom a node in review waits for, as a suffix for its waiting line (a split's line names them already). */
export function reviewersAwaited(tree: PlanTree, node: TreeNode): string {
  if (node.status !== 'in-review') return ''
  const who = tree.tasks.find(t => t.id === node.task)?.awaiting ?? []
  return who.length === 0 ? '' : ` (from ${who.join(', ')})`
}
