/**
 * The pure range-based set reconciliation core: the id set, the session that
 * trades messages about its ranges, and the message codec. No I/O, clock or
 * randomness (lint-enforced), so the network stream and the simulator drive
 * the same objects.
 */
export { createReconcileSession, reconcileInMemory } from './reconcile.js'
export type { ReconcileOptions, ReconcileResult, ReconcileSession, ReconcileStats, ReconcileStep } from './reconcile.js'
export {
  IdRangesChanged,
  IdSnapshot,
  fingerprintOfSums,
  isEventIdHex,
  separatingBound,
  END_BOUND,
  START_BOUND,
  FINGERPRINT_BYTES
} from '../../core/id-set.js'
export type { Bound, IdRanges, IdSetAddOutcome, SyncIds } from '../../core/id-set.js'
export {
  RECONCILE_WIRE_VERSION,
  decodeMessage as decodeReconcileMessage,
  encodeMessage as encodeReconcileMessage
} from './codec.js'
export type { WireRange } from './codec.js'
