import { logger } from '@libp2p/logger'
import { isExpired } from '../core/retention.js'
import { isFinished } from '../core/view.js'
import { QuietPlans } from './quiet-plans.js'
import type { Fold, PlanRecord, PlanSummary } from '../core/fold.js'
import type { PlanId } from '../core/events.js'
import type { EventStore, StoredEvent } from '../ports/event-store.js'
import type { SyncIds } from '../sync/reconcile/index.js'
import type { NodeMetrics } from './metrics.js'

const log = logger('plan-swarm:replica')

/**
 * A finished plan leaves memory once it has folded no event for this long,
 * by the replica's clock (ADR-0012): long enough that the stragglers
 * of its end (late renewals, duplicate results, a roll-up's echo) find it in
 * memory, short enough that memory follows the plans under way.
 */
export const EVICT_QUIET_MS = 60_000

export interface PlanLifecycleInit {
  readonly fold: Fold
  readonly store: EventStore
  readonly metrics: NodeMetrics
  /** How long a finished plan stays in memory after its last event; Infinity keeps every plan. */
  readonly evictQuietMs: number
  /** The replica's sync id set (it takes the store's at load, so it is read at each use). */
  readonly ids: () => SyncIds
  /** Commit the replica's write queue, so the store holds every event of a plan about to leave. */
  readonly flush: () => void
  /** The replica's clock, in local ms. */
  readonly now: () => number
}

/**
 * How a replica's plans leave: out of memory once finished and quiet
 * (ADR-0012), leaving a record in the store so a restart knows them without
 * folding them; and out of the node once their retention runs out
 * (ADR-0040), leaving tombstones so their late events are refused. Plans
 * imported from an archive are kept: never expired, never offered to peers.
 *
 * The replica tells it when a plan folds (`touch`) and asks it on each tick
 * (`evictQuiet`); the fold calls `loadSummary` and `reloaded` when an
 * evicted plan is read.
 */
export class PlanLifecycle {
  /** Plans taken out of memory and brought back since start (a plan may do both several times). */
  readonly evictions = { evicted: 0, reloaded: 0 }
  /** Plans expired since start, plans restored from their records at start, and late events refused. */
  readonly retention = { expired: 0, restored: 0, refused: 0 }
  /** Per plan in memory: local ms of its last folded event, or of its return to memory. */
  private readonly quiet: QuietPlans
  /** Plans expired here (ADR-0040): every late event of them is refused. */
  private readonly expired: Set<string>
  /** Plans imported from an archive: kept here, never expired, never offered to peers. */
  private readonly kept: Set<string>

  constructor(private readonly init: PlanLifecycleInit) {
    this.quiet = new QuietPlans(init.evictQuietMs)
    this.expired = new Set(init.store.expiredPlans())
    this.kept = new Set(init.store.keptPlans())
  }

  /** Whether any plan was imported (then each folded event's plan is checked with `isKept`). */
  get keepsAny(): boolean {
    return this.kept.size > 0
  }

  /** Whether the plan was imported from an archive: its ids stay out of the sync id set. */
  isKept(plan: string): boolean {
    return this.kept.size > 0 && this.kept.has(plan)
  }

  /** Whether any plan is expired here (else no event needs `refusesLate`). */
  get expiresAny(): boolean {
    return this.expired.size > 0
  }

  /** Whether an event of `plan` comes too late, its plan expired here; counted in `retention.refused`. */
  refusesLate(plan: string): boolean {
    if (!this.expired.has(plan)) return false
    this.retention.refused++
    return true
  }

  /** Whether the id is a tombstone of an expired plan. */
  isTombstone(id: string): boolean {
    return this.expired.size > 0 && this.init.store.isTombstone(id)
  }

  /** A plan folded an event (or came back to memory) at `nowMs`: its quiet time starts again. */
  touch(plan: PlanId, nowMs: number): void {
    this.quiet.touch(plan, nowMs)
  }

  /** The fold's `loadSummary`: an evicted plan's summary from its stored record, if the record is of that tree. */
  loadSummary(plan: PlanId, hash: string): PlanSummary | undefined {
    const json = this.init.store.record(plan)
    const record = json === undefined ? undefined : parseRecord(json)
    // A record from an earlier eviction, whose last write failed, is not this plan's summary.
    return record?.hash === hash ? record.summary : undefined
  }

  /** The fold's `onReloaded`: an evicted plan came back into memory. */
  reloaded(plan: PlanId, { events, sameHash }: { events: number; sameHash: boolean }): void {
    this.evictions.reloaded++
    this.quiet.touch(plan, this.init.now())
    if (sameHash) log('plan %s back in memory: %d events', plan, events)
    // Only lost rows do this (a damaged row moved aside); a restart reloads the ids from the store, and sync fetches what is missing.
    else
      log.error(
        'plan %s came back from the store with %d events and another treeHash than it left with: ' +
          'rows are missing; restart this node to fetch them again',
        plan,
        events
      )
  }

  /**
   * At start, put the plans that left memory with a record back into the
   * fold as evicted, without folding them (imported plans are folded);
   * returns how many, also counted in `retention.restored`.
   */
  restoreRecords(): number {
    let restored = 0
    for (const { plan, json } of this.init.store.currentRecords()) {
      if (this.kept.has(plan)) continue
      const record = parseRecord(json)
      if (record !== undefined && this.init.fold.restore(plan as PlanId, record)) restored++
    }
    this.retention.restored = restored
    return restored
  }

  /**
   * Take finished plans that folded nothing for `evictQuietMs` out of memory.
   * The queue is committed first, so that the store can give their events
   * back (the replica's `storedEvents` reads what a refused commit left
   * queued, too). Finished only: a plan under way (or out of budget, which a
   * raise resumes) is read by the roles on every pass.
   */
  evictQuiet(): void {
    const fold = this.init.fold
    let flushed = false
    for (const { plan, quietForMs } of this.quiet.quiet(this.init.now())) {
      const tree = fold.tree(plan)
      if (tree === undefined) {
        this.quiet.forget(plan)
        continue
      }
      if (!isFinished(tree)) continue
      if (!flushed) {
        this.init.flush()
        flushed = true
      }
      const record = fold.record(plan)
      if (record !== undefined && fold.evict(plan)) {
        this.quiet.forget(plan)
        this.evictions.evicted++
        this.keepRecord(plan, record)
        log('plan %s (%s) left memory after %d ms quiet', plan, tree.status, quietForMs)
      }
    }
  }

  /**
   * Store an evicted plan's record, so a restart knows it without folding it
   * and the fold reads its summary from there (best effort: without it, the
   * plan folds again when its summary is asked for, and at the next start).
   */
  private keepRecord(plan: PlanId, record: PlanRecord): void {
    try {
      this.init.store.putRecord(plan, this.init.store.countByPlan(plan), JSON.stringify(record))
    } catch (err) {
      log.error('could not keep the record of plan %s: %s', plan, (err as Error).message)
    }
  }

  /**
   * Finished plans whose retention ran out by `nowMs` (src/core/retention.ts),
   * oldest first; imported plans are kept and never listed.
   */
  expiredBy(nowMs: number): PlanId[] {
    const out: Array<{ plan: PlanId; at: number }> = []
    for (const plan of this.init.fold.plansUnsorted()) {
      if (this.kept.has(plan)) continue
      const r = this.init.fold.facts(plan)
      if (r !== undefined && isExpired(r, nowMs)) out.push({ plan, at: r.lastStampMs })
    }
    return out.sort((a, b) => a.at - b.at || (a.plan < b.plan ? -1 : 1)).map(x => x.plan)
  }

  /**
   * Expire a plan: hand its stored rows and record to `archive` (which must
   * have them safely on disk when it returns), then take the plan out of the
   * store in one transaction, out of the fold and out of the sync id set.
   * From then on every event of it is refused. A kill before the
   * transaction leaves the plan whole in the store, and the next start
   * expires it again; after it, nothing of it is left but its tombstones.
   * False (nothing done) while an event of it is parked.
   */
  expire(plan: PlanId, archive: (rows: readonly StoredEvent[], record: PlanRecord) => void): boolean {
    const { fold, store } = this.init
    const record = fold.record(plan)
    if (record === undefined || fold.events.hasParked(plan)) return false
    this.init.flush()
    const rows: StoredEvent[] = []
    store.loadPlan(plan, row => rows.push(row))
    archive(rows, record)
    const ids = store.expirePlan(plan, this.init.now())
    fold.forget(plan)
    this.quiet.forget(plan)
    // A set kept by the store heard of the deletion already; one in memory learns of it here.
    const held = this.init.ids()
    held.removeMany(ids)
    this.expired.add(plan)
    this.retention.expired++
    this.init.metrics.stored.set(held.size)
    log('plan %s expired: %d events archived and removed', plan, ids.length)
    return true
  }

  /** Forget expired plans listed before `beforeMs` with their tombstones: their events are refused no more. */
  forgetExpired(beforeMs: number): number {
    const n = this.init.store.purgeExpired(beforeMs)
    if (n > 0) {
      this.expired.clear()
      for (const p of this.init.store.expiredPlans()) this.expired.add(p)
    }
    return n
  }
}

/** A stored record, or undefined if it cannot be read (the plan is folded instead). */
function parseRecord(json: string): PlanRecord | undefined {
  try {
    const r = JSON.parse(json) as PlanRecord
    return typeof r.hash === 'string' && typeof r.lastStampMs === 'number' && typeof r.summary === 'object'
      ? r
      : undefined
  } catch {
    return undefined
  }
}
