/** What a sync session needs from the node it runs in. */
import type { SyncIds } from './reconcile/index.js'
import type { InflightIds } from './inflight.js'
import type { PullQuota } from './pull-quota.js'
import type { SyncLimits } from './limits.js'

/** A debug logger (printf-style, `%s` `%d` `%e`), as `@libp2p/logger` makes them. */
export interface SyncLog {
  (format: string, ...args: unknown[]): void
  readonly error: (format: string, ...args: unknown[]) => void
}

/**
 * What an ingest call may report of an event: the ids of deps it waits for
 * (parked). The session asks its peer for those first: the peer folded the
 * event, so it holds them, and a catch-up then completes plans one after
 * another instead of parking most of the history until the end.
 */
export interface IngestReport {
  readonly missing?: readonly string[]
}

/**
 * The missing deps in what `ingest` (an IngestReport) or `ingestMany` (an
 * array of them) resolved to; none for anything else, so a host that
 * reports nothing (a test's, an older one's) pulls in the reconciled order.
 */
export function missingDeps(result: unknown): string[] {
  const out: string[] = []
  const take = (r: unknown): void => {
    const missing = (r as IngestReport | null | undefined)?.missing
    if (Array.isArray(missing)) for (const id of missing) if (typeof id === 'string') out.push(id)
  }
  if (Array.isArray(result)) for (const r of result) take(r)
  else take(result)
  return out
}

export interface SessionHost {
  /** The live set of held ids: what is reconciled. */
  readonly ids: SyncIds
  /** Held, folded or parked: such ids are never requested. */
  readonly has: (id: string) => boolean
  /** Wire bytes of a held event, or undefined. */
  readonly getBytes: (id: string) => Uint8Array | undefined
  /** Verifies and stores one event received by sync (exactly like gossip). Awaited, in order. */
  readonly ingest: (bytes: Uint8Array, from: string) => Promise<unknown>
  /** Takes a whole EVENTS frame at once, when given (same checks as `ingest`). Awaited. */
  readonly ingestMany?: (batch: readonly Uint8Array[], from: string) => Promise<unknown>
  /** Shared by the sessions of one node (see InflightIds). */
  readonly inflight: InflightIds
  /** How much may be pulled from each peer (see PullQuota), shared by the sessions of one node; none: no bound. */
  readonly quota?: PullQuota
  readonly limits: SyncLimits
  readonly log: SyncLog
  /**
   * This node keeps only the plans under way (`--history open`): its sessions
   * reconcile nothing and pull only what they are told to first (see session.ts).
   */
  readonly scoped?: boolean
}
