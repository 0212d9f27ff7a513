import { createHash } from 'node:crypto'

/**
 * Node's native SHA-256 of a string's UTF-8 bytes, as lowercase hex: the
 * `hashText` the runtime gives the fold for tree hashes. Same output as the
 * core's pure sha256HexOfText (a unit test holds them equal), ~10x faster.
 */
export function nativeSha256HexOfText (text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}
