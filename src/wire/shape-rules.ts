/**
 * The primitive checks every shape rule of the wire is built from: maps with
 * exact keys, bounded integers and strings, ids, peer ids, arrays, and the
 * deterministic title form. Each returns null when the value is fine, or the
 * problem in words prefixed by its path; each looks only at the value, the
 * same way on every node and Node version.
 */
import { EVENT_TYPES, type EventType } from '../core/events.js'
import { isEd25519PeerIdString } from './peer-keys.js'

/** A check's answer: null when the value is fine, or the first problem in words, prefixed by its path. */
export type Problem = string | null
/** A plain map (a decoded CBOR map), read-only. */
export type Obj = Readonly<Record<string, unknown>>

const HEX64 = /^[0-9a-f]{64}$/
const EVENT_TYPE_SET: ReadonlySet<string> = new Set(EVENT_TYPES)

/** Whether a string is one of the event types this code knows. */
export function isEventType(t: unknown): t is EventType {
  return typeof t === 'string' && EVENT_TYPE_SET.has(t)
}

/** Whether a value is an event id (64 lowercase hex characters, as sha256Hex writes them). */
export function isHexId(value: unknown): value is string {
  return typeof value === 'string' && value.length === 64 && HEX64.test(value)
}

/** A plain object (prototype Object or null), as the canonical decoder makes maps: not an array, bytes or a class instance. */
export function isMap(value: unknown): value is Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

/** What a value is, in words for a problem. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (Array.isArray(value)) return 'an array'
  if (value instanceof Uint8Array) return 'bytes'
  if (typeof value === 'number') return Number.isInteger(value) ? `${value}` : `the non-integer ${value}`
  if (typeof value === 'object') return isMap(value) ? 'a map' : 'a non-plain object'
  return `a ${typeof value}`
}

/** The value is a map with exactly these keys. */
export function exactKeys(value: unknown, path: string, keys: readonly string[]): Problem {
  if (!isMap(value)) return `${path}: expected a map, got ${describeValue(value)}`
  for (const key of keys) {
    if (!Object.hasOwn(value, key)) return `${path}: missing key "${key}"`
  }
  const actual = Object.keys(value)
  if (actual.length !== keys.length) {
    const extra = actual.find(k => !keys.includes(k)) ?? '?'
    return `${path}: unexpected key "${extra}"`
  }
  return null
}

/** The value is a map with all of `keys`, any of `optional`, and nothing else. */
export function keysWithin(
  value: unknown,
  path: string,
  keys: readonly string[],
  optional: readonly string[]
): Problem {
  if (!isMap(value)) return `${path}: expected a map, got ${describeValue(value)}`
  for (const key of keys) {
    if (!Object.hasOwn(value, key)) return `${path}: missing key "${key}"`
  }
  const extra = Object.keys(value).find(k => !keys.includes(k) && !optional.includes(k))
  return extra === undefined ? null : `${path}: unexpected key "${extra}"`
}

/** A safe integer (never -0) within min..max. */
export function int(value: unknown, path: string, min: number, max: number): Problem {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || Object.is(value, -0)) {
    return `${path}: expected a safe integer, got ${describeValue(value)}`
  }
  if (value < min || value > max) return `${path}: ${value} is outside ${min}..${max}`
  return null
}

/** A safe integer >= 0. */
export function nonNegInt(value: unknown, path: string): Problem {
  return int(value, path, 0, Number.MAX_SAFE_INTEGER)
}

/** A boolean. */
export function bool(value: unknown, path: string): Problem {
  return typeof value === 'boolean' ? null : `${path}: expected a boolean, got ${describeValue(value)}`
}

/** A well-formed string of at most `max` UTF-16 units that survives the canonical round trip; with `nonEmpty`, not only spaces. */
export function str(value: unknown, path: string, max: number, nonEmpty = false): Problem {
  if (typeof value !== 'string') return `${path}: expected a string, got ${describeValue(value)}`
  if (value.length > max) return `${path}: ${value.length} characters, more than ${max}`
  if (!value.isWellFormed()) return `${path}: not well-formed Unicode (lone surrogate)`
  // Decoders drop a leading byte-order mark, so such a string cannot survive the canonical round trip.
  if (value.charCodeAt(0) === 0xfeff) return `${path}: starts with a byte-order mark (U+FEFF)`
  if (nonEmpty && trimSpaces(value) === '') return `${path}: empty`
  return null
}

/** An event id (see {@link isHexId}). */
export function hexId(value: unknown, path: string): Problem {
  return isHexId(value) ? null : `${path}: expected an id (64 lowercase hex characters), got ${describeString(value)}`
}

/** An event id or null. */
export function nullableHexId(value: unknown, path: string): Problem {
  return value === null ? null : hexId(value, path)
}

/** An Ed25519 peer id string. */
export function peerId(value: unknown, path: string): Problem {
  return isEd25519PeerIdString(value) ? null : `${path}: expected an Ed25519 peer id, got ${describeString(value)}`
}

/** One of the `allowed` strings. */
export function oneOf(value: unknown, path: string, allowed: readonly string[]): Problem {
  return typeof value === 'string' && allowed.includes(value)
    ? null
    : `${path}: expected one of ${allowed.map(a => `"${a}"`).join(', ')}, got ${describeString(value)}`
}

/** A string quoted (and cut at 70 characters) for a problem, or what the value is when it is not a string. */
export function describeString(value: unknown): string {
  if (typeof value !== 'string') return describeValue(value)
  return JSON.stringify(value.length > 70 ? `${value.slice(0, 67)}...` : value)
}

/** An array of min..max items (their contents are the caller's). */
export function array(value: unknown, path: string, min: number, max: number): Problem {
  if (!Array.isArray(value)) return `${path}: expected an array, got ${describeValue(value)}`
  if (value.length < min || value.length > max) return `${path}: ${value.length} items, expected ${min}..${max}`
  return null
}

/** Whitespace that {@link trimSpaces} strips: a fixed list, so validity never depends on the engine's Unicode version. */
const SPACES = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
  0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff
])

/** `s` without the {@link SPACES} at either end (not `trim()`, whose tables change with the engine). */
export function trimSpaces(s: string): string {
  let start = 0
  let end = s.length
  while (start < end && SPACES.has(s.charCodeAt(start))) start++
  while (end > start && SPACES.has(s.charCodeAt(end - 1))) end--
  return s.slice(start, end)
}

/**
 * The form in which two subgoal titles are compared: trimmed of a fixed set of
 * spaces and ASCII-lowercased. Deliberately not `toLowerCase()`, whose Unicode
 * tables differ between engine versions: validity must be the same everywhere.
 */
export function normalizeTitle(title: string): string {
  const t = trimSpaces(title)
  return /[A-Z]/.test(t) ? t.replace(/[A-Z]+/g, m => m.toLowerCase()) : t
}
