/**
 * Strict shape validation of envelopes, bodies and plan parameters.
 *
 * The fold may assume everything checked here, so it never has to guard
 * against a missing field, an extra key, a float, a negative count, an
 * unbounded string or a cyclic split. Every check looks only at the value
 * itself (validity depends only on the event and its deps), and every check is
 * deterministic across nodes and Node versions: string lengths are UTF-16 code
 * units, title comparison folds ASCII case and trims a fixed set of spaces
 * (not the engine's Unicode tables, which change between versions).
 *
 * Each validator returns null when the value is fine, or the first problem in
 * words, prefixed by its path (`split-proposed.subgoals[2].dependsOn: ...`).
 * This module checks the envelope and is where the rest is imported from:
 * the primitives are in ./shape-rules.ts, a goal's parameters in
 * ./shape-params.ts, each event type's body in ./shape-body.ts.
 */
import { FOLDED_VERSIONS, isFoldedVersion, type EventType, type Envelope } from '../core/events.js'
import { MAX_DEPS } from '../core/limits.js'
import { validateBody } from './shape-body.js'
import {
  array,
  describeString,
  describeValue,
  exactKeys,
  hexId,
  isEventType,
  isMap,
  nonNegInt,
  peerId
} from './shape-rules.js'
import type { Obj } from './shape-rules.js'
import { validateSwarmName } from './topics.js'

export { isEventType, isHexId, normalizeTitle } from './shape-rules.js'
export { validateParams } from './shape-params.js'
export { findCycle, validateBody } from './shape-body.js'

/** The envelope's keys, in every protocol version: the frame that lets other versions be stored and relayed. */
export const ENVELOPE_KEYS = ['v', 'swarm', 'type', 'plan', 'author', 'hlc', 'deps', 'body'] as const

/** The part of an envelope every protocol version shares, once {@link validateFrame} passed. */
export interface EnvelopeFrame extends Obj {
  readonly v: number
  readonly swarm: string
  readonly author: string
}

/**
 * Why a value is not an envelope frame of any protocol version, or null: a map
 * with exactly the envelope keys, a non-negative integer version, a string swarm
 * and a string author. Everything else may change between versions, so events
 * of other versions can still be stored, relayed and attributed.
 */
export function validateFrame(value: unknown): string | null {
  if (!isMap(value)) return `envelope: expected a map, got ${describeValue(value)}`
  return (
    exactKeys(value, 'envelope', ENVELOPE_KEYS) ??
    nonNegInt(value.v, 'v') ??
    (typeof value.swarm === 'string' ? null : `swarm: expected a string, got ${describeValue(value.swarm)}`) ??
    (typeof value.author === 'string' ? null : `author: expected a string, got ${describeValue(value.author)}`)
  )
}

/** The deps list: at most MAX_DEPS ids, sorted strictly ascending (so one set of deps has one encoding). */
export function validateDeps(deps: unknown): string | null {
  const a = array(deps, 'deps', 0, MAX_DEPS)
  if (a !== null || !Array.isArray(deps)) return a
  let prev = ''
  for (let i = 0; i < deps.length; i++) {
    const d: unknown = deps[i]
    const p = hexId(d, `deps[${i}]`)
    if (p !== null) return p
    if ((d as string) <= prev) return `deps[${i}]: not after deps[${i - 1}] (deps must be sorted ascending, no repeats)`
    prev = d as string
  }
  return null
}

/**
 * Why a frame of a version this code folds (1 to 4), whose type is known, is
 * malformed, or null: the clock stamp, the plan reference, the deps and the
 * body (by the frame's version). Does not look at the swarm, the author or
 * the signature (the decoder checks those in its own order, with their own
 * reasons).
 */
export function validateEnvelopeRest(frame: EnvelopeFrame, type: EventType): string | null {
  const hlc = frame.hlc
  const h = exactKeys(hlc, 'hlc', ['ms', 'c'])
  if (h !== null || !isMap(hlc)) return h
  return (
    nonNegInt(hlc.ms, 'hlc.ms') ??
    nonNegInt(hlc.c, 'hlc.c') ??
    (type === 'goal-submitted'
      ? frame.plan === ''
        ? null
        : `plan: must be "" for goal-submitted, got ${describeString(frame.plan)}`
      : hexId(frame.plan, 'plan')) ??
    validateDeps(frame.deps) ??
    validateBody(type, frame.body, frame.v)
  )
}

/**
 * Why a value is not a complete, valid envelope of a protocol version this
 * code folds (1 or 2), or null. The one-call form for signers and tests: the decoder runs the same
 * checks piecewise so that each failure gets its own reject reason.
 */
export function validateEnvelope(value: unknown): string | null {
  const f = validateFrame(value)
  if (f !== null) return f
  const frame = value as EnvelopeFrame
  const s = validateSwarmName(frame.swarm)
  if (s !== null) return `swarm: ${s}`
  const a = peerId(frame.author, 'author')
  if (a !== null) return a
  if (!isFoldedVersion(frame.v)) return `v: ${frame.v} is not protocol version ${FOLDED_VERSIONS.join(', ')}`
  if (!isEventType(frame.type)) return `type: unknown event type ${describeString(frame.type)}`
  return validateEnvelopeRest(frame, frame.type)
}

/** Narrowing form of {@link validateEnvelope}. */
export function isValidEnvelope(value: unknown): value is Envelope {
  return validateEnvelope(value) === null
}
