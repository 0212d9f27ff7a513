/**
 * Envelopes to signed wire bytes: the only way this node's events are made.
 *
 * The checked signers refuse (throw on) anything the decoder would reject, so
 * a bug shows up here, at its source, rather than as peers penalising us for
 * invalid gossip. These throws are programming errors, not event rejections.
 */
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import type { Envelope, PlanEvent } from '../core/events.js'
import { MAX_EVENT_BYTES } from '../core/limits.js'
import { SIGNATURE_BYTES, encodeEnvelope, eventIdOf, joinWire, signedMessage } from './codec.js'
import { validateEnvelope } from './shape.js'

/** A freshly signed event and its wire bytes (`envelope || signature`), ready to store and publish. */
export interface SignedEvent {
  readonly event: PlanEvent
  readonly bytes: Uint8Array
}

const authorOfKey = new WeakMap<PrivateKey, string>()

function authorOf(key: PrivateKey): string {
  let author = authorOfKey.get(key)
  if (author === undefined) {
    if (key.type !== 'Ed25519') throw new Error(`signing needs an Ed25519 key, got ${key.type}`)
    author = peerIdFromPrivateKey(key).toString()
    authorOfKey.set(key, author)
  }
  return author
}

/** Check the envelope and encode it; throws when it is not one this code would accept from a peer. */
function prepare(env: Envelope, key: PrivateKey): Uint8Array {
  const author = authorOf(key)
  if (env.author !== author) throw new Error(`envelope author ${env.author} is not the signing key's peer id ${author}`)
  const problem = validateEnvelope(env)
  if (problem !== null) throw new Error(`refusing to sign an invalid ${env.type} envelope: ${problem}`)
  const envelopeBytes = encodeEnvelope(env)
  if (envelopeBytes.length + SIGNATURE_BYTES > MAX_EVENT_BYTES) {
    throw new Error(
      `refusing to sign a ${env.type} event of ${envelopeBytes.length + SIGNATURE_BYTES} bytes (max ${MAX_EVENT_BYTES})`
    )
  }
  return envelopeBytes
}

function finish(env: Envelope, envelopeBytes: Uint8Array, signature: Uint8Array): SignedEvent {
  return { event: { id: eventIdOf(envelopeBytes), env }, bytes: joinWire(envelopeBytes, signature) }
}

/**
 * Sign an envelope with its author's Ed25519 key. Throws if the key is not the
 * author's, the envelope is malformed (see validateEnvelope), or the event
 * would be oversized. The returned event's id is the same one every peer
 * computes from the bytes.
 */
export async function signEvent(env: Envelope, key: PrivateKey): Promise<SignedEvent> {
  const envelopeBytes = prepare(env, key)
  const signature = await key.sign(signedMessage(env.swarm, envelopeBytes))
  return finish(env, envelopeBytes, signature)
}

/**
 * {@link signEvent} without a promise, for loops that sign many events (tests,
 * benchmarks, simulators). @libp2p/crypto signs Ed25519 synchronously on Node;
 * where it does not, this throws.
 */
export function signEventSync(env: Envelope, key: PrivateKey): SignedEvent {
  const envelopeBytes = prepare(env, key)
  const signature = key.sign(signedMessage(env.swarm, envelopeBytes))
  if (!(signature instanceof Uint8Array)) throw new Error('this key signs asynchronously: use signEvent')
  return finish(env, envelopeBytes, signature)
}

/**
 * Sign arbitrary envelope bytes for a swarm, with no checks at all, and return
 * the wire bytes. For tests and tools that must build the hostile events the
 * checked signers refuse (non-canonical, wrong shape, another version).
 */
export function signRawSync(swarm: string, envelopeBytes: Uint8Array, key: PrivateKey): Uint8Array {
  const signature = key.sign(signedMessage(swarm, envelopeBytes))
  if (!(signature instanceof Uint8Array)) throw new Error('this key signs asynchronously')
  return joinWire(envelopeBytes, signature)
}
