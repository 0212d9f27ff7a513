import { derivePlan } from './derive.js'
import { EventSet } from './event-set.js'
import { hashParts, sha256HexOfText } from './hash.js'
import { treeHash } from './tree-hash.js'
import type { AddOutcome, EventSetOptions } from './event-set.js'
import type { PlanEvent, PlanId } from './events.js'
import type { PlanTree } from './tree.js'

/** Wall time far enough ahead that no stamp counts as "from the future": for folding a stored set outside any clock. */
export const NO_CLOCK = Number.MAX_SAFE_INTEGER

export interface FoldOptions extends EventSetOptions {
  /**
   * Lowercase hex SHA-256 of a string's UTF-8 bytes, for tree hashes. The
   * core's own is pure JavaScript; the runtime passes Node's native one, which
   * must give the same hex for every string (a unit test holds them equal).
   */
  readonly hashText?: (text: string) => string
}

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
  private readonly hashText: (text: string) => string

  constructor (opts: FoldOptions = {}) {
    this.events = new EventSet(opts)
    this.hashText = opts.hashText ?? sha256HexOfText
  }

  add (e: PlanEvent, nowMs: number): AddOutcome {
    return this.events.add(e, nowMs)
  }

  /**
   * Add many events at once, in stamp order: a valid event is stamped after
   * each of its deps, so in that order almost nothing has to wait for a dep
   * (parking and unparking every event of a shuffled batch costs several
   * times the fold itself). The set, and so every tree, is the same as
   * adding them one by one in any order. Returns each event with its outcome,
   * in the order they were added.
   */
  addBatch (events: readonly PlanEvent[], nowMs: number): Array<{ event: PlanEvent, outcome: AddOutcome }> {
    return byStamp(events).map(event => ({ event, outcome: this.events.add(event, nowMs) }))
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
    const fresh = { version: index.version, tree, hash: treeHash(tree, this.hashText) }
    this.cache.set(plan, fresh)
    return fresh
  }
}

/** Events in stamp order (ms, then counter; ties in any order). Sorts indices over typed arrays: ~2x faster than comparing the objects. */
function byStamp (events: readonly PlanEvent[]): PlanEvent[] {
  const n = events.length
  const ms = new Float64Array(n)
  const c = new Float64Array(n)
  const order = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    const h = (events[i] as PlanEvent).env.hlc
    ms[i] = h.ms
    c[i] = h.c
    order[i] = i
  }
  order.sort((i, j) => (ms[i] as number) - (ms[j] as number) || (c[i] as number) - (c[j] as number))
  const out = new Array<PlanEvent>(n)
  for (let i = 0; i < n; i++) out[i] = events[order[i] as number] as PlanEvent
  return out
}

/** Fold a whole set at once, ignoring wall time: the reference every replica must match. */
export function foldAll (events: Iterable<PlanEvent>, opts: FoldOptions = {}): Fold {
  const f = new Fold(opts)
  for (const e of events) f.add(e, NO_CLOCK)
  return f
}
