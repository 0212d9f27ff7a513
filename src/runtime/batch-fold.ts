import { byStamp } from '../core/fold.js'
import type { AddOutcome } from '../core/event-set.js'
import type { EventId, PlanEvent } from '../core/events.js'
import type { LoopSlices } from '../ports/loop-slices.js'
import type { DecodeResult, DecodedEvent } from '../wire/decode.js'
import type { EventSource, IngestResult } from './ingest-verdicts.js'

/** With slices of the event loop: events of a sync batch decoded, and folded, per item of work handed to them. */
export const SCREEN_CHUNK = 128
export const FOLD_CHUNK = 16

/** What folding a screened batch does through the replica (src/runtime/replica.ts). */
export interface BatchHost {
  otherVersion: (d: { id: EventId; v: number; plan: string }, bytes: Uint8Array, source: EventSource) => IngestResult
  /** The fold's `addBatch` at the replica's time. */
  addBatch: (events: readonly PlanEvent[]) => Array<{ event: PlanEvent; outcome: AddOutcome }>
  settle: (e: PlanEvent, bytes: Uint8Array, outcome: AddOutcome, source: EventSource) => IngestResult
  /** Commit what folded (one transaction). */
  flush: () => void
  duplicate: (id: EventId, source: EventSource) => IngestResult
  /** A sync batch brought `n` events new here (catch-up.ts). */
  synced: (n: number) => void
}

type Where = ReadonlyMap<EventId, { i: number; bytes: Uint8Array }>

/** Fold (and store, in one transaction) the events of a screened, checked batch that are not settled yet. */
export function foldBatch(
  host: BatchHost,
  batch: readonly Uint8Array[],
  decoded: readonly DecodeResult[],
  results: Array<IngestResult | undefined>,
  source: EventSource
): IngestResult[] {
  const { events, where } = toFold(host, batch, decoded, results, source)
  foldEvents(host, events, where, results, source)
  return settled(host, decoded, results, source)
}

/** A batch's screening (decode, held already?), SCREEN_CHUNK events per item of work handed to `slices`. */
export async function screenSliced(
  slices: LoopSlices,
  batch: readonly Uint8Array[],
  unsettled: (i: number, author: string) => void,
  screen: (
    part: readonly Uint8Array[],
    unsettled: (i: number, author: string) => void
  ) => { decoded: DecodeResult[]; results: Array<IngestResult | undefined> }
): Promise<{ decoded: DecodeResult[]; results: Array<IngestResult | undefined> }> {
  const parts = await slices.chunks(batch.length, SCREEN_CHUNK, (from, to) =>
    screen(batch.slice(from, to), (i, author) => {
      unsettled(from + i, author)
    })
  )
  return { decoded: parts.flatMap(p => p.decoded), results: parts.flatMap(p => p.results) }
}

/**
 * `foldBatch`, FOLD_CHUNK events per item of work handed to `slices`, in the stamp order the fold takes a batch in
 * (so a chunk's deps are in it or in a chunk before it), each chunk stored in one transaction: the same outcomes as
 * one batch. An event another source folded meanwhile comes out a duplicate, as it would after that source.
 */
export async function foldSliced(
  host: BatchHost,
  slices: LoopSlices,
  batch: readonly Uint8Array[],
  decoded: readonly DecodeResult[],
  results: Array<IngestResult | undefined>,
  source: EventSource
): Promise<IngestResult[]> {
  const { events, where } = toFold(host, batch, decoded, results, source)
  const ordered = byStamp(events)
  await slices.chunks(ordered.length, FOLD_CHUNK, (from, to) => {
    foldEvents(host, ordered.slice(from, to), where, results, source)
  })
  return settled(host, decoded, results, source)
}

/** The events of a screened batch left to fold (other versions settled here), each once, and where each is. */
function toFold(
  host: BatchHost,
  batch: readonly Uint8Array[],
  decoded: readonly DecodeResult[],
  results: Array<IngestResult | undefined>,
  source: EventSource
): { events: PlanEvent[]; where: Where } {
  const events: PlanEvent[] = []
  const where = new Map<EventId, { i: number; bytes: Uint8Array }>()
  decoded.forEach((d, i) => {
    if (results[i] !== undefined || d.kind === 'rejected') return
    if (d.kind === 'other-version') {
      results[i] = host.otherVersion(d, batch[i] as Uint8Array, source)
      return
    }
    if (where.has(d.event.id)) return
    events.push(d.event)
    where.set(d.event.id, { i, bytes: batch[i] as Uint8Array })
  })
  return { events, where }
}

/** Fold `events` as one batch, settle each, and commit what folded. */
function foldEvents(
  host: BatchHost,
  events: readonly PlanEvent[],
  where: Where,
  results: Array<IngestResult | undefined>,
  source: EventSource
): void {
  if (events.length === 0) return
  for (const { event, outcome } of host.addBatch(events)) {
    const at = where.get(event.id) as { i: number; bytes: Uint8Array }
    results[at.i] = host.settle(event, at.bytes, outcome, source)
  }
  host.flush()
}

/** Every verdict of a folded batch; what is still unsettled was a second copy of an event earlier in it. */
function settled(
  host: BatchHost,
  decoded: readonly DecodeResult[],
  results: ReadonlyArray<IngestResult | undefined>,
  source: EventSource
): IngestResult[] {
  const out = results.map((r, i) => r ?? host.duplicate((decoded[i] as DecodedEvent).event.id, source))
  if (source === 'sync') host.synced(out.filter(r => r.verdict !== 'reject' && r.why !== 'duplicate').length)
  return out
}
