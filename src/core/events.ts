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

/** The protocol version this code folds. Events of another version are stored and relayed, not folded. */
export const PROTOCOL_VERSION = 1

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

export type EventType = typeof EVENT_TYPES[number]

/** Tokens one LLM call used, as the provider reported them. */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
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
  /** An executor holds at most this many live claims in this plan (enforced by executors; see docs/decisions.md). */
  readonly maxClaimsPerExecutor: number
}

export interface Subgoal {
  readonly title: string
  readonly detail: string
  /** The decomposer judges this small enough to execute directly. */
  readonly leaf: boolean
  /** Indexes of sibling subgoals whose results this one needs first. */
  readonly dependsOn: readonly number[]
}

export interface ProposalScore {
  readonly proposal: EventId
  /** 0..100 */
  readonly score: number
  readonly notes: string
}

export interface Bodies {
  'goal-submitted': { readonly text: string, readonly params: PlanParams }
  'committee-amended': { readonly committee: readonly PeerIdString[], readonly quorum: number }
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
  'claim-renewed': { readonly task: TaskId, readonly claim: EventId, readonly prev: EventId }
  'task-released': { readonly task: TaskId, readonly claim: EventId, readonly reason: string }
  'task-failed': { readonly task: TaskId, readonly claim: EventId, readonly error: string, readonly usage: Usage }
  'result-reported': {
    readonly task: TaskId
    readonly claim: EventId
    readonly output: string
    readonly usage: Usage
    readonly model: string
    readonly source: 'llm' | 'offline'
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

/** Narrow an event by type. */
export function isType<T extends EventType> (e: PlanEvent, type: T): e is PlanEvent<T> {
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
export function majority (size: number): number {
  return Math.floor(size / 2) + 1
}
