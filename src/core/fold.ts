import { LiveTree } from './live-tree.js'
import { EventSet, planOf } from './event-set.js'
import { EvictedPlans } from './evicted-plans.js'
import { hashParts, sha256HexOfText } from './hash.js'
import { treeHash } from './tree-hash.js'
import type { AddOutcome, EventSetOptions } from './event-set.js'
import type { EvictedPlan } from './evicted-plans.js'
import type { Hlc, PeerIdString, PlanEvent, PlanId } from './events.js'
import type { PlanStatus, PlanTree } from './tree.js'
import type { RetentionFacts } from './retention.js'

/** Wall time far enough ahead that no stamp counts as "from the future": for folding a stored set outside any clock. */
export const NO_CLOCK = Number.MAX_SAFE_INTEGER

export interface FoldOptions extends EventSetOptions {
  /**
   * Lowercase hex SHA-256 of a string's UTF-8 bytes, for tree hashes. The
   * core's own is pure JavaScript; the runtime passes Node's native one, which
   * must give the same hex for every string (a unit test holds them equal).
   */
  readonly hashText?: (text: string) => string
  /**
   * A plan's events again, after `evict` took them out of memory (the runtime
   * reads its store): at least every event the plan had folded when it left.
   * Without it `evict` refuses, since the plan could never come back.
   */
  readonly loadPlan?: (plan: PlanId) => Iterable<PlanEvent>
  /**
   * Told each time an evicted plan comes back: how many events were loaded,
   * and whether its treeHash is the one it left with (it is, unless events
   * were lost from the store meanwhile).
   */
  readonly onReloaded?: (plan: PlanId, info: { events: number; sameHash: boolean }) => void
  /**
   * The summary of an evicted plan as the runtime kept it (its store's
   * record), or undefined if it has none. When given, an evicted plan keeps
   * only its treeHash and what the retention rule reads in memory, so memory
   * does not grow with the history; without it, or when it answers nothing,
   * the summary stays in memory (or, for a plan restored without one, the
   * plan folds again to give it).
   */
  readonly loadSummary?: (plan: PlanId, hash: string) => PlanSummary | undefined
}

/** A plan in a line: what /status and the plan lists show, and all that is kept of an evicted plan besides its treeHash. */
export interface PlanSummary {
  readonly plan: PlanId
  readonly goal: string
  readonly author: PeerIdString
  readonly submittedAt: Hlc
  readonly status: PlanStatus
  readonly statusReason: string
  readonly nodes: number
  readonly done: number
  readonly spentTokens: number
  readonly budgetTokens: number
  readonly events: number
}

/**
 * All that is kept of a plan out of memory: its treeHash, its summary, and
 * what the retention rule reads. The runtime stores it beside the plan's
 * events, so a node starting on a long history need not fold finished plans
 * to list them.
 */
export interface PlanRecord extends RetentionFacts {
  readonly hash: string
  readonly summary: PlanSummary
}

export function summarizeTree(tree: PlanTree): PlanSummary {
  let done = 0
  for (const n of tree.nodes) if (n.status === 'done') done++
  return {
    plan: tree.plan,
    goal: tree.goal,
    author: tree.author,
    submittedAt: tree.submittedAt,
    status: tree.status,
    statusReason: tree.statusReason,
    nodes: tree.nodes.length,
    done,
    spentTokens: tree.spentTokens,
    budgetTokens: tree.budgetTokens,
    events: tree.events
  }
}

/**
 * The fold: the set of events in, one tree per plan out.
 *
 * `add` is cheap (index the event); trees are derived on demand and cached
 * per plan until that plan gets another event. Incremental adds and a full
 * rebuild of the same set give the same trees: the derivation reads only the
 * set.
 *
 * A plan can be taken out of memory (`evict`) and brought back from
 * `loadPlan` (`reload`, or any `add` of one of its events). An evicted plan
 * keeps its treeHash and summary, so `plans`, `treeHash` and `swarmHash`
 * answer exactly as if it were still folded: the tree is a function of the
 * set, and evicting changes what is in memory, not the set. Only `tree` (and
 * the event set's lookups) see it gone.
 */
export class Fold {
  readonly events: EventSet
  /** Per plan, its tree as of `version`, and the tree's hash once somebody asked for it. */
  private readonly cache = new Map<PlanId, { version: number; tree: PlanTree; hash: string | undefined }>()
  /** Per plan, its tree kept between reads, so a read costs what changed since the last (live-tree.ts). */
  private readonly live = new Map<PlanId, LiveTree>()
  private readonly evicted = new EvictedPlans<PlanSummary>()
  private readonly hashText: (text: string) => string
  private readonly loadPlan: FoldOptions['loadPlan']
  private readonly onReloaded: FoldOptions['onReloaded']
  private readonly loadSummary: FoldOptions['loadSummary']

  constructor(opts: FoldOptions = {}) {
    this.events = new EventSet(opts)
    this.hashText = opts.hashText ?? sha256HexOfText
    this.loadPlan = opts.loadPlan
    this.onReloaded = opts.onReloaded
    this.loadSummary = opts.loadSummary
  }

  /** Add one event; an event of an evicted plan brings the plan back first, so it meets its deps. */
  add(e: PlanEvent, nowMs: number): AddOutcome {
    if (this.evicted.size > 0) this.reloadFor(e)
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
  addBatch(events: readonly PlanEvent[], nowMs: number): Array<{ event: PlanEvent; outcome: AddOutcome }> {
    if (this.evicted.size > 0) for (const e of events) this.reloadFor(e)
    return byStamp(events).map(event => ({ event, outcome: this.events.add(event, nowMs) }))
  }

  /** Every plan with a goal, in memory or evicted, sorted. */
  plans(): PlanId[] {
    return [...this.plansUnsorted()].sort()
  }

  /** Every plan with a goal, in memory or evicted, in no particular order: for a pass over all of them that sorts nothing. */
  *plansUnsorted(): Generator<PlanId> {
    for (const p of this.events.planIds()) if (this.events.plan(p)?.goal !== undefined) yield p
    yield* this.evicted.keys()
  }

  /** The folded tree; undefined for an unknown plan and for an evicted one (`isEvicted` tells them apart, `reload` brings it back). */
  tree(plan: PlanId): PlanTree | undefined {
    return this.entry(plan)?.tree
  }

  /**
   * Hashed on demand and cached with the tree: the roles read a tree after
   * every event, the hash is read by /status, the observer and tests, and
   * hashing a tree costs about as much as deriving it.
   */
  treeHash(plan: PlanId): string | undefined {
    const gone = this.evicted.hash(plan)
    if (gone !== undefined) return gone
    const entry = this.entry(plan)
    if (entry === undefined) return undefined
    entry.hash ??= treeHash(entry.tree, this.hashText)
    return entry.hash
  }

  /** One hash over every plan's treeHash: equal for replicas holding equal sets, whatever each has evicted. */
  swarmHash(): string {
    return hashParts(...this.plans().map(p => `${p}=${this.treeHash(p) ?? ''}`))
  }

  /**
   * A plan's summary, in memory or evicted (for an evicted plan, what it
   * kept or `loadSummary` gives; derives the tree otherwise). An evicted
   * plan with neither folds again.
   */
  summary(plan: PlanId): PlanSummary | undefined {
    const gone = this.evicted.get(plan)
    if (gone !== undefined) {
      const kept = this.keptSummary(plan, gone)
      if (kept !== undefined || !this.reload(plan)) return kept
    }
    const tree = this.tree(plan)
    return tree === undefined ? undefined : summarizeTree(tree)
  }

  /** An evicted plan's summary as kept in memory or by the runtime (`loadSummary`); undefined if neither has it. */
  private keptSummary(plan: PlanId, gone: EvictedPlan<PlanSummary>): PlanSummary | undefined {
    return gone.summary ?? this.loadSummary?.(plan, gone.hash)
  }

  /** How many plans have a goal, in memory or evicted: `plans().length` without listing them. */
  planCount(): number {
    let n = 0
    for (const _ of this.plansUnsorted()) n++
    return n
  }

  isEvicted(plan: PlanId): boolean {
    return this.evicted.has(plan)
  }

  /** How many plans are out of memory. */
  get evictedCount(): number {
    return this.evicted.size
  }

  /**
   * Take a plan out of memory: its events, its index and its cached tree go;
   * its treeHash, retention facts and (without `loadSummary`) its summary
   * stay (the runtime keeps its `record`, taken first, where `loadSummary`
   * reads). Refused (false) without `loadPlan`, for a
   * plan not in memory, and while an event of the plan is parked (it would
   * fold into an index without its goal). Events never cite another plan's
   * events (`checkDeps` rejects them: 'dep-other-plan'), so no other plan
   * needs this one in memory. Which plans to evict, and when, is the
   * caller's policy: any plan may go, and comes back as it was.
   */
  evict(plan: PlanId): boolean {
    if (this.loadPlan === undefined) return false
    const entry = this.entry(plan)
    if (entry === undefined || this.events.hasParked(plan)) return false
    // With `loadSummary` the summary is the runtime's to keep: not derived here.
    const facts = this.facts(plan) as RetentionFacts
    const hash = this.treeHash(plan) as string
    this.evicted.set(
      plan,
      this.loadSummary === undefined ? { ...facts, hash, summary: summarizeTree(entry.tree) } : { ...facts, hash }
    )
    this.cache.delete(plan)
    this.live.delete(plan)
    this.events.dropPlan(plan)
    return true
  }

  /** A plan's record (see PlanRecord), in memory or evicted; undefined for a plan without a goal. */
  record(plan: PlanId): PlanRecord | undefined {
    const gone = this.evicted.get(plan)
    if (gone !== undefined) {
      const summary = this.keptSummary(plan, gone)
      if (summary !== undefined) return { ...gone, summary }
      // Nothing kept its summary: the plan folds again, and its record is read from the tree below.
      if (!this.reload(plan)) return undefined
    }
    const entry = this.entry(plan)
    const index = this.events.plan(plan)
    if (entry === undefined || index === undefined) return undefined
    return {
      ...(this.facts(plan) as RetentionFacts),
      hash: this.treeHash(plan) as string,
      summary: summarizeTree(entry.tree)
    }
  }

  /** What the retention rule reads of a plan, in memory or evicted, without hashing its tree. */
  facts(plan: PlanId): RetentionFacts | undefined {
    const gone = this.evicted.facts(plan)
    if (gone !== undefined) return gone
    const entry = this.entry(plan)
    const index = this.events.plan(plan)
    if (entry === undefined || index === undefined) return undefined
    return { status: entry.tree.status, lastStampMs: index.lastStampMs, retainDays: entry.tree.params.retainDays }
  }

  /**
   * Know a plan as evicted from its record without folding it (a node
   * starting on its store). The caller vouches that the record is the one
   * `record` gave for the events the store holds; the plan folds from them
   * when anything asks for its tree. With `loadSummary` the summary is left
   * out of memory. False if the plan is in memory.
   */
  restore(plan: PlanId, record: EvictedPlan<PlanSummary>): boolean {
    if (this.loadPlan === undefined || this.events.plan(plan)?.goal !== undefined || !EvictedPlans.accepts(record))
      return false
    const { summary: _summary, ...lean } = record
    this.evicted.set(plan, this.loadSummary === undefined ? record : lean)
    return true
  }

  /**
   * Drop a plan altogether (it expired): its events, tree and record. It
   * is as if the plan had never been folded; `plans` and `swarmHash` leave
   * it out. False while an event of it is parked.
   */
  forget(plan: PlanId): boolean {
    if (this.events.hasParked(plan)) return false
    this.evicted.delete(plan)
    this.cache.delete(plan)
    this.live.delete(plan)
    this.events.dropPlan(plan)
    return true
  }

  /**
   * Bring an evicted plan back: fold what `loadPlan` gives as one batch. No
   * clock holds any of it back: each of its events folded once, and a valid
   * event stays valid. False if the plan was not evicted.
   */
  reload(plan: PlanId): boolean {
    const gone = this.evicted.get(plan)
    if (gone === undefined || this.loadPlan === undefined) return false
    // Loaded before the plan stops counting as evicted: if loading throws, it stays evicted, hashes intact.
    // Only the plan's own events: a stray event of another evicted plan would park without its deps.
    const events = [...this.loadPlan(plan)].filter(e => planOf(e) === plan)
    this.evicted.delete(plan)
    this.addBatch(events, NO_CLOCK)
    this.onReloaded?.(plan, { events: events.length, sameHash: this.treeHash(plan) === gone.hash })
    return true
  }

  private reloadFor(e: PlanEvent): void {
    const plan = planOf(e)
    if (this.evicted.has(plan)) this.reload(plan)
  }

  private entry(plan: PlanId): { tree: PlanTree; hash: string | undefined } | undefined {
    const index = this.events.plan(plan)
    if (index?.goal === undefined) return undefined
    const cached = this.cache.get(plan)
    if (cached !== undefined && cached.version === index.version) return cached
    let live = this.live.get(plan)
    if (live?.index !== index) {
      live = new LiveTree(index)
      this.live.set(plan, live)
    }
    const tree = live.tree()
    const fresh = { version: index.version, tree, hash: undefined }
    this.cache.set(plan, fresh)
    return fresh
  }
}

/** Events in stamp order (ms, then counter; ties in any order). Sorts indices over typed arrays: ~2x faster than comparing the objects. */
export function byStamp(events: readonly PlanEvent[]): PlanEvent[] {
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
export function foldAll(events: Iterable<PlanEvent>, opts: FoldOptions = {}): Fold {
  const f = new Fold(opts)
  for (const e of events) f.add(e, NO_CLOCK)
  return f
}
