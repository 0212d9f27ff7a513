/**
 * The ordered id set that range-based set reconciliation works over.
 *
 * Ids are event ids (64-char lowercase hex SHA-256), so their string order is
 * their byte order, and their bits are already uniform: a range's fingerprint
 * can be a plain lane-wise sum of ids, kept as prefix sums so that any
 * range's count and fingerprint cost two binary searches.
 *
 * Memory: a node keeps every id it holds here, a million and more for a long
 * history, so ids are kept as their 32 bytes (eight 32-bit words) in one
 * typed array rather than as strings (the set of strings, a hash set and an
 * array beside prefix sums at every id, measured 141 bytes an id at a
 * million; see bench/id-set/index.ts), and prefix sums are kept every
 * {@link BLOCK} ids rather than at every id (half a byte an id instead of
 * 32). A range's sums are then two block sums plus at most two partial blocks
 * of {@link BLOCK} / 2 ids summed from the words.
 */
import { sha256Prefix } from './hash.js'
import type { EventId } from './events.js'
import { LANES, compareWords, hexOfWords, parseBound, parseId, parseIdAt, sortWords } from './id-words.js'

/** Bytes of a range fingerprint on the wire (128 bits: an accidental match is out of reach). */
export const FINGERPRINT_BYTES = 16

/**
 * Bounds of id ranges. A bound is a canonical lowercase hex prefix (an even
 * number of hex digits, 1 to 32 bytes, last byte not `00`) standing for that
 * prefix padded with zero bytes; `''` is the lowest bound and {@link END_BOUND}
 * lies above every id. For canonical bounds, plain JavaScript string order is
 * the order of the padded values, and `id >= bound` as strings exactly when
 * the id is at or above the bound. (Snapshots compare a bound with their ids
 * as padded words, which gives the same order: see parseBound.)
 */
export type Bound = string

/** The bound above every id (`~` sorts after every hex digit). */
export const END_BOUND: Bound = '~'

/** The bound below every id. */
export const START_BOUND: Bound = ''

/** Whether a string is a well-formed event id (64 lowercase hex digits). */
export function isEventIdHex(id: string): id is EventId {
  if (id.length !== 64) return false
  for (let i = 0; i < 64; i++) {
    const c = id.charCodeAt(i)
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false
  }
  return true
}

/**
 * What a reconcile session reads: a fixed view of a set of ids, by position
 * in id order. {@link IdSnapshot} is one; a store that keeps the ids on disk
 * serves another (src/store/stored-ids.ts). A view may find, while it is
 * read, that the set under it changed in a way it cannot answer for (rows
 * removed from disk): it then throws {@link IdRangesChanged}, and the
 * session ends with that as its error (the next one takes a fresh view).
 */
export interface IdRanges {
  readonly size: number
  /** Index of the first id at or above the bound (`size` for {@link END_BOUND}). */
  lowerBound(bound: Bound): number
  /** Where `id` is among positions [from, to): its position if there, else -(p + 1) for the first position above it. */
  search(id: string, from?: number, to?: number): number
  /** The id at position `i` (0 <= i < size). */
  idAt(i: number): string
  /** The ids at positions [start, end), clamped to the view. */
  slice(start?: number, end?: number): string[]
  /** Fingerprint of the ids at positions [i0, i1) (see {@link fingerprintOfSums}). */
  fingerprintAt(i0: number, i1: number): Uint8Array
}

/** Thrown by an {@link IdRanges} whose set changed under it in a way it cannot answer for. */
export class IdRangesChanged extends Error {
  constructor(what: string) {
    super(`the id set changed under this session (${what}); the next session starts afresh`)
    this.name = 'IdRangesChanged'
  }
}

/**
 * The set sync reconciles, as a replica keeps it: every id in memory
 * ({@link IdSet}) or on disk with a summary in memory (src/store/stored-ids.ts).
 * Both answer every question alike, fingerprints included.
 */
export interface SyncIds {
  readonly size: number
  /** Changes with every add and removal that changed the set (see {@link IdSet.version}). */
  readonly version: number
  has(id: string): boolean
  /** Adds an id; `'invalid'` (and nothing stored) if it is not 64 lowercase hex digits. */
  add(id: string): IdSetAddOutcome
  /** Removes these ids (those held; others are ignored) and returns how many it removed. */
  removeMany(ids: Iterable<string>): number
  /** A view of every id held now, unchanged by later adds. */
  snapshot(): IdRanges
  /** Number of ids in [lo, hi) (`null` for hi: no upper bound). */
  count(lo: Bound, hi: Bound | null): number
  /** Fingerprint of the ids in [lo, hi) (`null` for hi: no upper bound). */
  fingerprint(lo: Bound, hi: Bound | null): Uint8Array
}

/** Scratch for the bytes a fingerprint hashes: the eight sums and the count. */
const fingerprintScratch = new Uint8Array(4 * LANES + 4)
const fingerprintView = new DataView(fingerprintScratch.buffer)

/**
 * A range's fingerprint from the lane-wise sums of its ids' eight 32-bit
 * words (any integers; taken mod 2^32) and its count: SHA-256 of the sums
 * and the count, little-endian, cut to {@link FINGERPRINT_BYTES}. Every
 * {@link IdRanges} must fingerprint with this, or peers never agree.
 */
export function fingerprintOfSums(sums: ArrayLike<number>, count: number): Uint8Array {
  for (let l = 0; l < LANES; l++) fingerprintView.setUint32(4 * l, (sums[l] as number) >>> 0, true)
  fingerprintView.setUint32(4 * LANES, count, true)
  return sha256Prefix(fingerprintScratch, fingerprintScratch.length, FINGERPRINT_BYTES)
}

/** Number of a view's ids in [lo, hi). */
export function countIn(view: IdRanges, lo: Bound, hi: Bound): number {
  return Math.max(0, view.lowerBound(hi) - view.lowerBound(lo))
}

/** Fingerprint of a view's ids in [lo, hi). */
export function fingerprintIn(view: IdRanges, lo: Bound, hi: Bound): Uint8Array {
  const i0 = view.lowerBound(lo)
  return view.fingerprintAt(i0, Math.max(i0, view.lowerBound(hi)))
}

/** Ids per block of prefix sums: a partial block costs at most BLOCK / 2 ids' additions, a block sum 32 bytes. */
const BLOCK = 64
const BLOCK_SHIFT = 6

/** Outcome of {@link IdSet.add}: malformed ids are refused as a value, never thrown. */
export type IdSetAddOutcome = 'added' | 'present' | 'invalid'

/** Outcome of {@link IdSet.addMany}: how many of the ids given were new, already held, or malformed (and skipped). */
export interface IdSetAddManyOutcome {
  readonly added: number
  readonly present: number
  readonly invalid: number
}

/** Scratch for the words of a bound or id being looked up (IdSet and IdSnapshot share it; nothing re-enters). */
const keyScratch = new Uint32Array(LANES)

/**
 * Ids added one by one since the last merge: their words, in arrival order,
 * and an open-addressing table of their positions. Ids are uniform bits, so
 * a word of the id is its hash; 32 to 64 bytes of words (the capacity
 * doubles) and 8 to 16 of table an id, and no string kept. (Someone grinding ids to collide in the table
 * pays 2^bits signed events per collision for a table of 2^bits slots, and
 * the part is merged away once it grows: no use as a lever.)
 */
class PendingIds {
  words = new Uint32Array(0)
  count = 0
  /** Lane-wise sums of the ids here (mod 2^32): with the sorted view's, the whole set's fingerprint without a merge. */
  readonly sums = new Float64Array(LANES)
  /** 1 + position of an id, 0 for an empty slot; a power of two, at least twice the capacity of `words`. */
  private table = new Int32Array(0)

  /** Position of the id whose words are in keyScratch, or -1. */
  find(): number {
    const table = this.table
    if (table.length === 0) return -1
    const mask = table.length - 1
    for (let h = (keyScratch[LANES - 1] as number) & mask; ; h = (h + 1) & mask) {
      const e = table[h] as number
      if (e === 0) return -1
      if (compareWords(this.words, (e - 1) * LANES, keyScratch, 0) === 0) return e - 1
    }
  }

  /** Adds the id whose words are in keyScratch (not already here). */
  add(): void {
    if (this.count * LANES === this.words.length) this.grow()
    this.words.set(keyScratch, this.count * LANES)
    for (let l = 0; l < LANES; l++) this.sums[l] = ((this.sums[l] as number) + (keyScratch[l] as number)) % 2 ** 32
    this.count++
    this.insert(this.count - 1)
  }

  /** The ids' words (exactly `count` of them), leaving this part empty. */
  take(): Uint32Array {
    const words = this.words.length === this.count * LANES ? this.words : this.words.slice(0, this.count * LANES)
    this.words = new Uint32Array(0)
    this.table = new Int32Array(0)
    this.count = 0
    this.sums.fill(0)
    return words
  }

  private grow(): void {
    const capacity = Math.max(256, 2 * this.count)
    const words = new Uint32Array(capacity * LANES)
    words.set(this.words)
    this.words = words
    this.table = new Int32Array(2 * capacity)
    for (let j = 0; j < this.count; j++) this.insert(j)
  }

  private insert(j: number): void {
    const mask = this.table.length - 1
    let h = (this.words[j * LANES + LANES - 1] as number) & mask
    while (this.table[h] !== 0) h = (h + 1) & mask
    this.table[h] = j + 1
  }
}

/** Single adds waiting to be merged into the sorted view are merged once they are more than this... */
const PENDING_MIN = 1 << 16
/** ...and more than the sorted view's size >> PENDING_SHIFT (1/16 of it): O(1) amortised, a bounded share of memory. */
const PENDING_SHIFT = 4

/**
 * A mutable set of event ids that reconciliation sessions read through
 * immutable {@link IdSnapshot}s.
 *
 * Why this shape: the runtime adds ids one by one as events arrive (100k
 * single adds must stay cheap), a node starting on a long history loads a
 * million at once, expiry takes a plan's few hundred ids out now and then,
 * and reconciliation wants a sorted view with prefix sums. So `add` is a
 * hash-table insert into a pending part, merged into a new sorted view the
 * next time a snapshot is asked for (or once the pending part outgrows
 * 1/16 of the view, which keeps `add` O(1) amortised and the pending part a
 * bounded share of memory); `addMany` (or `addConcatenated`, from one string
 * of ids back to back) parses, sorts (nothing to do for sorted input) and
 * merges in one pass; `removeMany` rebuilds the view without the
 * ids, in O(n). Each of them makes a new view and leaves the old one as it was.
 *
 * Snapshots stay valid (and unchanged) for as long as someone holds them,
 * whatever happens to the set afterwards: after a removal, an older snapshot
 * still lists the removed ids, and a reader (a sync session) must treat such
 * an id as one the node may no longer have.
 */
export class IdSet implements SyncIds {
  private current: IdSnapshot = IdSnapshot.empty()
  /** Ids added one by one since the last merge: none of them in `current`. */
  private readonly pending = new PendingIds()
  private changes = 0

  /** A set holding these ids (see {@link addMany}: sorted input, as `ORDER BY id` gives it, is the fast path). */
  static from(ids: Iterable<string>): IdSet {
    const set = new IdSet()
    set.addMany(ids)
    return set
  }

  /** Adds an id; `'invalid'` (and nothing stored) if it is not 64 lowercase hex digits. */
  add(id: string): IdSetAddOutcome {
    if (!parseId(id, keyScratch, 0)) return 'invalid'
    if (this.current.positionOfKey() >= 0 || this.pending.find() >= 0) return 'present'
    this.pending.add()
    this.changes++
    if (this.pending.count > Math.max(PENDING_MIN, this.current.size >>> PENDING_SHIFT)) this.merge()
    return 'added'
  }

  /**
   * Adds many ids at once, in any order, duplicates and malformed ones
   * counted and skipped: O(k) to parse plus O(k log k) to sort (skipped
   * when they come sorted) plus one merge, O(n + k log n). For a node
   * loading its history: a million sorted ids take one pass over their
   * characters and no other copy.
   */
  addMany(ids: Iterable<string>): IdSetAddManyOutcome {
    let capacity = Array.isArray(ids) ? Math.max(1, ids.length) : 1024
    let words = new Uint32Array(capacity * LANES)
    let k = 0
    let invalid = 0
    for (const id of ids) {
      if (k === capacity) {
        capacity *= 2
        const grown = new Uint32Array(capacity * LANES)
        grown.set(words)
        words = grown
      }
      if (parseId(id, words, k * LANES)) k++
      else invalid++
    }
    return this.addParsed(words, k, invalid)
  }

  /**
   * Adds the ids written back to back in `hex`, 64 digits each with nothing
   * between them, as `SELECT group_concat(id, '') FROM (SELECT id FROM events
   * ORDER BY id)` returns a store's ids: one string for SQLite to build
   * instead of one per id, the cheapest way found to load a long history
   * (bench/id-set/index.ts). Otherwise as {@link addMany}; a malformed 64-digit
   * stretch, or a shorter tail, counts as one invalid id.
   */
  addConcatenated(hex: string): IdSetAddManyOutcome {
    const count = Math.floor(hex.length / 64)
    const words = new Uint32Array(count * LANES)
    let k = 0
    let invalid = hex.length % 64 === 0 ? 0 : 1
    for (let j = 0; j < count; j++) {
      if (parseIdAt(hex, 64 * j, words, k * LANES)) k++
      else invalid++
    }
    return this.addParsed(words, k, invalid)
  }

  /**
   * Adds ids given as their 32 bytes each, back to back, as a store gives
   * them (`idsBytes`); otherwise as {@link addMany}. A shorter tail counts as
   * one invalid id.
   */
  addBytes(bytes: Uint8Array): IdSetAddManyOutcome {
    const count = Math.floor(bytes.length / 32)
    const words = new Uint32Array(count * LANES)
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
    for (let i = 0; i < words.length; i++) words[i] = view.getUint32(4 * i)
    return this.addParsed(words, count, bytes.length % 32 === 0 ? 0 : 1)
  }

  /**
   * Removes these ids (those held; others are ignored) and returns how many
   * it removed. O(n) for the new sorted view when any of them is held, so
   * meant for rare batches (an expired plan's ids), not one id at a time.
   */
  removeMany(ids: Iterable<string>): number {
    if (this.pending.count > 0) this.merge()
    const positions: number[] = []
    for (const id of ids) {
      const at = this.current.indexOf(id)
      if (at >= 0) positions.push(at)
    }
    if (positions.length === 0) return 0
    positions.sort((a, b) => a - b)
    let unique = 0
    for (let j = 0; j < positions.length; j++) {
      if (unique === 0 || positions[unique - 1] !== positions[j]) positions[unique++] = positions[j] as number
    }
    positions.length = unique
    this.current = this.current.without(positions)
    this.changes += unique
    return unique
  }

  has(id: string): boolean {
    if (!parseId(id, keyScratch, 0)) return false
    return this.current.positionOfKey() >= 0 || this.pending.find() >= 0
  }

  get size(): number {
    return this.current.size + this.pending.count
  }

  /**
   * Counts every add and removal that changed the set: equal versions mean
   * the same set (a session can tell whether the set moved since its
   * snapshot without comparing ids).
   */
  get version(): number {
    return this.changes
  }

  /** The sorted view of every id held now; cached until the next change. */
  snapshot(): IdSnapshot {
    if (this.pending.count > 0) this.merge()
    return this.current
  }

  /** Number of ids in [lo, hi) (see {@link Bound}; `null` for hi means no upper bound). */
  count(lo: Bound, hi: Bound | null): number {
    return this.snapshot().count(lo, hi ?? END_BOUND)
  }

  /**
   * Fingerprint of the ids in [lo, hi) (see {@link IdSnapshot.fingerprint}).
   * The whole set's comes without merging the ids added one by one (a check
   * that compares whole sets often, as the simulator's, would merge after
   * every few adds).
   */
  fingerprint(lo: Bound, hi: Bound | null): Uint8Array {
    if (lo === START_BOUND && (hi === null || hi === END_BOUND) && this.pending.count > 0) {
      const sums = this.current.sumsAt(0, this.current.size)
      for (let l = 0; l < LANES; l++) sums[l] = (sums[l] as number) + (this.pending.sums[l] as number)
      return fingerprintOfSums(sums, this.size)
    }
    return this.snapshot().fingerprint(lo, hi ?? END_BOUND)
  }

  /** The rest of a bulk add: `k` parsed ids in `words` (none pending), sorted, their repeats dropped, merged. */
  /**
   * Adds the first `k` parsed ids of `words`. The pending ids go into
   * `current` first (one merge, of few ids), so the batch is checked against
   * one sorted view instead of looking each id up in the pending table, and
   * a sorted batch (a store's ids) stays sorted.
   */
  private addParsed(words: Uint32Array, k: number, invalid: number): IdSetAddManyOutcome {
    if (this.pending.count > 0) this.merge()
    const sorted = sortWords(words, k)
    // Repeats among the given ids are now neighbours.
    let unique = 0
    for (let j = 0; j < k; j++) {
      if (unique > 0 && compareWords(sorted, (unique - 1) * LANES, sorted, j * LANES) === 0) continue
      if (unique !== j) sorted.copyWithin(unique * LANES, j * LANES, j * LANES + LANES)
      unique++
    }
    const merged = this.current.withAdded(sorted, unique)
    this.current = merged.snapshot
    this.changes += merged.added
    return { added: merged.added, present: k - merged.added, invalid }
  }

  /** Merges the pending ids into a new sorted view. */
  private merge(): void {
    const k = this.pending.count
    this.current = this.current.withAdded(sortWords(this.pending.take(), k), k).snapshot
  }
}

/** Scratch for lane sums (doubles: sums and differences of a few block sums and words stay exact). */
const laneScratch = new Float64Array(LANES)

/**
 * An immutable sorted view of an {@link IdSet} at one moment.
 *
 * Invariant: the ids `words[i*8..i*8+8)` are strictly ascending, and
 * `blocks[b*8 + l]` is the sum mod 2^32 of lane `l` over the ids
 * `[0, b * BLOCK)`, for every b with `b * BLOCK <= size`; `heads[b]` is
 * the first word of the id at `b * BLOCK`, for every b with
 * `b * BLOCK < size`. Nothing writes to these arrays once the snapshot exists.
 */
export class IdSnapshot implements IdRanges {
  readonly size: number
  private readonly words: Uint32Array
  private readonly blocks: Uint32Array
  /**
   * The first word of each block's first id: an index of 4 bytes every
   * {@link BLOCK} ids (62 KB at a million, so it stays in cache) that narrows
   * a lookup to a block or two before it touches the ids, where a plain
   * binary search would miss the cache at nearly every step.
   */
  private readonly heads: Uint32Array

  private constructor(words: Uint32Array, size: number, blocks: Uint32Array, heads: Uint32Array) {
    this.words = words
    this.size = size
    this.blocks = blocks
    this.heads = heads
  }

  static empty(): IdSnapshot {
    return new IdSnapshot(new Uint32Array(0), 0, new Uint32Array(LANES), new Uint32Array(0))
  }

  /**
   * A snapshot of `size` sorted ids in `words` (which it takes over), with
   * its block sums and heads. Blocks that end at or below `unchangedBelow`
   * are the same as in `from` and are copied; the rest come from the words.
   */
  private static build(words: Uint32Array, size: number, from: IdSnapshot, unchangedBelow: number): IdSnapshot {
    const count = (size >>> BLOCK_SHIFT) + 1
    const blocks = new Uint32Array(count * LANES)
    const keep = Math.min(unchangedBelow >>> BLOCK_SHIFT, from.size >>> BLOCK_SHIFT, count - 1)
    blocks.set(from.blocks.subarray(0, (keep + 1) * LANES))
    for (let b = keep; b < count - 1; b++) {
      const p = b * LANES
      let s0 = blocks[p] as number
      let s1 = blocks[p + 1] as number
      let s2 = blocks[p + 2] as number
      let s3 = blocks[p + 3] as number
      let s4 = blocks[p + 4] as number
      let s5 = blocks[p + 5] as number
      let s6 = blocks[p + 6] as number
      let s7 = blocks[p + 7] as number
      const end = (b + 1) * BLOCK * LANES
      for (let q = b * BLOCK * LANES; q < end; q += LANES) {
        s0 += words[q] as number
        s1 += words[q + 1] as number
        s2 += words[q + 2] as number
        s3 += words[q + 3] as number
        s4 += words[q + 4] as number
        s5 += words[q + 5] as number
        s6 += words[q + 6] as number
        s7 += words[q + 7] as number
      }
      // Stores into a Uint32Array take the sums mod 2^32.
      blocks[p + 8] = s0
      blocks[p + 9] = s1
      blocks[p + 10] = s2
      blocks[p + 11] = s3
      blocks[p + 12] = s4
      blocks[p + 13] = s5
      blocks[p + 14] = s6
      blocks[p + 15] = s7
    }
    const heads = new Uint32Array((size + BLOCK - 1) >>> BLOCK_SHIFT)
    const same = Math.min(keep, heads.length, from.heads.length)
    heads.set(from.heads.subarray(0, same))
    for (let b = same; b < heads.length; b++) heads[b] = words[b * BLOCK * LANES] as number
    return new IdSnapshot(words, size, blocks, heads)
  }

  /**
   * @internal For {@link IdSet} only: a snapshot that also holds the `k`
   * strictly ascending ids in `added` (which it may take over), those
   * already here skipped, and how many were new. Each new id is found by a
   * binary search from the last one's place, and the runs of old ids between
   * are block copies: O(k log n) comparisons and one O(n) copy.
   */
  withAdded(added: Uint32Array, k: number): { readonly snapshot: IdSnapshot; readonly added: number } {
    if (k === 0) return { snapshot: this, added: 0 }
    const n = this.size
    const old = this.words
    if (n === 0) {
      const words = added.length === k * LANES ? added : added.slice(0, k * LANES)
      return { snapshot: IdSnapshot.build(words, k, this, 0), added: k }
    }
    const out = new Uint32Array((n + k) * LANES)
    let a = 0
    let w = 0
    let first = -1
    let fresh = 0
    for (let j = 0; j < k; j++) {
      const q = j * LANES
      let lo = a
      let hi = n
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (compareWords(old, mid * LANES, added, q) < 0) lo = mid + 1
        else hi = mid
      }
      if (lo > a) {
        out.set(old.subarray(a * LANES, lo * LANES), w * LANES)
        w += lo - a
        a = lo
      }
      if (lo < n && compareWords(old, lo * LANES, added, q) === 0) continue
      if (first < 0) first = w
      for (let l = 0; l < LANES; l++) out[w * LANES + l] = added[q + l] as number
      w++
      fresh++
    }
    if (fresh === 0) return { snapshot: this, added: 0 }
    out.set(old.subarray(a * LANES, n * LANES), w * LANES)
    w += n - a
    const words = w === n + k ? out : out.slice(0, w * LANES)
    return { snapshot: IdSnapshot.build(words, w, this, first), added: fresh }
  }

  /** @internal For {@link IdSet} only: a snapshot without the ids at these positions (ascending, no repeats). */
  without(positions: readonly number[]): IdSnapshot {
    if (positions.length === 0) return this
    const n = this.size
    const out = new Uint32Array((n - positions.length) * LANES)
    let a = 0
    let w = 0
    for (const at of positions) {
      out.set(this.words.subarray(a * LANES, at * LANES), w * LANES)
      w += at - a
      a = at + 1
    }
    out.set(this.words.subarray(a * LANES, n * LANES), w * LANES)
    return IdSnapshot.build(out, n - positions.length, this, positions[0] as number)
  }

  /** The id at position `i` (0 <= i < size) as 64 lowercase hex digits, built on each call. */
  idAt(i: number): string {
    if (!(i >= 0 && i < this.size)) throw new RangeError(`id position ${i} outside [0, ${this.size})`)
    return hexOfWords(this.words, i * LANES)
  }

  /** The ids at positions [start, end) (clamped to the snapshot), as strings. */
  slice(start = 0, end = this.size): string[] {
    const from = Math.max(0, Math.min(start, this.size))
    const to = Math.max(from, Math.min(end, this.size))
    const out = new Array<string>(to - from)
    for (let i = from; i < to; i++) out[i - from] = hexOfWords(this.words, i * LANES)
    return out
  }

  /** Position of `id`, or -1 if it is not here (or is not a well-formed id). */
  indexOf(id: string): number {
    return parseId(id, keyScratch, 0) ? this.positionOfKey() : -1
  }

  /** @internal Position of the id whose words are in keyScratch, or -1. */
  positionOfKey(): number {
    const at = this.searchKey(0, this.size)
    return at < this.size && compareWords(this.words, at * LANES, keyScratch, 0) === 0 ? at : -1
  }

  /**
   * Where `id` is among positions [from, to): its position if it is there,
   * else -(p + 1) for the position p of the first id above it. Ids that are
   * not 64 lowercase hex digits are placed by string order.
   */
  search(id: string, from = 0, to = this.size): number {
    let at: number
    if (parseId(id, keyScratch, 0)) {
      at = this.searchKey(from, to)
      if (at < to && compareWords(this.words, at * LANES, keyScratch, 0) === 0) return at
    } else {
      at = this.searchString(id, from, to)
    }
    return -(at + 1)
  }

  /** Index of the first id at or above the bound (`size` for {@link END_BOUND}). */
  lowerBound(bound: Bound): number {
    if (bound === START_BOUND) return 0
    if (bound === END_BOUND) return this.size
    return parseBound(bound, keyScratch) ? this.searchKey(0, this.size) : this.searchString(bound, 0, this.size)
  }

  /** Number of ids in [lo, hi). */
  count(lo: Bound, hi: Bound): number {
    return countIn(this, lo, hi)
  }

  /** Fingerprint of the ids in [lo, hi). */
  fingerprint(lo: Bound, hi: Bound): Uint8Array {
    return fingerprintIn(this, lo, hi)
  }

  /**
   * Fingerprint of the ids at positions [i0, i1): SHA-256 of the count and
   * the lane-wise sums (mod 2^32) of the ids' eight 32-bit words, cut to
   * {@link FINGERPRINT_BYTES}. Sums make it a function of the set alone (not
   * of how it was split or built) and cheap from block sums; hashing with the
   * count keeps sets of different sizes from matching by a sum coincidence.
   * Not proof against someone who mints event ids to cancel out (as in
   * negentropy): such a match only delays catch-up until the sets, and so the
   * ranges, change.
   */
  fingerprintAt(i0: number, i1: number): Uint8Array {
    return fingerprintOfSums(this.sumsAt(i0, i1), i1 - i0)
  }

  /** Lane-wise sums of the ids at positions [i0, i1), not reduced mod 2^32, in a scratch array the next call overwrites. */
  sumsAt(i0: number, i1: number): Float64Array {
    const sums = laneScratch
    sums.fill(0)
    if (i1 - i0 <= BLOCK) {
      this.addWords(sums, i0, i1, 1)
    } else {
      this.addPrefix(sums, i1, 1)
      this.addPrefix(sums, i0, -1)
    }
    return sums
  }

  /** Adds `sign` times the lane sums of ids [0, i) to `sums`: the nearer block sum, and the ids between it and i. */
  private addPrefix(sums: Float64Array, i: number, sign: number): void {
    const b = i >>> BLOCK_SHIFT
    const up = (b + 1) << BLOCK_SHIFT
    if (i - (b << BLOCK_SHIFT) <= BLOCK / 2 || up > this.size) {
      for (let l = 0; l < LANES; l++) sums[l] = (sums[l] as number) + sign * (this.blocks[b * LANES + l] as number)
      this.addWords(sums, b << BLOCK_SHIFT, i, sign)
    } else {
      for (let l = 0; l < LANES; l++)
        sums[l] = (sums[l] as number) + sign * (this.blocks[(b + 1) * LANES + l] as number)
      this.addWords(sums, i, up, -sign)
    }
  }

  /** Adds `sign` times the lane sums of ids [i0, i1) to `sums`. */
  private addWords(sums: Float64Array, i0: number, i1: number, sign: number): void {
    const words = this.words
    for (let q = i0 * LANES; q < i1 * LANES; q += LANES) {
      for (let l = 0; l < LANES; l++) sums[l] = (sums[l] as number) + sign * (words[q + l] as number)
    }
  }

  /**
   * First position in [from, to) whose id is at or above the words in
   * keyScratch (`to` if none). The ids are sorted, so that is the first such
   * position over the whole snapshot, clamped to [from, to); the heads place
   * it after the last block that starts below the key's first word and no
   * later than the first block that starts above it.
   */
  private searchKey(from: number, to: number): number {
    const heads = this.heads
    const first = keyScratch[0] as number
    let lo = 0
    let hi = heads.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((heads[mid] as number) < first) lo = mid + 1
      else hi = mid
    }
    const start = Math.max(0, lo - 1) << BLOCK_SHIFT
    hi = heads.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((heads[mid] as number) <= first) lo = mid + 1
      else hi = mid
    }
    const words = this.words
    lo = start
    hi = Math.min(this.size, hi << BLOCK_SHIFT)
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareWords(words, mid * LANES, keyScratch, 0) < 0) lo = mid + 1
      else hi = mid
    }
    return Math.min(to, Math.max(from, lo))
  }

  /** First position in [from, to) whose id is at or above `s` in string order (for strings that are not hex). */
  private searchString(s: string, from: number, to: number): number {
    let lo = from
    let hi = to
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (hexOfWords(this.words, mid * LANES) < s) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/**
 * The shortest canonical bound b with `below < b <= above`, for ids
 * `below < above`: `above` cut just after the first byte where they differ.
 * That byte of `above` is non-zero (it exceeds `below`'s), so the cut is
 * canonical. Between neighbours of n uniform ids this is about log256(n) + 1
 * bytes, which is what keeps range bounds cheap on the wire.
 */
export function separatingBound(below: string, above: string): Bound {
  let i = 0
  while (i < above.length && below.charCodeAt(i) === above.charCodeAt(i)) i++
  return above.slice(0, (i | 1) + 1)
}
