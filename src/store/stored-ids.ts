/**
 * The sync id set of a SQLite store, kept where the ids already are: on
 * disk, in the `events` table's primary key. In memory there is only a
 * summary of 65,536 buckets (the ids that begin with each 16-bit prefix):
 * their counts and the lane-wise sums their fingerprints are made of, 2.3 MB
 * whatever the history, where the ids themselves cost 32 bytes each (32 MB
 * at a million, with as much again in garbage while they load); and a 2 MB
 * bitmap of the ids' first 24 bits, which answers most `has` without SQLite.
 *
 * A view for a sync session keeps the summary as it was (the set copies it
 * on its next change) and reads the ids of a bucket from SQLite only when
 * it needs them (the edges of a range, or a range of few ids): at a million
 * ids about 15 to a bucket, one indexed range query.
 * Positions, fingerprints and listings answer exactly as the in-memory
 * {@link IdSet} would for the same ids, so peers of either kind agree.
 *
 * The set is the stored rows outside kept plans (imported archives, which
 * are never offered to peers), plus `recent`: ids added whose rows still
 * wait in the replica's write queue, minus `excluded`: ids taken out while
 * their rows are still on disk (a plan that expired while the node was down,
 * until a retention pass deletes it). The store tells the set of every row
 * it writes or deletes once the transaction is committed (`landed`,
 * `deleted`), so the summary counts each id once whichever comes first, the
 * replica's add or the row, and a recent id leaves memory as its row lands.
 * Kept plans only change while the node is down (`import` takes the data
 * dir's lock), so they are read once.
 *
 * A view stays exact while rows are only added (it reads rows no later than
 * the last one when it was taken, and the recent ids it copied). A row
 * deleted under it (an expiry during a session) makes a bucket's rows
 * disagree with the copied count; the view then throws
 * {@link IdRangesChanged} and that session ends, which costs one session.
 */
import type Database from 'better-sqlite3'
import {
  END_BOUND,
  IdRangesChanged,
  START_BOUND,
  countIn,
  fingerprintIn,
  fingerprintOfSums,
  isEventIdHex
} from '../core/id-set.js'
import { LANES, parseId, parseIdAt } from '../core/id-words.js'
import type { Bound, IdRanges, IdSetAddOutcome, SyncIds } from '../core/id-set.js'

/** Buckets of the summary: ids by their first 16 bits (4 hex digits). */
const BUCKET_BITS = 16
const BUCKETS = 1 << BUCKET_BITS
/**
 * Ids read per query while the summary is built: SQLite joins a page's ids
 * into one string of 64 KB, small enough to die young in V8's heap (pages
 * as blobs measured 30 MB more RSS at a million ids, left in malloc's
 * arenas; a string per id, twice the time).
 */
const SCAN_ROWS = 1_024
/** The words of a page of ids being counted. */
const scanScratch = new Uint32Array(SCAN_ROWS * LANES)

/** Buckets' ids a view keeps read (a session walks ranges in order, so few are read twice). */
const VIEW_CACHE = 64

/** A bucket's lower bound as a string: its 4 hex digits. */
function bucketLow(b: number): string {
  return b.toString(16).padStart(4, '0')
}

/** A string above every id of bucket `b` and below every id of the next (`g` sorts after every hex digit). */
function bucketHigh(b: number): string {
  return b + 1 === BUCKETS ? 'g' : bucketLow(b + 1)
}

/**
 * Ids' first 24 bits that any id counted in the set ever had, as a bitmap
 * (2 MB): an id whose bit is clear is not in the set, without asking SQLite.
 * A sync session and an ingest ask `has` several times for each event they
 * meet, nearly always for events the node lacks; at a million ids about 6 %
 * of the bits are set. Bits are not cleared when ids leave (an expired
 * plan's): a stale bit costs one query, never a wrong answer.
 */
const SEEN_BITS = 24

/** The words of one id being counted or summed. */
const idScratch = new Uint32Array(LANES)

/** The queries the set and its views need; prepared once. */
interface Queries {
  readonly has: Database.Statement<[string]>
  readonly bucket: Database.Statement<[string, string, number]>
  readonly scan: Database.Statement<[string]>
  readonly scanText: Database.Statement<[string]>
  readonly maxRowid: Database.Statement<[]>
}

function prepare(db: Database.Database): Queries {
  const kept = db.prepare('SELECT EXISTS (SELECT 1 FROM kept_plans)').pluck().get() === 1
  const notKept = kept ? ' AND plan NOT IN (SELECT plan FROM kept_plans)' : ''
  const page = `SELECT id FROM events WHERE id > ?${notKept} ORDER BY id LIMIT ${SCAN_ROWS}`
  return {
    has: db.prepare<[string]>(`SELECT 1 FROM events WHERE id = ?${notKept}`).pluck(),
    bucket: db
      .prepare<[string, string, number]>(
        `SELECT id FROM events WHERE id >= ? AND id < ? AND rowid <= ?${notKept} ORDER BY id`
      )
      .pluck(),
    scan: db.prepare<[string]>(`SELECT group_concat(id, ''), max(id), count(*) FROM (${page})`).raw(),
    scanText: db.prepare<[string]>(page).pluck(),
    maxRowid: db.prepare('SELECT coalesce(max(rowid), 0) FROM events').pluck()
  }
}

/** The sync id set of a SQLite store (see the file's comment). */
export class StoredIds implements SyncIds {
  private readonly q: Queries
  private counts = new Uint32Array(BUCKETS)
  private sums = new Uint32Array(BUCKETS * LANES)
  /** Whether a view reads `counts` and `sums`: the next change copies them first. */
  private shared = false
  private total = 0
  private changes = 0
  private readonly recent = new Set<string>()
  private readonly excluded = new Set<string>()
  /** See SEEN_BITS. */
  private readonly seen = new Uint8Array(1 << (SEEN_BITS - 3))
  private view: StoredView | undefined

  /** Builds the summary from every stored row: call once the rows are loaded (and damaged ones moved aside). */
  constructor(db: Database.Database) {
    this.q = prepare(db)
    this.scan()
  }

  get size(): number {
    return this.total
  }

  get version(): number {
    return this.changes
  }

  has(id: string): boolean {
    if (!isEventIdHex(id) || this.excluded.has(id)) return false
    if (this.recent.has(id)) return true
    const p = parseInt(id.slice(0, SEEN_BITS / 4), 16)
    return ((this.seen[p >>> 3] as number) & (1 << (p & 7))) !== 0 && this.q.has.get(id) !== undefined
  }

  add(id: string): IdSetAddOutcome {
    if (!isEventIdHex(id)) return 'invalid'
    if (this.has(id)) return 'present'
    // An id taken out while its row stayed on disk comes back by leaving `excluded`; any other waits for its row.
    if (!this.excluded.delete(id)) this.recent.add(id)
    this.tally(id, 1)
    return 'added'
  }

  /** @internal For the store: these rows were written (new ids, committed). */
  landed(ids: readonly string[]): void {
    for (const id of ids) {
      if (this.recent.delete(id)) continue
      if (isEventIdHex(id)) this.tally(id, 1)
    }
  }

  /** @internal For the store: these rows were deleted (committed). */
  deleted(ids: readonly unknown[]): void {
    for (const id of ids) {
      if (typeof id !== 'string' || this.excluded.delete(id)) continue
      if (isEventIdHex(id)) this.tally(id, -1)
    }
  }

  /**
   * Takes these ids out (those held; others are ignored) and returns how
   * many. An id whose row is on disk stays excluded until the row goes; one
   * whose row is still queued must not be written afterwards.
   */
  removeMany(ids: Iterable<string>): number {
    let removed = 0
    for (const id of ids) {
      if (!this.has(id)) continue
      this.tally(id, -1)
      removed++
      if (!this.recent.delete(id)) this.excluded.add(id)
    }
    return removed
  }

  snapshot(): IdRanges {
    if (this.view?.version !== this.changes) this.view = new StoredView(this)
    return this.view
  }

  count(lo: Bound, hi: Bound | null): number {
    return countIn(this.snapshot(), lo, hi ?? END_BOUND)
  }

  fingerprint(lo: Bound, hi: Bound | null): Uint8Array {
    return fingerprintIn(this.snapshot(), lo, hi ?? END_BOUND)
  }

  /** @internal For {@link StoredView}: what a view reads (the summary is copied on the set's next change, not now). */
  state(): {
    counts: Uint32Array
    sums: Uint32Array
    total: number
    version: number
    recent: readonly string[]
    excluded: ReadonlySet<string>
    maxRowid: number
    q: Queries
  } {
    this.shared = true
    return {
      counts: this.counts,
      sums: this.sums,
      total: this.total,
      version: this.changes,
      recent: [...this.recent].sort(),
      excluded: new Set(this.excluded),
      maxRowid: this.q.maxRowid.get() as number,
      q: this.q
    }
  }

  private tally(id: string, sign: number): void {
    if (this.shared) {
      this.counts = this.counts.slice()
      this.sums = this.sums.slice()
      this.shared = false
      this.view = undefined
    }
    parseId(id, idScratch, 0)
    this.tallyWords(idScratch, 0, sign)
    this.total += sign
    this.changes++
  }

  /** Adds `sign` times the id whose words are at `words[q..q + 8)` to its bucket's count and sums. */
  private tallyWords(words: Uint32Array, q: number, sign: number): void {
    const b = (words[q] as number) >>> (32 - BUCKET_BITS)
    this.counts[b] = (this.counts[b] as number) + sign
    if (sign > 0) {
      const p = (words[q] as number) >>> (32 - SEEN_BITS)
      this.seen[p >>> 3] = (this.seen[p >>> 3] as number) | (1 << (p & 7))
    }
    const at = b * LANES
    for (let l = 0; l < LANES; l++) this.sums[at + l] = (this.sums[at + l] as number) + sign * (words[q + l] as number)
  }

  /** The summary from the stored rows, a page of ids at a time. */
  private scan(): void {
    let after = ''
    for (;;) {
      const [hex, last, n] = this.q.scan.get(after) as [string | null, string | null, number]
      if (n === 0 || last === null) break
      if (hex === null || hex.length !== 64 * n || !this.countHex(hex)) {
        // A damaged row (an id that is not 64 hex digits): the page again, id by id, without it.
        for (const id of this.q.scanText.all(after) as unknown[])
          if (isEventIdHex(id as string)) this.tally(id as string, 1)
      }
      after = last
    }
    this.changes = 0
  }

  /** Counts the ids written back to back in `hex`; false (and nothing counted) if one is not an id. */
  private countHex(hex: string): boolean {
    const n = hex.length / 64
    const words = scanScratch
    for (let j = 0; j < n; j++) if (!parseIdAt(hex, 64 * j, words, j * LANES)) return false
    for (let q = 0; q < n * LANES; q += LANES) this.tallyWords(words, q, 1)
    this.total += n
    return true
  }
}

/** A fixed view of a {@link StoredIds} for one or more sessions (see the file's comment). */
class StoredView implements IdRanges {
  readonly size: number
  readonly version: number
  private readonly counts: Uint32Array
  private readonly sums: Uint32Array
  /** Position of each bucket's first id; `starts[BUCKETS]` is the size. */
  private readonly starts: Uint32Array
  /** Recent ids when the view was taken, sorted. */
  private readonly recent: readonly string[]
  private readonly excluded: ReadonlySet<string>
  private readonly maxRowid: number
  private readonly q: Queries
  private readonly cache = new Map<number, string[]>()

  constructor(set: StoredIds) {
    const s = set.state()
    this.counts = s.counts
    this.sums = s.sums
    this.size = s.total
    this.version = s.version
    this.recent = s.recent
    this.excluded = s.excluded
    this.maxRowid = s.maxRowid
    this.q = s.q
    this.starts = new Uint32Array(BUCKETS + 1)
    let at = 0
    for (let b = 0; b < BUCKETS; b++) {
      this.starts[b] = at
      at += s.counts[b] as number
    }
    this.starts[BUCKETS] = at
  }

  lowerBound(bound: Bound): number {
    if (bound === START_BOUND) return 0
    if (bound === END_BOUND) return this.size
    return this.rank(bound)
  }

  search(id: string, from = 0, to = this.size): number {
    const at = this.rank(id)
    if (at < from || at >= to) return -(Math.min(to, Math.max(from, at)) + 1)
    return this.idAt(at) === id ? at : -(at + 1)
  }

  idAt(i: number): string {
    if (!(i >= 0 && i < this.size)) throw new RangeError(`id position ${i} outside [0, ${this.size})`)
    const b = this.bucketAt(i)
    return this.bucketIds(b)[i - (this.starts[b] as number)] as string
  }

  slice(start = 0, end = this.size): string[] {
    const from = Math.max(0, Math.min(start, this.size))
    const to = Math.max(from, Math.min(end, this.size))
    const out: string[] = []
    for (let i = from; i < to;) {
      const b = this.bucketAt(i)
      const s = this.starts[b] as number
      const ids = this.bucketIds(b)
      const stop = Math.min(to, s + ids.length)
      for (; i < stop; i++) out.push(ids[i - s] as string)
    }
    return out
  }

  fingerprintAt(i0: number, i1: number): Uint8Array {
    const sums = new Float64Array(LANES)
    if (i1 <= i0) return fingerprintOfSums(sums, 0)
    const b0 = this.bucketAt(i0)
    const b1 = this.bucketAt(i1 - 1)
    if (b0 === b1) {
      this.addIds(sums, b0, i0, i1)
    } else {
      this.addIds(sums, b0, i0, this.starts[b0 + 1] as number)
      for (let b = b0 + 1; b < b1; b++) {
        if (this.counts[b] === 0) continue
        for (let l = 0; l < LANES; l++) sums[l] = (sums[l] as number) + (this.sums[b * LANES + l] as number)
      }
      this.addIds(sums, b1, this.starts[b1] as number, i1)
    }
    return fingerprintOfSums(sums, i1 - i0)
  }

  /** Adds the words of the ids at positions [i0, i1), all in bucket b, to `sums`. */
  private addIds(sums: Float64Array, b: number, i0: number, i1: number): void {
    const s = this.starts[b] as number
    if (i0 === s && i1 === (this.starts[b + 1] as number)) {
      for (let l = 0; l < LANES; l++) sums[l] = (sums[l] as number) + (this.sums[b * LANES + l] as number)
      return
    }
    const ids = this.bucketIds(b)
    for (let i = i0; i < i1; i++) {
      parseId(ids[i - s] as string, idScratch, 0)
      for (let l = 0; l < LANES; l++) sums[l] = (sums[l] as number) + (idScratch[l] as number)
    }
  }

  /**
   * How many ids are below `s` in string order (any string: bounds, ids,
   * or text that is neither). The ids of every bucket before the last one
   * whose lower bound is below `s` are below it, and those of every later
   * bucket are not, so only that bucket's ids are read.
   */
  private rank(s: string): number {
    let lo = -1
    let hi = BUCKETS - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1
      if (bucketLow(mid) < s) lo = mid
      else hi = mid - 1
    }
    return lo < 0 ? 0 : (this.starts[lo] as number) + below(this.bucketIds(lo), s)
  }

  /** The bucket holding position i (0 <= i < size): the last whose start is at or below it. */
  private bucketAt(i: number): number {
    const starts = this.starts
    let lo = 0
    let hi = BUCKETS
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1
      if ((starts[mid] as number) <= i) lo = mid
      else hi = mid - 1
    }
    return lo
  }

  /** The ids of bucket b in this view, sorted: its rows as of the view, less excluded ones, with the recent ids. */
  private bucketIds(b: number): string[] {
    if (this.counts[b] === 0) return []
    const cached = this.cache.get(b)
    if (cached !== undefined) return cached
    const lo = bucketLow(b)
    const hi = bucketHigh(b)
    const rows = (this.q.bucket.all(lo, hi, this.maxRowid) as unknown[]).filter(
      (id): id is string => isEventIdHex(id as string) && !this.excluded.has(id as string)
    )
    const extra = this.recent.slice(below(this.recent, lo), below(this.recent, hi))
    const ids = extra.length === 0 ? rows : mergeUnique(rows, extra)
    if (ids.length !== this.counts[b])
      throw new IdRangesChanged(`bucket ${lo} holds ${ids.length} ids, not ${String(this.counts[b])}`)
    if (this.cache.size >= VIEW_CACHE) this.cache.delete(this.cache.keys().next().value as number)
    this.cache.set(b, ids)
    return ids
  }
}

/** How many of the sorted `ids` are below `s` (string order). */
function below(ids: readonly string[], s: string): number {
  let lo = 0
  let hi = ids.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((ids[mid] as string) < s) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Two sorted lists of ids as one, each id once. */
function mergeUnique(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    const x = a[i]
    const y = b[j]
    if (y === undefined || (x !== undefined && x < y)) {
      out.push(x as string)
      i++
    } else if (x === undefined || y < x) {
      out.push(y)
      j++
    } else {
      out.push(x)
      i++
      j++
    }
  }
  return out
}
