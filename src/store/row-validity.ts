/**
 * What a valid event row is, said three ways that must agree: for a row read
 * from disk (`rowProblem`), as an SQL predicate over a table alias
 * (`validSql`, for one-row lookups that must treat a damaged row as absent),
 * and for a row handed to `put` (`inputProblem`). The schema's CHECK
 * constraints (src/store/sqlite-schema.ts) say it a fourth time.
 */
import type { EventRow } from '../ports/event-store.js'

const HEX_ID = /^[0-9a-f]{64}$/

/**
 * The SQL twin of `rowProblem`: true for a valid row. The two must agree, or
 * `has` would disagree with what `load` delivers (a test pins this).
 */
export function validSql(t: string): string {
  return (
    `(typeof(${t}.id) = 'text' AND length(${t}.id) = 64 AND NOT ${t}.id GLOB '*[^0-9a-f]*' ` +
    `AND typeof(${t}.plan) = 'text' AND typeof(${t}.bytes) = 'blob' AND length(${t}.bytes) > 0)`
  )
}

/** Why a row read from disk is damaged, or undefined if it is valid. */
export function rowProblem(id: unknown, plan: unknown, bytes: unknown): string | undefined {
  if (typeof id !== 'string') return `id is ${describe(id)}, not text`
  if (!HEX_ID.test(id)) return 'id is not 64 lowercase hex characters'
  if (typeof plan !== 'string') return `plan is ${describe(plan)}, not text`
  if (!(bytes instanceof Uint8Array)) return `bytes is ${describe(bytes)}, not a blob`
  if (bytes.byteLength === 0) return 'bytes is an empty blob'
  return undefined
}

function describe(value: unknown): string {
  if (value === null) return 'NULL'
  if (value instanceof Uint8Array) return 'a blob'
  return `a ${typeof value}`
}

/** Why a row handed to `put` is invalid, or undefined. */
export function inputProblem(row: EventRow): string | undefined {
  if (typeof row.id !== 'string' || !HEX_ID.test(row.id))
    return `id ${JSON.stringify(row.id)} is not 64 lowercase hex characters`
  if (typeof row.plan !== 'string') return `plan of ${row.id} is not a string`
  if (!(row.bytes instanceof Uint8Array) || row.bytes.byteLength === 0)
    return `bytes of ${row.id} must be a non-empty Uint8Array`
  if (!Number.isSafeInteger(row.receivedMs)) return `receivedMs of ${row.id} is not an integer`
  return undefined
}
