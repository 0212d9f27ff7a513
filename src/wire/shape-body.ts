/**
 * The shape of each event type's body, by protocol version: subgoals and
 * their dependency graph (acyclic, titles distinct), ballots, claims,
 * results and reviews, each field bounded. The switch over event types is
 * exhaustive, so a new type without its checks does not compile.
 */
import { PROTOCOL_VERSION, hasToolFields, type EventType } from '../core/events.js'
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_DETAIL_CHARS,
  MAX_GOAL_CHARS,
  MAX_MODEL_CHARS,
  MAX_NEED_CHARS,
  MAX_NEEDS,
  MAX_NOTES_CHARS,
  MAX_OUTPUT_CHARS,
  MAX_RATIONALE_CHARS,
  MAX_REASON_CHARS,
  MAX_SCORE,
  MAX_SUBGOALS,
  MAX_TITLE_CHARS,
  MAX_TOKENS_LIMIT,
  MAX_TOOL_ARGS_CHARS,
  MAX_TOOL_ERROR_CHARS,
  MAX_TOOL_MS,
  MAX_TOOL_NAME_CHARS,
  MAX_TOOL_RECORDS,
  MAX_TURNS,
  MIN_SUBGOALS,
  NEED_PATTERN
} from '../core/limits.js'
import { committeeAndQuorum, validateParams } from './shape-params.js'
import {
  array,
  bool,
  describeString,
  exactKeys,
  hexId,
  int,
  isMap,
  keysWithin,
  normalizeTitle,
  nullableHexId,
  oneOf,
  str
} from './shape-rules.js'
import type { Obj, Problem } from './shape-rules.js'

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
 * `version` is the envelope's (1 to 4): protocol 2 allows more in a goal's
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
