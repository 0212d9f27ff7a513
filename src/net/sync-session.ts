/**
 * One catch-up session over one stream: reconcile the two id sets with the
 * pure core, pull what this side lacks, serve what the peer pulls, end
 * cleanly when both sides said DONE, or fail with a reason, never a throw.
 *
 * Flow (both sides run the same state machine; the opener sends first):
 *
 *   opener    RECONCILE(initiate()) ->
 *   each side, per RECONCILE received: feed it to the core; queue its
 *             `need` (minus ids held, folded or parked); reply with the next
 *             RECONCILE, or an empty RECONCILE when the core is done.
 *   each side, any time: WANT the queued ids (at most MAX_OUTSTANDING_WANTS
 *             unsettled at once); answer every WANT, in order, with EVENTS.
 *   each side, once the reconciliation is over and every WANT of its own is
 *             settled: DONE. After sending and receiving DONE (and serving
 *             every WANT), it closes its writable end; the session is OK
 *             when the peer's end closes too.
 *
 * Events received go to `ingestMany` a frame at a time (or to `ingest`, one by one, in order); the next frame
 * is read only afterwards (the stream is paused when a few frames are
 * buffered), so a fast sender cannot outrun verification.
 *
 * Several sessions of one service share an in-flight table, so that a late
 * joiner syncing with many peers at once pulls each event from one of them:
 * an id another session already asked for is deferred, and asked for here
 * only if it is still missing once that session settles it (or after
 * `deferWaitMs`).
 */
import type { Logger, Stream } from '@libp2p/interface'
import type { IdSet, ReconcileSession } from '../core/reconcile.js'
import { createReconcileSession } from '../core/reconcile.js'
import { createHash } from 'node:crypto'
import { SIGNATURE_BYTES } from '../wire/codec.js'
import {
  FRAME_DONE, FRAME_EVENTS, FRAME_RECONCILE, FRAME_WANT, FrameReader, ID_BYTES,
  SyncAbortedError, SyncProtocolError, SyncTimeoutError,
  decodeEvents, encodeEvents, encodeFrame, encodeWant, idFromBytes, varintSize
} from './sync-frames.js'

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

/** What one session did, as this side saw it. */
export interface SyncStats {
  /** The remote peer id. */
  readonly peer: string
  /** outbound: this side opened the stream. */
  readonly direction: 'inbound' | 'outbound'
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
}

/** Which session has asked for which id, shared by the sessions of one service. */
export class InflightIds {
  private readonly owners = new Map<string, object>()
  private readonly listeners = new Set<() => void>()

  owner (id: string): object | undefined {
    return this.owners.get(id)
  }

  claim (id: string, owner: object): void {
    if (!this.owners.has(id)) this.owners.set(id, owner)
  }

  /** Releases the ids this owner holds; tells every listener once if any was released. */
  release (ids: Iterable<string>, owner: object): void {
    let any = false
    for (const id of ids) {
      if (this.owners.get(id) === owner) {
        this.owners.delete(id)
        any = true
      }
    }
    if (any) for (const listener of [...this.listeners]) listener()
  }

  subscribe (listener: () => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  get size (): number {
    return this.owners.size
  }
}

/** What a session needs from its service. */
export interface SessionHost {
  readonly ids: IdSet
  readonly has: (id: string) => boolean
  readonly getBytes: (id: string) => Uint8Array | undefined
  readonly ingest: (bytes: Uint8Array, from: string) => Promise<unknown>
  /** Takes a whole EVENTS frame at once, when the service was given one (see SyncServiceInit). */
  readonly ingestMany?: (batch: readonly Uint8Array[], from: string) => Promise<unknown>
  readonly inflight: InflightIds
  readonly limits: SyncLimits
  readonly log: Logger
}

/** A FIFO of ids with an advancing head, compacted now and then. */
class IdQueue {
  private items: string[] = []
  private head = 0

  get length (): number {
    return this.items.length - this.head
  }

  push (id: string): void {
    this.items.push(id)
  }

  shift (): string | undefined {
    if (this.head >= this.items.length) return undefined
    const id = this.items[this.head++]
    if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return id
  }

  /** The first n ids (n <= length), without removing them. */
  peek (n: number): string[] {
    return this.items.slice(this.head, this.head + n)
  }

  drop (n: number): void {
    for (let i = 0; i < n; i++) this.shift()
  }
}

/**
 * The id of an event from its wire bytes: the same value as `eventIdOfWire`
 * (lowercase hex SHA-256 of the envelope part), computed with Node's native
 * hash, several times faster than the pure-JS one the core must use. Null
 * when the bytes are too short to hold a signature and an envelope.
 */
export function wireEventId (bytes: Uint8Array): string | null {
  if (bytes.length <= SIGNATURE_BYTES) return null
  return createHash('sha256').update(bytes.subarray(0, bytes.length - SIGNATURE_BYTES)).digest('hex')
}

function message (err: unknown): string {
  if (err instanceof Error) return err.name !== 'Error' ? `${err.name}: ${err.message}` : err.message
  return String(err)
}

export class SyncSession {
  private readonly recon: ReconcileSession
  private readonly reader: FrameReader
  private readonly control: Uint8Array[] = []
  private readonly wantQueue = new IdQueue()
  private readonly outstanding = new IdQueue()
  private readonly serveQueue = new IdQueue()
  private readonly deferred = new Set<string>()
  private readonly claimed = new Set<string>()
  private readonly whenClosed = Promise.withResolvers<void>()
  /** Resolves when the session fails: ends waits on work that may never finish (a hung ingest). */
  private readonly failed = Promise.withResolvers<void>()
  private readonly timers: Array<ReturnType<typeof setTimeout>> = []
  private unsubscribe: (() => void) | null = null
  private deferTimer: ReturnType<typeof setTimeout> | null = null
  private ignoreInflight = false
  private reconOver = false
  private sentDone = false
  private gotDone = false
  private closeStarted = false
  private writing = false
  private finished = false
  private failure: Error | null = null
  private lastProgress = performance.now()
  private peerWanted = 0
  private framesReceived = 0
  private counters = {
    rounds: 0, bytesSent: 0, bytesReceived: 0, eventBytesSent: 0, eventBytesReceived: 0,
    eventsSent: 0, eventsReceived: 0, wanted: 0, ingestErrors: 0
  }
  private readonly onIngestError = (err: unknown): void => {
    this.counters.ingestErrors++
    this.host.log.error('sync ingest from %s threw: %s', this.peer, message(err))
  }

  constructor (
    private readonly host: SessionHost,
    private readonly stream: Stream,
    readonly peer: string,
    readonly direction: 'inbound' | 'outbound'
  ) {
    const limits = host.limits
    this.whenClosed.promise.catch(() => {})
    this.recon = createReconcileSession(host.ids, { maxMessageBytes: limits.reconcileMessageBytes, maxRounds: limits.maxRounds })
    // Yamux may have up to its window (16 MiB at most) in flight when we pause: never let that reset the stream.
    stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, 16 * 1024 * 1024 + 2 * limits.maxFrameBytes)
    this.reader = new FrameReader(stream, limits.maxFrameBytes, limits.maxFrameBytes + 256 * 1024, (n, progress) => {
      this.counters.bytesReceived += n
      if (progress) this.progress()
    })
  }

  /** Ends the session now with this error (the stream is aborted). */
  abort (err: Error): void {
    this.fail(err)
  }

  /** Runs the session to its end. Never rejects. */
  async run (): Promise<SyncStats> {
    const started = performance.now()
    let error: string | undefined
    try {
      this.startTimers()
      this.unsubscribe = this.host.inflight.subscribe(this.onRelease)
      if (this.direction === 'outbound') {
        const opening = this.recon.initiate()
        this.counters.rounds++
        this.sendReconcile(opening)
        this.kickWriter()
      }
      for (;;) {
        const frame = await this.reader.next()
        if (frame === null) break
        if (++this.framesReceived > this.host.limits.maxFrames) throw new SyncProtocolError(`more than ${this.host.limits.maxFrames} frames`)
        this.progress()
        if (this.gotDone && frame[0] !== FRAME_EVENTS) throw new SyncProtocolError('frame other than EVENTS after DONE')
        await this.handle(frame)
        if (this.failure !== null) throw this.failure
        this.settle()
      }
      if (!this.sentDone || !this.gotDone) throw new SyncProtocolError('stream ended before the exchange finished')
      await this.whenClosed.promise
      this.finished = true
    } catch (err) {
      const cause = this.failure ?? (err instanceof Error ? err : new Error(String(err)))
      error = message(cause)
      this.fail(cause)
    } finally {
      this.finished = true
      this.cleanup()
    }
    const ms = Math.round(performance.now() - started)
    const c = this.counters
    const stats: SyncStats = {
      peer: this.peer,
      direction: this.direction,
      ok: error === undefined,
      ...(error !== undefined ? { error } : {}),
      rounds: c.rounds,
      bytesSent: c.bytesSent,
      bytesReceived: c.bytesReceived,
      eventBytesSent: c.eventBytesSent,
      eventBytesReceived: c.eventBytesReceived,
      eventsSent: c.eventsSent,
      eventsReceived: c.eventsReceived,
      wanted: c.wanted,
      ingestErrors: c.ingestErrors,
      ms
    }
    if (c.ingestErrors > 0) this.host.log('sync %s %s: %d ingest calls threw', this.direction, this.peer, c.ingestErrors)
    return stats
  }

  // ---------------------------------------------------------------- reading

  private async handle (frame: Uint8Array): Promise<void> {
    const type = frame[0]
    const payload = frame.subarray(1)
    switch (type) {
      case FRAME_RECONCILE:
        this.onReconcile(payload)
        return
      case FRAME_WANT:
        this.onWant(payload)
        return
      case FRAME_EVENTS:
        await this.onEvents(payload)
        return
      case FRAME_DONE:
        this.onDone(payload)
        return
      default:
        throw new SyncProtocolError(`unknown frame type ${String(type)}`)
    }
  }

  private sendReconcile (message: Uint8Array): void {
    this.control.push(encodeFrame(FRAME_RECONCILE, message))
  }

  private onReconcile (payload: Uint8Array): void {
    if (this.reconOver) throw new SyncProtocolError('RECONCILE after the reconciliation ended')
    if (payload.length === 0) {
      this.reconOver = true
      return
    }
    this.counters.rounds++
    const step = this.recon.receive(payload)
    if ('error' in step) throw new SyncProtocolError(`reconcile: ${step.error}`)
    for (const id of step.need) if (!this.host.has(id)) this.wantQueue.push(id)
    if (step.reply === null) {
      this.sendReconcile(new Uint8Array(0))
      this.reconOver = true
    } else {
      this.counters.rounds++
      this.sendReconcile(step.reply)
    }
    this.kickWriter()
  }

  private onWant (payload: Uint8Array): void {
    if (payload.length === 0 || payload.length % ID_BYTES !== 0) throw new SyncProtocolError(`WANT payload of ${payload.length} bytes is not a list of ids`)
    const k = payload.length / ID_BYTES
    if (k > MAX_WANT_IDS_PER_FRAME) throw new SyncProtocolError(`WANT of ${k} ids (limit ${MAX_WANT_IDS_PER_FRAME})`)
    if (this.serveQueue.length + k > MAX_OUTSTANDING_WANTS) throw new SyncProtocolError(`more than ${MAX_OUTSTANDING_WANTS} wanted ids outstanding`)
    this.peerWanted += k
    const allowed = this.host.ids.size + this.host.limits.wantSlack
    if (this.peerWanted > allowed) throw new SyncProtocolError(`peer wanted ${this.peerWanted} ids, more than the ${allowed} this node could serve`)
    for (let i = 0; i < k; i++) this.serveQueue.push(idFromBytes(payload, i * ID_BYTES))
    this.kickWriter()
  }

  private async onEvents (payload: Uint8Array): Promise<void> {
    const { settled, events } = decodeEvents(payload)
    if (settled > this.outstanding.length) throw new SyncProtocolError(`EVENTS settles ${settled} ids, only ${this.outstanding.length} wanted`)
    const window = this.outstanding.peek(settled)
    let w = 0
    for (const bytes of events) {
      const id = wireEventId(bytes)
      if (id === null) throw new SyncProtocolError('event shorter than a signature')
      while (w < settled && window[w] !== id) w++
      if (w === settled) throw new SyncProtocolError('event that was not wanted (or out of order)')
      w++
    }
    // Settled: the peer may be asked for more while these are ingested.
    this.outstanding.drop(settled)
    this.kickWriter()
    const peer = this.peer
    const host = this.host
    const ingestMany = host.ingestMany
    if (ingestMany !== undefined && events.length > 1) {
      await this.handOver(() => ingestMany(events, peer))
      if (this.failure === null) {
        this.counters.eventsReceived += events.length
        for (const bytes of events) this.counters.eventBytesReceived += bytes.length
        this.progress()
      }
    } else {
      for (const bytes of events) {
        if (this.failure !== null) break
        await this.handOver(() => host.ingest(bytes, peer))
        if (this.failure !== null) break
        this.counters.eventsReceived++
        this.counters.eventBytesReceived += bytes.length
        this.progress()
      }
    }
    // Only now may other sessions ask for these ids (if they are still missing).
    for (const id of window) this.claimed.delete(id)
    this.host.inflight.release(window, this)
  }

  /** Run an ingest call; wait for it, or for the session to fail (an ingest that hangs must not hold the session). */
  private async handOver (work: () => Promise<unknown>): Promise<void> {
    let ingested: Promise<unknown>
    try {
      ingested = work().catch(this.onIngestError)
    } catch (err) {
      ingested = Promise.resolve()
      this.onIngestError(err)
    }
    await Promise.race([ingested, this.failed.promise])
  }

  private onDone (payload: Uint8Array): void {
    if (payload.length !== 0) throw new SyncProtocolError('DONE with a payload')
    if (!this.reconOver) throw new SyncProtocolError('DONE before the reconciliation ended')
    if (this.serveQueue.length > 0) throw new SyncProtocolError('DONE while its WANTs are unanswered')
    this.gotDone = true
  }

  // ---------------------------------------------------------------- writing

  private kickWriter (): void {
    if (this.writing || this.failure !== null || this.finished) return
    this.writing = true
    void this.pump()
  }

  private async pump (): Promise<void> {
    try {
      for (;;) {
        if (this.failure !== null) {
          this.writing = false
          return
        }
        const frame = this.nextOutgoing()
        if (frame === null) {
          this.writing = false
          this.settle()
          return
        }
        this.counters.bytesSent += frame.length
        if (!this.stream.send(frame)) await this.stream.onDrain()
        this.progress()
      }
    } catch (err) {
      this.writing = false
      this.fail(err instanceof Error ? err : new Error(String(err)))
    }
  }

  private nextOutgoing (): Uint8Array | null {
    const control = this.control.shift()
    if (control !== undefined) return control
    return this.buildWant() ?? this.buildEvents()
  }

  private buildWant (): Uint8Array | null {
    const room = Math.min(MAX_WANT_IDS_PER_FRAME, MAX_OUTSTANDING_WANTS - this.outstanding.length)
    if (room <= 0) return null
    const ids: string[] = []
    const inflight = this.host.inflight
    while (ids.length < room) {
      const id = this.wantQueue.shift()
      if (id === undefined) break
      if (this.host.has(id)) continue
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
    for (const id of ids) this.outstanding.push(id)
    this.counters.wanted += ids.length
    return encodeWant(ids)
  }

  private buildEvents (): Uint8Array | null {
    if (this.serveQueue.length === 0) return null
    const limits = this.host.limits
    const events: Uint8Array[] = []
    let size = 0
    let settled = 0
    while (this.serveQueue.length > 0) {
      const id = this.serveQueue.peek(1)[0] as string
      let bytes: Uint8Array | undefined
      try {
        bytes = this.host.getBytes(id)
      } catch (err) {
        this.host.log.error('sync getBytes(%s) threw: %s', id, message(err))
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
      this.serveQueue.shift()
      settled++
    }
    this.counters.eventsSent += events.length
    for (const e of events) this.counters.eventBytesSent += e.length
    return encodeEvents(settled, events)
  }

  // ------------------------------------------------------------ finishing

  /** Sends DONE when this side is through, and closes when both are. */
  private settle (): void {
    if (this.failure !== null || this.finished) return
    if (!this.sentDone && this.reconOver && this.wantQueue.length === 0 && this.outstanding.length === 0) {
      if (this.deferred.size > 0) {
        this.resolveDeferred()
        if (this.wantQueue.length > 0) {
          this.kickWriter()
          return
        }
        if (this.deferred.size > 0) {
          if (this.deferTimer === null) {
            this.deferTimer = setTimeout(() => {
              this.ignoreInflight = true
              this.resolveDeferred()
              this.kickWriter()
              this.settle()
            }, this.host.limits.deferWaitMs)
          }
          return
        }
      }
      this.sentDone = true
      this.control.push(encodeFrame(FRAME_DONE))
      this.kickWriter()
      return
    }
    if (this.sentDone && this.gotDone && !this.closeStarted && !this.writing && this.control.length === 0 && this.serveQueue.length === 0) {
      this.closeStarted = true
      this.stream.close().then(
        () => { this.whenClosed.resolve() },
        (err: unknown) => { this.fail(err instanceof Error ? err : new Error(String(err))) }
      )
    }
  }

  /** Deferred ids: drop the ones now held, queue the ones nobody else is fetching. */
  private resolveDeferred (): void {
    for (const id of this.deferred) {
      if (this.host.has(id)) {
        this.deferred.delete(id)
      } else if (this.ignoreInflight || this.host.inflight.owner(id) === undefined) {
        this.deferred.delete(id)
        this.wantQueue.push(id)
      }
    }
  }

  private readonly onRelease = (): void => {
    if (this.deferred.size === 0 || this.failure !== null || this.finished) return
    this.progress()
    this.settle()
  }

  private progress (): void {
    this.lastProgress = performance.now()
  }

  private startTimers (): void {
    const { idleTimeoutMs, maxSessionMs } = this.host.limits
    const tick = setInterval(() => {
      const idle = performance.now() - this.lastProgress
      if (idle > idleTimeoutMs) this.fail(new SyncTimeoutError(`no progress for ${Math.round(idle)} ms`))
    }, Math.max(20, Math.min(1000, idleTimeoutMs / 4)))
    const deadline = setTimeout(() => {
      this.fail(new SyncTimeoutError(`session ran past ${maxSessionMs} ms`))
    }, maxSessionMs)
    tick.unref?.()
    deadline.unref?.()
    this.timers.push(tick, deadline)
  }

  private fail (err: Error): void {
    if (this.failure !== null || this.finished) return
    this.failure = err
    this.failed.resolve()
    this.reader.fail(err)
    this.whenClosed.reject(err)
    try {
      this.stream.abort(err)
    } catch {
      // already closed
    }
  }

  private cleanup (): void {
    for (const t of this.timers) clearInterval(t)
    if (this.deferTimer !== null) clearTimeout(this.deferTimer)
    this.unsubscribe?.()
    this.reader.detach()
    if (this.claimed.size > 0) {
      const ids = [...this.claimed]
      this.claimed.clear()
      this.host.inflight.release(ids, this)
    }
  }
}

export { SyncAbortedError, SyncProtocolError, SyncTimeoutError }
