/**
 * The durable event log: every event a node holds, as the exact bytes it
 * received, in `<data dir>/events.sqlite`.
 *
 * The store is deliberately ignorant of the event format. It keeps opaque
 * bytes under their id and plan, and the caller decodes and verifies them on
 * the way back in, exactly as it does for gossip and sync. Since the plan is a
 * fold over the *set* of events, the store needs no order, no updates and no
 * deletes: insert-if-absent is the whole write API, which is what makes
 * replays from gossip and sync harmless.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { logger } from '@libp2p/logger'
import Database from 'better-sqlite3'
import { EventStoreFileError, InvalidEventRowError } from './errors.js'
import { idBytesOf } from '../wire/id-bytes.js'
import type { EventStore, EventRow, StoredEvent, DamagedRow, LoadCounts } from '../ports/event-store.js'
import type { SyncIds } from '../core/id-set.js'
import { StoredIds } from './stored-ids.js'
import { configure, migrate } from './sqlite-schema.js'
import { inputProblem, rowProblem, validSql } from './row-validity.js'

const log = logger('plan-swarm:store')

/** The file name of the events database inside a data dir. */
export const EVENTS_FILE = 'events.sqlite'

/** Rows `load` and `loadPlan` read per query: bounds memory, and frees the connection between pages. */
const PAGE_ROWS = 512

export type { EventStore, EventRow, StoredEvent, DamagedRow, LoadCounts } from '../ports/event-store.js'

interface RawRow {
  rowid: number
  id: unknown
  plan: unknown
  bytes: unknown
}

/**
 * Opens (creating if needed) the event store in `dir`, or a throwaway one in
 * memory for tests and the simulator.
 * @throws EventStoreFileError if the file is not a plan-swarm event database,
 *   is from a newer schema, or cannot be opened.
 */
export function openEventStore(opts: { dir: string } | { memory: true }): EventStore {
  let path: string
  if ('dir' in opts) {
    try {
      mkdirSync(opts.dir, { recursive: true, mode: 0o700 })
    } catch (err) {
      throw new EventStoreFileError(
        join(opts.dir, EVENTS_FILE),
        `cannot be created: ${(err as Error).message}; check the data dir's permissions or pass --data-dir <another dir>`,
        { cause: err }
      )
    }
    path = join(opts.dir, EVENTS_FILE)
  } else {
    path = ':memory:'
  }

  let db: Database.Database
  try {
    db = new Database(path)
  } catch (err) {
    throw new EventStoreFileError(
      path,
      `cannot be opened: ${(err as Error).message}; check its permissions or pass --data-dir <another dir>`,
      { cause: err }
    )
  }
  try {
    configure(db, path)
    migrate(db, path)
    return new SqliteEventStore(db, path)
  } catch (err) {
    db.close()
    if (err instanceof EventStoreFileError) throw err
    throw new EventStoreFileError(
      path,
      `is not a usable plan-swarm event database (${(err as Error).message}); move it aside (or ` +
        `restore a backup) and restart, or pass --data-dir <another dir>`,
      { cause: err }
    )
  }
}

class SqliteEventStore implements EventStore {
  readonly path: string
  private readonly db: Database.Database
  private readonly insertStmt: Database.Statement<[string, string, Uint8Array, number]>
  /** Replaces a damaged row that has the id of an event being stored. */
  private readonly repairStmt: Database.Statement<[string, Uint8Array, number, string]>
  private readonly hasStmt: Database.Statement<[string]>
  private readonly getStmt: Database.Statement<[string]>
  private readonly countStmt: Database.Statement<[]>
  private readonly countPlanStmt: Database.Statement<[string]>
  private readonly pageStmt: Database.Statement<[number, number], RawRow>
  private readonly planPageStmt: Database.Statement<[string, number, number], RawRow>
  private readonly idsStmt: Database.Statement<[]>
  private readonly plansStmt: Database.Statement<[]>
  private readonly moveAsideTx: (rowid: number, problem: string) => void
  private readonly expireTx: (plan: string, nowMs: number) => string[]
  private readonly purgeTx: (beforeMs: number) => number
  private readonly importTx: (plan: string, rows: readonly EventRow[], nowMs: number) => number
  private readonly tombstoneStmt: Database.Statement<[string]>
  private readonly putRecordStmt: Database.Statement<[string, number, string]>
  private readonly recordStmt: Database.Statement<[string], string>
  private readonly putManyTx: (rows: Iterable<EventRow>) => number
  /** The sync id set this store keeps, once `syncIds` made it: told of every row written or deleted. */
  private held: StoredIds | undefined
  /** Ids of new rows in the write under way, for `held` once it is committed. */
  private readonly fresh: string[] = []
  private closed = false

  constructor(db: Database.Database, path: string) {
    this.db = db
    this.path = path
    // Insert if absent; if the id is present but its row is damaged (which
    // only another tool or disk trouble can cause), the new row replaces it.
    this.insertStmt = db.prepare(
      'INSERT INTO events (id, plan, bytes, received_ms) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING'
    )
    this.repairStmt = db.prepare(
      `UPDATE events SET plan = ?, bytes = ?, received_ms = ? WHERE id = ? AND NOT ${validSql('events')}`
    )
    // One-row lookups can afford to check the row; whole-table queries below
    // cannot (a predicate makes them scan every row: 10-50x slower), and rely
    // on `load` having moved damaged rows aside.
    this.hasStmt = db.prepare(`SELECT 1 FROM events e WHERE e.id = ? AND ${validSql('e')}`).pluck()
    this.getStmt = db.prepare(`SELECT e.bytes FROM events e WHERE e.id = ? AND ${validSql('e')}`).pluck()
    this.countStmt = db.prepare('SELECT count(*) FROM events').pluck()
    this.countPlanStmt = db.prepare('SELECT count(*) FROM events WHERE plan = ?').pluck()
    this.pageStmt = db.prepare<[number, number], RawRow>(
      'SELECT rowid AS rowid, id, plan, bytes FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?'
    )
    this.planPageStmt = db.prepare<[string, number, number], RawRow>(
      'SELECT rowid AS rowid, id, plan, bytes FROM events WHERE plan = ? AND rowid > ? ORDER BY rowid LIMIT ?'
    )
    this.idsStmt = db.prepare('SELECT id FROM events ORDER BY id').pluck()
    this.plansStmt = db.prepare('SELECT DISTINCT plan FROM events ORDER BY plan').pluck()
    const copyAside = db.prepare<[string, number, number]>(
      'INSERT INTO damaged_events (rowid_was, id, plan, bytes, received_ms, problem, moved_ms) ' +
        'SELECT rowid, id, plan, bytes, received_ms, ?, ? FROM events WHERE rowid = ?'
    )
    const deleteRow = db.prepare<[number]>('DELETE FROM events WHERE rowid = ?')
    this.moveAsideTx = db.transaction((rowid: number, problem: string) => {
      copyAside.run(problem, Date.now(), rowid)
      deleteRow.run(rowid)
    })
    const planIds = db.prepare<[string]>('SELECT id FROM events WHERE plan = ? ORDER BY id').pluck()
    const addTombstones = db.prepare<[string]>(
      'INSERT OR IGNORE INTO tombstones (id, plan) SELECT id, plan FROM events WHERE plan = ?'
    )
    const listExpired = db.prepare<[string, number]>(
      'INSERT INTO expired_plans (plan, expired_ms) VALUES (?, ?) ON CONFLICT (plan) DO NOTHING'
    )
    const deleteEvents = db.prepare<[string]>('DELETE FROM events WHERE plan = ?')
    const deleteRecord = db.prepare<[string]>('DELETE FROM plan_records WHERE plan = ?')
    this.expireTx = db.transaction((plan: string, nowMs: number): string[] => {
      const ids = planIds.all(plan) as string[]
      addTombstones.run(plan)
      listExpired.run(plan, nowMs)
      deleteEvents.run(plan)
      deleteRecord.run(plan)
      return ids
    })
    const oldPlans = db.prepare<[number]>('SELECT plan FROM expired_plans WHERE expired_ms < ?').pluck()
    const unlist = db.prepare<[string]>('DELETE FROM expired_plans WHERE plan = ?')
    const dropTombstones = db.prepare<[string]>('DELETE FROM tombstones WHERE plan = ?')
    this.purgeTx = db.transaction((beforeMs: number): number => {
      const plans = oldPlans.all(beforeMs) as string[]
      for (const p of plans) {
        unlist.run(p)
        dropTombstones.run(p)
      }
      return plans.length
    })
    const keep = db.prepare<[string, number]>(
      'INSERT INTO kept_plans (plan, imported_ms) VALUES (?, ?) ON CONFLICT (plan) DO NOTHING'
    )
    this.importTx = db.transaction((plan: string, rows: readonly EventRow[], nowMs: number): number => {
      let added = 0
      for (const row of rows) if (this.insert(row)) added++
      keep.run(plan, nowMs)
      unlist.run(plan)
      dropTombstones.run(plan)
      return added
    })
    this.tombstoneStmt = db.prepare<[string]>('SELECT 1 FROM tombstones WHERE id = ?').pluck()
    this.putRecordStmt = db.prepare<[string, number, string]>(
      'INSERT INTO plan_records (plan, events, record) VALUES (?, ?, ?) ' +
        'ON CONFLICT (plan) DO UPDATE SET events = excluded.events, record = excluded.record'
    )
    this.recordStmt = db.prepare<[string], string>('SELECT record FROM plan_records WHERE plan = ?').pluck()
    this.putManyTx = db.transaction((rows: Iterable<EventRow>): number => {
      let added = 0
      for (const row of rows) {
        if (this.insert(row)) added++
      }
      return added
    })
  }

  put(row: EventRow): boolean {
    const added = this.insert(row)
    this.landed()
    return added
  }

  putMany(rows: Iterable<EventRow>): number {
    try {
      const added = this.putManyTx(rows)
      this.landed()
      return added
    } finally {
      this.fresh.length = 0
    }
  }

  private insert(row: EventRow): boolean {
    const problem = inputProblem(row)
    if (problem !== undefined) throw new InvalidEventRowError(problem)
    if (this.insertStmt.run(row.id, row.plan, row.bytes, row.receivedMs).changes === 1) {
      if (this.held !== undefined) this.fresh.push(row.id)
      return true
    }
    // A repaired row's id was counted by the sync id set already: only new rows are news to it.
    return this.repairStmt.run(row.plan, row.bytes, row.receivedMs, row.id).changes === 1
  }

  /** Tells the sync id set of the new rows written since the last call (their transaction committed). */
  private landed(): void {
    if (this.fresh.length === 0) return
    this.held?.landed(this.fresh)
    this.fresh.length = 0
  }

  has(id: string): boolean {
    return this.hasStmt.get(id) !== undefined
  }

  get(id: string): Uint8Array | undefined {
    return this.getStmt.get(id) as Uint8Array | undefined
  }

  count(): number {
    return this.countStmt.get() as number
  }

  countByPlan(plan: string): number {
    return this.countPlanStmt.get(plan) as number
  }

  load(onRow: (row: StoredEvent) => void, onDamaged: (info: DamagedRow) => void): LoadCounts {
    return this.pages(after => this.pageStmt.all(after, PAGE_ROWS), onRow, onDamaged)
  }

  loadPlan(plan: string, onRow: (row: StoredEvent) => void, onDamaged?: (info: DamagedRow) => void): LoadCounts {
    return this.pages(after => this.planPageStmt.all(plan, after, PAGE_ROWS), onRow, onDamaged)
  }

  /**
   * Keyset pagination over rowid. Each page is fully read before any callback
   * runs, so callbacks may use the store (a live `iterate()` would hold the
   * connection and make any write from a callback throw).
   */
  private pages(
    page: (afterRowid: number) => RawRow[],
    onRow: (row: StoredEvent) => void,
    onDamaged: ((info: DamagedRow) => void) | undefined
  ): LoadCounts {
    let loaded = 0
    let damaged = 0
    let after = -Infinity
    for (;;) {
      const rows = page(after)
      for (const r of rows) {
        after = r.rowid
        const problem = rowProblem(r.id, r.plan, r.bytes)
        if (problem === undefined) {
          loaded++
          onRow({ id: r.id as string, plan: r.plan as string, bytes: r.bytes as Uint8Array })
        } else {
          damaged++
          log.error('%s: moving damaged row %d (id %o) to damaged_events: %s', this.path, r.rowid, r.id, problem)
          if (this.moveAside(r.rowid, problem)) this.held?.deleted([r.id])
          onDamaged?.({ rowid: r.rowid, id: r.id, problem })
        }
      }
      if (rows.length < PAGE_ROWS) return { loaded, damaged }
    }
  }

  /** Best effort: a store that cannot write (read-only file, full disk) still loads. */
  private moveAside(rowid: number, problem: string): boolean {
    try {
      this.moveAsideTx(rowid, problem)
      return true
    } catch (err) {
      log.error('%s: could not move damaged row %d aside: %s', this.path, rowid, (err as Error).message)
      return false
    }
  }

  ids(): string[] {
    return this.idsStmt.all() as string[]
  }

  idsBytes(): Uint8Array {
    // SQLite decodes the hex: one blob instead of a million strings (or one 64 MB string) to parse in JavaScript.
    const raw: unknown = this.db
      .prepare("SELECT unhex(group_concat(id, '')) FROM (SELECT id FROM events ORDER BY id)")
      .pluck()
      .get()
    if (raw instanceof Uint8Array && raw.length === 32 * this.count()) return raw
    // No ids, or a damaged row (an id that is not 64 hex digits, or not text): the well-formed ones.
    return idBytesOf(this.ids())
  }

  syncIds(): SyncIds {
    this.held = new StoredIds(this.db)
    // Loading and the summary read the whole store through the page cache; little of it is wanted again soon.
    this.db.pragma('shrink_memory')
    return this.held
  }

  plans(): string[] {
    return this.plansStmt.all() as string[]
  }

  planCounts(): Map<string, number> {
    const rows = this.db.prepare('SELECT plan, count(*) AS n FROM events GROUP BY plan').raw().all() as Array<
      [string, number]
    >
    return new Map(rows)
  }

  expirePlan(plan: string, nowMs: number): string[] {
    const ids = this.expireTx(plan, nowMs)
    this.held?.deleted(ids)
    return ids
  }

  expiredPlans(): string[] {
    return this.db.prepare('SELECT plan FROM expired_plans ORDER BY plan').pluck().all() as string[]
  }

  isTombstone(id: string): boolean {
    return this.tombstoneStmt.get(id) !== undefined
  }

  purgeExpired(beforeMs: number): number {
    return this.purgeTx(beforeMs)
  }

  putRecord(plan: string, events: number, json: string): void {
    this.putRecordStmt.run(plan, events, json)
  }

  record(plan: string): string | undefined {
    return this.recordStmt.get(plan)
  }

  currentRecords(): Iterable<{ plan: string; json: string }> {
    // One at a time (at 10k plans the whole table is 8 MB of JSON), matched by SQLite: no map of 10k counts in memory.
    return this.db
      .prepare(
        'SELECT plan, record AS json FROM plan_records r ' +
          'WHERE r.events = (SELECT count(*) FROM events e WHERE e.plan = r.plan)'
      )
      .iterate() as Iterable<{ plan: string; json: string }>
  }

  importPlan(plan: string, rows: readonly EventRow[], nowMs: number): number {
    try {
      return this.importTx(plan, rows, nowMs)
    } finally {
      // A kept plan's rows stay out of the sync id set.
      this.fresh.length = 0
    }
  }

  keptPlans(): string[] {
    return this.db.prepare('SELECT plan FROM kept_plans ORDER BY plan').pluck().all() as string[]
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.db.close()
  }
}
