import { compareHlc } from './hlc.js'
import { isType, paramsVersion, reviewsResults } from './events.js'
import type { EventId, PlanEvent, PlanParams, PeerIdString, EventType } from './events.js'

/**
 * Why an event that decoded, verified and had the right shape is still
 * provably bad once its deps are known. These depend only on the event and
 * its deps (and the goal, which is always a dep), so an event is valid once
 * and valid forever, whatever else arrives and in whatever order.
 */
export const DEP_REJECT_REASONS = [
  'stamp-not-after-dep',
  'missing-goal-dep',
  'dep-other-plan',
  'not-goal-author',
  'not-in-committee',
  'bad-reference',
  'params-violated',
  'late-renewal',
  'claim-too-long',
  'not-claim-owner',
  'wrong-version'
] as const

export type DepRejectReason = (typeof DEP_REJECT_REASONS)[number]

export interface DepRejection {
  readonly reason: DepRejectReason
  readonly detail: string
}

/** The committee an event names: the goal's own, or an amendment's. */
export function committeeOf(e: PlanEvent): { members: readonly PeerIdString[]; quorum: number } | undefined {
  if (isType(e, 'goal-submitted')) return { members: e.env.body.params.committee, quorum: e.env.body.params.quorum }
  if (isType(e, 'committee-amended')) return { members: e.env.body.committee, quorum: e.env.body.quorum }
  return undefined
}

function reject(reason: DepRejectReason, detail: string): DepRejection {
  return { reason, detail }
}

/**
 * Where `checkDeps` finds an event's deps. `get` finds every id in
 * `e.env.deps`; it may hold more, but only the event's own deps are
 * consulted. A source that has the event's deps at hand can say so with
 * `at` (the i-th of `e.env.deps`) and `own` (a dep by id, only among
 * `e.env.deps`), which spare the searches.
 */
export interface DepSource {
  get: (id: EventId) => PlanEvent | undefined
  at?: (i: number) => PlanEvent | undefined
  own?: (id: EventId) => PlanEvent | undefined
}

/**
 * Check an event against its deps. `deps` finds every id in `e.env.deps`
 * (the caller only asks once they are all present); it may hold more, but
 * only the event's own deps are consulted.
 */
export function checkDeps(e: PlanEvent, deps: DepSource): DepRejection | null {
  const ids = e.env.deps
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as EventId
    const d = deps.at !== undefined ? deps.at(i) : deps.get(id)
    if (d === undefined) return reject('bad-reference', `dep ${id} not supplied`)
    if (compareHlc(e.env.hlc, d.env.hlc) <= 0)
      return reject(
        'stamp-not-after-dep',
        `stamped ${e.env.hlc.ms}.${e.env.hlc.c}, not after dep ${id} at ${d.env.hlc.ms}.${d.env.hlc.c}`
      )
    const depPlan = d.env.type === 'goal-submitted' ? d.id : d.env.plan
    if (e.env.type !== 'goal-submitted' && depPlan !== e.env.plan)
      return reject('dep-other-plan', `dep ${id} belongs to plan ${depPlan}, not ${e.env.plan}`)
  }
  if (e.env.type === 'goal-submitted') {
    if (e.env.deps.length !== 0) return reject('bad-reference', 'a goal has no deps')
    const v = paramsVersion((e as PlanEvent<'goal-submitted'>).env.body.params)
    return e.env.v === v
      ? null
      : reject('wrong-version', `a goal with these parameters is protocol version ${v}, not ${e.env.v}`)
  }
  const goal = ownDep(e, deps, e.env.plan as EventId)
  if (goal === undefined || !isType(goal, 'goal-submitted'))
    return reject('missing-goal-dep', `deps must include the plan's goal ${e.env.plan}`)
  // Every event of a plan has its goal's version: an old node folds a v1 plan's events exactly as a new one does.
  if (e.env.v !== goal.env.v)
    return reject(
      'wrong-version',
      `protocol version ${e.env.v} in a plan of version ${goal.env.v}: publish it with the plan's version`
    )
  const params = goal.env.body.params

  switch (e.env.type) {
    case 'committee-amended':
    case 'budget-raised':
    case 'task-retried':
    case 'goal-cancelled':
      return e.env.author === goal.env.author
        ? null
        : reject('not-goal-author', `only the goal's author ${goal.env.author} may publish ${e.env.type}`)
    case 'split-proposed': {
      const b = (e as PlanEvent<'split-proposed'>).env.body
      return checkSplit(b.attempt, b.subgoals.length, params)
    }
    case 'ballot-cast':
      return checkBallot(e as PlanEvent<'ballot-cast'>, deps, params)
    case 'task-claimed': {
      const b = (e as PlanEvent<'task-claimed'>).env.body
      if (b.prev === null) return null
      const p = ownDep(e, deps, b.prev)
      return p === undefined ? reject('bad-reference', `prev ${b.prev} must be among the deps`) : null
    }
    case 'claim-renewed':
      return checkRenewal(e as PlanEvent<'claim-renewed'>, deps, params)
    case 'task-released':
    case 'task-failed':
    case 'result-reported':
      return checkClaimEnd(e as PlanEvent<'task-released' | 'task-failed' | 'result-reported'>, deps)
    case 'result-reviewed':
      return checkReview(e as PlanEvent<'result-reviewed'>, deps, params)
    default: {
      const never: never = e.env.type
      return reject('bad-reference', `unknown type ${String(never)}`)
    }
  }
}

/** A ballot: cast by a member of the committee it names, for proposals of its own node and attempt. */
function checkBallot(e: PlanEvent<'ballot-cast'>, deps: DepSource, params: PlanParams): DepRejection | null {
  const b = e.env.body
  const c = ownDep(e, deps, b.committee)
  const committee = c === undefined ? undefined : committeeOf(c)
  if (committee === undefined)
    return reject(
      'bad-reference',
      `committee ${b.committee} must be the goal or a committee-amended event among the deps`
    )
  if (!committee.members.includes(e.env.author))
    return reject('not-in-committee', `${e.env.author} is not in committee ${b.committee}`)
  if (b.attempt > params.maxAttempts)
    return reject('params-violated', `attempt ${b.attempt} exceeds maxAttempts ${params.maxAttempts}`)
  if (b.choice !== null && !e.env.deps.includes(b.choice))
    return reject('bad-reference', `choice ${b.choice} must be among the deps`)
  for (const s of b.scores) {
    const p = refOf(e, deps, s.proposal, 'split-proposed', 'scored proposal')
    if (isRejection(p)) return p
    if (p.env.body.node !== b.node || p.env.body.attempt !== b.attempt)
      return reject('bad-reference', `proposal ${s.proposal} is for another node or attempt`)
  }
  return null
}

/** A renewal: by the claimant, after its claim or a renewal of it, within leaseMs of it and maxClaimMs of the claim. */
function checkRenewal(e: PlanEvent<'claim-renewed'>, deps: DepSource, params: PlanParams): DepRejection | null {
  const b = e.env.body
  const claim = refOf(e, deps, b.claim, 'task-claimed', 'claim')
  if (isRejection(claim)) return claim
  if (claim.env.author !== e.env.author) return reject('not-claim-owner', 'only the claimant renews its claim')
  if (claim.env.body.task !== b.task) return reject('bad-reference', 'renewal names another task than its claim')
  const prev = ownDep(e, deps, b.prev)
  if (prev === undefined) return reject('bad-reference', `prev ${b.prev} must be among the deps`)
  if (prev.id !== claim.id && !(isType(prev, 'claim-renewed') && prev.env.body.claim === claim.id))
    return reject('bad-reference', 'prev must be the claim or a renewal of it')
  if (e.env.hlc.ms - prev.env.hlc.ms > params.leaseMs)
    return reject(
      'late-renewal',
      `renewed ${e.env.hlc.ms - prev.env.hlc.ms} ms after its predecessor; the lease is ${params.leaseMs} ms`
    )
  if (e.env.hlc.ms - claim.env.hlc.ms > params.maxClaimMs)
    return reject(
      'claim-too-long',
      `renewed ${e.env.hlc.ms - claim.env.hlc.ms} ms after the claim; maxClaimMs is ${params.maxClaimMs}`
    )
  return null
}

/** A release, failure or result: by the claimant, for its claim's task. */
function checkClaimEnd(
  e: PlanEvent<'task-released' | 'task-failed' | 'result-reported'>,
  deps: DepSource
): DepRejection | null {
  const b = e.env.body
  const claim = refOf(e, deps, b.claim, 'task-claimed', 'claim')
  if (isRejection(claim)) return claim
  if (claim.env.author !== e.env.author)
    return reject('not-claim-owner', `only the claimant may publish ${e.env.type} for its claim`)
  if (claim.env.body.task !== b.task) return reject('bad-reference', `${e.env.type} names another task than its claim`)
  return null
}

/**
 * A review: only where the plan has results reviewed (`review`, or protocol 5's sample: which results the sample
 * takes depends on other events, so any result's review is valid there), of a result of its task, by a member of
 * the committee it names.
 */
function checkReview(e: PlanEvent<'result-reviewed'>, deps: DepSource, params: PlanParams): DepRejection | null {
  const b = e.env.body
  if (!reviewsResults(params)) return reject('params-violated', 'this plan does not ask for review')
  const result = refOf(e, deps, b.result, 'result-reported', 'result')
  if (isRejection(result)) return result
  if (result.env.body.task !== b.task) return reject('bad-reference', 'review names another task than its result')
  const c = ownDep(e, deps, b.committee)
  const committee = c === undefined ? undefined : committeeOf(c)
  if (committee === undefined)
    return reject(
      'bad-reference',
      `committee ${b.committee} must be the goal or a committee-amended event among the deps`
    )
  if (!committee.members.includes(e.env.author))
    return reject('not-in-committee', `${e.env.author} is not in committee ${b.committee}`)
  return null
}

/** One of `e`'s own deps (never another event the lookup happens to hold). */
function ownDep(e: PlanEvent, deps: DepSource, id: EventId): PlanEvent | undefined {
  if (deps.own !== undefined) return deps.own(id)
  return e.env.deps.includes(id) ? deps.get(id) : undefined
}

function isRejection(x: unknown): x is DepRejection {
  return typeof x === 'object' && x !== null && 'reason' in x && !('env' in x)
}

/** A referenced event, which must be one of `e`'s own deps and of the given type. */
function refOf<T extends EventType>(
  e: PlanEvent,
  deps: DepSource,
  id: EventId | null,
  type: T,
  what: string
): PlanEvent<T> | DepRejection {
  const d = id === null ? undefined : ownDep(e, deps, id)
  if (d === undefined) return reject('bad-reference', `${what} ${String(id)} must be among the deps`)
  if (!isType(d, type)) return reject('bad-reference', `${what} ${String(id)} is a ${d.env.type}, not a ${type}`)
  return d
}

function checkSplit(attempt: number, children: number, params: PlanParams): DepRejection | null {
  if (attempt > params.maxAttempts)
    return reject('params-violated', `attempt ${attempt} exceeds maxAttempts ${params.maxAttempts}`)
  if (children < params.minChildren || children > params.maxChildren)
    return reject(
      'params-violated',
      `${children} subgoals; this plan allows ${params.minChildren}..${params.maxChildren}`
    )
  return null
}
