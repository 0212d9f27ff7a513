/**
 * Archives of expired plans: `<data dir>/archive/<plan>.jsonl`, one JSON
 * value per line, so a damaged file is refused at the line where it goes
 * wrong. The first line is the header (what the plan was, and how many
 * events follow); every other line is one event as its signed wire bytes
 * in base64. Like the store, this module is ignorant of the event format:
 * `import` decodes and verifies every event as sync does.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync
} from 'node:fs'
import { join } from 'node:path'
import type { StoredEvent } from '../ports/event-store.js'

export const ARCHIVE_DIR = 'archive'
export const ARCHIVE_FORMAT = 'plan-swarm-archive'
export const ARCHIVE_VERSION = 1
const HEX_ID = /^[0-9a-f]{64}$/
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

export interface ArchiveHeader {
  readonly format: typeof ARCHIVE_FORMAT
  readonly version: typeof ARCHIVE_VERSION
  readonly swarm: string
  readonly plan: string
  readonly goal: string
  readonly status: string
  readonly treeHash: string
  readonly lastStampMs: number
  readonly retainDays: number | null
  readonly expiredMs: number
  /** How many event lines follow: a shorter file was cut off. */
  readonly events: number
}

/** An archive that cannot be read back whole: where, and why. */
export class ArchiveError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string
  ) {
    super(`${file}: line ${line}: ${reason}; nothing was imported`)
    this.name = 'ArchiveError'
  }
}

/** The archive's path for a plan. */
export function archivePath(dataDir: string, plan: string): string {
  return join(dataDir, ARCHIVE_DIR, `${plan}.jsonl`)
}

/**
 * Write a plan's archive and make it durable before returning (written to a
 * temporary name, synced, renamed, the directory synced): the caller removes
 * the plan from the store only after this returns.
 */
export function writeArchive(dataDir: string, header: ArchiveHeader, rows: readonly StoredEvent[]): string {
  const dir = join(dataDir, ARCHIVE_DIR)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const path = archivePath(dataDir, header.plan)
  const tmp = `${path}.tmp`
  const lines = [JSON.stringify(header)]
  for (const r of rows) lines.push(JSON.stringify({ id: r.id, bytes: Buffer.from(r.bytes).toString('base64') }))
  const fd = openSync(tmp, 'w', 0o600)
  try {
    writeSync(fd, `${lines.join('\n')}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  const d = openSync(dir, 'r')
  try {
    fsyncSync(d)
  } finally {
    closeSync(d)
  }
  return path
}

/**
 * Read an archive back: its header and every event row, or an ArchiveError
 * naming the first line that is wrong (not JSON, not an event row, a row
 * count that does not match the header's, a truncated last line).
 */
export function readArchive(file: string): { header: ArchiveHeader; rows: Array<{ id: string; bytes: Uint8Array }> } {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ArchiveError(file, 0, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  else if (lines.length > 0)
    throw new ArchiveError(file, lines.length, 'the last line is cut off (no newline): the file is truncated')
  const header = parseLine(file, 1, lines[0]) as Partial<ArchiveHeader> | undefined
  if (header?.format !== ARCHIVE_FORMAT) throw new ArchiveError(file, 1, `not a ${ARCHIVE_FORMAT} header`)
  if (header.version !== ARCHIVE_VERSION)
    throw new ArchiveError(
      file,
      1,
      `archive version ${String(header.version)}; this build reads version ${ARCHIVE_VERSION}`
    )
  if (typeof header.plan !== 'string' || !HEX_ID.test(header.plan))
    throw new ArchiveError(file, 1, 'the header names no plan id')
  if (typeof header.swarm !== 'string') throw new ArchiveError(file, 1, 'the header names no swarm')
  if (!Number.isSafeInteger(header.events) || (header.events as number) < 1)
    throw new ArchiveError(file, 1, 'the header gives no event count')
  const rows: Array<{ id: string; bytes: Uint8Array }> = []
  for (let i = 1; i < lines.length; i++) {
    const row = parseLine(file, i + 1, lines[i]) as { id?: unknown; bytes?: unknown } | undefined
    if (typeof row?.id !== 'string' || !HEX_ID.test(row.id))
      throw new ArchiveError(file, i + 1, 'expected an event row with an id of 64 lowercase hex digits')
    if (typeof row.bytes !== 'string' || !BASE64.test(row.bytes))
      throw new ArchiveError(file, i + 1, 'expected the event bytes in base64')
    rows.push({ id: row.id, bytes: new Uint8Array(Buffer.from(row.bytes, 'base64')) })
  }
  if (rows.length !== header.events)
    throw new ArchiveError(
      file,
      lines.length,
      `${rows.length} event lines, but the header says ${header.events}: the file is truncated or padded`
    )
  return { header: header as ArchiveHeader, rows }
}

function parseLine(file: string, line: number, text: string | undefined): unknown {
  if (text === undefined || text === '') throw new ArchiveError(file, line, 'empty line')
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new ArchiveError(file, line, `not JSON (${(err as Error).message})`)
  }
}

/** Delete archives written more than `olderThanMs` ago (by file time); returns how many. */
export function pruneArchives(dataDir: string, olderThanMs: number, nowMs: number): number {
  const dir = join(dataDir, ARCHIVE_DIR)
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return 0
  }
  let n = 0
  for (const name of names) {
    if (!name.endsWith('.jsonl')) continue
    const path = join(dir, name)
    try {
      if (nowMs - statSync(path).mtimeMs > olderThanMs) {
        rmSync(path)
        n++
      }
    } catch {
      // Gone already, or not ours to delete: left alone.
    }
  }
  return n
}
