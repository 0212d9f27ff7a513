import * as dagCbor from '@ipld/dag-cbor'
import { sha256Hex } from '../core/hash.js'
import type { Envelope, EventId } from '../core/events.js'

/** Canonical deterministic bytes of an envelope (DAG-CBOR: sorted map keys, shortest integers, no floats for our fields). */
export function encodeEnvelope (env: Envelope): Uint8Array {
  return dagCbor.encode(env)
}

/** An event's id: the hash of its canonical envelope bytes. Same content, same id. */
export function eventIdOf (envelopeBytes: Uint8Array): EventId {
  return sha256Hex(envelopeBytes) as EventId
}
