/**
 * Event ids as eight 32-bit words: the form the id set keeps them in (32
 * bytes an id, no string). Parsing, comparing, sorting and turning them back
 * into hex, for src/core/id-set.ts.
 *
 * Word l of an id is its hex digits [8l, 8l + 8) as a big-endian number, so
 * comparing ids word by word (as unsigned numbers) is comparing their
 * strings, and the words are the lanes the range fingerprint sums.
 */

/** 32-bit lanes of each id that the fingerprint sums: the whole id, as eight big-endian words. */
export const LANES = 8

/** Value of each lowercase hex digit by char code (below 128), -1 for every other character. */
const DIGIT = new Int8Array(128).fill(-1)
for (let d = 0; d < 16; d++) DIGIT['0123456789abcdef'.charCodeAt(d)] = d

/**
 * Writes the words of `id` (64 lowercase hex digits) at `out[at..at + 8)`;
 * false if it is not a well-formed id (the words are then meaningless).
 */
export function parseId(id: string, out: Uint32Array, at: number): boolean {
  return id.length === 64 && parseIdAt(id, 0, out, at)
}

/**
 * Writes the words of the 64 characters of `text` from `start` (which must
 * exist) at `out[at..at + 8)`; false if they are not lowercase hex digits.
 * One pass both checks and parses, so a bulk load reads each character once.
 */
export function parseIdAt(text: string, start: number, out: Uint32Array, at: number): boolean {
  let bad = 0
  for (let l = 0; l < LANES; l++) {
    let v = 0
    for (let c = start + 8 * l; c < start + 8 * l + 8; c++) {
      const code = text.charCodeAt(c)
      const d = code < 128 ? (DIGIT[code] as number) : -1
      bad |= d
      v = (v << 4) | d
    }
    out[at + l] = v
  }
  return bad >= 0
}

/**
 * Writes a bound's words (its hex digits padded with `0` to 64) at `out[0..8)`;
 * false if it is not lowercase hex of at most 64 digits. For such a string
 * `b` and any id, `id < b` as strings exactly when the id's words are below
 * the padded words: both compare digit by digit, and a digit past the end of
 * `b` is a `0` that no id digit is below.
 */
export function parseBound(bound: string, out: Uint32Array): boolean {
  const len = bound.length
  if (len > 64) return false
  let bad = 0
  for (let l = 0; l < LANES; l++) {
    let v = 0
    for (let c = 8 * l; c < 8 * l + 8; c++) {
      let d = 0
      if (c < len) {
        const code = bound.charCodeAt(c)
        d = code < 128 ? (DIGIT[code] as number) : -1
        bad |= d
      }
      v = (v << 4) | d
    }
    out[l] = v
  }
  return bad >= 0
}

/** -1, 0 or 1 as the id at `a[p..p+8)` is below, equal to or above the one at `b[q..q+8)`. */
export function compareWords(a: Uint32Array, p: number, b: Uint32Array, q: number): number {
  for (let l = 0; l < LANES; l++) {
    const x = a[p + l] as number
    const y = b[q + l] as number
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

/** The two hex digits of each byte, as the 16-bit unit that writes them in order into a byte buffer on this machine. */
const HEX_PAIR = new Uint16Array(256)
{
  const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1
  for (let b = 0; b < 256; b++) {
    const hi = '0123456789abcdef'.charCodeAt(b >> 4)
    const lo = '0123456789abcdef'.charCodeAt(b & 15)
    HEX_PAIR[b] = littleEndian ? hi | (lo << 8) : (hi << 8) | lo
  }
}
const hexScratch = new Uint16Array(32)
const latin1 = new TextDecoder('latin1')

/** The id at `words[p..p+8)` as 64 lowercase hex digits: one flat string (a built-up rope would be slow to hash). */
export function hexOfWords(words: Uint32Array, p: number): string {
  for (let l = 0; l < LANES; l++) {
    const v = words[p + l] as number
    hexScratch[4 * l] = HEX_PAIR[v >>> 24] as number
    hexScratch[4 * l + 1] = HEX_PAIR[(v >>> 16) & 255] as number
    hexScratch[4 * l + 2] = HEX_PAIR[(v >>> 8) & 255] as number
    hexScratch[4 * l + 3] = HEX_PAIR[v & 255] as number
  }
  return latin1.decode(hexScratch)
}

/** Below this many ids, an id's position fits beside its first 32-bit word in a double's 53-bit mantissa. */
const POSITION_SPACE = 1 << 21

/**
 * The first `k` ids of `words` in ascending order (duplicates kept): `words`
 * itself if it already is (a store hands ids over sorted), else a sorted
 * copy. The order comes from a numeric typed-array sort on the first word
 * (far cheaper than comparing ids), with whole-id comparisons only for ids
 * that share their first 32 bits (rare).
 */
export function sortWords(words: Uint32Array, k: number): Uint32Array {
  let sorted = true
  for (let j = 1; j < k && sorted; j++) sorted = compareWords(words, (j - 1) * LANES, words, j * LANES) <= 0
  if (sorted) return words
  const byWords = (x: number, y: number): number => compareWords(words, x * LANES, words, y * LANES)
  let order: Uint32Array
  if (k >= POSITION_SPACE) {
    const positions = Array.from({ length: k }, (_, i) => i)
    positions.sort(byWords)
    order = Uint32Array.from(positions)
  } else {
    const keyed = new Float64Array(k)
    for (let j = 0; j < k; j++) keyed[j] = (words[j * LANES] as number) * POSITION_SPACE + j
    keyed.sort()
    order = new Uint32Array(k)
    for (let j = 0; j < k; j++) order[j] = (keyed[j] as number) % POSITION_SPACE
    let runStart = 0
    for (let j = 1; j <= k; j++) {
      const same = j < k && words[(order[j] as number) * LANES] === words[(order[runStart] as number) * LANES]
      if (same) continue
      if (j - runStart > 1) order.set(Array.from(order.subarray(runStart, j)).sort(byWords), runStart)
      runStart = j
    }
  }
  const out = new Uint32Array(k * LANES)
  for (let j = 0; j < k; j++) {
    const p = (order[j] as number) * LANES
    for (let l = 0; l < LANES; l++) out[j * LANES + l] = words[p + l] as number
  }
  return out
}
