import type {
  EventId,
  Hlc,
  NodeId,
  PeerIdString,
  PlanId,
  ResolvedParams,
  ResultSource,
  TaskId,
  ToolCallRecord
} from './events.js'

/**
 * The folded plan tree: plain data, in a deterministic order, so that it can
 * be hashed (treeHash), served as JSON and compared across replicas. Nothing
 * in it depends on arrival order or on a clock.
 */

export type PlanStatus = 'planning' | 'executing' | 'completed' | 'failed' | 'cancelled' | 'budget-exhausted'

export type LeafReason = 'marked-leaf' | 'max-depth' | 'attempts-exhausted' | 'max-nodes'

export type NodeStatus = 'decomposing' | 'blocked' | 'ready' | 'claimed' | 'in-review' | 'done' | 'failed'

export type TaskStatus = 'blocked' | 'ready' | 'claimed' | 'in-review' | 'done' | 'failed'

export interface ProposalView {
  readonly id: EventId
  readonly author: PeerIdString
  readonly titles: readonly string[]
  readonly rationale: string
  /** Most choices it got under any one committee event. */
  readonly votes: number
  readonly equivocated: boolean
}

export interface BallotView {
  readonly id: EventId
  readonly author: PeerIdString
  readonly committee: EventId
  readonly choice: EventId | null
  readonly notes: string
  readonly equivocated: boolean
}

export interface AttemptView {
  readonly attempt: number
  readonly proposals: readonly ProposalView[]
  readonly ballots: readonly BallotView[]
  readonly outcome: 'open' | 'won' | 'failed'
  readonly winner: EventId | null
  /** The ballot that completed the winning quorum. */
  readonly decidedBy: EventId | null
  /** Members of the latest committee that have not cast a ballot under it. */
  readonly waitingFor: readonly PeerIdString[]
}

export interface TreeNode {
  readonly id: NodeId
  readonly parent: NodeId | null
  readonly index: number
  readonly depth: number
  readonly title: string
  readonly detail: string
  /** Sibling nodes whose results this one needs first. */
  readonly dependsOn: readonly NodeId[]
  /** What a proposal for this node cites, besides the goal: the split that made it. */
  readonly evidence: readonly EventId[]
  readonly kind: 'decomposing' | 'leaf' | 'composite'
  readonly leafReason: LeafReason | null
  /**
   * What an executor must offer to take the node's leaf task (protocol 3):
   * the capabilities its subgoal named, fixed once the node exists; empty
   * for any executor. A composite's roll-up needs nothing whatever its
   * node says. Left out of the treeHash, which covers it through the
   * accepted split's id.
   */
  readonly needs: readonly string[]
  readonly attempts: readonly AttemptView[]
  readonly accepted: EventId | null
  readonly children: readonly NodeId[]
  /** The leaf's own task, or the composite's roll-up task. */
  readonly task: TaskId | null
  readonly status: NodeStatus
  /** Why nothing happens at this node right now, in words; null when something can happen. */
  readonly waiting: string | null
  /**
   * The peers this node waits for, sorted: committee members (or, once a
   * proposal has its quorum, approvers) who have not cast a ballot on its
   * open attempt, or, for its task in review, who have not reviewed the
   * result. Empty when it waits for no one in particular. A function of
   * the set like everything else, but left out of the treeHash (it is
   * what the observer, the inbox and /status show, and protocol 1's
   * hashes must stay as they were).
   */
  readonly awaiting: readonly PeerIdString[]
}

export interface ChainView {
  readonly claim: EventId
  readonly owner: PeerIdString
  readonly claimedAt: Hlc
  readonly renewals: number
  /** The chain's last claim or renewal event. */
  readonly last: EventId
  /** Wall ms at which the lease lapses (last renewal + leaseMs, capped at claim + maxClaimMs). */
  readonly lapseMs: number
  readonly end: null | {
    readonly kind: 'result' | 'released' | 'failed' | 'rejected' | 'superseded'
    readonly event: EventId
  }
}

export interface ResultView {
  readonly id: EventId
  readonly author: PeerIdString
  readonly claim: EventId
  readonly at: Hlc
  readonly output: string
  readonly model: string
  readonly source: ResultSource
  /** The tool calls its loop made (protocol 3; empty otherwise). Left out of the treeHash, which has the result's id. */
  readonly toolCalls: readonly ToolCallRecord[]
  readonly accepted: boolean
  readonly review: 'none' | 'pending' | 'accepted' | 'rejected'
  /**
   * Protocol 5 only (absent before it, so earlier plans hash as they did): why the committee reviews it, or null
   * when it was accepted as it came (src/core/review-sample.ts).
   */
  readonly reviewedFor?: ReviewedFor | null
}

/**
 * Why a result of a version-5 plan is reviewed: the plan reviews all (`review`), it is the plan's deliverable (the
 * root's task: `deliverable`), the author's first results until one passes review (`first`), every result of an
 * author once one was rejected (`after-rejection`), or the rank sample (`sample`).
 */
export type ReviewedFor = 'review' | 'deliverable' | 'first' | 'after-rejection' | 'sample'

export interface TaskView {
  readonly id: TaskId
  readonly node: NodeId
  readonly kind: 'leaf' | 'rollup'
  readonly status: TaskStatus
  /** Nodes that must finish (done or failed) before this task can be claimed. */
  readonly blockedBy: readonly NodeId[]
  /** The stamp after which a claim counts; null while blocked. */
  readonly readyAt: Hlc | null
  /** What a claim cites so that it is delivered after the events that made the task claimable. */
  readonly evidence: readonly EventId[]
  readonly chains: readonly ChainView[]
  readonly owner: PeerIdString | null
  readonly results: readonly ResultView[]
  readonly accepted: EventId | null
  /** Results beyond the accepted one: each a duplicate execution. */
  readonly duplicates: number
  readonly failures: number
  readonly attemptsAllowed: number
  readonly finishedAt: Hlc | null
  readonly finishEvent: EventId | null
  /** Claims that lost a race, came before the task was ready, or arrived after it finished. */
  readonly ignoredClaims: number
  /**
   * In review: the committee members (or, once the accepts are in, approvers) who have not reviewed its pending result;
   * else empty. Not hashed (see TreeNode.awaiting).
   */
  readonly awaiting: readonly PeerIdString[]
}

export interface Equivocation {
  readonly author: PeerIdString
  readonly slot: string
  readonly events: readonly EventId[]
}

/**
 * What protocol 5's fold holds against a member (ADR-0047): an equivocation
 * (the member's every ballot and review in the plan stopped counting), a
 * claim beyond its limit, a claim that would take over its own chain, a
 * result for a task it did not hold, a claim of a contest it lost to a
 * decision others had built on (a late or back-dated event), a chain it
 * ended without a result (a release or a failure), a result its committee
 * rejected.
 */
export type EvidenceKind =
  | 'equivocation'
  | 'claim-over-limit'
  | 'self-takeover'
  | 'result-not-held'
  | 'late'
  | 'ended-without-result'
  | 'result-rejected'

export interface EvidenceItem {
  readonly author: PeerIdString
  readonly event: EventId
  readonly kind: EvidenceKind
}

/** A version-5 plan's record of its members (see EvidenceKind); others show it as each member's standing. */
export interface PlanStanding {
  /** Authors who equivocated in the plan, sorted: their ballots and reviews do not count in it. */
  readonly equivocators: readonly PeerIdString[]
  /** Sorted by author, kind and event. */
  readonly evidence: readonly EvidenceItem[]
}

export interface CommitteeView {
  readonly event: EventId
  readonly members: readonly PeerIdString[]
  readonly quorum: number
}

export interface PlanTree {
  readonly plan: PlanId
  readonly goal: string
  readonly author: PeerIdString
  /**
   * Protocol 5 only: how long after a chain's claim another member may back it up (fold.md 11.8,
   * src/core/trust-rules.ts `backupAfter`). Derived from the set like the rest; not hashed (tree-hash.ts NOT_HASHED).
   */
  readonly backupMs?: number
  /**
   * Protocol 5 only, when a member was outdone in the plan (ADR-0054): its chains claimed after `after[member]` may
   * be backed up `ms` after their claim. Not hashed, like backupMs.
   */
  readonly backupSooner?: { readonly after: Readonly<Record<PeerIdString, Hlc>>; readonly ms: number }
  readonly submittedAt: Hlc
  /** The goal's parameters, protocol 2's fields with their defaults when the goal has none (left out of the treeHash then). */
  readonly params: ResolvedParams
  readonly committees: readonly CommitteeView[]
  readonly status: PlanStatus
  readonly statusReason: string
  readonly budgetTokens: number
  readonly spentTokens: number
  /** Protocol 5 only (absent before it, so earlier plans hash as they did): evidence against members. */
  readonly standing?: PlanStanding
  readonly root: NodeId
  /** Breadth-first from the root, children in split order. */
  readonly nodes: readonly TreeNode[]
  /** In the order of `nodes`. */
  readonly tasks: readonly TaskView[]
  readonly equivocations: readonly Equivocation[]
  readonly deliverable: null | { readonly task: TaskId; readonly result: EventId; readonly output: string }
  readonly events: number
  readonly duplicates: number
  readonly ignoredClaims: number
}
