import { LANES, hexOfWords, parseId } from './id-words.js'
import type { PlanId } from './events.js'
import type { RetentionFacts } from './retention.js'
import type { PlanStatus } from './tree.js'

/** What a fold holds of an evicted plan: its record (of summary S), the summary left out where the runtime keeps it. */
export interface EvictedPlan<S = unknown> extends RetentionFacts {
  readonly hash: string
  readonly summary?: S
}

const STATUSES: readonly PlanStatus[] = [
  'planning',
  'executing',
  'completed',
  'failed',
  'cancelled',
  'budget-exhausted'
]
const STATUS_CODE = new Map(STATUSES.map((s, i) => [s, i]))
/** `retainDays` null (the default) in its column. */
const DEFAULT_RETAIN = -1

/**
 * The plans a fold has taken out of memory, each in a few bytes: the treeHash
 * as eight 32-bit words, the last stamp, `retainDays` and the status in
 * typed columns, and only the plan id as a string (the map's key). A node
 * restarted on 11,111 finished plans holds 27.3 MB of live heap, against
 * 37.9 MB with their parsed records and 24.0 MB with none (ADR-0045); and so
 * few objects survive young-generation collections while it loads them that
 * V8 need not grow its young generation. Summaries are kept beside, in a
 * map, only for a fold that has nowhere else to read them from.
 */
export class EvictedPlans<S> {
  private readonly slots = new Map<PlanId, number>()
  private readonly freed: number[] = []
  private readonly summaries = new Map<PlanId, S>()
  private capacity = 0
  private used = 0
  private hashes = new Uint32Array(0)
  private stamps = new Float64Array(0)
  private retain = new Int16Array(0)
  private statuses = new Uint8Array(0)

  /**
   * Whether a record can be held here: a treeHash of 64 lowercase hex digits,
   * a known status, a finite stamp and a whole `retainDays` (or null). Every
   * record a fold makes is; one read back from a damaged store may not be.
   */
  static accepts(r: EvictedPlan): boolean {
    return (
      /^[0-9a-f]{64}$/.test(r.hash) &&
      STATUS_CODE.has(r.status) &&
      Number.isFinite(r.lastStampMs) &&
      (r.retainDays === null || (Number.isInteger(r.retainDays) && r.retainDays > 0 && r.retainDays < 0x8000))
    )
  }

  get size(): number {
    return this.slots.size
  }

  has(plan: PlanId): boolean {
    return this.slots.has(plan)
  }

  keys(): IterableIterator<PlanId> {
    return this.slots.keys()
  }

  /** Holds `r` for `plan` (its summary too, if it has one); throws for a record `accepts` refuses. */
  set(plan: PlanId, r: EvictedPlan<S>): void {
    if (!EvictedPlans.accepts(r)) throw new Error(`EvictedPlans: the record of plan ${plan} is malformed`)
    let slot = this.slots.get(plan)
    if (slot === undefined) {
      slot = this.freed.pop() ?? this.grow()
      this.slots.set(plan, slot)
    }
    parseId(r.hash, this.hashes, slot * LANES)
    this.stamps[slot] = r.lastStampMs
    this.retain[slot] = r.retainDays ?? DEFAULT_RETAIN
    this.statuses[slot] = STATUS_CODE.get(r.status) as number
    if (r.summary !== undefined) this.summaries.set(plan, r.summary)
    else this.summaries.delete(plan)
  }

  get(plan: PlanId): EvictedPlan<S> | undefined {
    const slot = this.slots.get(plan)
    if (slot === undefined) return undefined
    const summary = this.summaries.get(plan)
    return {
      ...this.factsAt(slot),
      hash: hexOfWords(this.hashes, slot * LANES),
      ...(summary === undefined ? {} : { summary })
    }
  }

  /** What the retention rule reads, without building the hash. */
  facts(plan: PlanId): RetentionFacts | undefined {
    const slot = this.slots.get(plan)
    return slot === undefined ? undefined : this.factsAt(slot)
  }

  /** The treeHash alone, without building the rest. */
  hash(plan: PlanId): string | undefined {
    const slot = this.slots.get(plan)
    return slot === undefined ? undefined : hexOfWords(this.hashes, slot * LANES)
  }

  delete(plan: PlanId): boolean {
    const slot = this.slots.get(plan)
    if (slot === undefined) return false
    this.slots.delete(plan)
    this.summaries.delete(plan)
    this.freed.push(slot)
    return true
  }

  private factsAt(slot: number): RetentionFacts {
    const retain = this.retain[slot] as number
    return {
      status: STATUSES[this.statuses[slot] as number] as PlanStatus,
      lastStampMs: this.stamps[slot] as number,
      retainDays: retain === DEFAULT_RETAIN ? null : retain
    }
  }

  /** A fresh slot, the columns doubled when full. */
  private grow(): number {
    if (this.used === this.capacity) {
      this.capacity = Math.max(64, this.capacity * 2)
      this.hashes = widened(this.hashes, new Uint32Array(this.capacity * LANES))
      this.stamps = widened(this.stamps, new Float64Array(this.capacity))
      this.retain = widened(this.retain, new Int16Array(this.capacity))
      this.statuses = widened(this.statuses, new Uint8Array(this.capacity))
    }
    return this.used++
  }
}

function widened<T extends Uint32Array | Float64Array | Int16Array | Uint8Array>(from: T, to: T): T {
  to.set(from)
  return to
}
