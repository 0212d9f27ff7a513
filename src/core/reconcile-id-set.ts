/**
 * The ordered id set that range-based set reconciliation works over.
 *
 * Ids are event ids (64-char lowercase hex SHA-256), so their string order is
 * their byte order, and their bits are already uniform: a range's fingerprint
 * can be a plain lane-wise sum of id prefixes, kept as prefix sums so that any
 * range's count and fingerprint cost two binary searches.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import type { EventId } from './events.js'

/** Bytes of a range fingerprint on the wire (128 bits: an accidental match is out of reach). */
export const FINGERPRINT_BYTES = 16

/**
 * Bounds of id ranges. A bound is a canonical lowercase hex prefix (an even
 * number of hex digits, 1 to 32 bytes, last byte not `00`) standing for that
 * prefix padded with zero bytes; `''` is the lowest bound and {@link END_BOUND}
 * lies above every id. For canonical bounds, plain JavaScript string order is
 * the order of the padded values, and `id >= bound` as strings exactly when
 * the id is at or above the bound: no bound ever needs padding or parsing.
 */
export type Bound = string

/** The bound above every id (`~` sorts after every hex digit). */
export const END_BOUND: Bound = '~'

/** The bound below every id. */
export const START_BOUND: Bound = ''

const ID_PATTERN = /^[0-9a-f]{64}$/

/** Whether a string is a well-formed event id (64 lowercase hex digits). */
export function isEventIdHex (id: string): id is EventId {
  return id.length === 64 && ID_PATTERN.test(id)
}

/** 32-bit lanes of each id that the fingerprint sums (the first 16 bytes). */
const LANES = 4

/** Outcome of {@link IdSet.add}: malformed ids are refused as a value, never thrown. */
export type IdSetAddOutcome = 'added' | 'present' | 'invalid'

/**
 * A mutable set of event ids that reconciliation sessions read through
 * immutable {@link IdSnapshot}s.
 *
 * Why this shape: the runtime adds ids one by one as events arrive (100k
 * single adds must stay cheap), while reconciliation wants a sorted array with
 * prefix sums. So `add` is O(1) (a hash-set insert and an append), and the
 * sorted view is rebuilt lazily, by merging the sorted new ids into the last
 * view, the next time a snapshot is asked for: O(k log k + n) for k new ids.
 *
 * Invariant: ids are only ever added, never removed, so a snapshot is always
 * a subset of the live set, and each snapshot stays valid (and unchanged) for
 * as long as someone holds it.
 */
export class IdSet {
  private readonly members = new Set<string>()
  private pending: string[] = []
  private current: IdSnapshot = IdSnapshot.empty()

  /** Adds an id; `'invalid'` (and nothing stored) if it is not 64 lowercase hex digits. */
  add (id: string): IdSetAddOutcome {
    if (this.members.has(id)) return 'present'
    if (!isEventIdHex(id)) return 'invalid'
    this.members.add(id)
    this.pending.push(id)
    return 'added'
  }

  has (id: string): boolean {
    return this.members.has(id)
  }

  get size (): number {
    return this.members.size
  }

  /** The sorted view of every id added so far; cached until the next add. */
  snapshot (): IdSnapshot {
    if (this.pending.length > 0) {
      const added = this.pending
      this.pending = []
      this.current = this.current.merge(added)
    }
    return this.current
  }

  /** Number of ids in [lo, hi) (see {@link Bound}; `null` for hi means no upper bound). */
  count (lo: Bound, hi: Bound | null): number {
    return this.snapshot().count(lo, hi ?? END_BOUND)
  }

  /** Fingerprint of the ids in [lo, hi) (see {@link IdSnapshot.fingerprint}). */
  fingerprint (lo: Bound, hi: Bound | null): Uint8Array {
    return this.snapshot().fingerprint(lo, hi ?? END_BOUND)
  }
}

/**
 * An immutable sorted view of an {@link IdSet} at one moment.
 *
 * Invariant: `ids` is strictly ascending, and `sums[i * LANES + l]` is the sum
 * mod 2^32 of lane `l` over `ids[0..i)`, so a range's lane sums are two
 * subtractions.
 */
export class IdSnapshot {
  /** The ids in ascending order. */
  readonly ids: readonly string[]
  private readonly sums: Uint32Array

  private constructor (ids: readonly string[], sums: Uint32Array) {
    this.ids = ids
    this.sums = sums
  }

  static empty (): IdSnapshot {
    return new IdSnapshot([], new Uint32Array(LANES))
  }

  get size (): number {
    return this.ids.length
  }

  /** A new snapshot holding these ids too; `added` must hold valid ids, none of them already here (it is sorted in place). */
  merge (added: string[]): IdSnapshot {
    added.sort()
    const old = this.ids
    const oldSums = this.sums
    const n = old.length + added.length
    const ids: string[] = new Array<string>(n)
    const sums = new Uint32Array((n + 1) * LANES)
    let a0 = 0
    let a1 = 0
    let a2 = 0
    let a3 = 0
    let i = 0
    let j = 0
    for (let k = 0; k < n; k++) {
      const fromOld = i < old.length && (j >= added.length || (old[i] as string) < (added[j] as string))
      if (fromOld) {
        ids[k] = old[i] as string
        const p = i * LANES
        const q = p + LANES
        a0 = (a0 + (oldSums[q] as number) - (oldSums[p] as number)) >>> 0
        a1 = (a1 + (oldSums[q + 1] as number) - (oldSums[p + 1] as number)) >>> 0
        a2 = (a2 + (oldSums[q + 2] as number) - (oldSums[p + 2] as number)) >>> 0
        a3 = (a3 + (oldSums[q + 3] as number) - (oldSums[p + 3] as number)) >>> 0
        i++
      } else {
        const id = added[j] as string
        ids[k] = id
        a0 = (a0 + parseInt(id.slice(0, 8), 16)) >>> 0
        a1 = (a1 + parseInt(id.slice(8, 16), 16)) >>> 0
        a2 = (a2 + parseInt(id.slice(16, 24), 16)) >>> 0
        a3 = (a3 + parseInt(id.slice(24, 32), 16)) >>> 0
        j++
      }
      const r = (k + 1) * LANES
      sums[r] = a0
      sums[r + 1] = a1
      sums[r + 2] = a2
      sums[r + 3] = a3
    }
    return new IdSnapshot(ids, sums)
  }

  /** Index of the first id at or above the bound (`size` for {@link END_BOUND}). */
  lowerBound (bound: Bound): number {
    if (bound === START_BOUND) return 0
    if (bound === END_BOUND) return this.ids.length
    let lo = 0
    let hi = this.ids.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((this.ids[mid] as string) < bound) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Number of ids in [lo, hi). */
  count (lo: Bound, hi: Bound): number {
    return Math.max(0, this.lowerBound(hi) - this.lowerBound(lo))
  }

  /** Fingerprint of the ids in [lo, hi). */
  fingerprint (lo: Bound, hi: Bound): Uint8Array {
    const i0 = this.lowerBound(lo)
    return this.fingerprintAt(i0, Math.max(i0, this.lowerBound(hi)))
  }

  /**
   * Fingerprint of `ids[i0..i1)`: SHA-256 of the count and the lane-wise sums
   * (mod 2^32) of the ids' first 16 bytes, cut to {@link FINGERPRINT_BYTES}.
   * Sums make it a function of the set alone (not of how it was split or
   * built) and O(1) from prefix sums; hashing with the count keeps sets of
   * different sizes from matching by a sum coincidence. Not proof against
   * someone who mints event ids to cancel out (as in negentropy): such a
   * match only delays catch-up until the sets, and so the ranges, change.
   */
  fingerprintAt (i0: number, i1: number): Uint8Array {
    const buf = new Uint8Array(4 * LANES + 4)
    const view = new DataView(buf.buffer)
    const p = i0 * LANES
    const q = i1 * LANES
    for (let l = 0; l < LANES; l++) {
      view.setUint32(4 * l, ((this.sums[q + l] as number) - (this.sums[p + l] as number)) >>> 0, true)
    }
    view.setUint32(4 * LANES, i1 - i0, true)
    return sha256(buf).subarray(0, FINGERPRINT_BYTES)
  }
}

/**
 * The shortest canonical bound b with `below < b <= above`, for ids
 * `below < above`: `above` cut just after the first byte where they differ.
 * That byte of `above` is non-zero (it exceeds `below`'s), so the cut is
 * canonical. Between neighbours of n uniform ids this is about log256(n) + 1
 * bytes, which is what keeps range bounds cheap on the wire.
 */
export function separatingBound (below: string, above: string): Bound {
  let i = 0
  while (i < above.length && below.charCodeAt(i) === above.charCodeAt(i)) i++
  return above.slice(0, (i | 1) + 1)
}
