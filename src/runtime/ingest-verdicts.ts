import { logger } from '@libp2p/logger'
import { eventIdOfWire } from '../wire/codec.js'
import type { EventId } from '../core/events.js'
import type { Verdict } from '../ports/transport.js'
import type { NodeMetrics } from './metrics.js'

const log = logger('plan-swarm:replica')

/** Wire-rejected ids remembered so sync does not fetch them again. */
export const MAX_REFUSED_IDS = 10_000

/** Where an event's bytes came from, as the metrics count it. */
export type EventSource = 'gossip' | 'sync' | 'local' | 'store'

/** What the replica made of one event's bytes. */
export interface IngestResult {
  readonly verdict: Verdict
  readonly id?: EventId
  /** reject: the reason; ignore: 'duplicate' | 'parked' */
  readonly why?: string
  readonly detail?: string
  /** parked for missing deps: the ids it waits for (a sync session asks its peer for them first). */
  readonly missing?: readonly EventId[]
}

/**
 * The verdicts that turn an event away, each counted in the metrics and
 * logged the one way, and the ids whose envelope the wire rejected
 * (anything but a bad signature: every copy with that envelope is rejected
 * the same way), so sync does not fetch them again from a peer that keeps
 * offering them. Bounded to MAX_REFUSED_IDS, oldest first out. A bad
 * signature is left out: a genuine event with the same envelope (and so the
 * same id) may still come.
 */
export class IngestVerdicts {
  private readonly refusedIds = new Set<string>()

  constructor(private readonly metrics: NodeMetrics) {}

  /** Whether the wire refused this id's envelope. */
  isRefused(id: string): boolean {
    return this.refusedIds.has(id)
  }

  /** A wire rejection: counted, and its id remembered unless only the signature was bad. */
  refused(bytes: Uint8Array, reason: string, detail: string, source: EventSource): IngestResult {
    const id = reason === 'bad-signature' || source === 'store' ? null : eventIdOfWire(bytes)
    if (id !== null) {
      this.refusedIds.add(id)
      if (this.refusedIds.size > MAX_REFUSED_IDS)
        this.refusedIds.delete(this.refusedIds.values().next().value as string)
    }
    return this.rejected(reason, detail, source)
  }

  rejected(reason: string, detail: string, source: EventSource, id?: EventId): IngestResult {
    this.metrics.reject(reason, source)
    log('rejected %s event %s: %s (%s)', source, id ?? '', reason, detail)
    return { verdict: 'reject', id, why: reason, detail }
  }

  duplicate(id: EventId, source: EventSource): IngestResult {
    this.metrics.ignored.inc({ why: 'duplicate', source })
    return { verdict: 'ignore', id, why: 'duplicate' }
  }
}
