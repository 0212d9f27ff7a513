/**
 * Binary messages of the reconciliation protocol.
 *
 * A message is one version byte, then ranges in ascending order. Ranges are
 * contiguous: each starts where the previous one ended (the first at the
 * lowest bound), so only upper bounds travel; the span after the last range
 * is implicitly "skip". Each range is
 *
 *     bound   varint 0 = end of the id space, else varint (len + 1) and len
 *             bytes (1..32) of a canonical prefix (last byte non-zero)
 *     mode    one byte, then its payload:
 *       0 skip         nothing to do here
 *       1 fingerprint  16 bytes: the sender's fingerprint of its ids here
 *       2 ids          varint k, then k ids of 32 bytes, strictly ascending:
 *                      all of the sender's ids here
 *       3 diff         answer to an `ids` range: varint k and k ids (the
 *                      sender's ids here that the list lacked), then varint m
 *                      and m delta-coded varints (the positions, among the
 *                      receiver's own ids here, of those the sender lacks)
 *       4 pending      "I did not get to this range; state yours again"
 *
 * Decoding checks everything it can without the receiver's set (bounds
 * ascending and canonical, ids ascending and inside their range, counts
 * within the bytes left) and returns errors as values; it never throws and
 * allocates no more than the message's own size justifies.
 */
import { ID_BYTES, hexOfBytes, writeHexBytes } from '../../wire/id-bytes.js'
import { MAX_VARINT, readVarint, varintSize, writeVarint } from '../../wire/varint.js'
import type { Bound } from '../../core/id-set.js'
import { END_BOUND, FINGERPRINT_BYTES, START_BOUND } from '../../core/id-set.js'

/** First byte of every message: the wire version. */
export const RECONCILE_WIRE_VERSION = 1

/** One range of a message; its lower bound is the previous range's `hi`. */
export type WireRange =
  | { readonly mode: 'skip'; readonly hi: Bound }
  | { readonly mode: 'fingerprint'; readonly hi: Bound; readonly fingerprint: Uint8Array }
  | { readonly mode: 'ids'; readonly hi: Bound; readonly ids: readonly string[] }
  | {
      readonly mode: 'diff'
      readonly hi: Bound
      readonly extras: readonly string[]
      readonly missing: readonly number[]
    }
  | { readonly mode: 'pending'; readonly hi: Bound }

const MODE_CODE = { skip: 0, fingerprint: 1, ids: 2, diff: 3, pending: 4 } as const

/** Bytes a bound takes on the wire. */
export function boundSize(bound: Bound): number {
  return bound === END_BOUND ? 1 : 1 + bound.length / 2
}

/** Bytes the delta-coded position list of a diff takes (without its count). */
export function missingSize(missing: readonly number[]): number {
  let size = 0
  let prev = -1
  for (const index of missing) {
    size += varintSize(index - prev - 1)
    prev = index
  }
  return size
}

/** Bytes this range takes on the wire. */
export function rangeSize(range: WireRange): number {
  const head = boundSize(range.hi) + 1
  switch (range.mode) {
    case 'skip':
    case 'pending':
      return head
    case 'fingerprint':
      return head + FINGERPRINT_BYTES
    case 'ids':
      return head + varintSize(range.ids.length) + ID_BYTES * range.ids.length
    case 'diff':
      return diffRangeSize(range.hi, range.extras.length, range.missing)
  }
}

/** Bytes a diff range takes on the wire, known before its extras are written out as ids. */
export function diffRangeSize(hi: Bound, extras: number, missing: readonly number[]): number {
  return boundSize(hi) + 1 + varintSize(extras) + ID_BYTES * extras + varintSize(missing.length) + missingSize(missing)
}

/** Bytes a message of these ranges takes. */
export function messageSize(ranges: readonly WireRange[]): number {
  let size = 1
  for (const range of ranges) size += rangeSize(range)
  return size
}

class Writer {
  readonly bytes: Uint8Array
  pos = 0

  constructor(size: number) {
    this.bytes = new Uint8Array(size)
  }

  byte(value: number): void {
    this.bytes[this.pos++] = value
  }

  varint(value: number): void {
    this.pos = writeVarint(this.bytes, this.pos, value)
  }

  /** Writes lowercase hex digits (inputs are validated ids and bounds) as bytes. */
  hex(hex: string): void {
    this.pos = writeHexBytes(hex, this.bytes, this.pos)
  }
}

/** Encodes ranges (assumed well-formed: produced by the session) into one message. */
export function encodeMessage(ranges: readonly WireRange[]): Uint8Array {
  const w = new Writer(messageSize(ranges))
  w.byte(RECONCILE_WIRE_VERSION)
  for (const range of ranges) {
    if (range.hi === END_BOUND) {
      w.varint(0)
    } else {
      w.varint(range.hi.length / 2 + 1)
      w.hex(range.hi)
    }
    w.byte(MODE_CODE[range.mode])
    switch (range.mode) {
      case 'skip':
      case 'pending':
        break
      case 'fingerprint':
        w.bytes.set(range.fingerprint.subarray(0, FINGERPRINT_BYTES), w.pos)
        w.pos += FINGERPRINT_BYTES
        break
      case 'ids':
        w.varint(range.ids.length)
        for (const id of range.ids) w.hex(id)
        break
      case 'diff': {
        w.varint(range.extras.length)
        for (const id of range.extras) w.hex(id)
        w.varint(range.missing.length)
        let prev = -1
        for (const index of range.missing) {
          w.varint(index - prev - 1)
          prev = index
        }
        break
      }
    }
  }
  return w.bytes
}

class Reader {
  pos = 1
  constructor(readonly bytes: Uint8Array) {}

  get left(): number {
    return this.bytes.length - this.pos
  }

  byte(): number | null {
    return this.pos < this.bytes.length ? (this.bytes[this.pos++] as number) : null
  }

  /** An unsigned LEB128 varint of at most 5 bytes and 2^32 - 1, minimally encoded. */
  varint(): number | null {
    const value = readVarint(this.bytes, this.pos)
    if (value < 0) return null
    this.pos += varintSize(value)
    return value
  }

  /** The next len bytes (len <= left) as lowercase hex. */
  hex(len: number): string {
    const hex = hexOfBytes(this.bytes, this.pos, len)
    this.pos += len
    return hex
  }
}

function readIds(r: Reader, lo: Bound, hi: Bound, what: string): string[] | { error: string } {
  const k = r.varint()
  if (k === null) return { error: `bad ${what} count` }
  if (k * ID_BYTES > r.left) return { error: `${what} count ${k} exceeds the message` }
  // One decode for the whole list, then slices: far cheaper than a string per id.
  const all = r.hex(k * ID_BYTES)
  const ids = new Array<string>(k)
  let prev = lo
  for (let i = 0; i < k; i++) {
    const id = all.slice(64 * i, 64 * i + 64)
    if (i === 0 ? id < prev : id <= prev) return { error: `${what} not strictly ascending or below their range` }
    ids[i] = id
    prev = id
  }
  if (k > 0 && !(prev < hi)) return { error: `${what} above their range` }
  return ids
}

/** Decodes a message into its ranges, or says why it is malformed. */
export function decodeMessage(bytes: Uint8Array): WireRange[] | { error: string } {
  if (bytes.length === 0) return { error: 'empty message' }
  if (bytes[0] !== RECONCILE_WIRE_VERSION) return { error: `unknown wire version ${bytes[0] as number}` }
  const r = new Reader(bytes)
  const ranges: WireRange[] = []
  let lo: Bound = START_BOUND
  while (r.left > 0) {
    if (lo === END_BOUND) return { error: 'bytes after the range that reaches the end' }
    const tag = r.varint()
    if (tag === null) return { error: 'bad bound' }
    let hi: Bound
    if (tag === 0) {
      hi = END_BOUND
    } else {
      const len = tag - 1
      if (len < 1 || len > ID_BYTES) return { error: `bound length ${len} out of range` }
      if (len > r.left) return { error: 'truncated bound' }
      hi = r.hex(len)
      if (hi.endsWith('00')) return { error: 'non-canonical bound (trailing zero byte)' }
      if (!(lo < hi)) return { error: 'bounds not strictly ascending' }
    }
    const mode = r.byte()
    switch (mode) {
      case MODE_CODE.skip:
        ranges.push({ mode: 'skip', hi })
        break
      case MODE_CODE.pending:
        ranges.push({ mode: 'pending', hi })
        break
      case MODE_CODE.fingerprint:
        if (r.left < FINGERPRINT_BYTES) return { error: 'truncated fingerprint' }
        ranges.push({ mode: 'fingerprint', hi, fingerprint: bytes.slice(r.pos, r.pos + FINGERPRINT_BYTES) })
        r.pos += FINGERPRINT_BYTES
        break
      case MODE_CODE.ids: {
        const ids = readIds(r, lo, hi, 'ids')
        if ('error' in ids) return ids
        ranges.push({ mode: 'ids', hi, ids })
        break
      }
      case MODE_CODE.diff: {
        const extras = readIds(r, lo, hi, 'extras')
        if ('error' in extras) return extras
        const m = r.varint()
        if (m === null) return { error: 'bad missing count' }
        if (m > r.left) return { error: `missing count ${m} exceeds the message` }
        const missing = new Array<number>(m)
        let prev = -1
        for (let i = 0; i < m; i++) {
          const delta = r.varint()
          if (delta === null) return { error: 'bad missing position' }
          prev = prev + delta + 1
          if (prev > MAX_VARINT) return { error: 'missing position out of range' }
          missing[i] = prev
        }
        ranges.push({ mode: 'diff', hi, extras, missing })
        break
      }
      case null:
        return { error: 'truncated range (no mode)' }
      default:
        return { error: `unknown range mode ${mode}` }
    }
    lo = hi
  }
  return ranges
}
