/**
 * The ordered id set that range-based set reconciliation works over.
 *
 * Ids are event ids (64-char lowercase hex SHA-256), so their string order is
 * their byte order, and their bits are already uniform: a range's fingerprint
 * can be a plain lane-wise sum of ids, kept as prefix sums so that any
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

/** Whether a string is a well-formed event id (64 lowercase hex digits). */
export function isEventIdHex(id: string): id is EventId {
  if (id.length !== 64) return false
  for (let i = 0; i < 64; i++) {
    const c = id.charCodeAt(i)
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false
  }
  return true
}

/** 32-bit lanes of each id that the fingerprint sums: the whole id. */
const LANES = 8

/** Writes the LANES 32-bit big-endian words of a (valid) hex id into `out` at `at`. */
function parseLanes(id: string, out: Uint32Array, at: number): void {
  for (let l = 0; l < LANES; l++) {
    let v = 0
    for (let c = 8 * l; c < 8 * l + 8; c++) {
      const code = id.charCodeAt(c)
      v = v * 16 + (code <= 57 ? code - 48 : code - 87)
    }
    out[at + l] = v
  }
}

/** Below this many ids, an id's position fits beside its 32-bit lane in a double's 53-bit mantissa. */
const POSITION_SPACE = 1 << 21

/** Positions of `ids` in ascending order, given their lanes (a numeric sort on lane 0, string order for ties). */
function sortByLanes(ids: readonly string[], lanes: Uint32Array): Uint32Array {
  const k = ids.length
  const order = new Uint32Array(k)
  if (k >= POSITION_SPACE) {
    const positions = Array.from({ length: k }, (_, i) => i)
    positions.sort((x, y) => ((ids[x] as string) < (ids[y] as string) ? -1 : 1))
    order.set(positions)
    return order
  }
  const keyed = new Float64Array(k)
  for (let i = 0; i < k; i++) keyed[i] = (lanes[i * LANES] as number) * POSITION_SPACE + i
  keyed.sort()
  for (let i = 0; i < k; i++) order[i] = (keyed[i] as number) % POSITION_SPACE
  // Ids that share their first 32 bits (rare) are put in string order.
  let runStart = 0
  for (let i = 1; i <= k; i++) {
    const same = i < k && lanes[(order[i] as number) * LANES] === lanes[(order[runStart] as number) * LANES]
    if (same) continue
    if (i - runStart > 1) {
      const run = Array.from(order.subarray(runStart, i))
      run.sort((x, y) => ((ids[x] as string) < (ids[y] as string) ? -1 : 1))
      order.set(run, runStart)
    }
    runStart = i
  }
  return order
}

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
  add(id: string): IdSetAddOutcome {
    if (this.members.has(id)) return 'present'
    if (!isEventIdHex(id)) return 'invalid'
    this.members.add(id)
    this.pending.push(id)
    return 'added'
  }

  has(id: string): boolean {
    return this.members.has(id)
  }

  get size(): number {
    return this.members.size
  }

  /** The sorted view of every id added so far; cached until the next add. */
  snapshot(): IdSnapshot {
    if (this.pending.length > 0) {
      const added = this.pending
      this.pending = []
      this.current = this.current.merge(added)
    }
    return this.current
  }

  /** Number of ids in [lo, hi) (see {@link Bound}; `null` for hi means no upper bound). */
  count(lo: Bound, hi: Bound | null): number {
    return this.snapshot().count(lo, hi ?? END_BOUND)
  }

  /** Fingerprint of the ids in [lo, hi) (see {@link IdSnapshot.fingerprint}). */
  fingerprint(lo: Bound, hi: Bound | null): Uint8Array {
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

  private constructor(ids: readonly string[], sums: Uint32Array) {
    this.ids = ids
    this.sums = sums
  }

  static empty(): IdSnapshot {
    return new IdSnapshot([], new Uint32Array(LANES))
  }

  get size(): number {
    return this.ids.length
  }

  /**
   * @internal For {@link IdSet} only, which guarantees the precondition:
   * a new snapshot holding these ids too, where `added` holds valid ids, none
   * of them already here. The new ids are ordered by their first 32 bits as
   * numbers (a typed-array sort, far cheaper than comparing strings), ties by
   * string, then merged with the old ids in one pass.
   */
  merge(added: readonly string[]): IdSnapshot {
    const k = added.length
    const lanes = new Uint32Array(k * LANES)
    for (let j = 0; j < k; j++) parseLanes(added[j] as string, lanes, j * LANES)
    const order = sortByLanes(added, lanes)
    const old = this.ids
    const oldSums = this.sums
    const n = old.length + k
    const ids: string[] = new Array<string>(n)
    const sums = new Uint32Array((n + 1) * LANES)
    let i = 0
    let j = 0
    for (let w = 0; w < n; w++) {
      const r = w * LANES
      let fromOld = i < old.length
      if (fromOld && j < k) {
        const p = i * LANES
        const first = ((oldSums[p + LANES] as number) - (oldSums[p] as number)) >>> 0
        const theirs = lanes[(order[j] as number) * LANES] as number
        fromOld = first < theirs || (first === theirs && (old[i] as string) < (added[order[j] as number] as string))
      }
      if (fromOld) {
        const p = i * LANES
        ids[w] = old[i] as string
        for (let l = 0; l < LANES; l++) {
          sums[r + LANES + l] =
            (sums[r + l] as number) + (oldSums[p + LANES + l] as number) - (oldSums[p + l] as number)
        }
        i++
      } else {
        const at = order[j] as number
        const q = at * LANES
        ids[w] = added[at] as string
        for (let l = 0; l < LANES; l++) sums[r + LANES + l] = (sums[r + l] as number) + (lanes[q + l] as number)
        j++
      }
    }
    return new IdSnapshot(ids, sums)
  }

  /** Index of the first id at or above the bound (`size` for {@link END_BOUND}). */
  lowerBound(bound: Bound): number {
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
  count(lo: Bound, hi: Bound): number {
    return Math.max(0, this.lowerBound(hi) - this.lowerBound(lo))
  }

  /** Fingerprint of the ids in [lo, hi). */
  fingerprint(lo: Bound, hi: Bound): Uint8Array {
    const i0 = this.lowerBound(lo)
    return this.fingerprintAt(i0, Math.max(i0, this.lowerBound(hi)))
  }

  /**
   * Fingerprint of `ids[i0..i1)`: SHA-256 of the count and the lane-wise sums
   * (mod 2^32) of the ids' eight 32-bit words, cut to {@link FINGERPRINT_BYTES}.
   * Sums make it a function of the set alone (not of how it was split or
   * built) and O(1) from prefix sums; hashing with the count keeps sets of
   * different sizes from matching by a sum coincidence. Not proof against
   * someone who mints event ids to cancel out (as in negentropy): such a
   * match only delays catch-up until the sets, and so the ranges, change.
   */
  fingerprintAt(i0: number, i1: number): Uint8Array {
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
export function separatingBound(below: string, above: string): Bound {
  let i = 0
  while (i < above.length && below.charCodeAt(i) === above.charCodeAt(i)) i++
  return above.slice(0, (i | 1) + 1)
}
