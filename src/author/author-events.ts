import { APPROVE_FOR, DEFAULT_PARAMS, DEFAULT_TRUST, EXECUTORS, majority } from '../core/events.js'
import { MAX_GOAL_CHARS, MAX_REASON_CHARS, MAX_RETAIN_DAYS, MAX_REVIEW_ONE_IN } from '../core/limits.js'
import { DEFAULT_RETAIN_DAYS } from '../core/retention.js'
import { validateParams } from '../wire/shape.js'
import { isEd25519PeerIdString } from '../wire/peer-keys.js'
import { ConfigError } from '../errors.js'
import type { NodeView } from '../ports/node-view.js'
import type { ApproveFor, Executors, PeerIdString, PlanId, PlanParams, Trust } from '../core/events.js'
import type { PlanTree } from '../core/tree.js'

/**
 * The events a goal's author publishes, built one way whoever asks: the
 * `submit` and `cancel` commands and the observer's dashboard (with
 * `--allow-submit`), each through its node's view. Input comes as
 * flag-named values (`max-depth`, `budget`, ...), so a bad value gets the
 * same message from either.
 */
export type AuthorValues = Readonly<Record<string, string | string[] | boolean | undefined>>

/** A non-negative whole-number value, or undefined when absent (the message of the flag parser's `intOption`). */
function wholeNumber(values: AuthorValues, name: string): number | undefined {
  const raw = values[name]
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (typeof raw !== 'string' || !/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n))
    throw new ConfigError(`--${name} ${JSON.stringify(raw)}: expected a whole number`)
  return n
}

/** A flag's values as a list: repeated, comma-separated, or both. */
function list(raw: AuthorValues[string]): string[] {
  if (raw === undefined || typeof raw === 'boolean') return []
  return (Array.isArray(raw) ? raw : [raw]).flatMap(x => x.split(/[\s,]+/)).filter(Boolean)
}

function choice<T extends string>(values: AuthorValues, name: string, allowed: readonly T[]): T | undefined {
  const raw = values[name]
  if (raw === undefined) return undefined
  if (typeof raw !== 'string' || !(allowed as readonly string[]).includes(raw))
    throw new ConfigError(`--${name} ${JSON.stringify(raw)}: expected one of ${allowed.join(', ')}`)
  return raw as T
}

/**
 * Plan parameters from flag-named values and a committee; throws ConfigError
 * saying what to change. Protocol 2 (ADR-0024): `approver`
 * (repeatable) names people whose ballot is needed besides the quorum, and
 * each is added to the committee if it is not in it (an approver votes as a
 * member; the default quorum is a majority of the committee with them);
 * `approve` says for what: splits, results or both (default both, which
 * without review means splits); `executors`: model (default), outside or
 * any. Protocol 3 (ADR-0037): `use-tools` makes a plan whose leaves may name
 * the tools they need, routed to the executors that offer them. A goal that
 * uses none of these stays protocol 1.
 */
export function planParams(values: AuthorValues, committee: PeerIdString[]): PlanParams {
  const num = (name: string, fallback: number): number => wholeNumber(values, name) ?? fallback
  const approverIds = list(values.approver)
  const bad = approverIds.find(id => !isEd25519PeerIdString(id))
  if (bad !== undefined)
    throw new ConfigError(
      `--approver: ${JSON.stringify(bad)} is not a peer id; a person's id is printed by \`npm start -- id\` in their --data-dir`
    )
  const approvers = [...new Set(approverIds)].sort() as PeerIdString[]
  const members =
    approvers.length === 0 ? committee : ([...new Set([...committee, ...approvers])].sort() as PeerIdString[])
  const review = values.review === true
  const approveFor = choice<ApproveFor>(values, 'approve', APPROVE_FOR)
  if (approveFor !== undefined && approvers.length === 0)
    throw new ConfigError('--approve needs --approver ID: name the people whose approval is needed')
  if (approveFor !== undefined && approveFor !== 'splits' && !review)
    throw new ConfigError(
      `--approve ${approveFor}: results are approved in review; add --review, or use --approve splits`
    )
  const executors = choice<Executors>(values, 'executors', EXECUTORS)
  const params: PlanParams = {
    committee: members,
    quorum: num('quorum', majority(members.length)),
    maxDepth: num('max-depth', DEFAULT_PARAMS.maxDepth),
    minChildren: num('min-children', DEFAULT_PARAMS.minChildren),
    maxChildren: num('max-children', DEFAULT_PARAMS.maxChildren),
    maxAttempts: num('max-attempts', DEFAULT_PARAMS.maxAttempts),
    leaseMs: num('lease-ms', DEFAULT_PARAMS.leaseMs),
    maxClaimMs: num('max-claim-ms', DEFAULT_PARAMS.maxClaimMs),
    maxNodes: num('max-nodes', DEFAULT_PARAMS.maxNodes),
    budgetTokens: num('budget', DEFAULT_PARAMS.budgetTokens),
    maxTokensPerCall: num('max-tokens-per-call', DEFAULT_PARAMS.maxTokensPerCall),
    review,
    maxClaimsPerExecutor: num('max-claims-per-executor', DEFAULT_PARAMS.maxClaimsPerExecutor),
    ...(approvers.length === 0
      ? {}
      : { approvers: { ids: approvers, for: approveFor ?? (review ? 'both' : 'splits') } }),
    ...(executors === undefined || executors === 'model' ? {} : { executors }),
    ...(values['use-tools'] === true ? { tools: true as const } : {}),
    ...trust(values),
    ...retainDays(values)
  }
  const problem = validateParams(params)
  if (problem !== null) throw new ConfigError(`plan parameters: ${problem}`)
  return params
}

/** `--trust` (protocol 5, ADR-0047) and its `--review-one-in N` (ADR-0049), checked here so the message names the flag. */
function trust(values: AuthorValues): { trust?: Trust } {
  const raw = values['review-one-in']
  if (values.trust !== true) {
    if (raw !== undefined)
      throw new ConfigError('--review-one-in needs --trust: the review sample is a protocol 5 rule')
    return {}
  }
  if (raw === undefined) return { trust: DEFAULT_TRUST }
  const n = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN
  if (!Number.isSafeInteger(n) || n > MAX_REVIEW_ONE_IN)
    throw new ConfigError(
      `--review-one-in ${JSON.stringify(raw)}: expected a whole number from 0 to ${MAX_REVIEW_ONE_IN}, one result in ` +
        `this many reviewed besides each member's first ones and all after a rejection (0: none; --review: all)`
    )
  return { trust: { ...DEFAULT_TRUST, reviewOneIn: n } }
}

/** `--retain-days N` (protocol 4, ADR-0040), checked here so the message names the flag. */
function retainDays(values: AuthorValues): { retainDays?: number } {
  const raw = values['retain-days']
  if (raw === undefined) return {}
  const n = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_RETAIN_DAYS)
    throw new ConfigError(
      `--retain-days ${JSON.stringify(raw)}: expected whole days from 1 to ${MAX_RETAIN_DAYS}; ` +
        `leave it out to keep the plan ${DEFAULT_RETAIN_DAYS} days`
    )
  return { retainDays: n }
}

/** `--committee ID,ID,...`: sorted, unique Ed25519 peer ids, or undefined when not given. */
export function parseCommittee(raw: unknown): PeerIdString[] | undefined {
  if (raw === undefined) return undefined
  const ids = String(raw)
    .split(/[\s,]+/)
    .filter(Boolean)
  const bad = ids.find(id => !isEd25519PeerIdString(id))
  if (bad !== undefined)
    throw new ConfigError(
      `--committee: ${JSON.stringify(bad)} is not a peer id; copy scorer peer ids from their /status`
    )
  return [...new Set(ids)].sort() as PeerIdString[]
}

/**
 * Every scorer in this node's roster, and the node itself if it is one (a
 * roster lists only the other peers), sorted: what a submitter waits to see.
 * The default committee is drawn from them (committee.ts).
 */
export function scorersInSight(view: Pick<NodeView, 'roster' | 'role' | 'me'>): PeerIdString[] {
  return [
    ...new Set([
      ...view
        .roster()
        .filter(r => r.role === 'scorer')
        .map(r => r.peerId),
      ...(view.role === 'scorer' ? [view.me] : [])
    ])
  ].sort() as PeerIdString[]
}

/** Publish `goal-submitted`; its id is the plan id. */
export async function publishGoal(view: Pick<NodeView, 'publish'>, text: string, params: PlanParams): Promise<PlanId> {
  const goal = text.trim()
  if (goal === '') throw new ConfigError('the goal is empty; say what to plan, e.g. "plan a two-week trip to Japan"')
  if (goal.length > MAX_GOAL_CHARS)
    throw new ConfigError(`the goal is ${goal.length} characters long; the most is ${MAX_GOAL_CHARS}: say it shorter`)
  const { event } = await view.publish('goal-submitted', '', [], { text: goal, params })
  return event.id as string as PlanId
}

/** The author commands act only as the goal's author: anyone else's events would not count. */
export function checkAuthor(view: Pick<NodeView, 'me'>, tree: PlanTree, hint: string): void {
  if (tree.author !== view.me) {
    throw new ConfigError(
      `plan ${tree.plan.slice(0, 12)} was submitted by ${tree.author}, not by this key (${view.me}); ${hint}`
    )
  }
}

/** Publish `goal-cancelled` for a plan this node authored. */
export async function publishCancel(
  view: Pick<NodeView, 'publish' | 'me'>,
  tree: PlanTree,
  reason: string | undefined,
  hint = "run this from the submitter's --data-dir"
): Promise<void> {
  checkAuthor(view, tree, hint)
  const why = (reason ?? '').trim()
  if (why.length > MAX_REASON_CHARS)
    throw new ConfigError(`the reason is ${why.length} characters long; the most is ${MAX_REASON_CHARS}`)
  await view.publish('goal-cancelled', tree.plan, [], { reason: why === '' ? 'cancelled by its author' : why })
}
