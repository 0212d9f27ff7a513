import { logger } from '@libp2p/logger'
import { eventIdOfWire } from '../wire/codec.js'
import type { EventId } from '../core/events.js'
import type { DecodedEvent, OtherVersionEvent } from '../wire/decode.js'
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
  /** Authors refused for not being on the allow-list (logged once each), bounded like the refused ids. */
  private readonly strangers = new Set<string>()

  /**
   * `allowAuthors`: with an allow-list (`--allow-peers`), the only authors
   * whose events are taken from the network (this node's own key aside). The
   * list gates connections; without this, an admitted member could relay
   * events signed by any number of fresh keys, and so dodge the open-plan
   * limit per author and stuff committees and attempts.
   */
  constructor(
    private readonly metrics: NodeMetrics,
    private readonly allowAuthors?: ReadonlySet<string>,
    private readonly self?: string
  ) {}

  /**
   * A refusal ('not-allowed', a reject: gossip lowers the sender's score) when
   * an event from the network is by an author not on the allow-list; its id
   * is remembered so sync does not fetch it again. Undefined otherwise.
   */
  notAllowed(d: DecodedEvent | OtherVersionEvent, source: EventSource): IngestResult | undefined {
    const allow = this.allowAuthors
    if (allow === undefined || source === 'store' || source === 'local') return undefined
    const [author, id] = d.kind === 'event' ? [d.event.env.author, d.event.id] : [d.author, d.id]
    if (author === this.self || allow.has(author)) return undefined
    if (!this.strangers.has(author)) {
      this.strangers.add(author)
      if (this.strangers.size > MAX_REFUSED_IDS) this.strangers.delete(this.strangers.values().next().value as string)
      log.error(
        "refusing %s events by %s: the author is not on this node's --allow-peers list " +
          '(add its peer id to the file on every node if it is a member)',
        source,
        author
      )
    }
    this.remember(id)
    return this.rejected('not-allowed', `author ${author} is not on the allow-list`, source, id)
  }

  /** Whether the wire refused this id's envelope. */
  isRefused(id: string): boolean {
    return this.refusedIds.has(id)
  }

  /** A wire rejection: counted, and its id remembered unless only the signature was bad. */
  refused(bytes: Uint8Array, reason: string, detail: string, source: EventSource): IngestResult {
    const id = reason === 'bad-signature' || source === 'store' ? null : eventIdOfWire(bytes)
    if (id !== null) this.remember(id)
    return this.rejected(reason, detail, source)
  }

  private remember(id: string): void {
    this.refusedIds.add(id)
    if (this.refusedIds.size > MAX_REFUSED_IDS) this.refusedIds.delete(this.refusedIds.values().next().value as string)
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
