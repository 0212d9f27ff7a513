/**
 * The plan log's vocabulary: event envelopes, bodies and plan parameters.
 *
 * Everything here is plain data that the canonical codec (src/wire) can
 * encode: strings, safe integers, booleans, null, arrays and maps. No floats,
 * no undefined: a field that may be absent is `null`.
 */

declare const brand: unique symbol
/** A nominal type: a string that the type checker will not mix up with another kind of id. */
export type Brand<T, B extends string> = T & { readonly [brand]: B }

/** Lowercase hex SHA-256 of an event's canonical envelope bytes (64 characters). */
export type EventId = Brand<string, 'EventId'>
/** A plan is named by the id of its `goal-submitted` event; that is also the root node's id. */
export type PlanId = Brand<string, 'PlanId'>
/** A node of the plan tree: the root (= plan id) or `hash(parent, proposal, index)`. */
export type NodeId = Brand<string, 'NodeId'>
/** Something an executor claims: a leaf node's id, or a composite node's roll-up id. */
export type TaskId = Brand<string, 'TaskId'>
/** An Ed25519 libp2p peer id in its string form (`12D3KooW...`). */
export type PeerIdString = Brand<string, 'PeerIdString'>

/**
 * Protocol version 1: every plan that uses no protocol-2 feature, and every
 * event of such a plan. Old nodes fold only this version.
 */
export const PROTOCOL_VERSION = 1
/**
 * Protocol version 2: a goal that names approvers or executors other than
 * models, and every event of its plan (ADR-0024). The version is
 * per plan: a node publishes an event with its plan's goal's version.
 */
export const PROTOCOL_VERSION_2 = 2
/**
 * Protocol version 3: a goal whose plan uses executors' tools (`tools: true`):
 * its subgoals may say what they need and its results record the tool calls
 * made (ADR-0037). Protocol 2's features may be used beside it.
 */
export const PROTOCOL_VERSION_3 = 3
/**
 * Protocol version 4: a goal that says how long its plan is kept once
 * finished (`retainDays`, ADR-0040). Protocol 2's and 3's features may be
 * used beside it; a goal without `retainDays` keeps its old version (and
 * treeHash) and is kept for DEFAULT_RETAIN_DAYS.
 */
export const PROTOCOL_VERSION_4 = 4
/**
 * Protocol version 5: a goal whose plan folds by the rules that hold against
 * a member who runs any code (`trust`, ADR-0047): claims ranked by a hash in
 * a window, results only from the holder, the claim limit in the fold,
 * budgets counted only where events count, equivocators without a vote and
 * decisions final once built on. Protocol 2's, 3's and 4's features may be
 * used beside it.
 */
export const PROTOCOL_VERSION_5 = 5
/** The versions this code folds. Events of any other version are stored and relayed, not folded. */
export const FOLDED_VERSIONS: readonly number[] = [
  PROTOCOL_VERSION,
  PROTOCOL_VERSION_2,
  PROTOCOL_VERSION_3,
  PROTOCOL_VERSION_4,
  PROTOCOL_VERSION_5
]
export type ProtocolVersion = 1 | 2 | 3 | 4 | 5

/** Whether this code folds events of version `v`. */
export function isFoldedVersion(v: unknown): v is ProtocolVersion {
  return (
    v === PROTOCOL_VERSION ||
    v === PROTOCOL_VERSION_2 ||
    v === PROTOCOL_VERSION_3 ||
    v === PROTOCOL_VERSION_4 ||
    v === PROTOCOL_VERSION_5
  )
}

/** Whether events of version `v` may carry protocol 3's fields (subgoal needs, a result's tool calls). */
export function hasToolFields(v: number): boolean {
  return v === PROTOCOL_VERSION_3 || v === PROTOCOL_VERSION_4 || v === PROTOCOL_VERSION_5
}

/** Hybrid logical clock stamp: wall milliseconds and a counter that breaks ties within one millisecond. */
export interface Hlc {
  readonly ms: number
  readonly c: number
}

export const EVENT_TYPES = [
  'goal-submitted',
  'committee-amended',
  'budget-raised',
  'task-retried',
  'goal-cancelled',
  'split-proposed',
  'ballot-cast',
  'task-claimed',
  'claim-renewed',
  'task-released',
  'task-failed',
  'result-reported',
  'result-reviewed'
] as const

export type EventType = (typeof EVENT_TYPES)[number]

/** Tokens one LLM call used, as the provider reported them. */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/**
 * One tool call a task's loop made (protocol 3), as its result event records
 * it: which server and tool, how long it took, whether it failed and why.
 * The arguments are kept only when their JSON is short (see limits.ts).
 */
export interface ToolCallRecord {
  readonly server: string
  readonly tool: string
  readonly ms: number
  readonly ok: boolean
  /** The arguments as JSON when at most MAX_TOOL_ARGS_CHARS long, else null. */
  readonly args: string | null
  /** What went wrong when `ok` is false (cut to MAX_TOOL_ERROR_CHARS), else null. */
  readonly error: string | null
}

/** What approvers approve: accepted splits, accepted results (plans with review), or both. */
export const APPROVE_FOR = ['splits', 'results', 'both'] as const
export type ApproveFor = (typeof APPROVE_FOR)[number]

/**
 * Committee members whose ballot (or review) is needed besides the quorum
 * (protocol 2): a split wins only when each of them chose it, a result is
 * accepted only when each of them accepted it. Under each committee event
 * only the approvers who are members of it count, so an amendment that
 * drops an approver who never answers lets the plan go on.
 */
export interface Approvers {
  /** Sorted, distinct, each a member of the goal's committee. */
  readonly ids: readonly PeerIdString[]
  readonly for: ApproveFor
}

/**
 * Who may execute the plan's tasks (protocol 2): executor processes with a
 * model, outside agents and people (through MCP or the CLI), or any of them.
 * The fold does not enforce it: executors choose (ADR-0024).
 */
export const EXECUTORS = ['model', 'outside', 'any'] as const
export type Executors = (typeof EXECUTORS)[number]

/** Who wrote a result: a model, the offline heuristics, or (protocol 2) an outside agent or a person. */
export type ResultSource = 'llm' | 'offline' | 'outside'

/**
 * The parameters of protocol 5's rules (ADR-0047); a goal that has them is
 * a version-5 goal. `claimWindowMs`: among the claims stamped within this
 * many ms after the moment a task became claimable, the one ranked first by
 * a hash of the task and the claimer wins, not the earliest stamp.
 */
export interface Trust {
  readonly claimWindowMs: number
  /**
   * Results checked without `review` (src/core/review-sample.ts): a member's
   * results until one was accepted on review, all of them after one was
   * rejected, and one in this many of the rest, picked by a hash of task and
   * author. 0 or absent: none.
   */
  readonly reviewOneIn?: number
}

/** The sample a goal that asks for one uses: one in four, besides a member's first results and all after a rejection. */
export const DEFAULT_REVIEW_ONE_IN = 4

/**
 * What new goals use (src/author): a window of four of the executors'
 * 250 ms staggers, so the executors ranked 0..3 of a task claim within it,
 * as they do today, and a claim a tick after the task became ready wins
 * nothing by its stamp. Results are not sampled for review unless the goal
 * sets `reviewOneIn` (DEFAULT_REVIEW_ONE_IN is what a goal that asks uses).
 */
export const DEFAULT_TRUST: Trust = { claimWindowMs: 1_000 }

/** A plan's review sample: one result in how many (0: none; a plan of versions 1 to 4 samples none). */
export function reviewOneIn(p: Pick<PlanParams, 'trust'>): number {
  return p.trust?.reviewOneIn ?? 0
}

/**
 * Whether the committee reviews results in this plan: all of them (`review`), or in protocol 5 the deliverable
 * and the sample (which results the sample takes depends on other events, so any result may be reviewed there).
 */
export function reviewsResults(p: Pick<PlanParams, 'review' | 'trust'>): boolean {
  return p.review || p.trust !== undefined
}

/** What a goal's author fixes for the whole plan; every event reaches it through its deps. */
export interface PlanParams {
  /** Peer ids whose ballots and reviews count (under the goal; amendments replace it). */
  readonly committee: readonly PeerIdString[]
  /** Ballots for one proposal, under one committee event, that accept it. Always a strict majority or more. */
  readonly quorum: number
  /** The root is depth 0; nodes at maxDepth are leaves. */
  readonly maxDepth: number
  readonly minChildren: number
  readonly maxChildren: number
  /** Decomposition attempts per node, and execution attempts (failures, rejected review rounds) per task. */
  readonly maxAttempts: number
  /** A claim or renewal keeps the task for this long. */
  readonly leaseMs: number
  /** No claim chain lasts longer than this from its claim. */
  readonly maxClaimMs: number
  /** The tree never grows past this many nodes. */
  readonly maxNodes: number
  readonly budgetTokens: number
  /** Each event's reported usage counts at most this much against the budget. */
  readonly maxTokensPerCall: number
  /** Results need a committee quorum of accepting reviews. */
  readonly review: boolean
  /** An executor holds at most this many live claims in this plan (enforced by executors; see ADR-0005). */
  readonly maxClaimsPerExecutor: number
  /** Protocol 2 only; absent: no approvers. */
  readonly approvers?: Approvers
  /** Protocol 2 and 3; absent: 'model'. */
  readonly executors?: Executors
  /**
   * Protocol 3 only, and then always true: the plan uses executors' tools.
   * Its subgoals may name what they need (`Subgoal.needs`), executors claim
   * only tasks whose needs they meet, and results record their tool calls.
   */
  readonly tools?: true
  /**
   * Protocol 4 only: whole days the plan is kept once finished, counted from
   * its last event's stamp (src/core/retention.ts). Absent: DEFAULT_RETAIN_DAYS.
   */
  readonly retainDays?: number
  /** Protocol 5 only, and then always present: the parameters of its rules (see Trust). */
  readonly trust?: Trust
}

/**
 * A plan's parameters with protocol 2's fields always present (their
 * defaults for a v1 plan: no approvers, executors 'model'): what the tree
 * shows as `params`. The defaults are left out of the treeHash, so a v1
 * plan hashes as it did before protocol 2.
 */
export type ResolvedParams = Omit<PlanParams, 'approvers' | 'executors' | 'tools' | 'retainDays' | 'trust'> & {
  readonly approvers: Approvers | null
  readonly executors: Executors
  readonly tools: boolean
  /** The goal's, or null: kept for DEFAULT_RETAIN_DAYS (null keeps the treeHash of plans from before protocol 4). */
  readonly retainDays: number | null
  /** The goal's (protocol 5); absent: the plan folds by the rules of versions 1 to 4, and hashes as it did. */
  readonly trust?: Trust
}

/** The goal's parameters with protocol 2's defaults filled in. */
export function resolveParams(p: PlanParams | ResolvedParams): ResolvedParams {
  if (
    p.approvers !== undefined &&
    p.executors !== undefined &&
    typeof p.tools === 'boolean' &&
    p.retainDays !== undefined
  )
    return p as ResolvedParams
  return {
    ...p,
    approvers: p.approvers ?? null,
    executors: p.executors ?? 'model',
    tools: p.tools === true,
    retainDays: p.retainDays ?? null,
    ...(p.trust === undefined ? {} : { trust: p.trust })
  }
}

/**
 * The protocol version of a plan with these parameters: 5 when it has
 * protocol 5's `trust`, else 4 when it says how
 * long it is kept, else 3 when it uses tools, else 2 when it uses a
 * protocol-2 feature (approvers, or executors other than 'model'), else 1.
 */
export function paramsVersion(p: PlanParams | ResolvedParams): ProtocolVersion {
  if (p.trust !== undefined) return PROTOCOL_VERSION_5
  if (p.retainDays !== undefined && p.retainDays !== null) return PROTOCOL_VERSION_4
  if (p.tools === true) return PROTOCOL_VERSION_3
  return (p.approvers !== undefined && p.approvers !== null) || (p.executors !== undefined && p.executors !== 'model')
    ? PROTOCOL_VERSION_2
    : PROTOCOL_VERSION
}

/** Approvers of one kind of decision ('splits' or 'results'), or none. */
export function approversFor(p: PlanParams | ResolvedParams, what: 'splits' | 'results'): readonly PeerIdString[] {
  const a = p.approvers
  if (a === undefined || a === null) return []
  return a.for === 'both' || a.for === what ? a.ids : []
}

export interface Subgoal {
  readonly title: string
  readonly detail: string
  /** The decomposer judges this small enough to execute directly. */
  readonly leaf: boolean
  /** Indexes of sibling subgoals whose results this one needs first. */
  readonly dependsOn: readonly number[]
  /**
   * Protocol 3 only: capabilities an executor must offer to take this
   * subgoal's task (tags, servers or `server/tool` names; sorted, distinct,
   * 1..MAX_NEEDS). Absent: any executor. A composite's roll-up needs nothing.
   */
  readonly needs?: readonly string[]
}

export interface ProposalScore {
  readonly proposal: EventId
  /** 0..100 */
  readonly score: number
  readonly notes: string
}

export interface Bodies {
  'goal-submitted': { readonly text: string; readonly params: PlanParams }
  'committee-amended': { readonly committee: readonly PeerIdString[]; readonly quorum: number }
  'budget-raised': { readonly budgetTokens: number }
  'task-retried': { readonly task: TaskId }
  'goal-cancelled': { readonly reason: string }
  'split-proposed': {
    readonly node: NodeId
    readonly attempt: number
    readonly subgoals: readonly Subgoal[]
    readonly rationale: string
    readonly usage: Usage
  }
  'ballot-cast': {
    readonly node: NodeId
    readonly attempt: number
    /** The goal or committee-amended event whose committee this ballot is cast under. */
    readonly committee: EventId
    readonly scores: readonly ProposalScore[]
    /** The proposal this scorer accepts, or null for none. */
    readonly choice: EventId | null
    readonly notes: string
    readonly usage: Usage
  }
  'task-claimed': {
    readonly task: TaskId
    /**
     * null for a task's first claim. Otherwise the last event of the previous
     * claim chain that this claim supersedes: its lapsed claim or renewal (a
     * takeover), its release or failure, or its rejected result.
     */
    readonly prev: EventId | null
  }
  'claim-renewed': { readonly task: TaskId; readonly claim: EventId; readonly prev: EventId }
  'task-released': { readonly task: TaskId; readonly claim: EventId; readonly reason: string }
  'task-failed': {
    readonly task: TaskId
    readonly claim: EventId
    readonly error: string
    readonly usage: Usage
    /** Protocol 3 only: the model turns the usage was spent in (absent: 1); see `turns` on results. */
    readonly turns?: number
  }
  'result-reported': {
    readonly task: TaskId
    readonly claim: EventId
    readonly output: string
    readonly usage: Usage
    readonly model: string
    /** 'outside' only in protocol 2 and 3. */
    readonly source: ResultSource
    /** Protocol 3 only: the tool calls the task's loop made (absent: none). */
    readonly toolCalls?: readonly ToolCallRecord[]
    /**
     * Protocol 3 only: the model turns of the task's loop (1..MAX_TURNS;
     * absent: 1). The budget counts the usage capped at maxTokensPerCall
     * per turn, so a loop's every turn counts.
     */
    readonly turns?: number
  }
  'result-reviewed': {
    readonly task: TaskId
    readonly result: EventId
    readonly committee: EventId
    readonly verdict: 'accept' | 'reject'
    readonly notes: string
    readonly usage: Usage
  }
}

/** The signed part of an event. Its canonical encoding is hashed for the id and signed. */
export interface Envelope<T extends EventType = EventType> {
  readonly v: number
  readonly swarm: string
  readonly type: T
  /** The plan id; the empty string for `goal-submitted`, whose own id is the plan id. */
  readonly plan: string
  readonly author: PeerIdString
  readonly hlc: Hlc
  /** Ids of the events this one builds on: sorted ascending, no repeats. */
  readonly deps: readonly EventId[]
  readonly body: Bodies[T]
}

/** A decoded event whose encoding and signature have been checked. */
export interface PlanEvent<T extends EventType = EventType> {
  readonly id: EventId
  readonly env: Envelope<T>
}

/**
 * The version to publish an event with: a goal's from its own parameters,
 * any other event its plan's goal's (`goal`, one of its deps). The fold
 * refuses an event whose version is not its goal's ('wrong-version').
 */
export function eventVersion<T extends EventType>(type: T, body: Bodies[T], goal: PlanEvent | undefined): number {
  if (type === 'goal-submitted') return paramsVersion((body as Bodies['goal-submitted']).params)
  return goal?.env.v ?? PROTOCOL_VERSION
}

/** Narrow an event by type. */
export function isType<T extends EventType>(e: PlanEvent, type: T): e is PlanEvent<T> {
  return e.env.type === type
}

export const DEFAULT_PARAMS: Omit<PlanParams, 'committee' | 'quorum'> = {
  maxDepth: 3,
  minChildren: 2,
  maxChildren: 7,
  maxAttempts: 3,
  leaseMs: 15_000,
  maxClaimMs: 600_000,
  maxNodes: 200,
  budgetTokens: 2_000_000,
  maxTokensPerCall: 16_000,
  review: false,
  maxClaimsPerExecutor: 2
}

/** The smallest strict majority of a committee of `size`. */
export function majority(size: number): number {
  return Math.floor(size / 2) + 1
}
