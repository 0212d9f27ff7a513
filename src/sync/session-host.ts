/** What a sync session needs from the node it runs in. */
import type { IdSet } from './reconcile/index.js'
import type { InflightIds } from './inflight.js'
import type { SyncLimits } from './limits.js'

/** A debug logger (printf-style, `%s` `%d` `%e`), as `@libp2p/logger` makes them. */
export interface SyncLog {
  (format: string, ...args: unknown[]): void
  readonly error: (format: string, ...args: unknown[]) => void
}

export interface SessionHost {
  /** The live set of held ids: what is reconciled. */
  readonly ids: IdSet
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
  readonly limits: SyncLimits
  readonly log: SyncLog
}
