import type { EventId } from '../core/events.js'
import type { SyncIds } from '../core/id-set.js'

/**
 * What gossip should do with a message: forward it, penalise the sender
 * (provably bad bytes), or drop it quietly (held already, or parked: never
 * penalise an honest forwarder for a missing dep or clock skew).
 */
export type Verdict = 'accept' | 'reject' | 'ignore'

/** What a peer says about itself on the presence topic (never part of the plan log). */
export interface PresenceInfo {
  /** decomposer, scorer, executor, observer, client, or another short lowercase word. */
  readonly role: string
  readonly capabilities: readonly string[]
  /** How busy the node is (e.g. tasks in flight); any finite number >= 0. */
  readonly load: number
  /** Software version, e.g. `plan-swarm/0.1.0`. */
  readonly version: string
}

/** A verified presence announcement of another peer. */
export interface Presence extends PresenceInfo {
  readonly peerId: string
  /** Addresses the peer can be reached at (multiaddrs with `/p2p/<peerId>` on libp2p). */
  readonly addresses: readonly string[]
  /** The sender's wall clock when it signed, in ms since the epoch. */
  readonly sentMs: number
}

/** What one catch-up session did, as far as the node above the transport cares. */
export interface SyncOutcome {
  readonly peer: string
  readonly ok: boolean
  readonly eventsReceived: number
  readonly error?: string
  /** Ids left for a later session: the peer's pull quota was spent. */
  readonly quotaLeft?: number
}

/**
 * What the replica offers the network: a verdict for each gossiped event,
 * the id set and bytes sync reconciles and serves, and ingestion of what
 * sync brings. The transport calls these; it never reaches into the fold.
 */
export interface TransportHost {
  /** A gossiped event's bytes: fold it (or park it) and say what gossip should do with it. */
  readonly receive: (bytes: Uint8Array, from: string) => Verdict
  /** The live set of held ids (what sync reconciles). */
  readonly ids: SyncIds
  /** Held, folded, parked or refused: never fetched again. */
  readonly has: (id: string) => boolean
  readonly getBytes: (id: string) => Uint8Array | undefined
  /** Events from sync, verified exactly like gossiped ones; one frame at a time. */
  readonly ingestMany: (batch: readonly Uint8Array[], from: string) => Promise<unknown>
  /** A verified, fresh presence of another peer; `source`: where it connects from here, when known (RosterEntry). */
  readonly presence: (p: Presence, source?: string) => void
  /** Every finished sync session (for metrics). */
  readonly synced?: (s: SyncOutcome) => void
  /** The ids of the events of this node's plans under way (at most `max`), which a peer that catches up asks for first. */
  readonly openIds?: (max: number) => readonly string[]
  /** Whether to ask each new peer for its plans under way before the rest (just started, or catching up). */
  readonly wantsOpenIds?: () => boolean
  /** This node's summary of a plan it holds, for a peer that asks (one with `--history open`). */
  readonly summaryOf?: (plan: string) => PlanSummaryAnswer | undefined
  /**
   * What counts against a peer as an author in this node's plans (its
   * standing's penalty, ADR-0048): 0 for a peer with a clean or honest-looking
   * record. Asked often (gossipsub's score): a lookup.
   */
  readonly penalty?: (peer: string) => number
}

/** What a node says of one plan it holds, when a peer asks (src/sync/plan-summary.ts carries it). */
export interface PlanSummaryAnswer {
  readonly plan: string
  readonly goal: string
  readonly status: string
  readonly treeHash: string
  readonly nodes: number
  readonly done: number
  /** The roll-up of the whole plan (cut to fit); null until there is one. */
  readonly deliverable: string | null
}

/**
 * The network as the node sees it: gossip out and in (with verdicts), sync
 * sessions with a peer, who is connected, and presence. Implemented by the
 * libp2p shell (src/net) and by the simulator (src/sim).
 */
export interface Transport {
  readonly peerId: string
  /** Starts receiving: from here on gossip, sync and presence reach `host`. */
  start: (host: TransportHost) => Promise<void>
  /** Gossips an event's wire bytes; never fails for lack of peers (sync delivers it later). */
  publish: (id: EventId, bytes: Uint8Array) => Promise<void>
  /**
   * Runs one catch-up session with a connected peer now, or joins the one
   * running to it. With `fresh`, only a session that starts after the call
   * counts, so a success means the peer holds everything this node held at
   * the call. Never rejects.
   */
  syncWith: (peer: string, options?: { readonly fresh?: boolean }) => Promise<SyncOutcome>
  connectedPeers: () => string[]
  /** Connected peers subscribed to the events topic: those a publish reaches now. */
  topicPeers: () => string[]
  /** Addresses others can reach this node at. */
  addresses: () => string[]
  /** The current interval between this node's presence announcements (roles size waits by it). */
  presenceIntervalMs: () => number
  /** Announce these capabilities in presence from now on (at once, then with every announcement). */
  announce?: (capabilities: readonly string[]) => void
  /** A connected peer's summary of a plan, and whose it is; null when none holds it. Absent in the simulator. */
  planSummary?: (plan: string) => Promise<{ readonly from: string; readonly summary: PlanSummaryAnswer } | null>
  stop: () => Promise<void>
}
