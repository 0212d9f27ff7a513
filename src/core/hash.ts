import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'

/** Lowercase hex SHA-256 of bytes. */
export function sha256Hex (bytes: Uint8Array): string {
  return bytesToHex(sha256(bytes))
}

/** Lowercase hex SHA-256 of the UTF-8 text of parts joined by NUL, so ("ab","c") and ("a","bc") differ. */
export function hashParts (...parts: readonly string[]): string {
  return sha256Hex(utf8ToBytes(parts.join('\u0000')))
}
