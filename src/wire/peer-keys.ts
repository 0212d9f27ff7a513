/**
 * Author strings to public keys, with a bounded cache.
 *
 * Every event names its author as a peer id string, and every committee lists
 * them. Parsing one costs a base58 decode, a protobuf decode and a re-derivation
 * (about 20 us), so the keys of recently seen authors are kept.
 */
import { peerIdFromPublicKey, peerIdFromString } from '@libp2p/peer-id'
import type { PublicKey } from '@libp2p/interface'
import type { PeerIdString } from '../core/events.js'

/**
 * Length of every Ed25519 peer id string (`12D3KooW` + 44 more base58 chars):
 * the identity multihash of the protobuf-wrapped 32-byte key is always 38 bytes.
 * Checked before parsing so a huge string never reaches the quadratic base58 decoder.
 */
export const ED25519_PEER_ID_CHARS = 52

/** How many authors' keys are kept before the cache is cleared and refilled. */
export const PEER_KEY_CACHE_SIZE = 10_000

const cache = new Map<string, PublicKey>()

/**
 * The Ed25519 public key named by a peer id string, or null when the string is
 * not the canonical base58 form of an Ed25519 peer id. Only the canonical form
 * is accepted: the author string is part of the signed, hashed envelope, and
 * "one slot per author" compares strings, so one key must not be able to pose
 * as two authors through alternative spellings (CID forms, padded protobufs).
 */
export function ed25519KeyOf(str: string): PublicKey | null {
  const hit = cache.get(str)
  if (hit !== undefined) return hit
  if (str.length !== ED25519_PEER_ID_CHARS || !str.startsWith('12D3KooW')) return null
  let key: PublicKey
  try {
    const peerId = peerIdFromString(str)
    if (peerId.type !== 'Ed25519') return null
    key = peerId.publicKey
    if (peerIdFromPublicKey(key).toString() !== str) return null
  } catch {
    return null
  }
  if (cache.size >= PEER_KEY_CACHE_SIZE) cache.clear()
  cache.set(str, key)
  return key
}

/** Whether a value is the canonical string of an Ed25519 peer id (see {@link ed25519KeyOf}). */
export function isEd25519PeerIdString(value: unknown): value is PeerIdString {
  return typeof value === 'string' && ed25519KeyOf(value) !== null
}
