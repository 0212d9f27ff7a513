/**
 * The pulling half of a session: the ids this side lacks, from the
 * reconciliation's `need` to WANT frames, and the check that each EVENTS
 * frame settles the oldest outstanding wants, in order.
 *
 * Deps that an ingested event waits for (reported by the host) are asked
 * for before the rest (`first`): the peer folded that event, so it holds
 * them. A catch-up of a long history then completes plans as it goes,
 * instead of parking most events until their deps turn up at random.
 *
 * The ids are claimed in the node's shared InflightIds table while asked
 * for; an id another session is fetching is deferred, and asked for here
 * only if it is still missing once that session settles it (or once the
 * session gives up waiting: `stopDeferring`).
 *
 * With a pull quota (pull-quota.ts), it asks the peer for no more than the
 * quota allows; once it is spent, the ids still queued are left for a later
 * session (`leftForLater`), which the reconciliation will find them for
 * again, and this session can end.
 */
import { decodeEvents, encodeWant } from './frames.js'
import { SyncProtocolError } from './errors.js'
import { IdQueue } from './id-queue.js'
import { MAX_OUTSTANDING_WANTS, MAX_WANT_IDS_PER_FRAME } from './limits.js'
import { nativeEventIdOfWire } from './native-hash.js'
import type { SessionHost } from './session-host.js'
import type { SessionCounters } from './stats.js'

/** The events of one EVENTS frame, checked against the wants they settle. */
export interface SettledEvents {
  readonly events: Uint8Array[]
  /** The wanted ids the frame settled (to release once the events are ingested). */
  readonly window: string[]
}

export class Puller {
  private readonly queue = new IdQueue()
  /** Asked for before `queue`: deps of events that arrived without them. */
  private readonly urgent = new IdQueue()
  private readonly outstanding = new IdQueue()
  private readonly deferred = new Set<string>()
  private readonly claimed = new Set<string>()
  private ignoreInflight = false
  private left = 0

  constructor(
    private readonly host: SessionHost,
    private readonly counters: SessionCounters,
    private readonly peer = ''
  ) {}

  /** Ids this session left for a later one: the peer's pull quota was spent. */
  get leftForLater(): number {
    return this.left
  }

  /** Queues the ids the reconciliation found the peer has (less those held, folded or parked). */
  need(ids: readonly string[]): void {
    for (const id of ids) if (!this.host.has(id)) this.queue.push(id)
  }

  /** Ids to ask for before everything queued (deps an ingested event waits for); ids held or asked for are left out. */
  first(ids: readonly string[]): void {
    for (const id of ids) if (!this.claimed.has(id) && !this.host.has(id)) this.urgent.push(id)
  }

  /** Nothing queued and nothing outstanding (deferred ids aside). */
  get idle(): boolean {
    return this.queue.length === 0 && this.urgent.length === 0 && this.outstanding.length === 0
  }

  get queued(): number {
    return this.queue.length + this.urgent.length
  }

  get deferredCount(): number {
    return this.deferred.size
  }

  /** The next WANT frame (within the outstanding window), or null when there is nothing to ask for now. */
  buildWant(): Uint8Array | null {
    let room = Math.min(MAX_WANT_IDS_PER_FRAME, MAX_OUTSTANDING_WANTS - this.outstanding.length)
    if (room <= 0) return null
    const quota = this.host.quota
    if (quota !== undefined && this.queued > 0) {
      const allowed = quota.allowance(this.peer)
      if (allowed <= 0) {
        this.leaveForLater(quota)
        return null
      }
      room = Math.min(room, allowed)
    }
    const ids: string[] = []
    const inflight = this.host.inflight
    while (ids.length < room) {
      const id = this.urgent.shift() ?? this.queue.shift()
      if (id === undefined) break
      // Asked for already (first as a dep, then reconciled, or the reverse), or held by now.
      if (this.claimed.has(id) || this.host.has(id)) continue
      const owner = inflight.owner(id)
      if (owner === undefined) {
        inflight.claim(id, this)
        this.claimed.add(id)
      } else if (owner !== this && !this.ignoreInflight) {
        this.deferred.add(id)
        continue
      }
      ids.push(id)
    }
    if (ids.length === 0) return null
    quota?.asked(this.peer, ids.length)
    for (const id of ids) this.outstanding.push(id)
    this.counters.wanted += ids.length
    return encodeWant(ids)
  }

  /**
   * Checks an EVENTS payload: it settles at most the outstanding wants, and
   * carries only wanted events, in wanted order. Settles them (the peer may be
   * asked for more at once); throws SyncProtocolError otherwise.
   */
  settle(payload: Uint8Array): SettledEvents {
    const { settled, events } = decodeEvents(payload)
    if (settled > this.outstanding.length)
      throw new SyncProtocolError(`EVENTS settles ${settled} ids, only ${this.outstanding.length} wanted`)
    const window = this.outstanding.peek(settled)
    let w = 0
    for (const bytes of events) {
      const id = nativeEventIdOfWire(bytes)
      if (id === null) throw new SyncProtocolError('event shorter than a signature')
      while (w < settled && window[w] !== id) w++
      if (w === settled) throw new SyncProtocolError('event that was not wanted (or out of order)')
      w++
    }
    this.outstanding.drop(settled)
    this.host.quota?.received(this.peer, settled, events)
    return { events, window }
  }

  /** The quota is spent: what is queued waits for a later session. */
  private leaveForLater(quota: NonNullable<SessionHost['quota']>): void {
    const n = this.queued
    this.queue.clear()
    this.urgent.clear()
    this.left += n
    quota.left(n)
    this.host.log('sync with %s: its pull quota is spent; %d ids left for a later session', this.peer, n)
  }

  /** The events of a settled window were ingested: only now may other sessions ask for these ids (if still missing). */
  release(window: readonly string[]): void {
    for (const id of window) this.claimed.delete(id)
    this.host.inflight.release(window, this)
  }

  /** Deferred ids: drop the ones now held, queue the ones nobody else is fetching. */
  resolveDeferred(): void {
    for (const id of this.deferred) {
      if (this.host.has(id)) {
        this.deferred.delete(id)
      } else if (this.ignoreInflight || this.host.inflight.owner(id) === undefined) {
        this.deferred.delete(id)
        this.queue.push(id)
      }
    }
  }

  /** Waited long enough for other sessions: ask for every deferred id still missing. */
  stopDeferring(): void {
    this.ignoreInflight = true
    this.resolveDeferred()
  }

  /** The session is over: give back every id still claimed. */
  releaseAll(): void {
    if (this.claimed.size === 0) return
    const ids = [...this.claimed]
    this.claimed.clear()
    this.host.inflight.release(ids, this)
  }
}
