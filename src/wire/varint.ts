/**
 * Unsigned LEB128 varints as both binary protocols of this project write
 * them (sync frames and reconciliation messages): minimal, at most 5 bytes,
 * at most 2^32 - 1. One reader, so the two cannot drift apart on what they
 * accept.
 */

/** The largest value a varint may carry. */
export const MAX_VARINT = 0xffffffff

/** The most bytes a varint may take. */
export const MAX_VARINT_BYTES = 5

/** `readVarint`: the bytes end before the varint does. */
export const VARINT_TRUNCATED = -1
/** `readVarint`: a final zero byte after a continuation byte (the same value fits in fewer bytes). */
export const VARINT_NON_MINIMAL = -2
/** `readVarint`: five bytes that decode above MAX_VARINT. */
export const VARINT_OUT_OF_RANGE = -3
/** `readVarint`: the fifth byte still has its continuation bit set. */
export const VARINT_TOO_LONG = -4

/** Bytes a varint of this value takes. */
export function varintSize(value: number): number {
  let size = 1
  while (value >= 0x80) {
    value = Math.floor(value / 128)
    size++
  }
  return size
}

/** Writes `value` at `pos` (the caller sized `out` with varintSize); returns the position after it. */
export function writeVarint(out: Uint8Array, pos: number, value: number): number {
  while (value >= 0x80) {
    out[pos++] = (value % 128) | 0x80
    value = Math.floor(value / 128)
  }
  out[pos++] = value
  return pos
}

/**
 * Reads the varint at `pos`: its value (>= 0; being minimal, it took exactly
 * `varintSize(value)` bytes), or one of the negative VARINT_* codes. Returns
 * a number rather than a pair so that hot decoding loops allocate nothing.
 */
export function readVarint(bytes: Uint8Array, pos: number): number {
  let value = 0
  let scale = 1
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    if (pos + i >= bytes.length) return VARINT_TRUNCATED
    const b = bytes[pos + i] as number
    value += (b & 0x7f) * scale
    if ((b & 0x80) === 0) {
      if (i > 0 && b === 0) return VARINT_NON_MINIMAL
      return value > MAX_VARINT ? VARINT_OUT_OF_RANGE : value
    }
    scale *= 128
  }
  return VARINT_TOO_LONG
}
