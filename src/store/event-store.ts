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

const log = logger('plan-swarm:store')

/** The file name of the events database inside a data dir. */
export const EVENTS_FILE = 'events.sqlite'

/** The schema this code reads and writes, kept in the `meta` table. */
export const EVENT_STORE_SCHEMA_VERSION = 2

/**
 * SQLite's own page cache, in KB (SQLite's default; better-sqlite3 sets 16 MB). The OS caches the file
 * too, and a start reads the whole store once (plan counts, the sync id summary), which would otherwise
 * leave the cache full and a node with a long history 14 MB bigger for nothing.
 */
const CACHE_KB = 2_000

/** Rows `load` and `loadPlan` read per query: bounds memory, and frees the connection between pages. */
const PAGE_ROWS = 512

/** How long a writer waits for another connection's lock before failing (ms). */
const BUSY_TIMEOUT_MS = 5_000

/**
 * WAL pages between automatic checkpoints (SQLite's default is 1000). Each
 * checkpoint costs two fsyncs, which dominate single-row puts; 4000 pages
 * (16 MiB) halves the put cost while keeping the WAL small.
 */
const WAL_AUTOCHECKPOINT_PAGES = 4_000
/** The WAL file is truncated back to at most this after a checkpoint. */
const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024

export type { EventStore, EventRow, StoredEvent, DamagedRow, LoadCounts } from '../ports/event-store.js'

const HEX_ID = /^[0-9a-f]{64}$/

/**
 * The SQL twin of `rowProblem`: true for a valid row. The two must agree, or
 * `has` would disagree with what `load` delivers (a test pins this).
 */
function validSql(t: string): string {
  return (
    `(typeof(${t}.id) = 'text' AND length(${t}.id) = 64 AND NOT ${t}.id GLOB '*[^0-9a-f]*' ` +
    `AND typeof(${t}.plan) = 'text' AND typeof(${t}.bytes) = 'blob' AND length(${t}.bytes) > 0)`
  )
}

/** Why a row read from disk is damaged, or undefined if it is valid. */
function rowProblem(id: unknown, plan: unknown, bytes: unknown): string | undefined {
  if (typeof id !== 'string') return `id is ${describe(id)}, not text`
  if (!HEX_ID.test(id)) return 'id is not 64 lowercase hex characters'
  if (typeof plan !== 'string') return `plan is ${describe(plan)}, not text`
  if (!(bytes instanceof Uint8Array)) return `bytes is ${describe(bytes)}, not a blob`
  if (bytes.byteLength === 0) return 'bytes is an empty blob'
  return undefined
}

function describe(value: unknown): string {
  if (value === null) return 'NULL'
  if (value instanceof Uint8Array) return 'a blob'
  return `a ${typeof value}`
}

/** Why a row handed to `put` is invalid, or undefined. */
function inputProblem(row: EventRow): string | undefined {
  if (typeof row.id !== 'string' || !HEX_ID.test(row.id))
    return `id ${JSON.stringify(row.id)} is not 64 lowercase hex characters`
  if (typeof row.plan !== 'string') return `plan of ${row.id} is not a string`
  if (!(row.bytes instanceof Uint8Array) || row.bytes.byteLength === 0)
    return `bytes of ${row.id} must be a non-empty Uint8Array`
  if (!Number.isSafeInteger(row.receivedMs)) return `receivedMs of ${row.id} is not an integer`
  return undefined
}

const SCHEMA = `
CREATE TABLE meta (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);
CREATE TABLE events (
  id TEXT PRIMARY KEY NOT NULL
    CHECK (typeof(id) = 'text' AND length(id) = 64 AND NOT id GLOB '*[^0-9a-f]*'),
  plan TEXT NOT NULL CHECK (typeof(plan) = 'text'),
  bytes BLOB NOT NULL CHECK (typeof(bytes) = 'blob' AND length(bytes) > 0),
  received_ms INTEGER NOT NULL
);
CREATE INDEX events_plan ON events (plan);
`

/**
 * Schema 2: plan records for fast starts, expired plans with their
 * tombstones, and imported plans kept here. Schema 1 stores gain these empty
 * tables and lose nothing.
 */
const SCHEMA_2 = `
CREATE TABLE plan_records (
  plan TEXT PRIMARY KEY NOT NULL,
  events INTEGER NOT NULL,
  record TEXT NOT NULL
);
CREATE TABLE expired_plans (
  plan TEXT PRIMARY KEY NOT NULL,
  expired_ms INTEGER NOT NULL
);
CREATE TABLE tombstones (
  id TEXT PRIMARY KEY NOT NULL,
  plan TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX tombstones_plan ON tombstones (plan);
CREATE TABLE kept_plans (
  plan TEXT PRIMARY KEY NOT NULL,
  imported_ms INTEGER NOT NULL
);
`

/** Where `load` moves damaged rows; untyped, so any value fits. Recreated if missing: it holds nothing the plan needs. */
const DAMAGED_SCHEMA = `
CREATE TABLE IF NOT EXISTS damaged_events (
  rowid_was INTEGER,
  id,
  plan,
  bytes,
  received_ms,
  problem TEXT NOT NULL,
  moved_ms INTEGER NOT NULL
);
`

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

function configure(db: Database.Database, path: string): void {
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  if (path === ':memory:') return
  const mode = db.pragma('journal_mode = WAL', { simple: true })
  if (mode !== 'wal') log.error('%s: journal_mode is %s, not wal; writes stay safe but slower', path, mode)
  // In WAL mode NORMAL syncs only at checkpoints: a killed process loses
  // nothing (the WAL is in the OS page cache), a power cut may lose the last
  // transactions, and the database stays consistent either way.
  db.pragma('synchronous = NORMAL')
  db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
  db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`)
  db.pragma(`cache_size = -${CACHE_KB}`)
}

function migrate(db: Database.Database, path: string): void {
  db.transaction(() => {
    const hasMeta =
      db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'meta'").pluck().get() !== undefined
    if (!hasMeta) {
      const objects = db
        .prepare("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")
        .pluck()
        .get() as number
      if (objects > 0) {
        throw new EventStoreFileError(
          path,
          'is a SQLite database but not a plan-swarm event store; move it aside or pass --data-dir <another dir>'
        )
      }
      db.exec(SCHEMA)
      db.exec(SCHEMA_2)
      db.exec(DAMAGED_SCHEMA)
      db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?)").run(String(EVENT_STORE_SCHEMA_VERSION))
      log('%s: created schema version %d', path, EVENT_STORE_SCHEMA_VERSION)
      return
    }
    const raw = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()
    const version = typeof raw === 'string' && /^[0-9]+$/.test(raw) ? Number(raw) : undefined
    if (version === undefined) {
      throw new EventStoreFileError(
        path,
        `has no readable schema version (found ${JSON.stringify(raw ?? null)}); restore a backup or move it aside and let the node resync`
      )
    }
    if (version > EVENT_STORE_SCHEMA_VERSION) {
      throw new EventStoreFileError(
        path,
        `was written by a newer plan-swarm (schema ${version}; this build ` +
          `reads ${EVENT_STORE_SCHEMA_VERSION}); upgrade plan-swarm or pass --data-dir <another dir>`
      )
    }
    if (version === 1) {
      db.exec(SCHEMA_2)
      db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(EVENT_STORE_SCHEMA_VERSION))
      log('%s: migrated schema 1 to %d', path, EVENT_STORE_SCHEMA_VERSION)
    } else if (version < EVENT_STORE_SCHEMA_VERSION) {
      throw new EventStoreFileError(
        path,
        `has schema ${version}, which this build cannot migrate; move it aside and let the node resync`
      )
    }
    db.exec(DAMAGED_SCHEMA)
  }).immediate()
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
