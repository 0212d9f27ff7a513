/**
 * The wire layer's public API: canonical encoding, signing, checked decoding,
 * shape rules and network names. Everything here is pure (no I/O, no clock).
 */
export {
  encodeEnvelope,
  eventIdOf,
  eventIdOfWire,
  joinWire,
  splitWire,
  signatureDomain,
  signedMessage,
  SIGNATURE_BYTES
} from './codec.js'
export { ed25519KeyOf, isEd25519PeerIdString, ED25519_PEER_ID_CHARS, PEER_KEY_CACHE_SIZE } from './peer-keys.js'
export {
  validateEnvelope,
  isValidEnvelope,
  validateFrame,
  validateEnvelopeRest,
  validateBody,
  validateDeps,
  validateParams,
  isEventType,
  isHexId,
  normalizeTitle,
  ENVELOPE_KEYS
} from './shape.js'
export type { EnvelopeFrame } from './shape.js'
export { decodeEvent, WIRE_REJECT_REASONS } from './decode.js'
export type {
  DecodeResult,
  DecodeOptions,
  DecodedEvent,
  OtherVersionEvent,
  SignatureVerifier,
  WireRejection,
  WireRejectReason
} from './decode.js'
export { signEvent, signEventSync, signRawSync } from './sign.js'
export type { SignedEvent } from './sign.js'
export { eventsTopic, presenceTopic, SYNC_PROTOCOL, validateSwarmName } from './topics.js'
