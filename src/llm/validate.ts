/**
 * Strict validation of a model's tool input. An answer that passes becomes an
 * event body the wire accepts as it is (src/wire/shape.ts); an answer that
 * does not is never repaired by cutting it down: the problem, in words the
 * model can act on, goes back to the model for another try.
 *
 * Two things are normalised because they do not change meaning: dependsOn is
 * sorted ascending (the wire's canonical form), and keys the schema does not
 * name are ignored (the values built here carry only the known fields).
 */
import { PROTOCOL_VERSION, PROTOCOL_VERSION_3, type Subgoal } from '../core/events.js'
import {
  MAX_DETAIL_CHARS,
  MAX_NEEDS,
  MAX_EVENT_BYTES,
  MAX_NOTES_CHARS,
  MAX_OUTPUT_CHARS,
  MAX_RATIONALE_CHARS,
  MAX_SCORE,
  MAX_SUBGOALS,
  MAX_TITLE_CHARS,
  MIN_SUBGOALS
} from '../core/limits.js'
import { findCycle, normalizeTitle, validateBody } from '../wire/shape.js'

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string }

/**
 * A split's or a ballot's texts are capped field by field, but seven details
 * and a rationale of multi-byte text can still outgrow one event: the answer
 * as a whole must leave MAX_EVENT_BYTES room for the envelope (ids, deps,
 * author, signature).
 */
export const MAX_ANSWER_BYTES = MAX_EVENT_BYTES - 16 * 1024

const encoder = new TextEncoder()
const WIRE_PLACEHOLDER_ID = '0'.repeat(64)

function utf8Bytes(s: string): number {
  return encoder.encode(s).length
}

function fail<T>(problem: string): Checked<T> {
  return { ok: false, problem }
}

function isRecord(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing (the field is missing)'
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v)}`
  if (typeof v === 'number') return `the number ${v}`
  return `a ${typeof v}`
}

/** Why a string field is unusable, or null: type, length in UTF-16 units (as the wire counts), well-formedness. */
export function textProblem(value: unknown, path: string, max: number, nonEmpty = false): string | null {
  if (typeof value !== 'string') return `${path}: expected a string, got ${describe(value)}`
  if (value.length > max) return `${path}: ${value.length} characters, more than the limit of ${max}; write it shorter`
  if (!value.isWellFormed()) return `${path}: not well-formed Unicode (lone surrogate)`
  if (value.charCodeAt(0) === 0xfeff) return `${path}: starts with a byte-order mark`
  if (nonEmpty && normalizeTitle(value) === '') return `${path}: empty`
  return null
}

export interface SplitAnswer {
  readonly subgoals: readonly Subgoal[]
  readonly rationale: string
}

/** A split: min..max subgoals (within 2..7), unique titles, valid acyclic dependsOn, texts within caps. */
export function checkSplit(
  input: unknown,
  minChildren: number,
  maxChildren: number,
  offered: readonly string[] = []
): Checked<SplitAnswer> {
  const min = Math.max(minChildren, MIN_SUBGOALS)
  const max = Math.min(maxChildren, MAX_SUBGOALS)
  if (!isRecord(input)) return fail(`expected an object with "subgoals" and "rationale", got ${describe(input)}`)
  const list = input.subgoals
  if (!Array.isArray(list)) return fail(`subgoals: expected an array, got ${describe(list)}`)
  if (list.length < min || list.length > max)
    return fail(`subgoals: ${list.length} subgoals, expected ${min} to ${max}`)
  const n = list.length
  const subgoals: Subgoal[] = []
  const titles = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    const p = `subgoals[${i}]`
    const s: unknown = list[i]
    if (!isRecord(s)) return fail(`${p}: expected an object, got ${describe(s)}`)
    const t =
      textProblem(s.title, `${p}.title`, MAX_TITLE_CHARS, true) ??
      textProblem(s.detail, `${p}.detail`, MAX_DETAIL_CHARS)
    if (t !== null) return fail(t)
    if (typeof s.leaf !== 'boolean') return fail(`${p}.leaf: expected true or false, got ${describe(s.leaf)}`)
    const title = s.title as string
    const twin = titles.get(normalizeTitle(title))
    if (twin !== undefined) return fail(`${p}.title: same as the title of subgoals[${twin}]; titles must be unique`)
    titles.set(normalizeTitle(title), i)
    const deps = s.dependsOn
    if (!Array.isArray(deps)) return fail(`${p}.dependsOn: expected an array of indexes, got ${describe(deps)}`)
    const seen = new Set<number>()
    for (const d of deps as unknown[]) {
      if (typeof d !== 'number' || !Number.isSafeInteger(d) || Object.is(d, -0))
        return fail(`${p}.dependsOn: expected integer indexes, got ${describe(d)}`)
      if (d < 0 || d >= n)
        return fail(`${p}.dependsOn: index ${d} is out of range (there are ${n} subgoals, indexes 0..${n - 1})`)
      if (d === i) return fail(`${p}.dependsOn: a subgoal cannot depend on itself`)
      if (seen.has(d)) return fail(`${p}.dependsOn: index ${d} is listed twice`)
      seen.add(d)
    }
    const needs = s.needs
    if (needs !== undefined && offered.length > 0) {
      if (!Array.isArray(needs) || needs.some(x => typeof x !== 'string' || !offered.includes(x)))
        return fail(`${p}.needs: expected names from the offered tools (${offered.join(', ')}), got ${describe(needs)}`)
    }
    const kept = offered.length === 0 || !Array.isArray(needs) ? [] : [...new Set(needs as string[])].sort()
    subgoals.push({
      title,
      detail: s.detail as string,
      leaf: s.leaf,
      dependsOn: [...seen].sort((a, b) => a - b),
      ...(kept.length > 0 ? { needs: kept.slice(0, MAX_NEEDS) } : {})
    })
  }
  const cycle = findCycle(subgoals.map(s => s.dependsOn))
  if (cycle !== null)
    return fail(`subgoals: dependsOn has a cycle through subgoals[${cycle}]; dependencies must form no loop`)
  const r = textProblem(input.rationale, 'rationale', MAX_RATIONALE_CHARS)
  if (r !== null) return fail(r)
  const value = { subgoals, rationale: input.rationale as string }
  const bytes = utf8Bytes(JSON.stringify(value))
  if (bytes > MAX_ANSWER_BYTES)
    return fail(
      `the split is ${bytes} bytes of UTF-8, more than ${MAX_ANSWER_BYTES}; write the details and rationale shorter`
    )
  // The wire's own check, last: whatever passes here is publishable as it is.
  const wire = validateBody(
    'split-proposed',
    {
      node: WIRE_PLACEHOLDER_ID,
      attempt: 1,
      subgoals,
      rationale: value.rationale,
      usage: { inputTokens: 0, outputTokens: 0 }
    },
    subgoals.some(x => x.needs !== undefined) ? PROTOCOL_VERSION_3 : PROTOCOL_VERSION
  )
  if (wire !== null) return fail(wire.replace(/^split-proposed\./, ''))
  return { ok: true, value }
}

/** A node on a cycle of the graph (node -> dependencies), or null when acyclic: the wire's own check. */
export { findCycle }

export interface ScoreAnswer {
  readonly scores: ReadonlyArray<{ readonly proposal: string; readonly score: number; readonly notes: string }>
  readonly choice: string | null
  readonly notes: string
}

/**
 * Scores: exactly one integer 0..100 per proposal; a choice that is one of the
 * proposals or null. Proposals may be named by label (P1) or by id; the answer
 * names them by id, in the order given.
 */
export function checkScore(input: unknown, labels: readonly string[], ids: readonly string[]): Checked<ScoreAnswer> {
  if (!isRecord(input)) return fail(`expected an object with "scores", "choice" and "notes", got ${describe(input)}`)
  const resolve = (ref: unknown): number => {
    if (typeof ref !== 'string') return -1
    const byLabel = labels.indexOf(ref.trim())
    return byLabel >= 0 ? byLabel : ids.indexOf(ref)
  }
  const list = input.scores
  if (!Array.isArray(list)) return fail(`scores: expected an array, got ${describe(list)}`)
  const byIndex = new Array<{ proposal: string; score: number; notes: string } | undefined>(ids.length)
  for (let i = 0; i < list.length; i++) {
    const p = `scores[${i}]`
    const s: unknown = list[i]
    if (!isRecord(s)) return fail(`${p}: expected an object, got ${describe(s)}`)
    const k = resolve(s.proposal)
    if (k < 0) return fail(`${p}.proposal: ${describe(s.proposal)} is not one of ${labels.join(', ')}`)
    if (byIndex[k] !== undefined) return fail(`${p}.proposal: ${labels[k] ?? ''} is scored twice`)
    const score = s.score
    if (typeof score !== 'number' || !Number.isSafeInteger(score) || score < 0 || score > MAX_SCORE) {
      return fail(`${p}.score: expected an integer from 0 to ${MAX_SCORE}, got ${describe(score)}`)
    }
    const t = textProblem(s.notes, `${p}.notes`, MAX_NOTES_CHARS)
    if (t !== null) return fail(t)
    byIndex[k] = { proposal: ids[k] as string, score: Object.is(score, -0) ? 0 : score, notes: s.notes as string }
  }
  const missing = labels.filter((_l, i) => byIndex[i] === undefined)
  if (missing.length > 0) return fail(`scores: no score for ${missing.join(', ')}; score every proposal exactly once`)
  let choice: string | null = null
  if (input.choice !== null) {
    const k = resolve(input.choice)
    if (k < 0)
      return fail(`choice: ${describe(input.choice)} is not one of ${labels.join(', ')} (use null to accept none)`)
    choice = ids[k] as string
  }
  const t = textProblem(input.notes, 'notes', MAX_NOTES_CHARS)
  if (t !== null) return fail(t)
  const value = { scores: byIndex as ScoreAnswer['scores'], choice, notes: input.notes as string }
  const bytes = utf8Bytes(JSON.stringify(value))
  if (bytes > MAX_ANSWER_BYTES)
    return fail(`the scores are ${bytes} bytes of UTF-8, more than ${MAX_ANSWER_BYTES}; write the notes shorter`)
  return { ok: true, value }
}

/** An output: non-empty and within MAX_OUTPUT_CHARS (which the core sizes so that any such output fits one event). */
export function checkOutput(input: unknown): Checked<{ output: string }> {
  if (!isRecord(input)) return fail(`expected an object with "output", got ${describe(input)}`)
  const t = textProblem(input.output, 'output', MAX_OUTPUT_CHARS, true)
  if (t !== null) return fail(t)
  return { ok: true, value: { output: input.output as string } }
}

export function checkReview(input: unknown): Checked<{ verdict: 'accept' | 'reject'; notes: string }> {
  if (!isRecord(input)) return fail(`expected an object with "verdict" and "notes", got ${describe(input)}`)
  const v = input.verdict
  if (v !== 'accept' && v !== 'reject') return fail(`verdict: expected "accept" or "reject", got ${describe(v)}`)
  const t = textProblem(input.notes, 'notes', MAX_NOTES_CHARS)
  if (t !== null) return fail(t)
  return { ok: true, value: { verdict: v, notes: input.notes as string } }
}
