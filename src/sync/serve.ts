/**
 * The serving half of a session: the peer's WANTs, checked against the
 * protocol's bounds, answered in order with EVENTS frames.
 */
import { errorMessage, SyncProtocolError } from './errors.js'
import { encodeEvents } from './frames.js'
import { IdQueue } from './id-queue.js'
import { MAX_OUTSTANDING_WANTS, MAX_WANT_IDS_PER_FRAME } from './limits.js'
import type { SessionHost } from './session-host.js'
import type { SessionCounters } from './stats.js'
import { ID_BYTES, idFromBytes } from '../wire/id-bytes.js'
import { varintSize } from '../wire/varint.js'

export class Server {
  private readonly queue = new IdQueue()
  private peerWanted = 0
  /** The most ids this node held during the session: ids it expired meanwhile were offered, and may be wanted. */
  private mostHeld: number

  constructor(
    private readonly host: SessionHost,
    private readonly counters: SessionCounters
  ) {
    this.mostHeld = host.ids.size
  }

  /** Wanted ids not answered yet. */
  get pending(): number {
    return this.queue.length
  }

  /** Queues the ids of a WANT payload; throws SyncProtocolError when it breaks a bound. */
  want(payload: Uint8Array): void {
    if (payload.length === 0 || payload.length % ID_BYTES !== 0)
      throw new SyncProtocolError(`WANT payload of ${payload.length} bytes is not a list of ids`)
    const k = payload.length / ID_BYTES
    if (k > MAX_WANT_IDS_PER_FRAME) throw new SyncProtocolError(`WANT of ${k} ids (limit ${MAX_WANT_IDS_PER_FRAME})`)
    if (this.queue.length + k > MAX_OUTSTANDING_WANTS)
      throw new SyncProtocolError(`more than ${MAX_OUTSTANDING_WANTS} wanted ids outstanding`)
    this.peerWanted += k
    this.mostHeld = Math.max(this.mostHeld, this.host.ids.size)
    const allowed = this.mostHeld + this.host.limits.wantSlack
    if (this.peerWanted > allowed)
      throw new SyncProtocolError(`peer wanted ${this.peerWanted} ids, more than the ${allowed} this node could serve`)
    for (let i = 0; i < k; i++) this.queue.push(idFromBytes(payload, i * ID_BYTES))
  }

  /**
   * The next EVENTS frame, settling the oldest wanted ids up to the batch
   * size (an id this node lacks, or whose event cannot fit a frame, is
   * settled without an event), or null when nothing is wanted.
   */
  buildEvents(): Uint8Array | null {
    if (this.queue.length === 0) return null
    const limits = this.host.limits
    const events: Uint8Array[] = []
    let size = 0
    let settled = 0
    while (this.queue.length > 0) {
      const id = this.queue.peek(1)[0] as string
      let bytes: Uint8Array | undefined
      try {
        bytes = this.host.getBytes(id)
      } catch (err) {
        this.host.log.error('sync getBytes(%s) threw: %s', id, errorMessage(err))
      }
      if (bytes !== undefined) {
        const cost = varintSize(bytes.length) + bytes.length
        if (cost + 16 > limits.maxFrameBytes) {
          this.host.log.error('sync: event %s of %d bytes does not fit a frame; not sent', id, bytes.length)
        } else {
          if (events.length > 0 && size + cost > limits.eventsBatchBytes) break
          events.push(bytes)
          size += cost
        }
      }
      this.queue.shift()
      settled++
    }
    this.counters.eventsSent += events.length
    for (const e of events) this.counters.eventBytesSent += e.length
    return encodeEvents(settled, events)
  }
}
