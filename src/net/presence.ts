/**
 * Presence: who is in the swarm, in which role, how busy. Gossiped on its own
 * topic and kept in a roster whose entries expire; never part of the plan log.
 *
 * A presence message is `dagCbor(fields) || Ed25519 signature`, signed by the
 * announcing node's own key over a presence domain prefix, so any relay can
 * check it and nobody can announce on another peer's behalf. The signature
 * domain differs from the event domain, so a presence can never pass as an
 * event or the other way round.
 */
import * as dagCbor from '@ipld/dag-cbor'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { MAX_CLOCK_AHEAD_MS } from '../core/limits.js'
import { SIGNATURE_BYTES, joinWire, splitWire } from '../wire/codec.js'
import { ed25519KeyOf } from '../wire/peer-keys.js'
import type { Presence, PresenceInfo } from '../ports/transport.js'

/** What a node says about itself and the signed announcement (the network shell adds peerId, addresses and sentMs): the port's types. */
export type { Presence, PresenceInfo }

/** A whole presence message, signature included; relays reject anything larger. */
export const MAX_PRESENCE_BYTES = 8 * 1024
export const MAX_ROLE_CHARS = 32
export const MAX_CAPABILITIES = 32
export const MAX_CAPABILITY_CHARS = 64
export const MAX_VERSION_CHARS = 64
export const MAX_PRESENCE_ADDRESSES = 16
export const MAX_ADDRESS_CHARS = 256
/** Announcements older than this are stale (replayed or long delayed) and ignored. */
export const MAX_PRESENCE_AGE_MS = 60_000

const ROLE = /^[a-z][a-z0-9-]*$/
const KEYS = ['addresses', 'capabilities', 'load', 'peerId', 'role', 'sentMs', 'version'] as const

/** Why a presence message was refused: `reject` when it is provably bad (penalise the sender), `ignore` when it is merely stale. */
export interface PresenceRefusal {
  readonly ok: false
  readonly verdict: 'reject' | 'ignore'
  readonly reason: string
}

export type PresenceResult = { readonly ok: true; readonly presence: Presence } | PresenceRefusal

/** The bytes a presence signature covers: `utf8("plan-swarm/1/<swarm>/presence\n")` then the CBOR. */
export function presenceSignedMessage(swarm: string, body: Uint8Array): Uint8Array {
  const domain = new TextEncoder().encode(`plan-swarm/1/${swarm}/presence\n`)
  const out = new Uint8Array(domain.length + body.length)
  out.set(domain, 0)
  out.set(body, domain.length)
  return out
}

/** The problem with a presence's fields, or null when they are within bounds. */
export function validatePresence(p: Record<string, unknown>): string | null {
  const keys = Object.keys(p).sort()
  if (keys.length !== KEYS.length || keys.some((k, i) => k !== KEYS[i]))
    return `fields are [${keys.join(',')}], expected [${KEYS.join(',')}]`
  const { role, capabilities, load, version, addresses, sentMs } = p
  if (typeof role !== 'string' || role.length > MAX_ROLE_CHARS || !ROLE.test(role))
    return 'role must be a lowercase word'
  if (!isStringList(capabilities, MAX_CAPABILITIES, MAX_CAPABILITY_CHARS))
    return `capabilities must be at most ${MAX_CAPABILITIES} strings of at most ${MAX_CAPABILITY_CHARS} characters`
  if (typeof load !== 'number' || !Number.isFinite(load) || load < 0) return 'load must be a finite number >= 0'
  if (typeof version !== 'string' || version.length > MAX_VERSION_CHARS)
    return `version must be a string of at most ${MAX_VERSION_CHARS} characters`
  if (!isStringList(addresses, MAX_PRESENCE_ADDRESSES, MAX_ADDRESS_CHARS))
    return `addresses must be at most ${MAX_PRESENCE_ADDRESSES} strings of at most ${MAX_ADDRESS_CHARS} characters`
  if (typeof sentMs !== 'number' || !Number.isSafeInteger(sentMs) || sentMs < 0)
    return 'sentMs must be a non-negative integer'
  if (typeof p.peerId !== 'string' || ed25519KeyOf(p.peerId) === null) return 'peerId must be an Ed25519 peer id'
  return null
}

function isStringList(v: unknown, maxItems: number, maxChars: number): v is string[] {
  return Array.isArray(v) && v.length <= maxItems && v.every(s => typeof s === 'string' && s.length <= maxChars)
}

/**
 * Signs a presence with the node's key and returns its wire bytes.
 * Addresses beyond MAX_PRESENCE_ADDRESSES are dropped (a node on many
 * interfaces announces the first ones); anything else out of bounds throws.
 */
export async function encodePresence(
  swarm: string,
  info: PresenceInfo,
  addresses: readonly string[],
  sentMs: number,
  key: PrivateKey
): Promise<Uint8Array> {
  const presence = {
    peerId: peerIdFromPrivateKey(key).toString(),
    role: info.role,
    capabilities: [...info.capabilities],
    load: info.load,
    version: info.version,
    addresses: addresses.filter(a => a.length <= MAX_ADDRESS_CHARS).slice(0, MAX_PRESENCE_ADDRESSES),
    sentMs: Math.floor(sentMs)
  }
  const problem = validatePresence(presence)
  if (problem !== null) throw new RangeError(`refusing to announce an invalid presence: ${problem}`)
  const body = dagCbor.encode(presence)
  const signature = await key.sign(presenceSignedMessage(swarm, body))
  const bytes = joinWire(body, signature)
  if (bytes.length > MAX_PRESENCE_BYTES)
    throw new RangeError(`refusing to announce a presence of ${bytes.length} bytes (max ${MAX_PRESENCE_BYTES})`)
  return bytes
}

/**
 * Checks presence wire bytes: size, shape, signature by the peer it names,
 * and freshness against the local clock (at most `maxAgeMs` old: gossip
 * delivers at once; a roster exchange relays announcements up to a TTL
 * old). Never throws.
 */
export async function decodePresence(
  swarm: string,
  bytes: Uint8Array,
  nowMs: number,
  maxAgeMs = MAX_PRESENCE_AGE_MS
): Promise<PresenceResult> {
  if (bytes.length > MAX_PRESENCE_BYTES)
    return refuse('reject', `presence of ${bytes.length} bytes exceeds ${MAX_PRESENCE_BYTES}`)
  const parts = splitWire(bytes)
  if (parts === null)
    return refuse('reject', `presence of ${bytes.length} bytes is too short for a ${SIGNATURE_BYTES}-byte signature`)
  let decoded: unknown
  try {
    decoded = dagCbor.decode(parts.envelopeBytes)
  } catch (err) {
    return refuse('reject', `presence is not DAG-CBOR: ${(err as Error).message}`)
  }
  if (typeof decoded !== 'object' || decoded === null || Array.isArray(decoded))
    return refuse('reject', 'presence is not a map')
  const fields = decoded as Record<string, unknown>
  const problem = validatePresence(fields)
  if (problem !== null) return refuse('reject', problem)
  const p = fields as unknown as Presence
  const key = ed25519KeyOf(p.peerId)
  if (key === null) return refuse('reject', 'peerId is not an Ed25519 peer id')
  let ok = false
  try {
    ok = await key.verify(presenceSignedMessage(swarm, parts.envelopeBytes), parts.signature)
  } catch {
    ok = false
  }
  if (!ok) return refuse('reject', `signature does not verify for ${p.peerId}`)
  if (p.sentMs > nowMs + MAX_CLOCK_AHEAD_MS) return refuse('ignore', `sent ${p.sentMs - nowMs} ms in the future`)
  if (p.sentMs < nowMs - maxAgeMs) return refuse('ignore', `sent ${nowMs - p.sentMs} ms ago`)
  return { ok: true, presence: p }
}

function refuse(verdict: 'reject' | 'ignore', reason: string): PresenceRefusal {
  return { ok: false, verdict, reason }
}
