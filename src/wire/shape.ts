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
 */
import {
  APPROVE_FOR,
  EVENT_TYPES,
  EXECUTORS,
  PROTOCOL_VERSION,
  PROTOCOL_VERSION_2,
  PROTOCOL_VERSION_3,
  PROTOCOL_VERSION_4,
  FOLDED_VERSIONS,
  hasToolFields,
  isFoldedVersion,
  majority,
  type EventType,
  type Envelope
} from '../core/events.js'
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_CLAIM_MS_LIMIT,
  MAX_COMMITTEE,
  MAX_DEPS,
  MAX_DEPTH_LIMIT,
  MAX_DETAIL_CHARS,
  MAX_GOAL_CHARS,
  MAX_LEASE_MS,
  MAX_MODEL_CHARS,
  MAX_NODES_LIMIT,
  MAX_RETAIN_DAYS,
  MAX_NOTES_CHARS,
  MAX_OUTPUT_CHARS,
  MAX_RATIONALE_CHARS,
  MAX_REASON_CHARS,
  MAX_SCORE,
  MAX_SUBGOALS,
  MAX_TITLE_CHARS,
  MAX_TOKENS_LIMIT,
  MIN_LEASE_MS,
  MIN_SUBGOALS,
  MAX_CLAIMS_PER_EXECUTOR_LIMIT,
  MAX_NEED_CHARS,
  MAX_NEEDS,
  MAX_TOOL_ARGS_CHARS,
  MAX_TOOL_ERROR_CHARS,
  MAX_TOOL_MS,
  MAX_TOOL_NAME_CHARS,
  MAX_TOOL_RECORDS,
  MAX_TURNS,
  NEED_PATTERN
} from '../core/limits.js'
import { isEd25519PeerIdString } from './peer-keys.js'
import { validateSwarmName } from './topics.js'

/** The most live claims per plan a goal may allow one executor. */

/** The envelope's keys, in every protocol version: the frame that lets other versions be stored and relayed. */
export const ENVELOPE_KEYS = ['v', 'swarm', 'type', 'plan', 'author', 'hlc', 'deps', 'body'] as const

type Problem = string | null
type Obj = Readonly<Record<string, unknown>>

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

// ---------------------------------------------------------------- primitives

function isMap(value: unknown): value is Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (Array.isArray(value)) return 'an array'
  if (value instanceof Uint8Array) return 'bytes'
  if (typeof value === 'number') return Number.isInteger(value) ? `${value}` : `the non-integer ${value}`
  if (typeof value === 'object') return isMap(value) ? 'a map' : 'a non-plain object'
  return `a ${typeof value}`
}

/** The value is a map with exactly these keys. */
function exactKeys(value: unknown, path: string, keys: readonly string[]): Problem {
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
function keysWithin(value: unknown, path: string, keys: readonly string[], optional: readonly string[]): Problem {
  if (!isMap(value)) return `${path}: expected a map, got ${describeValue(value)}`
  for (const key of keys) {
    if (!Object.hasOwn(value, key)) return `${path}: missing key "${key}"`
  }
  const extra = Object.keys(value).find(k => !keys.includes(k) && !optional.includes(k))
  return extra === undefined ? null : `${path}: unexpected key "${extra}"`
}

function int(value: unknown, path: string, min: number, max: number): Problem {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || Object.is(value, -0)) {
    return `${path}: expected a safe integer, got ${describeValue(value)}`
  }
  if (value < min || value > max) return `${path}: ${value} is outside ${min}..${max}`
  return null
}

function nonNegInt(value: unknown, path: string): Problem {
  return int(value, path, 0, Number.MAX_SAFE_INTEGER)
}

function bool(value: unknown, path: string): Problem {
  return typeof value === 'boolean' ? null : `${path}: expected a boolean, got ${describeValue(value)}`
}

function str(value: unknown, path: string, max: number, nonEmpty = false): Problem {
  if (typeof value !== 'string') return `${path}: expected a string, got ${describeValue(value)}`
  if (value.length > max) return `${path}: ${value.length} characters, more than ${max}`
  if (!value.isWellFormed()) return `${path}: not well-formed Unicode (lone surrogate)`
  // Decoders drop a leading byte-order mark, so such a string cannot survive the canonical round trip.
  if (value.charCodeAt(0) === 0xfeff) return `${path}: starts with a byte-order mark (U+FEFF)`
  if (nonEmpty && trimSpaces(value) === '') return `${path}: empty`
  return null
}

function hexId(value: unknown, path: string): Problem {
  return isHexId(value) ? null : `${path}: expected an id (64 lowercase hex characters), got ${describeString(value)}`
}

function nullableHexId(value: unknown, path: string): Problem {
  return value === null ? null : hexId(value, path)
}

function peerId(value: unknown, path: string): Problem {
  return isEd25519PeerIdString(value) ? null : `${path}: expected an Ed25519 peer id, got ${describeString(value)}`
}

function oneOf(value: unknown, path: string, allowed: readonly string[]): Problem {
  return typeof value === 'string' && allowed.includes(value)
    ? null
    : `${path}: expected one of ${allowed.map(a => `"${a}"`).join(', ')}, got ${describeString(value)}`
}

function describeString(value: unknown): string {
  if (typeof value !== 'string') return describeValue(value)
  return JSON.stringify(value.length > 70 ? `${value.slice(0, 67)}...` : value)
}

function array(value: unknown, path: string, min: number, max: number): Problem {
  if (!Array.isArray(value)) return `${path}: expected an array, got ${describeValue(value)}`
  if (value.length < min || value.length > max) return `${path}: ${value.length} items, expected ${min}..${max}`
  return null
}

/** Whitespace that {@link trimSpaces} strips: a fixed list, so validity never depends on the engine's Unicode version. */
const SPACES = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
  0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff
])

function trimSpaces(s: string): string {
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

// ---------------------------------------------------------------- composite fields

const USAGE_KEYS = ['inputTokens', 'outputTokens']

function usage(value: unknown, path: string): Problem {
  const k = exactKeys(value, path, USAGE_KEYS)
  if (k !== null || !isMap(value)) return k
  return (
    int(value.inputTokens, `${path}.inputTokens`, 0, MAX_TOKENS_LIMIT) ??
    int(value.outputTokens, `${path}.outputTokens`, 0, MAX_TOKENS_LIMIT)
  )
}

function attempt(value: unknown, path: string): Problem {
  return int(value, path, 1, MAX_ATTEMPTS_LIMIT)
}

/** A committee: 1..MAX_COMMITTEE distinct Ed25519 peer ids, and a quorum that is at least a strict majority of it. */
function committeeAndQuorum(committee: unknown, quorum: unknown, path: string): Problem {
  const p = array(committee, `${path}.committee`, 1, MAX_COMMITTEE)
  if (p !== null || !Array.isArray(committee)) return p
  const seen = new Set<unknown>()
  for (let i = 0; i < committee.length; i++) {
    const member: unknown = committee[i]
    const q = peerId(member, `${path}.committee[${i}]`)
    if (q !== null) return q
    if (seen.has(member)) return `${path}.committee[${i}]: repeats a member`
    seen.add(member)
  }
  const q = int(quorum, `${path}.quorum`, 1, Number.MAX_SAFE_INTEGER)
  if (q !== null) return q
  const n = committee.length
  const min = majority(n)
  if ((quorum as number) < min)
    return `${path}.quorum: ${quorum as number} is not a majority of ${n} (needs at least ${min})`
  if ((quorum as number) > n) return `${path}.quorum: ${quorum as number} is more than the ${n} committee members`
  return null
}

const PARAMS_KEYS = [
  'committee',
  'quorum',
  'maxDepth',
  'minChildren',
  'maxChildren',
  'maxAttempts',
  'leaseMs',
  'maxClaimMs',
  'maxNodes',
  'budgetTokens',
  'maxTokensPerCall',
  'review',
  'maxClaimsPerExecutor'
]

/** What protocol 2 adds to a goal's parameters; each optional, at least one used. */
const PARAMS_V2_KEYS = ['approvers', 'executors']
/** What protocol 3 adds: `tools`, always true (a v3 goal may use protocol 2's keys too). */
const PARAMS_V3_KEYS = [...PARAMS_V2_KEYS, 'tools']
/** What protocol 4 adds: `retainDays`, always present (protocol 2's and 3's keys may be used too). */
const PARAMS_V4_KEYS = [...PARAMS_V3_KEYS, 'retainDays']

const APPROVERS_KEYS = ['ids', 'for']

/**
 * Approvers: 1..MAX_COMMITTEE Ed25519 peer ids, sorted ascending without
 * repeats (one encoding per set), each a member of the goal's committee (an
 * approver's ballot is a committee member's ballot), approving splits,
 * results or both; results only in a plan with review.
 */
function approvers(value: unknown, committee: readonly unknown[], review: unknown, path: string): Problem {
  const k = exactKeys(value, path, APPROVERS_KEYS)
  if (k !== null || !isMap(value)) return k
  const ids = value.ids
  const a = array(ids, `${path}.ids`, 1, MAX_COMMITTEE)
  if (a !== null || !Array.isArray(ids)) return a
  let prev = ''
  for (let i = 0; i < ids.length; i++) {
    const id: unknown = ids[i]
    const q = peerId(id, `${path}.ids[${i}]`)
    if (q !== null) return q
    if ((id as string) <= prev)
      return `${path}.ids[${i}]: not after ids[${i - 1}] (approvers must be sorted ascending, no repeats)`
    prev = id as string
    if (!committee.includes(id))
      return (
        `${path}.ids[${i}]: ${id as string} is not in the committee; an approver votes as a ` +
        `committee member, so add it to the committee`
      )
  }
  const f = oneOf(value.for, `${path}.for`, APPROVE_FOR)
  if (f !== null) return f
  if (value.for !== 'splits' && review !== true)
    return `${path}.for: "${value.for as string}" needs review: results are approved in their review`
  return null
}

/**
 * Why plan parameters are unusable, or null when they are fine. Shared by the
 * wire (a goal with bad parameters is rejected as wrong-shape) and the CLI
 * (which refuses to publish such a goal and says why). Bounds keep every plan
 * finite: depth, children, nodes, attempts, leases, tokens; the quorum must be
 * a strict majority of the committee so at most one proposal can win.
 *
 * `version`: a protocol-1 goal has exactly the v1 keys (an old node checks
 * them so, and would penalise a peer for anything more); a protocol-2 goal
 * may add `approvers` and `executors` and must use one of them (otherwise it
 * is a protocol-1 goal). Without a version, the keys present decide it.
 */
export function validateParams(params: unknown, path = 'params', version?: number): string | null {
  if (!isMap(params)) return `${path}: expected a map, got ${describeValue(params)}`
  const v =
    version ??
    (Object.hasOwn(params, 'retainDays')
      ? PROTOCOL_VERSION_4
      : Object.hasOwn(params, 'tools')
        ? PROTOCOL_VERSION_3
        : PARAMS_V2_KEYS.some(k => Object.hasOwn(params, k))
          ? PROTOCOL_VERSION_2
          : PROTOCOL_VERSION)
  const k =
    v === PROTOCOL_VERSION
      ? exactKeys(params, path, PARAMS_KEYS)
      : keysWithin(
          params,
          path,
          PARAMS_KEYS,
          v === PROTOCOL_VERSION_2 ? PARAMS_V2_KEYS : v === PROTOCOL_VERSION_3 ? PARAMS_V3_KEYS : PARAMS_V4_KEYS
        )
  if (k !== null) return k
  const p = params
  if (v === PROTOCOL_VERSION) return paramsV1(p, path)
  const later = v === PROTOCOL_VERSION_2 ? paramsV2 : v === PROTOCOL_VERSION_3 ? paramsV3 : paramsV4
  return paramsV1(p, path) ?? later(p, path)
}

/**
 * The protocol-4 fields: `retainDays` (whole days, 1 to MAX_RETAIN_DAYS), and
 * protocol 2's and 3's, each optional and checked as there.
 */
function paramsV4(p: Obj, path: string): Problem {
  const r = int(p.retainDays, `${path}.retainDays`, 1, MAX_RETAIN_DAYS)
  if (r !== null) return `${r}; a protocol 4 goal says how many whole days its plan is kept once finished`
  if (Object.hasOwn(p, 'tools') && p.tools !== true)
    return `${path}.tools: true or absent (a plan that uses no tools leaves it out)`
  if (Object.hasOwn(p, 'approvers')) {
    const a = approvers(p.approvers, p.committee as readonly unknown[], p.review, `${path}.approvers`)
    if (a !== null) return a
  }
  return Object.hasOwn(p, 'executors') ? oneOf(p.executors, `${path}.executors`, EXECUTORS) : null
}

/** The protocol-3 fields: `tools: true`, and protocol 2's, each checked as protocol 2 checks it. */
function paramsV3(p: Obj, path: string): Problem {
  if (p.tools !== true)
    return `${path}.tools: a protocol 3 goal has tools: true; without it, it is a protocol 1 or 2 goal`
  if (Object.hasOwn(p, 'approvers')) {
    const a = approvers(p.approvers, p.committee as readonly unknown[], p.review, `${path}.approvers`)
    if (a !== null) return a
  }
  return Object.hasOwn(p, 'executors') ? oneOf(p.executors, `${path}.executors`, EXECUTORS) : null
}

/** The protocol-2 fields, on parameters whose v1 fields are fine. */
function paramsV2(p: Obj, path: string): Problem {
  const hasApprovers = Object.hasOwn(p, 'approvers')
  const hasExecutors = Object.hasOwn(p, 'executors')
  if (hasApprovers) {
    const a = approvers(p.approvers, p.committee as readonly unknown[], p.review, `${path}.approvers`)
    if (a !== null) return a
  }
  if (hasExecutors) {
    const e = oneOf(p.executors, `${path}.executors`, EXECUTORS)
    if (e !== null) return e
  }
  if (!hasApprovers && (!hasExecutors || p.executors === 'model')) {
    return `${path}: a protocol 2 goal names approvers or executors other than "model"; without them it is a protocol 1 goal`
  }
  return null
}

function paramsV1(p: Obj, path: string): Problem {
  return (
    committeeAndQuorum(p.committee, p.quorum, path) ??
    int(p.maxDepth, `${path}.maxDepth`, 0, MAX_DEPTH_LIMIT) ??
    int(p.minChildren, `${path}.minChildren`, MIN_SUBGOALS, MAX_SUBGOALS) ??
    int(p.maxChildren, `${path}.maxChildren`, p.minChildren as number, MAX_SUBGOALS) ??
    int(p.maxAttempts, `${path}.maxAttempts`, 1, MAX_ATTEMPTS_LIMIT) ??
    int(p.leaseMs, `${path}.leaseMs`, MIN_LEASE_MS, MAX_LEASE_MS) ??
    int(p.maxClaimMs, `${path}.maxClaimMs`, p.leaseMs as number, MAX_CLAIM_MS_LIMIT) ??
    int(p.maxNodes, `${path}.maxNodes`, 1, MAX_NODES_LIMIT) ??
    int(p.budgetTokens, `${path}.budgetTokens`, 1, MAX_TOKENS_LIMIT) ??
    int(p.maxTokensPerCall, `${path}.maxTokensPerCall`, 1, MAX_TOKENS_LIMIT) ??
    bool(p.review, `${path}.review`) ??
    int(p.maxClaimsPerExecutor, `${path}.maxClaimsPerExecutor`, 1, MAX_CLAIMS_PER_EXECUTOR_LIMIT)
  )
}

const SUBGOAL_KEYS = ['title', 'detail', 'leaf', 'dependsOn']

/**
 * A subgoal's needs (protocol 3): 1..MAX_NEEDS names matching NEED_PATTERN,
 * sorted ascending without repeats, so one set has one encoding.
 */
function needs(value: unknown, path: string): Problem {
  const a = array(value, path, 1, MAX_NEEDS)
  if (a !== null || !Array.isArray(value)) return a
  let prev = ''
  for (let i = 0; i < value.length; i++) {
    const n: unknown = value[i]
    const q = str(n, `${path}[${i}]`, MAX_NEED_CHARS, true)
    if (q !== null) return q
    if (!NEED_PATTERN.test(n as string))
      return `${path}[${i}]: ${describeString(n)} is not a capability name (letters, digits, . _ -, one optional /)`
    if ((n as string) <= prev) return `${path}[${i}]: not after [${i - 1}] (needs must be sorted ascending, no repeats)`
    prev = n as string
  }
  return null
}

const TOOL_CALL_KEYS = ['server', 'tool', 'ms', 'ok', 'args', 'error']

/** A result's tool calls (protocol 3): at most MAX_TOOL_RECORDS records, each within its caps. */
function toolCalls(value: unknown, path: string): Problem {
  const a = array(value, path, 0, MAX_TOOL_RECORDS)
  if (a !== null || !Array.isArray(value)) return a
  for (let i = 0; i < value.length; i++) {
    const rp = `${path}[${i}]`
    const r: unknown = value[i]
    const k = exactKeys(r, rp, TOOL_CALL_KEYS)
    if (k !== null || !isMap(r)) return k
    const f =
      str(r.server, `${rp}.server`, MAX_NEED_CHARS) ??
      str(r.tool, `${rp}.tool`, MAX_TOOL_NAME_CHARS, true) ??
      int(r.ms, `${rp}.ms`, 0, MAX_TOOL_MS) ??
      bool(r.ok, `${rp}.ok`) ??
      (r.args === null ? null : str(r.args, `${rp}.args`, MAX_TOOL_ARGS_CHARS)) ??
      (r.error === null ? null : str(r.error, `${rp}.error`, MAX_TOOL_ERROR_CHARS))
    if (f !== null) return f
  }
  return null
}

/** A tool loop's model turns (protocol 3), when given. */
function turns(b: Obj, path: string): Problem {
  return Object.hasOwn(b, 'turns') ? int(b.turns, `${path}.turns`, 1, MAX_TURNS) : null
}

function subgoals(value: unknown, path: string, version: number): Problem {
  const a = array(value, path, MIN_SUBGOALS, MAX_SUBGOALS)
  if (a !== null || !Array.isArray(value)) return a
  const n = value.length
  const titles = new Map<string, number>()
  const edges: number[][] = []
  for (let i = 0; i < n; i++) {
    const sp = `${path}[${i}]`
    const s: unknown = value[i]
    const k = hasToolFields(version) ? keysWithin(s, sp, SUBGOAL_KEYS, ['needs']) : exactKeys(s, sp, SUBGOAL_KEYS)
    if (k !== null || !isMap(s)) return k
    const f =
      str(s.title, `${sp}.title`, MAX_TITLE_CHARS, true) ??
      str(s.detail, `${sp}.detail`, MAX_DETAIL_CHARS) ??
      bool(s.leaf, `${sp}.leaf`) ??
      array(s.dependsOn, `${sp}.dependsOn`, 0, n - 1) ??
      (Object.hasOwn(s, 'needs') ? needs(s.needs, `${sp}.needs`) : null)
    if (f !== null) return f
    const title = normalizeTitle(s.title as string)
    const twin = titles.get(title)
    if (twin !== undefined) return `${sp}.title: same as subgoal ${twin}'s title`
    titles.set(title, i)
    const deps = s.dependsOn as readonly unknown[]
    const out: number[] = []
    for (let j = 0; j < deps.length; j++) {
      const dp = `${sp}.dependsOn`
      const d: unknown = deps[j]
      const q = int(d, `${dp}[${j}]`, 0, Number.MAX_SAFE_INTEGER)
      if (q !== null) return q
      const idx = d as number
      if (idx >= n) return `${dp}: index ${idx} out of range`
      if (idx === i) return `${dp}: depends on itself`
      const prev = out[out.length - 1]
      if (prev !== undefined && idx <= prev) return `${dp}: indexes not sorted ascending without repeats`
      out.push(idx)
    }
    edges.push(out)
  }
  const cycle = findCycle(edges)
  return cycle === null ? null : `${path}: dependsOn cycle through subgoal ${cycle}`
}

/** A node on a cycle of the dependency graph (node -> its dependencies), or null if it is acyclic. */
export function findCycle(edges: readonly (readonly number[])[]): number | null {
  const state = new Array<number>(edges.length).fill(0) // 0 new, 1 on stack, 2 done
  const visit = (i: number): number | null => {
    state[i] = 1
    for (const j of edges[i] ?? []) {
      if (state[j] === 1) return j
      if (state[j] === 0) {
        const c = visit(j)
        if (c !== null) return c
      }
    }
    state[i] = 2
    return null
  }
  for (let i = 0; i < edges.length; i++) {
    if (state[i] === 0) {
      const c = visit(i)
      if (c !== null) return c
    }
  }
  return null
}

const SCORE_KEYS = ['proposal', 'score', 'notes']

function ballotScores(scores: unknown, choice: unknown, path: string): Problem {
  const a = array(scores, `${path}.scores`, 0, Number.MAX_SAFE_INTEGER)
  if (a !== null || !Array.isArray(scores)) return a
  const seen = new Set<unknown>()
  for (let i = 0; i < scores.length; i++) {
    const sp = `${path}.scores[${i}]`
    const s: unknown = scores[i]
    const k = exactKeys(s, sp, SCORE_KEYS)
    if (k !== null || !isMap(s)) return k
    const f =
      hexId(s.proposal, `${sp}.proposal`) ??
      int(s.score, `${sp}.score`, 0, MAX_SCORE) ??
      str(s.notes, `${sp}.notes`, MAX_NOTES_CHARS)
    if (f !== null) return f
    if (seen.has(s.proposal)) return `${sp}.proposal: scored twice`
    seen.add(s.proposal)
  }
  if (choice === null) return null
  const c = hexId(choice, `${path}.choice`)
  if (c !== null) return c
  return seen.has(choice) ? null : `${path}.choice: not one of the scored proposals`
}

// ---------------------------------------------------------------- bodies

const BODY_KEYS: { readonly [T in EventType]: readonly string[] } = {
  'goal-submitted': ['text', 'params'],
  'committee-amended': ['committee', 'quorum'],
  'budget-raised': ['budgetTokens'],
  'task-retried': ['task'],
  'goal-cancelled': ['reason'],
  'split-proposed': ['node', 'attempt', 'subgoals', 'rationale', 'usage'],
  'ballot-cast': ['node', 'attempt', 'committee', 'scores', 'choice', 'notes', 'usage'],
  'task-claimed': ['task', 'prev'],
  'claim-renewed': ['task', 'claim', 'prev'],
  'task-released': ['task', 'claim', 'reason'],
  'task-failed': ['task', 'claim', 'error', 'usage'],
  'result-reported': ['task', 'claim', 'output', 'usage', 'model', 'source'],
  'result-reviewed': ['task', 'result', 'committee', 'verdict', 'notes', 'usage']
}

/** Who may write a result, by protocol version. */
const SOURCES_V1 = ['llm', 'offline']
const SOURCES_V2 = ['llm', 'offline', 'outside']

/**
 * Why the body of an event of a known type is malformed, or null. The switch
 * is exhaustive: adding an event type without its checks fails to compile.
 * `version` is the envelope's (1 or 2): protocol 2 allows more in a goal's
 * parameters and a result's source.
 */
export function validateBody(type: EventType, body: unknown, version: number = PROTOCOL_VERSION): string | null {
  const path = type
  const k =
    hasToolFields(version) && (type === 'result-reported' || type === 'task-failed')
      ? keysWithin(body, path, BODY_KEYS[type], type === 'result-reported' ? ['toolCalls', 'turns'] : ['turns'])
      : exactKeys(body, path, BODY_KEYS[type])
  if (k !== null || !isMap(body)) return k
  const b = body
  switch (type) {
    case 'goal-submitted':
      return str(b.text, `${path}.text`, MAX_GOAL_CHARS, true) ?? validateParams(b.params, `${path}.params`, version)
    case 'committee-amended':
      return committeeAndQuorum(b.committee, b.quorum, path)
    case 'budget-raised':
      return int(b.budgetTokens, `${path}.budgetTokens`, 1, MAX_TOKENS_LIMIT)
    case 'task-retried':
      return hexId(b.task, `${path}.task`)
    case 'goal-cancelled':
      return str(b.reason, `${path}.reason`, MAX_REASON_CHARS)
    case 'split-proposed':
      return (
        hexId(b.node, `${path}.node`) ??
        attempt(b.attempt, `${path}.attempt`) ??
        subgoals(b.subgoals, `${path}.subgoals`, version) ??
        str(b.rationale, `${path}.rationale`, MAX_RATIONALE_CHARS) ??
        usage(b.usage, `${path}.usage`)
      )
    case 'ballot-cast':
      return (
        hexId(b.node, `${path}.node`) ??
        attempt(b.attempt, `${path}.attempt`) ??
        hexId(b.committee, `${path}.committee`) ??
        ballotScores(b.scores, b.choice, path) ??
        str(b.notes, `${path}.notes`, MAX_NOTES_CHARS) ??
        usage(b.usage, `${path}.usage`)
      )
    case 'task-claimed':
      return hexId(b.task, `${path}.task`) ?? nullableHexId(b.prev, `${path}.prev`)
    case 'claim-renewed':
      return hexId(b.task, `${path}.task`) ?? hexId(b.claim, `${path}.claim`) ?? hexId(b.prev, `${path}.prev`)
    case 'task-released':
      return (
        hexId(b.task, `${path}.task`) ??
        hexId(b.claim, `${path}.claim`) ??
        str(b.reason, `${path}.reason`, MAX_REASON_CHARS)
      )
    case 'task-failed':
      return (
        hexId(b.task, `${path}.task`) ??
        hexId(b.claim, `${path}.claim`) ??
        str(b.error, `${path}.error`, MAX_REASON_CHARS) ??
        usage(b.usage, `${path}.usage`) ??
        turns(b, path)
      )
    case 'result-reported':
      return (
        hexId(b.task, `${path}.task`) ??
        hexId(b.claim, `${path}.claim`) ??
        str(b.output, `${path}.output`, MAX_OUTPUT_CHARS) ??
        usage(b.usage, `${path}.usage`) ??
        str(b.model, `${path}.model`, MAX_MODEL_CHARS) ??
        oneOf(b.source, `${path}.source`, version === PROTOCOL_VERSION ? SOURCES_V1 : SOURCES_V2) ??
        (Object.hasOwn(b, 'toolCalls') ? toolCalls(b.toolCalls, `${path}.toolCalls`) : null) ??
        turns(b, path)
      )
    case 'result-reviewed':
      return (
        hexId(b.task, `${path}.task`) ??
        hexId(b.result, `${path}.result`) ??
        hexId(b.committee, `${path}.committee`) ??
        oneOf(b.verdict, `${path}.verdict`, ['accept', 'reject']) ??
        str(b.notes, `${path}.notes`, MAX_NOTES_CHARS) ??
        usage(b.usage, `${path}.usage`)
      )
    default: {
      const unreachable: never = type
      return `unknown event type ${String(unreachable)}`
    }
  }
}

// ---------------------------------------------------------------- envelopes

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
 * Why a frame of a version this code folds (1 or 2), whose type is known, is
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
