/** What a sync session reports, and the counters it keeps on the way. */

/** outbound: this side opened the stream (and sends the first RECONCILE). */
export type SyncDirection = 'inbound' | 'outbound'

/** What one session did, as this side saw it. */
export interface SyncStats {
  /** The remote peer id. */
  readonly peer: string
  /** outbound: this side opened the stream. */
  readonly direction: SyncDirection
  readonly ok: boolean
  readonly error?: string
  /** Non-empty RECONCILE messages exchanged (both directions). */
  readonly rounds: number
  /** All bytes on the stream, framing included. */
  readonly bytesSent: number
  readonly bytesReceived: number
  /** Of which, event wire bytes. */
  readonly eventBytesSent: number
  readonly eventBytesReceived: number
  readonly eventsSent: number
  readonly eventsReceived: number
  /** Ids this side asked for. */
  readonly wanted: number
  /** `ingest` calls that threw or rejected (the events still count as received). */
  readonly ingestErrors: number
  readonly ms: number
  /** The peer keeps only its plans under way (`--history open`): it reconciled nothing (see session.ts). */
  readonly peerScoped?: boolean
  /** Ids this side left for a later session, the peer's pull quota spent (see pull-quota.ts); absent when none. */
  readonly quotaLeft?: number
}

/** The running counts of one session (the parts of SyncStats that add up). */
export type SessionCounters = {
  -readonly [
    K in
      | 'rounds'
      | 'bytesSent'
      | 'bytesReceived'
      | 'eventBytesSent'
      | 'eventBytesReceived'
      | 'eventsSent'
      | 'eventsReceived'
      | 'wanted'
      | 'ingestErrors'
  ]: number
}

export function emptyCounters(): SessionCounters {
  return {
    rounds: 0,
    bytesSent: 0,
    bytesReceived: 0,
    eventBytesSent: 0,
    eventBytesReceived: 0,
    eventsSent: 0,
    eventsReceived: 0,
    wanted: 0,
    ingestErrors: 0
  }
}

/** The stats of an outbound session that never ran (the stream did not open, the service is stopped). */
export function failedStats(peer: string, error: string, ms: number): SyncStats {
  return { peer, direction: 'outbound', ok: false, error, ...emptyCounters(), ms }
}
