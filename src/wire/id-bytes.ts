/**
 * Event ids in binary protocols: an id is 64 lowercase hex digits in memory
 * and its 32 raw bytes on the wire (sync WANT frames, reconciliation
 * messages). The conversions here are the only ones, both ways.
 */
import { toHex } from '../core/hash.js'

/** Raw bytes of an event id (a SHA-256 digest). */
export const ID_BYTES = 32

/**
 * `len` bytes at `at` as lowercase hex, one flat string (a whole list of ids
 * decodes in one call, then slices: far cheaper than a string per id).
 */
export function hexOfBytes(bytes: Uint8Array, at: number, len: number): string {
  return toHex(bytes.subarray(at, at + len))
}

/** The id whose 32 raw bytes start at `at`. */
export function idFromBytes(bytes: Uint8Array, at: number): string {
  return hexOfBytes(bytes, at, ID_BYTES)
}

/** Byte value of two lowercase hex digits, indexed by (first char code << 7) | second char code. */
const BYTE_OF_HEX_PAIR = new Uint8Array(1 << 14)
for (let b = 0; b < 256; b++) {
  const hex = b.toString(16).padStart(2, '0')
  BYTE_OF_HEX_PAIR[(hex.charCodeAt(0) << 7) | hex.charCodeAt(1)] = b
}

/**
 * Writes lowercase hex digits (an even number: a validated id or bound) as
 * bytes at `at`; returns the position after them.
 */
export function writeHexBytes(hex: string, out: Uint8Array, at: number): number {
  for (let i = 0; i < hex.length; i += 2) {
    out[at++] = BYTE_OF_HEX_PAIR[(hex.charCodeAt(i) << 7) | hex.charCodeAt(i + 1)] as number
  }
  return at
}

/** Writes a (valid, lowercase) id as its 32 raw bytes at `at`. */
export function idToBytes(id: string, out: Uint8Array, at: number): void {
  writeHexBytes(id, out, at)
}

/** The well-formed ids among these (64 lowercase hex digits), as 32 raw bytes each, back to back, in the order given. */
export function idBytesOf(ids: readonly string[]): Uint8Array {
  // typeof: a damaged store row may hold a blob where its id should be.
  const good = ids.filter(id => typeof id === 'string' && /^[0-9a-f]{64}$/.test(id))
  const out = new Uint8Array(good.length * ID_BYTES)
  good.forEach((id, i) => {
    idToBytes(id, out, i * ID_BYTES)
  })
  return out
}
