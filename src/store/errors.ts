/**
 * Errors the durable store raises. One class per condition, each with a stable
 * `name` that callers and tests match on, and a message that tells the user
 * what to do about it.
 */

/**
 * The events database cannot be opened or used: not a SQLite file, written by
 * a newer plan-swarm, or unreadable. Never raised for a damaged *row*: those
 * are reported and skipped by `load`.
 */
export class EventStoreFileError extends Error {
  override readonly name = 'EventStoreFileError'
  readonly path: string

  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(`event store ${path} ${problem}`, options)
    this.path = path
  }
}

/**
 * A row handed to `put`/`putMany` that the store would later report as
 * damaged (id not 64 lowercase hex, empty or oversized bytes...). Raised
 * before anything is written, so the store only ever holds rows it can load.
 */
export class InvalidEventRowError extends Error {
  override readonly name = 'InvalidEventRowError'

  constructor(problem: string) {
    super(`cannot store event: ${problem}; this is a bug in the caller, which must store only decoded, verified events`)
  }
}

/**
 * `<data dir>/identity.key` exists but does not hold a usable Ed25519 key. The
 * store never replaces an existing identity on its own: the peer id is what
 * the swarm knows this node (and a goal's author) by.
 */
export class IdentityFileError extends Error {
  override readonly name = 'IdentityFileError'
  readonly path: string

  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(
      `identity file ${path} ${problem}; restore it from a backup, or delete it to start this node with a new peer id`,
      options
    )
    this.path = path
  }
}

/** Another live process holds the data dir's lock. */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError'
  readonly dir: string
  /** The holder's pid as it wrote it, if it could be read. */
  readonly pid: number | undefined

  constructor(dir: string, pid: number | undefined) {
    const who = pid === undefined ? 'another plan-swarm process' : `another plan-swarm process (pid ${pid})`
    super(`data dir ${dir} is in use by ${who}; stop it or pass --data-dir <another dir>`)
    this.dir = dir
    this.pid = pid
  }
}

/**
 * The data dir's lock file exists but SQLite cannot use it (not a database,
 * no permission). It is only ever a lock, so deleting it is safe once no
 * process uses the dir.
 */
export class DataDirLockFileError extends Error {
  override readonly name = 'DataDirLockFileError'
  readonly path: string

  constructor(path: string, cause: unknown) {
    super(
      `cannot lock ${path} (${(cause as Error).message}); make sure no plan-swarm process uses ` +
        `this data dir, then delete that file and retry`,
      { cause }
    )
    this.path = path
  }
}

/** Every candidate default data dir `<base>/<role>-<n>` is taken. */
export class NoFreeDataDirError extends Error {
  override readonly name = 'NoFreeDataDirError'

  constructor(base: string, role: string, tried: number) {
    super(
      `all ${tried} default data dirs ${base}/${role}-1..${tried} are in use; stop some plan-swarm processes or pass --data-dir <dir>`
    )
  }
}
