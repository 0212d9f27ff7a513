/**
 * SHA-256 through Node's native crypto: the same digests as the pure-JS
 * functions of src/core and src/wire (unit tests hold them equal), several
 * times faster. The pure ones stay the reference (the core and the wire
 * layer take no node:* imports); these are for the hot paths above them:
 * the runtime's tree hashes and the ids of events arriving by sync.
 *
 * It lives in src/sync, the lowest layer that may import node:*, so that
 * both sync and the runtime above it use this one module.
 */
import { createHash } from 'node:crypto'
import type { EventId } from '../core/events.js'
import { SIGNATURE_BYTES } from '../wire/codec.js'

/**
 * SHA-256 of a string's UTF-8 bytes, as lowercase hex: the `hashText` the
 * runtime gives the fold for tree hashes. Same output as the core's
 * sha256HexOfText.
 */
export function nativeSha256HexOfText(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

/**
 * The id of an event from its wire bytes (lowercase hex SHA-256 of the
 * envelope part), without decoding or checking it: the same value as the
 * pure `eventIdOfWire` of src/wire/codec.ts. Null when the bytes are too
 * short to hold a signature and an envelope.
 */
export function nativeEventIdOfWire(bytes: Uint8Array): EventId | null {
  if (bytes.length <= SIGNATURE_BYTES) return null
  return createHash('sha256')
    .update(bytes.subarray(0, bytes.length - SIGNATURE_BYTES))
    .digest('hex') as EventId
}
