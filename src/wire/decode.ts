/**
 * Wire bytes to checked events: the one gate every event passes, whether it
 * came by gossip, by sync or from our own store.
 *
 * A provably bad event becomes a rejection value with a reason (a metrics
 * label, and the signal for gossipsub to penalise the sender); decodeEvent
 * never throws on any input. Events of a protocol version this code does not
 * fold (neither 1 nor 2) are returned for storing and relaying, but not as
 * plan events, so the fold never sees them.
 */
import * as dagCbor from '@ipld/dag-cbor'
import { isFoldedVersion, type EventId, type PeerIdString, type PlanEvent } from '../core/events.js'
import { MAX_EVENT_BYTES } from '../core/limits.js'
import { SIGNATURE_BYTES, eventIdOf, signedMessage } from './codec.js'
import { NOT_HANDLED, decodeCanonicalSubset } from './canonical-cbor.js'
import { ed25519KeyOf } from './peer-keys.js'
import { isEventType, validateDeps, validateEnvelopeRest, validateFrame, type EnvelopeFrame } from './shape.js'

/** Every reason the wire rejects an event for, in check order: the label values of the rejection metric. */
export const WIRE_REJECT_REASONS = [
  'oversized',
  'undecodable',
  'not-canonical',
  'wrong-swarm',
  'bad-signature',
  'unknown-type',
  'wrong-shape'
] as const

/** Why the wire rejected an event. Each is provable from the bytes alone, so a rejection is final. */
export type WireRejectReason = (typeof WIRE_REJECT_REASONS)[number]

/** A well-signed event of a protocol version this code does not fold: kept and relayed (so newer peers still get it), never folded. */
export interface OtherVersionEvent {
  readonly kind: 'other-version'
  readonly id: EventId
  readonly v: number
  readonly author: PeerIdString
  /** The envelope's plan field when it is a string, else ''. */
  readonly plan: string
  /** The envelope's deps when they have this version's form (sorted ids), else []. */
  readonly deps: readonly EventId[]
  readonly bytes: Uint8Array
}

/** A checked event of a version this code folds (1 to 4), with the wire bytes it came in (to store and relay as they are). */
export interface DecodedEvent {
  readonly kind: 'event'
  readonly event: PlanEvent
  readonly bytes: Uint8Array
}

export interface WireRejection {
  readonly kind: 'rejected'
  readonly reason: WireRejectReason
  /** The problem in words, for logs and tests (e.g. `split-proposed.subgoals[2].dependsOn: index 5 out of range`). */
  readonly detail: string
}

export type DecodeResult = DecodedEvent | OtherVersionEvent | WireRejection

export interface DecodeOptions {
  /** The swarm this node is in: events signed for another swarm are rejected. */
  readonly swarm: string
  /**
   * Check the signature (default true). Only false for bytes this node has
   * already checked, such as its own store being reloaded: every event from
   * the network is verified, gossip and sync alike.
   */
  readonly verify?: boolean
  /**
   * Checks an Ed25519 signature; default: @libp2p/crypto's. The runtime
   * passes Node's native check with the author's key object kept between
   * events (the default rebuilds it from the raw key every time).
   */
  readonly verifier?: SignatureVerifier
}

/** Whether `signature` is `author`'s (raw 32-byte Ed25519 `publicKey`) over `message`. */
export type SignatureVerifier = (
  author: string,
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array
) => boolean

function reject(reason: WireRejectReason, detail: string): WireRejection {
  return { kind: 'rejected', reason, detail }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return false
  }
  return true
}

/**
 * The bytes to keep: the input itself, or a copy when it is a view into a
 * larger buffer (a stream chunk, Node's Buffer pool), so a stored event does
 * not pin memory it does not use.
 */
function owned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice()
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/**
 * The reference check of canonical form: decode with @ipld/dag-cbor, encode
 * again, demand the same bytes. Used for whatever the fast decoder does not
 * handle, so every rejection for encoding comes from here.
 */
function decodeReference(envelopeBytes: Uint8Array): { kind: 'value'; value: unknown } | WireRejection {
  let value: unknown
  try {
    value = dagCbor.decode(envelopeBytes)
  } catch (err) {
    const text = message(err)
    // The strict decoder refuses integers (and lengths) not in their shortest form: that is a canonicality failure.
    return reject(text.includes('(strict decode)') ? 'not-canonical' : 'undecodable', text)
  }
  let again: Uint8Array
  try {
    again = dagCbor.encode(value)
  } catch (err) {
    return reject('not-canonical', `does not re-encode: ${message(err)}`)
  }
  if (!sameBytes(again, envelopeBytes))
    return reject('not-canonical', 'bytes differ from the canonical DAG-CBOR re-encoding')
  return { kind: 'value', value }
}

/**
 * Decode and check one event's wire bytes (`envelope || signature`).
 *
 * Checks, in order, each with its reason: size (oversized), room for a
 * signature and DAG-CBOR decoding (undecodable), byte-identical re-encoding
 * (not-canonical: no two encodings of one event), the envelope frame
 * (wrong-shape), the swarm (wrong-swarm), the author's peer id (wrong-shape),
 * the signature (bad-signature), the version (other-version, not a
 * rejection, for any version but 1 and 2), the type (unknown-type), and the
 * rest of the shape by the envelope's version (wrong-shape).
 *
 * Needs a synchronous Ed25519 verifier, which @libp2p/crypto has on Node; it
 * throws only if that assumption breaks (a programming error, not a bad event).
 */
export function decodeEvent(bytes: Uint8Array, opts: DecodeOptions): DecodeResult {
  if (!(bytes instanceof Uint8Array)) return reject('undecodable', 'not a byte array')
  if (bytes.length > MAX_EVENT_BYTES) return reject('oversized', `${bytes.length} bytes, more than ${MAX_EVENT_BYTES}`)
  if (bytes.length <= SIGNATURE_BYTES) {
    return reject(
      'undecodable',
      `${bytes.length} bytes, too short for an envelope and a ${SIGNATURE_BYTES}-byte signature`
    )
  }
  const cut = bytes.length - SIGNATURE_BYTES
  const envelopeBytes = bytes.subarray(0, cut)
  const signature = bytes.subarray(cut)

  // Fast path: every event this code signs is in the subset it reads; anything else gets the reference check.
  let value = decodeCanonicalSubset(envelopeBytes)
  if (value === NOT_HANDLED) {
    const reference = decodeReference(envelopeBytes)
    if (reference.kind === 'rejected') return reference
    value = reference.value
  }

  const frameProblem = validateFrame(value)
  if (frameProblem !== null) return reject('wrong-shape', frameProblem)
  const frame = value as EnvelopeFrame
  if (frame.swarm !== opts.swarm)
    return reject(
      'wrong-swarm',
      `signed for swarm ${JSON.stringify(frame.swarm.slice(0, 80))}, not ${JSON.stringify(opts.swarm)}`
    )
  const key = ed25519KeyOf(frame.author)
  if (key === null)
    return reject(
      'wrong-shape',
      `author: expected an Ed25519 peer id, got ${JSON.stringify(frame.author.slice(0, 80))}`
    )

  if (opts.verify !== false) {
    let ok: boolean | Promise<boolean>
    try {
      const msg = signedMessage(frame.swarm, envelopeBytes)
      ok =
        opts.verifier !== undefined ? opts.verifier(frame.author, key.raw, msg, signature) : key.verify(msg, signature)
    } catch (err) {
      return reject('bad-signature', message(err))
    }
    if (typeof ok !== 'boolean') {
      throw new Error('decodeEvent needs a synchronous Ed25519 verifier (@libp2p/crypto on Node)')
    }
    if (!ok) return reject('bad-signature', `signature does not verify for author ${frame.author}`)
  }

  const id = eventIdOf(envelopeBytes)
  if (!isFoldedVersion(frame.v)) {
    return {
      kind: 'other-version',
      id,
      v: frame.v,
      author: frame.author as PeerIdString,
      plan: typeof frame.plan === 'string' ? frame.plan : '',
      deps: validateDeps(frame.deps) === null ? (frame.deps as EventId[]) : [],
      bytes: owned(bytes)
    }
  }
  const type = frame.type
  if (typeof type !== 'string')
    return reject('wrong-shape', `type: expected a string, got ${type === null ? 'null' : typeof type}`)
  if (!isEventType(type)) return reject('unknown-type', `type: unknown event type ${JSON.stringify(type.slice(0, 80))}`)
  const problem = validateEnvelopeRest(frame, type)
  if (problem !== null) return reject('wrong-shape', problem)
  return { kind: 'event', event: { id, env: value as PlanEvent['env'] }, bytes: owned(bytes) }
}
