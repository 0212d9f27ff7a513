/**
 * A fast decoder for the part of canonical DAG-CBOR that plan events use.
 *
 * Checking canonicality the obvious way (decode with @ipld/dag-cbor, encode
 * again, compare) costs three quarters of a decode. This decoder reads maps
 * with text keys, arrays, text strings, non-negative integers, booleans and
 * null, and checks canonical form as it goes: shortest integer and length
 * heads, map keys strictly ascending in DAG-CBOR order (shorter first, then
 * bytewise; this also excludes repeats), well-formed UTF-8 without a leading
 * byte-order mark, and nothing after the value.
 *
 * It never rejects: on anything else (floats, bytes, tags, negative or big
 * integers, any irregularity) it answers "not handled" and the caller runs
 * the reference path, which then decides with its exact reasons. So it only
 * has to be right about what it accepts: whenever it returns a value, the
 * reference decoder returns an equal value and re-encodes it to the same
 * bytes. A property test holds it to that.
 */

/** Returned when the input is outside the handled subset (or not canonical): use the reference path. */
export const NOT_HANDLED: unique symbol = Symbol('not-handled')

/** Nesting beyond this is left to the reference path (our envelopes nest 5 deep). */
const MAX_NESTING = 32

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Thrown internally to unwind to the caller's "not handled"; never escapes. */
const BAIL = new Error('not handled')

/** Short ASCII strings (map keys, ids) are built by hand: cheaper than a TextDecoder call. */
const SHORT_ASCII = 24

/**
 * Decode canonical DAG-CBOR of the handled subset, or return NOT_HANDLED.
 * Never throws.
 */
export function decodeCanonicalSubset(bytes: Uint8Array): unknown {
  let pos = 0
  const end = bytes.length

  const byte = (): number => {
    if (pos >= end) throw BAIL
    return bytes[pos++] as number
  }

  /** The argument of a head whose additional info is `info`, in shortest form, as a safe integer. */
  const arg = (info: number): number => {
    if (info < 24) return info
    if (info === 24) {
      const v = byte()
      if (v < 24) throw BAIL
      return v
    }
    if (info === 25) {
      const v = byte() * 0x100 + byte()
      if (v < 0x100) throw BAIL
      return v
    }
    if (info === 26) {
      const v = ((byte() * 0x100 + byte()) * 0x100 + byte()) * 0x100 + byte()
      if (v < 0x10000) throw BAIL
      return v
    }
    if (info === 27) {
      const hi = ((byte() * 0x100 + byte()) * 0x100 + byte()) * 0x100 + byte()
      const lo = ((byte() * 0x100 + byte()) * 0x100 + byte()) * 0x100 + byte()
      if (hi === 0) throw BAIL // fits in 32 bits: not shortest
      if (hi > 0x1fffff) throw BAIL // beyond Number.MAX_SAFE_INTEGER: the reference makes a BigInt
      return hi * 0x100000000 + lo
    }
    throw BAIL // 28..30 reserved, 31 indefinite
  }

  const text = (len: number): string => {
    if (len > end - pos) throw BAIL
    const start = pos
    pos += len
    if (len <= SHORT_ASCII) {
      let s = ''
      let i = start
      for (; i < pos; i++) {
        const b = bytes[i] as number
        if (b >= 0x80) break
        s += String.fromCharCode(b)
      }
      if (i === pos) return s
    }
    // A leading byte-order mark is dropped by TextDecoder, so it would not re-encode: not canonical.
    if (len >= 3 && bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf) throw BAIL
    try {
      return utf8.decode(bytes.subarray(start, pos))
    } catch {
      throw BAIL
    }
  }

  /** -1, 0 or 1: how key a (bytes [as, as+al)) compares with key b in DAG-CBOR map order. */
  const compareKeys = (as: number, al: number, bs: number, bl: number): number => {
    if (al !== bl) return al < bl ? -1 : 1
    for (let i = 0; i < al; i++) {
      const x = bytes[as + i] as number
      const y = bytes[bs + i] as number
      if (x !== y) return x < y ? -1 : 1
    }
    return 0
  }

  const item = (depth: number): unknown => {
    if (depth > MAX_NESTING) throw BAIL
    const ib = byte()
    const major = ib >> 5
    const info = ib & 0x1f
    switch (major) {
      case 0:
        return arg(info)
      case 3:
        return text(arg(info))
      case 4: {
        const n = arg(info)
        if (n > end - pos) throw BAIL // each item takes at least one byte
        const out: unknown[] = new Array<unknown>(n)
        for (let i = 0; i < n; i++) out[i] = item(depth + 1)
        return out
      }
      case 5: {
        const n = arg(info)
        if (n > end - pos) throw BAIL
        const out: Record<string, unknown> = {}
        let prevStart = -1
        let prevLen = 0
        for (let i = 0; i < n; i++) {
          const kb = byte()
          if (kb >> 5 !== 3) throw BAIL // only text keys
          const klen = arg(kb & 0x1f)
          const kstart = pos
          const key = text(klen)
          if (prevStart >= 0 && compareKeys(prevStart, prevLen, kstart, klen) >= 0) throw BAIL
          prevStart = kstart
          prevLen = klen
          if (key === '__proto__') throw BAIL
          out[key] = item(depth + 1)
        }
        return out
      }
      case 7:
        if (ib === 0xf4) return false
        if (ib === 0xf5) return true
        if (ib === 0xf6) return null
        throw BAIL // floats, undefined, other simple values
      default:
        throw BAIL // 1 negative integers, 2 bytes, 6 tags
    }
  }

  try {
    const value = item(0)
    return pos === end ? value : NOT_HANDLED
  } catch {
    return NOT_HANDLED // BAIL, or a RangeError from a pathological input: the reference path decides
  }
}
