/**
 * How `events.sqlite` is laid out and set up: the connection's pragmas
 * (WAL, sync level, cache), the tables of each schema version, and the
 * migration that brings an older file up to this build's schema in one
 * transaction. The CHECK constraints here are the SQL form of what
 * src/store/event-store.ts calls a valid row; the two must agree.
 */
import { logger } from '@libp2p/logger'
import type Database from 'better-sqlite3'
import { EventStoreFileError } from './errors.js'

const log = logger('plan-swarm:store')

/** The schema this code reads and writes, kept in the `meta` table. */
export const EVENT_STORE_SCHEMA_VERSION = 2

/**
 * SQLite's own page cache, in KB (SQLite's default; better-sqlite3 sets 16 MB). The OS caches the file
 * too, and a start reads the whole store once (plan counts, the sync id summary), which would otherwise
 * leave the cache full and a node with a long history 14 MB bigger for nothing.
 */
const CACHE_KB = 2_000

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

/** Sets the connection's pragmas: durability and cache for a file, only the lock wait for `:memory:`. */
export function configure(db: Database.Database, path: string): void {
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

/**
 * Creates the schema in an empty file, or migrates an older one, in one
 * immediate transaction.
 * @throws EventStoreFileError for a file that is not a plan-swarm event store, has no readable
 *   schema version, or was written by a newer or unmigratable schema.
 */
export function migrate(db: Database.Database, path: string): void {
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
