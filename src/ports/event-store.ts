/**
 * The replica's durable set of events, as an interface: SQLite on disk
 * (src/store/event-store.ts) and memory (src/store/memory-store.ts, for the
 * simulator). The store is ignorant of the event format: opaque bytes under
 * their id and plan, decoded and verified by the caller on the way back in.
 */
import type { SyncIds } from '../core/id-set.js'

/** An event as it is written. */
export interface EventRow {
  /** The event id: 64 lowercase hex characters. */
  readonly id: string
  /** The plan the event belongs to (for a `goal-submitted`, its own id). */
  readonly plan: string
  /** The event exactly as received (envelope and signature); never empty. */
  readonly bytes: Uint8Array
  /** Local wall time of arrival, for operators; not part of the plan. */
  readonly receivedMs: number
}

/** An event as it is read back. */
export interface StoredEvent {
  readonly id: string
  readonly plan: string
  readonly bytes: Uint8Array
}

/**
 * A row that `load` skipped because it cannot be an event this store wrote
 * (only another tool or disk trouble makes one). It has been moved from
 * `events` to the `damaged_events` table, where an operator can inspect it.
 */
export interface DamagedRow {
  /** SQLite's rowid, so an operator can find the row. */
  readonly rowid: number
  /** Whatever the id column held (it may not even be a string). */
  readonly id: unknown
  readonly problem: string
}

export interface LoadCounts {
  /** Rows handed to `onRow`. */
  readonly loaded: number
  /** Rows handed to `onDamaged` and skipped. */
  readonly damaged: number
}

/**
 * A node's durable set of events.
 *
 * Invariants: a row is either *valid* (64 lowercase hex id, text plan,
 * non-empty blob bytes) or *damaged*. `put` only ever writes valid rows (the
 * schema's CHECK constraints back that up), so damage can only come from
 * outside: another tool, or the disk. `load` and `loadPlan` deliver exactly
 * the valid rows and move damaged ones aside into `damaged_events`, after
 * which `count`, `countByPlan`, `ids` and `plans` (plain, fast queries) are
 * exact again. `has` and `get` check the row itself, so a damaged row looks
 * absent even before a load, and sync fetches the event again (the next `put`
 * of that id replaces the damaged row).
 *
 * Every method is synchronous. A write is durable against a process kill
 * (SIGKILL included) once it returns (WAL, synchronous=NORMAL), though not
 * against power loss: so a node can store its own event before publishing
 * it, and after a restart still knows what it signed (no accidental
 * equivocation).
 */
export interface EventStore {
  /** `<dir>/events.sqlite`, or `:memory:`. */
  readonly path: string
  /**
   * Stores an event if its id is not there yet. Idempotent: returns true only
   * when this call stored it (a new id, or a repair of a damaged row).
   * @throws InvalidEventRowError for a row the store would call damaged.
   */
  put(row: EventRow): boolean
  /**
   * `put` for many rows in one transaction: all are stored or, if one is
   * invalid, none. Returns how many were newly stored.
   */
  putMany(rows: Iterable<EventRow>): number
  has(id: string): boolean
  get(id: string): Uint8Array | undefined
  /** How many events the store holds (rows damaged behind its back count until a load moves them aside). */
  count(): number
  countByPlan(plan: string): number
  /**
   * Streams every row to `onRow`, in insertion order, a page at a time, so
   * memory stays bounded however large the store. A damaged row goes to
   * `onDamaged` instead, is moved into `damaged_events`, and is skipped:
   * never fatal. The callbacks may call back into the store, writes included
   * (the connection is free between pages); rows stored during the load may
   * or may not be visited.
   */
  load(onRow: (row: StoredEvent) => void, onDamaged: (info: DamagedRow) => void): LoadCounts
  /** `load` restricted to one plan: how a finished plan that left memory is brought back on demand. */
  loadPlan(plan: string, onRow: (row: StoredEvent) => void, onDamaged?: (info: DamagedRow) => void): LoadCounts
  /** Every id, sorted ascending (the order set reconciliation ranges over). */
  ids(): string[]
  /**
   * `ids()` as their 32 bytes each, back to back, leaving out any that is not
   * an id (IdSet.addBytes): at a million ids a fifth of the cost of the
   * strings, and a third of the memory of them in one hex string.
   */
  idsBytes(): Uint8Array
  /**
   * The sync id set of this store's rows outside kept plans, kept by the
   * store itself (SQLite: the ids stay on disk, a summary in memory; see
   * src/store/stored-ids.ts), built from the rows when called: call it once
   * they are loaded. Absent where the replica keeps the set in memory.
   */
  syncIds?(): SyncIds
  /** Every plan id that has at least one event, sorted ascending. */
  plans(): string[]
  /** How many events each plan has (plans with none are absent). */
  planCounts(): Map<string, number>
  /**
   * Takes an expired plan out of the store in one transaction (a kill leaves
   * all of it or none): its rows leave `events`, their ids stay behind as
   * tombstones (so sync does not fetch them again from a peer whose clock has
   * not reached the expiry yet), the plan is listed as expired at `nowMs`,
   * and its record goes. Returns the ids removed.
   */
  expirePlan(plan: string, nowMs: number): string[]
  /** Plans listed as expired (whose tombstones are still kept), sorted ascending. */
  expiredPlans(): string[]
  /** Whether an id is a tombstone of an expired plan. */
  isTombstone(id: string): boolean
  /** Forgets expired plans listed before `beforeMs`, and their tombstones; returns how many plans. */
  purgeExpired(beforeMs: number): number
  /**
   * Keeps a plan's record (src/core/fold.ts PlanRecord, as opaque JSON) with
   * the number of events it was made from, so a restart can know the plan
   * without folding it while the store still holds exactly that many.
   */
  putRecord(plan: string, events: number, json: string): void
  /** A plan's record as `putRecord` kept it, or undefined. */
  record(plan: string): string | undefined
  /**
   * Every record whose plan still holds exactly the events it was made from
   * (one that does not is left out: its plan folds instead), one at a time.
   */
  currentRecords(): Iterable<{ readonly plan: string; readonly json: string }>
  /**
   * Marks an imported plan as kept here (never expired again, never offered
   * to peers) and takes it off the expired list. `putMany` its rows in the
   * same call, so an import lands whole or not at all. Returns rows newly stored.
   */
  importPlan(plan: string, rows: readonly EventRow[], nowMs: number): number
  /** Plans imported and kept here, sorted ascending. */
  keptPlans(): string[]
  /** Closes the database. Idempotent; any other call afterwards throws. */
  close(): void
}
