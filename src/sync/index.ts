/**
 * The catch-up layer: the pure reconciliation core (reconcile/) and the sync
 * stream beside it (frames, sessions over any SyncStream on any Scheduler,
 * an in-memory stream pair for the simulator). Nothing exported here imports
 * libp2p; the libp2p service is libp2p-service.ts.
 */
export * from './reconcile/index.js'
export { runSyncSession, SyncSession } from './session.js'
export type { SessionHost, SyncLog } from './session-host.js'
export type { SyncDirection, SyncStats } from './stats.js'
export { InflightIds } from './inflight.js'
export { DEFAULT_SYNC_LIMITS, MAX_OUTSTANDING_WANTS, MAX_WANT_IDS_PER_FRAME } from './limits.js'
export type { SyncLimits } from './limits.js'
export type { SyncStream, SyncStreamListener, SyncStreamStatus } from './stream.js'
export { createMemoryStreamPair, DEFAULT_MEMORY_WINDOW_BYTES } from './memory-stream.js'
export type { MemoryDirection, MemoryStreamOptions, MemoryStreamPair } from './memory-stream.js'
export { StreamCutError, SyncAbortedError, SyncProtocolError, SyncTimeoutError } from './errors.js'
export { nativeEventIdOfWire, nativeSha256HexOfText } from './native-hash.js'
