import { derivePlan } from './derive.js'
import { EventSet } from './event-set.js'
import { hashParts } from './hash.js'
import { treeHash } from './tree-hash.js'
import type { AddOutcome, EventSetOptions } from './event-set.js'
import type { PlanEvent, PlanId } from './events.js'
import type { PlanTree } from './tree.js'

/** Wall time far enough ahead that no stamp counts as "from the future": for folding a stored set outside any clock. */
export const NO_CLOCK = Number.MAX_SAFE_INTEGER

/**
 * The fold: the set of events in, one tree per plan out.
 *
 * `add` is cheap (index the event); trees are derived on demand and cached
 * per plan until that plan gets another event. Incremental adds and a full
 * rebuild of the same set give the same trees: the derivation reads only the
 * set.
 */
export class Fold {
  readonly events: EventSet
  private readonly cache = new Map<PlanId, { version: number, tree: PlanTree, hash: string }>()

  constructor (opts: EventSetOptions = {}) {
    this.events = new EventSet(opts)
  }

  add (e: PlanEvent, nowMs: number): AddOutcome {
    return this.events.add(e, nowMs)
  }

  plans (): PlanId[] {
    return this.events.planIds().filter(p => this.events.plan(p)?.goal !== undefined).sort()
  }

  tree (plan: PlanId): PlanTree | undefined {
    return this.entry(plan)?.tree
  }

  treeHash (plan: PlanId): string | undefined {
    return this.entry(plan)?.hash
  }

  /** One hash over every plan's treeHash: equal for replicas holding equal sets. */
  swarmHash (): string {
    return hashParts(...this.plans().map(p => `${p}=${this.treeHash(p) ?? ''}`))
  }

  private entry (plan: PlanId): { tree: PlanTree, hash: string } | undefined {
    const index = this.events.plan(plan)
    if (index?.goal === undefined) return undefined
    const cached = this.cache.get(plan)
    if (cached !== undefined && cached.version === index.version) return cached
    const tree = derivePlan(index)
    const fresh = { version: index.version, tree, hash: treeHash(tree) }
    this.cache.set(plan, fresh)
    return fresh
  }
}

/** Fold a whole set at once, ignoring wall time: the reference every replica must match. */
export function foldAll (events: Iterable<PlanEvent>, opts: EventSetOptions = {}): Fold {
  const f = new Fold(opts)
  for (const e of events) f.add(e, NO_CLOCK)
  return f
}
