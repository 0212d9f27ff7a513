import type { Bodies, EventId, EventType, PeerIdString, PlanEvent, PlanId } from '../core/events.js'
import type { PlanSummary } from '../core/fold.js'
import type { PeerRecord } from '../core/peer-standing.js'
import type { PlanStatus, PlanTree } from '../core/tree.js'
import type { Scheduler } from './scheduler.js'
import type { PlanSummaryAnswer } from './transport.js'

/** One listed peer, as status pages and roles see it. */
export interface RosterEntry {
  readonly peerId: string
  readonly role: string
  readonly capabilities: readonly string[]
  /** Milliseconds since we last heard from the peer. */
  readonly lastSeenMs: number
  /** Milliseconds since this node first heard of the peer (a default committee trusts long-known peers first). */
  readonly firstSeenMs?: number
  /**
   * Where the peer connects from, as far as this node can tell: `ip:<address>`
   * of a direct connection, `relay:<peer>` of a relayed one; absent when it
   * is not connected here or only over loopback. Many peers behind one source
   * may be one member's many keys (see src/author/committee.ts).
   */
  readonly source?: string
  readonly load: number
  readonly version: string
  readonly addresses: readonly string[]
}

/** One plan's line, as /status and the progress printout show it. */
export interface PlanLine {
  readonly id: PlanId
  readonly goal: string
  readonly status: PlanStatus
  readonly treeHash: string
  readonly nodes: number
  readonly done: number
  readonly spentTokens: number
  readonly budgetTokens: number
  /** Why the plan cannot go on where it stands (a few nodes at most); empty once finished. */
  readonly waiting: string[]
}

/** What GET /status serves. */
/**
 * Which plans a listing shows: 'all' (GET /plans); or 'recent', the plans
 * not finished and the last hundred to finish (STATUS_FINISHED_MAX in
 * src/runtime/plan-lines.ts): what /status and a node's --json lines list, since
 * a node that has kept ten thousand finished plans would otherwise answer
 * megabytes.
 */
export type PlanScope = 'all' | 'recent'

export interface StatusBody {
  peerId: string
  role: string
  swarm: string
  version: string
  dataDir: string
  addresses: string[]
  peers: number
  roster: RosterEntry[]
  /** What this node offers to tasks that need tools (an executor with --tools); empty otherwise. */
  offers: string[]
  /** The plans under way, and the last hundred to finish (see PlanScope); GET /plans lists them all. */
  plans: PlanLine[]
  /** How many finished plans this node holds beyond those in `plans`. */
  plansOlder: number
  /** Events held and parked; plans expired here since start, and late events of expired plans refused. */
  events: { held: number; parked: number; expired: number; refusedLate: number }
  /** `--history`: whether this node fetches finished plans from its peers (all) or only plans under way (open). */
  history: { mode: 'all' | 'open'; says: string }
  /** Members with evidence against them in this node's version-5 plans, the worst first (at most STATUS_STANDING_MAX). */
  standing: StatusStanding
}

/** Standing as /status shows it (ADR-0048): a line per member with a poor record, and counts of the rest. */
export interface StatusStanding {
  /** Members whose record counts against them (`penalty` > 0), the worst first, at most STATUS_STANDING_MAX. */
  poor: Array<{ peer: string; penalty: number; says: string }>
  /** Members with evidence against them, poor or not. */
  withEvidence: number
  /** Poor members beyond those listed. */
  more: number
}

/** How this node stands in the swarm, for printouts and waits. */
export interface NodeHealth {
  /** Connected peers. */
  readonly peers: number
  /** Connected peers subscribed to the events topic (a publish reaches them now). */
  readonly topicPeers: number
  readonly held: number
  readonly parked: number
  /** Events rejected since start, by reason. */
  readonly rejected: Readonly<Record<string, number>>
}

/** Sign, fold, store and gossip an event of this node; its deps are the plan's goal plus `cites`. */
export type Publish = <T extends EventType>(
  type: T,
  plan: PlanId | '',
  cites: readonly EventId[],
  body: Bodies[T]
) => Promise<{ event: PlanEvent<T>; bytes: Uint8Array }>

/**
 * Everything above the runtime (the roles, the observer, the HTTP server and
 * dashboard, the client commands) sees a node through this one
 * read-and-publish view, never through the replica, the fold or the network.
 * The same view is served by a libp2p peer and by a simulated node.
 */
export interface NodeView {
  /** This node's peer id: the author of what it publishes. */
  readonly me: PeerIdString
  readonly swarm: string
  readonly role: string
  /** The node's clock, timers and randomness. */
  readonly scheduler: Scheduler
  /** The node's wall clock (scheduler.now). */
  now: () => number
  /** Every plan held, in memory or not. */
  plans: () => PlanId[]
  /** A plan's tree if it is in memory (cheap: what loops over every plan read). */
  tree: (plan: PlanId) => PlanTree | undefined
  /** A plan's tree, brought back from the store first if it left memory. */
  loadTree: (plan: PlanId) => PlanTree | undefined
  /** Finished and out of memory (on disk only). */
  isEvicted: (plan: PlanId) => boolean
  treeHash: (plan: PlanId) => string | undefined
  /**
   * Why the roles leave a plan alone, or null: it waits for its author's
   * earlier plans to finish (the open-plan limit per author,
   * src/core/admission.ts), or it has been quiet for long while this node
   * catches up on history (src/runtime/catch-up.ts).
   */
  held: (plan: PlanId) => string | null
  /** Whether history is streaming in by sync now; when it stops, the roles decide every plan again. */
  catchingUp: () => boolean
  /** A plan's line without its tree (also for plans out of memory). */
  summary: (plan: PlanId) => PlanSummary | undefined
  /** One line per plan (GET /plans), or only those of a `PlanScope`. */
  planLines: (scope?: PlanScope) => PlanLine[]
  /** A plan's events (loading it back if needed), or undefined for a plan not held. */
  planEvents: (plan: PlanId) => PlanEvent[] | undefined
  /** A folded event by id (in memory). */
  event: (id: EventId) => PlanEvent | undefined
  /** The reviews folded for a result of a plan. */
  reviewsOf: (plan: PlanId, result: EventId) => ReadonlyArray<PlanEvent<'result-reviewed'>>
  /** The live roster (other peers heard on the presence topic), most recently seen first. */
  roster: () => RosterEntry[]
  /** The current presence interval: waits that must outlast "everyone has heard of everyone" scale with it. */
  presenceIntervalMs: () => number
  /** Smoothed delay between another peer signing an event and this node folding it from gossip. */
  lagMs: () => number
  health: () => NodeHealth
  /** What GET /status answers: `plans` lists the plans of `scope` (default 'recent'). */
  status: (scope?: PlanScope) => StatusBody
  /**
   * Each member with evidence against it in this node's version-5 plans,
   * the worst first (src/core/peer-standing.ts, ADR-0048). Absent where a
   * view keeps none.
   */
  standing?: () => readonly PeerRecord[]
  /** Called after events fold (from any source). */
  onFolded: (fn: (events: readonly PlanEvent[]) => void) => () => void
  publish: Publish
  /**
   * Catch up with the swarm now: one sync session with each connected peer
   * in turn until one succeeds. Each session starts after the call, so the
   * peer returned holds everything this node held when it was called (what
   * `submit` relies on before it exits). Returns that peer, or null when none
   * answered.
   */
  syncOnce: () => Promise<string | null>
  /**
   * A plan's summary: this node's own when it holds the plan, else the first
   * a connected peer gives (a peer's word, not signed events: `from` says
   * whose); null when nobody holds it.
   */
  planSummary: (plan: PlanId) => Promise<{ readonly from: string; readonly summary: PlanSummaryAnswer } | null>
  /** `--history`: 'open' when this node never fetches finished plans (reads of them ask peers instead). */
  readonly history: 'all' | 'open'
  /** Prometheus text for GET /metrics. */
  metricsText: () => Promise<string>
  /**
   * Announce what this node offers (an executor's tools, protocol 3) in its
   * presence, at once and from then on; absent where presence is fixed.
   */
  offer?: (offers: readonly string[]) => void
}
