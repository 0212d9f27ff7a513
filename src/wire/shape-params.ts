/**
 * The shape of a goal's plan parameters, by protocol version: the bounds
 * that keep every plan finite, the committee and its quorum, approvers and
 * executors. Shared by the wire (a goal with bad parameters is wrong-shape)
 * and the CLI (which refuses to publish one and says why).
 */
import {
  APPROVE_FOR,
  EXECUTORS,
  PROTOCOL_VERSION,
  PROTOCOL_VERSION_2,
  PROTOCOL_VERSION_3,
  PROTOCOL_VERSION_4,
  PROTOCOL_VERSION_5,
  majority
} from '../core/events.js'
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_CLAIM_WINDOW_MS,
  MAX_CLAIM_MS_LIMIT,
  MAX_CLAIMS_PER_EXECUTOR_LIMIT,
  MAX_COMMITTEE,
  MAX_DEPTH_LIMIT,
  MAX_LEASE_MS,
  MAX_NODES_LIMIT,
  MAX_RETAIN_DAYS,
  MAX_REVIEW_ONE_IN,
  MAX_SUBGOALS,
  MAX_TOKENS_LIMIT,
  MIN_LEASE_MS,
  MIN_SUBGOALS
} from '../core/limits.js'
import { array, bool, describeValue, exactKeys, int, isMap, keysWithin, oneOf, peerId } from './shape-rules.js'
import type { Obj, Problem } from './shape-rules.js'

/** A committee: 1..MAX_COMMITTEE distinct Ed25519 peer ids, and a quorum that is at least a strict majority of it. */
export function committeeAndQuorum(committee: unknown, quorum: unknown, path: string): Problem {
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
/** What protocol 5 adds: `trust`, always present (every key of protocols 2 to 4 is optional beside it). */
const PARAMS_V5_KEYS = [...PARAMS_V4_KEYS, 'trust']
const TRUST_KEYS = ['claimWindowMs']
const TRUST_OPTIONAL_KEYS = ['reviewOneIn']

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
    (Object.hasOwn(params, 'trust')
      ? PROTOCOL_VERSION_5
      : Object.hasOwn(params, 'retainDays')
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
          v === PROTOCOL_VERSION_2
            ? PARAMS_V2_KEYS
            : v === PROTOCOL_VERSION_3
              ? PARAMS_V3_KEYS
              : v === PROTOCOL_VERSION_4
                ? PARAMS_V4_KEYS
                : PARAMS_V5_KEYS
        )
  if (k !== null) return k
  const p = params
  if (v === PROTOCOL_VERSION) return paramsV1(p, path)
  const later =
    v === PROTOCOL_VERSION_2
      ? paramsV2
      : v === PROTOCOL_VERSION_3
        ? paramsV3
        : v === PROTOCOL_VERSION_4
          ? paramsV4
          : paramsV5
  return paramsV1(p, path) ?? later(p, path)
}

/**
 * The protocol-5 fields: `trust` (a map with `claimWindowMs`, 0 to the
 * plan's leaseMs and at most MAX_CLAIM_WINDOW_MS, and optionally
 * `reviewOneIn`, 0 to MAX_REVIEW_ONE_IN), and protocols 2's to 4's, each
 * optional and checked as there.
 */
function paramsV5(p: Obj, path: string): Problem {
  const t = keysWithin(p.trust, `${path}.trust`, TRUST_KEYS, TRUST_OPTIONAL_KEYS)
  if (t !== null) return `${t}; a protocol 5 goal holds the parameters of its rules in trust`
  const trust = p.trust as Obj
  const w = int(
    trust.claimWindowMs,
    `${path}.trust.claimWindowMs`,
    0,
    Math.min(MAX_CLAIM_WINDOW_MS, p.leaseMs as number)
  )
  if (w !== null) return `${w} (at most the plan's leaseMs)`
  if (Object.hasOwn(trust, 'reviewOneIn')) {
    const r = int(trust.reviewOneIn, `${path}.trust.reviewOneIn`, 0, MAX_REVIEW_ONE_IN)
    if (r !== null)
      return (
        `${r}: the committee reviews one result in this many (besides a member's first ones and all after a ` +
        `rejection); 0 samples none, 1 reviews every result as review does`
      )
  }
  if (Object.hasOwn(p, 'retainDays')) {
    const r = int(p.retainDays, `${path}.retainDays`, 1, MAX_RETAIN_DAYS)
    if (r !== null) return r
  }
  return optionalV2V3(p, path)
}

/** Protocol 2's and 3's keys where each is optional (versions 4 and 5). */
function optionalV2V3(p: Obj, path: string): Problem {
  if (Object.hasOwn(p, 'tools') && p.tools !== true)
    return `${path}.tools: true or absent (a plan that uses no tools leaves it out)`
  if (Object.hasOwn(p, 'approvers')) {
    const a = approvers(p.approvers, p.committee as readonly unknown[], p.review, `${path}.approvers`)
    if (a !== null) return a
  }
  return Object.hasOwn(p, 'executors') ? oneOf(p.executors, `${path}.executors`, EXECUTORS) : null
}

/**
 * The protocol-4 fields: `retainDays` (whole days, 1 to MAX_RETAIN_DAYS), and
 * protocol 2's and 3's, each optional and checked as there.
 */
function paramsV4(p: Obj, path: string): Problem {
  const r = int(p.retainDays, `${path}.retainDays`, 1, MAX_RETAIN_DAYS)
  if (r !== null) return `${r}; a protocol 4 goal says how many whole days its plan is kept once finished`
  return optionalV2V3(p, path)
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
