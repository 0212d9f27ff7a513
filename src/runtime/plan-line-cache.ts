import { summarizeTree } from '../core/fold.js'
import type { PlanSummary } from '../core/fold.js'
import type { PlanTree } from '../core/tree.js'

/**
 * What a /status line derives from a plan's tree (its summary and its
 * waiting lines), kept with the tree. The fold hands out the same tree object
 * for a plan until one of its events changes it (a new version derives a new
 * tree), so each is computed once per plan version rather than once per
 * request: /status, GET /plans, the dashboard's stream and MCP's swarm_status
 * under a thousand plans cost a lookup per plan that has not changed. Keyed
 * weakly by the tree, so a plan out of memory leaves nothing behind; the
 * waiting lines also by the executors' offers they were read against.
 * test/property/plan-line-cache.test.ts checks every line against the same
 * line computed afresh, as plans grow event by event.
 */
export class PlanLineCache {
  private readonly summaries = new WeakMap<PlanTree, PlanSummary>()
  private readonly waiting = new WeakMap<PlanTree, { readonly offers: string; readonly lines: readonly string[] }>()

  summary(tree: PlanTree): PlanSummary {
    let s = this.summaries.get(tree)
    if (s === undefined) {
      s = summarizeTree(tree)
      this.summaries.set(tree, s)
    }
    return s
  }

  /** `compute()` (the tree's waiting lines against offers `offers`, see offersKey), once per tree and offers. */
  waitingLines(tree: PlanTree, offers: string, compute: () => string[]): readonly string[] {
    const kept = this.waiting.get(tree)
    if (kept !== undefined && kept.offers === offers) return kept.lines
    const lines = compute()
    this.waiting.set(tree, { offers, lines })
    return lines
  }
}

/** One string for what every live executor offers: equal strings, equal offers. */
export function offersKey(executorOffers: readonly ReadonlySet<string>[]): string {
  return JSON.stringify(executorOffers.map(s => [...s].sort()))
}
