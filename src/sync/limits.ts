/** Protocol constants and the bounds of one sync session. */

/** Protocol constant: at most this many wanted ids may be unsettled at once, per direction. */
export const MAX_OUTSTANDING_WANTS = 4096
/** Protocol constant: at most this many ids in one WANT frame. */
export const MAX_WANT_IDS_PER_FRAME = 1024

/** Bounds of one session. Both sides should use the same frame and reconcile-message caps. */
export interface SyncLimits {
  /** Largest frame accepted or sent (length prefix value). Default 2 MiB. */
  readonly maxFrameBytes: number
  /** An EVENTS frame is cut once its events reach this many bytes. Default 1 MiB. */
  readonly eventsBatchBytes: number
  /** Largest reconciliation message. Default 1 MiB. */
  readonly reconcileMessageBytes: number
  /** Reconciliation messages accepted per session. Default 256. */
  readonly maxRounds: number
  /** Frames accepted per session. Default 200 000. */
  readonly maxFrames: number
  /** A session with no progress (a frame, a written frame, an ingested event, 16 KiB received) for this long is cut off. Default 10 s. */
  readonly idleTimeoutMs: number
  /** Hard cap on a session's life, progress or not. Default 10 min. */
  readonly maxSessionMs: number
  /** How long a session waits for ids another session is fetching before asking for them itself. Default 3 s. */
  readonly deferWaitMs: number
  /** The peer may want at most (ids held + this) ids in one session. Default 4096. */
  readonly wantSlack: number
}

export const DEFAULT_SYNC_LIMITS: SyncLimits = {
  maxFrameBytes: 2 << 20,
  eventsBatchBytes: 1 << 20,
  reconcileMessageBytes: 1 << 20,
  maxRounds: 256,
  maxFrames: 200_000,
  idleTimeoutMs: 10_000,
  maxSessionMs: 600_000,
  deferWaitMs: 3_000,
  wantSlack: 4096
}
