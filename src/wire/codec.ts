import * as dagCbor from '@ipld/dag-cbor'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { sha256Hex } from '../core/hash.js'
import type { Envelope, EventId } from '../core/events.js'

/** Canonical deterministic bytes of an envelope (DAG-CBOR: sorted map keys, shortest integers, no floats for our fields). */
export function encodeEnvelope(env: Envelope): Uint8Array {
  return dagCbor.encode(env)
}

/** An event's id: the hash of its canonical envelope bytes. Same content, same id. */
export function eventIdOf(envelopeBytes: Uint8Array): EventId {
  return sha256Hex(envelopeBytes) as EventId
}

/** An Ed25519 signature is always this long; it ends every wire event. */
export const SIGNATURE_BYTES = 64

/**
 * The domain prefix of every signature: `utf8("plan-swarm/1/" + swarm + "\n")`.
 * It binds a signature to this protocol and to one swarm, so a signed event can
 * be replayed neither into another swarm nor into another protocol that signs
 * bare DAG-CBOR with the same key. The newline ends the swarm name, so no swarm
 * name is a prefix of another's domain.
 */
export function signatureDomain(swarm: string): Uint8Array {
  return utf8ToBytes(`plan-swarm/1/${swarm}\n`)
}

/** The exact bytes an author signs: the swarm's domain prefix, then the canonical envelope bytes. */
export function signedMessage(swarm: string, envelopeBytes: Uint8Array): Uint8Array {
  const domain = signatureDomain(swarm)
  const out = new Uint8Array(domain.length + envelopeBytes.length)
  out.set(domain, 0)
  out.set(envelopeBytes, domain.length)
  return out
}

/**
 * An event's wire form: `envelopeBytes || signature`. No framing is needed:
 * the signature has a fixed length, so the envelope is everything before it.
 */
export function joinWire(envelopeBytes: Uint8Array, signature: Uint8Array): Uint8Array {
  const out = new Uint8Array(envelopeBytes.length + signature.length)
  out.set(envelopeBytes, 0)
  out.set(signature, envelopeBytes.length)
  return out
}

/**
 * Split wire bytes into their envelope and signature parts (views, not copies),
 * or null when there is not room for a signature and a non-empty envelope.
 */
export function splitWire(bytes: Uint8Array): { envelopeBytes: Uint8Array; signature: Uint8Array } | null {
  if (bytes.length <= SIGNATURE_BYTES) return null
  const cut = bytes.length - SIGNATURE_BYTES
  return { envelopeBytes: bytes.subarray(0, cut), signature: bytes.subarray(cut) }
}

/**
 * The id of an event from its wire bytes, without decoding or checking it.
 * For stores and sync that already hold checked bytes; null when too short.
 */
export function eventIdOfWire(bytes: Uint8Array): EventId | null {
  const parts = splitWire(bytes)
  return parts === null ? null : eventIdOf(parts.envelopeBytes)
}
