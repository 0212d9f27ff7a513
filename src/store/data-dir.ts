/**
 * Exclusive ownership of a data dir, so two processes never share (and
 * corrupt) one store or sign with one identity, and the choice of the default
 * data dir `~/.plan-swarm/<swarm>/<role>-<n>`.
 *
 * The lock is SQLite's own: `<dir>/LOCK.sqlite`, opened in exclusive locking
 * mode with a write transaction held open. SQLite takes POSIX advisory locks,
 * which the kernel drops when the process dies by any means (SIGKILL
 * included), so a crashed node never leaves a stale lock behind. POSIX locks
 * belong to the process, not the handle, so exclusion inside one process is
 * kept separately in `held`.
 */
import { mkdirSync, readFileSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { logger } from '@libp2p/logger'
import Database from 'better-sqlite3'
import { DataDirLockedError, DataDirLockFileError, NoFreeDataDirError } from './errors.js'

const log = logger('plan-swarm:store')

/** The lock file's name inside a data dir. */
export const LOCK_FILE = 'LOCK.sqlite'
/** The holder's pid, written for error messages only: the lock itself never reads it. */
export const PID_FILE = 'LOCK.pid'

/**
 * What the lock's connection sets before it takes the lock. Fail at once rather than wait: the holder may run for
 * days. No journal file to leave behind when we are killed mid-"transaction". The journal mode goes first: it reads
 * the file, and under exclusive locking mode that read's shared lock would be kept, so two processes starting
 * together each kept the other out of `<role>-1` and both moved on.
 */
export const LOCK_PRAGMAS = ['busy_timeout = 0', 'journal_mode = MEMORY', 'locking_mode = EXCLUSIVE'] as const

/** How many `<role>-<n>` dirs `acquireDefaultDataDir` tries before giving up. */
export const MAX_DEFAULT_DIRS = 1_000

/**
 * Real paths of the data dirs this process holds, each with the connection
 * that holds its lock: referenced here until release(), so a lock whose
 * handle the caller drops stays held until the process exits. (Otherwise the
 * garbage collector may close the connection, and with it the lock, while
 * the process still uses the dir: a test child that kept only the dir's
 * name lost its lock that way under load.)
 */
const held = new Map<string, Database.Database>()

/** A held data dir lock. */
export interface DataDirLock {
  /** The data dir as given. */
  readonly dir: string
  /** Frees the lock (idempotent). Process exit frees it too. */
  release(): void
}

/**
 * Creates `dir` (mode 0700) if needed and locks it for this process.
 * @throws DataDirLockedError if another process, or another holder in this
 *   one, has it.
 * @throws DataDirLockFileError if the lock file is unusable.
 */
export function lockDataDir(dir: string): DataDirLock {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const key = realpathSync(dir)
  if (held.has(key)) throw new DataDirLockedError(dir, process.pid)

  let db: Database.Database
  try {
    db = new Database(join(dir, LOCK_FILE))
  } catch (err) {
    throw new DataDirLockFileError(join(dir, LOCK_FILE), err)
  }
  try {
    for (const p of LOCK_PRAGMAS) db.pragma(p)
    db.exec('BEGIN EXCLUSIVE')
  } catch (err) {
    db.close()
    if ((err as { code?: string }).code === 'SQLITE_BUSY' || (err as { code?: string }).code === 'SQLITE_LOCKED') {
      throw new DataDirLockedError(dir, readPid(dir))
    }
    throw new DataDirLockFileError(join(dir, LOCK_FILE), err)
  }

  held.set(key, db)
  const pidFile = join(dir, PID_FILE)
  try {
    writeFileSync(pidFile, `${process.pid}\n`)
  } catch (err) {
    log.error('%s: cannot write %s (%s); the lock is held regardless', dir, PID_FILE, (err as Error).message)
  }
  log('locked data dir %s', dir)

  let released = false
  return {
    dir,
    release(): void {
      if (released) return
      released = true
      // Remove our pid while we still hold the lock, so we never delete the next holder's.
      try {
        unlinkSync(pidFile)
      } catch {
        // Already gone: nothing to clean.
      }
      db.close()
      held.delete(key)
      log('released data dir %s', dir)
    }
  }
}

function readPid(dir: string): number | undefined {
  try {
    const text = readFileSync(join(dir, PID_FILE), 'utf8').trim()
    return /^[0-9]+$/.test(text) ? Number(text) : undefined
  } catch {
    return undefined
  }
}

/**
 * Picks and locks the lowest-numbered free `<base>/<role>-<n>` (n = 1, 2...).
 * Two processes starting together get two dirs (the loser of a race simply
 * moves on to the next n), and a restarted process gets the lowest free one,
 * which is its own when it was the one that stopped.
 * @throws NoFreeDataDirError if all MAX_DEFAULT_DIRS are taken.
 */
export function acquireDefaultDataDir(base: string, role: string): { dir: string; lock: DataDirLock } {
  for (let n = 1; n <= MAX_DEFAULT_DIRS; n++) {
    const dir = join(base, `${role}-${n}`)
    try {
      return { dir, lock: lockDataDir(dir) }
    } catch (err) {
      if (err instanceof DataDirLockedError) continue
      throw err
    }
  }
  throw new NoFreeDataDirError(base, role, MAX_DEFAULT_DIRS)
}
