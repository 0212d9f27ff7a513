/**
 * One catch-up session over one SyncStream: reconcile the two id sets with
 * the pure core, pull what this side lacks (pull.ts), serve what the peer
 * pulls (serve.ts), end cleanly when both sides said DONE, or fail with a
 * reason, never a throw. Time comes from the Scheduler it is given, so the
 * same session runs on the real clock and on the simulator's virtual one.
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
 *             settled and ingested: DONE. After sending and receiving DONE (and serving
 *             every WANT), it closes its writable end; the session is OK
 *             when the peer's end closes too.
 *
 * Events received go to `ingestMany` a frame at a time (or to `ingest`, one
 * by one, in order); the next frame is read only afterwards (the stream is
 * paused when a few frames are buffered), so a fast sender cannot outrun
 * verification.
 *
 * Several sessions of one node share an in-flight table (see InflightIds and
 * pull.ts), so that a late joiner syncing with many peers at once pulls each
 * event from one of them.
 *
 * Scoped sessions (a node with `--history open`, host.scoped) use the same
 * frames and reconcile nothing, so that a peer holding a long history never
 * lists it: as the opener, the first frame is an empty RECONCILE (the
 * reconciliation is over before it began), then WANTs of the ids it was told
 * to pull first (the peer's plans under way, from open-ids.ts, and the deps
 * they wait for), then DONE. As the responder, it answers the opener's
 * RECONCILE with one that states no range (the reconcile core reads that as
 * "nothing to add", and any peer's core answers it with an empty RECONCILE,
 * which ends the reconciliation). Neither is ever sent by a session that
 * reconciles (an opener always states its whole id space; a reply with
 * nothing to say is an empty frame), so the peer can tell: `peerScoped` in
 * its stats, and the service asks such a peer for its plans under way to
 * pull what it published (libp2p-service.ts).
 */
import type { Cancel, Scheduler } from '../ports/scheduler.js'
import type { ReconcileSession } from './reconcile/index.js'
import { createReconcileSession, encodeReconcileMessage } from './reconcile/index.js'
import { asError, errorMessage, SyncProtocolError, SyncTimeoutError } from './errors.js'
import { FrameReader } from './frame-reader.js'
import { FrameWriter } from './frame-writer.js'
import { FRAME_DONE, FRAME_EVENTS, FRAME_RECONCILE, FRAME_WANT, encodeFrame } from './frames.js'
import { Puller } from './pull.js'
import { Server } from './serve.js'
import type { SessionHost } from './session-host.js'
import { missingDeps } from './session-host.js'
import type { SyncDirection, SyncStats } from './stats.js'
import { emptyCounters } from './stats.js'
import type { SyncStream } from './stream.js'

/**
 * Runs one session over `stream` with `peer` to its end. Never rejects: a
 * failure (protocol error, timeout, a stream that fails or is cut) is a
 * stat with ok=false. The simulator calls it on both ends of a memory pair.
 */
export async function runSyncSession(
  host: SessionHost,
  stream: SyncStream,
  peer: string,
  direction: SyncDirection,
  scheduler: Scheduler
): Promise<SyncStats> {
  return await new SyncSession(host, stream, peer, direction, scheduler).run()
}

export class SyncSession {
  private readonly recon: ReconcileSession
  private readonly reader: FrameReader
  private readonly writer: FrameWriter
  private readonly pull: Puller
  private readonly serve: Server
  private readonly counters = emptyCounters()
  private readonly whenClosed = Promise.withResolvers<void>()
  /** Resolves when the session fails: ends waits on work that may never finish (a hung ingest). */
  private readonly failed = Promise.withResolvers<void>()
  private readonly timers: Cancel[] = []
  private unsubscribe: (() => void) | null = null
  private deferTimer: Cancel | null = null
  private reconOver = false
  /** EVENTS frames being ingested: DONE waits for them, so a peer that saw DONE knows its events were taken in. */
  private ingesting = 0
  /** `run` has begun (and the opener's RECONCILE is queued): frames may be written. */
  private running = false
  private sentDone = false
  private gotDone = false
  private closeStarted = false
  private finished = false
  private failure: Error | null = null
  private lastProgress: number
  private framesReceived = 0
  /** RECONCILE frames received (the first tells a scoped peer apart). */
  private reconcilesReceived = 0
  private peerScoped = false
  private readonly onIngestError = (err: unknown): void => {
    this.counters.ingestErrors++
    this.host.log.error('sync ingest from %s threw: %s', this.peer, errorMessage(err))
  }

  constructor(
    private readonly host: SessionHost,
    private readonly stream: SyncStream,
    readonly peer: string,
    readonly direction: SyncDirection,
    private readonly scheduler: Scheduler
  ) {
    const limits = host.limits
    this.lastProgress = scheduler.monotonic()
    this.whenClosed.promise.catch(() => {})
    this.recon = createReconcileSession(host.ids, {
      maxMessageBytes: limits.reconcileMessageBytes,
      maxRounds: limits.maxRounds
    })
    this.pull = new Puller(host, this.counters, peer)
    this.serve = new Server(host, this.counters)
    this.writer = new FrameWriter(stream, this.counters, {
      next: () => this.pull.buildWant() ?? this.serve.buildEvents(),
      stopped: () => this.failure !== null,
      progress: () => {
        this.progress()
      },
      drained: () => {
        this.settle()
      },
      failed: err => {
        this.fail(err)
      }
    })
    this.reader = new FrameReader(stream, limits.maxFrameBytes, limits.maxFrameBytes + 256 * 1024, (n, progress) => {
      this.counters.bytesReceived += n
      if (progress) this.progress()
    })
  }

  /** Ask the peer for these ids before everything reconciled (ids of its plans under way, see open-ids.ts). */
  prioritize(ids: readonly string[]): void {
    if (this.failure !== null || this.finished) return
    this.pull.first(ids)
    // Before `run`, they wait for it: the opener's first frame must be its RECONCILE.
    if (this.running) this.kickWriter()
  }

  /** Ends the session now with this error (the stream is aborted). */
  abort(err: Error): void {
    this.fail(err)
  }

  /** Runs the session to its end. Never rejects. */
  async run(): Promise<SyncStats> {
    const started = this.scheduler.monotonic()
    let error: string | undefined
    try {
      this.startTimers()
      this.unsubscribe = this.host.inflight.subscribe(this.onRelease)
      if (this.direction === 'outbound' && this.host.scoped === true) {
        this.writer.queue(encodeFrame(FRAME_RECONCILE, new Uint8Array(0)))
        this.reconOver = true
        this.kickWriter()
      } else if (this.direction === 'outbound') {
        const opening = this.recon.initiate()
        this.counters.rounds++
        this.writer.queue(encodeFrame(FRAME_RECONCILE, opening))
        this.kickWriter()
      }
      this.running = true
      for (;;) {
        const frame = await this.reader.next()
        if (frame === null) break
        if (++this.framesReceived > this.host.limits.maxFrames)
          throw new SyncProtocolError(`more than ${this.host.limits.maxFrames} frames`)
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
      const cause = this.failure ?? asError(err)
      error = errorMessage(cause)
      this.fail(cause)
    } finally {
      this.finished = true
      this.cleanup()
    }
    const c = this.counters
    const stats: SyncStats = {
      peer: this.peer,
      direction: this.direction,
      ok: error === undefined,
      ...(error !== undefined ? { error } : {}),
      ...c,
      ms: Math.round(this.scheduler.monotonic() - started),
      ...(this.peerScoped ? { peerScoped: true } : {}),
      ...(this.pull.leftForLater > 0 ? { quotaLeft: this.pull.leftForLater } : {})
    }
    if (c.ingestErrors > 0)
      this.host.log('sync %s %s: %d ingest calls threw', this.direction, this.peer, c.ingestErrors)
    return stats
  }

  // ---------------------------------------------------------------- reading

  private async handle(frame: Uint8Array): Promise<void> {
    const type = frame[0]
    const payload = frame.subarray(1)
    switch (type) {
      case FRAME_RECONCILE:
        this.onReconcile(payload)
        return
      case FRAME_WANT:
        this.serve.want(payload)
        this.kickWriter()
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

  private onReconcile(payload: Uint8Array): void {
    if (this.reconOver) throw new SyncProtocolError('RECONCILE after the reconciliation ended')
    const first = ++this.reconcilesReceived === 1
    if (payload.length === 0) {
      // An opener that ends the reconciliation before it began is scoped.
      if (first && this.direction === 'inbound') this.peerScoped = true
      this.reconOver = true
      return
    }
    this.counters.rounds++
    if (this.host.scoped === true) {
      if (!first) throw new SyncProtocolError('a second RECONCILE to a scoped session')
      // Nothing to say about any range: the peer's core answers with an empty RECONCILE.
      this.writer.queue(encodeFrame(FRAME_RECONCILE, encodeReconcileMessage([])))
      this.kickWriter()
      return
    }
    // A reply that states no range comes only from a scoped responder.
    if (first && this.direction === 'outbound' && payload.length === 1) this.peerScoped = true
    const step = this.recon.receive(payload)
    if ('error' in step) throw new SyncProtocolError(`reconcile: ${step.error}`)
    this.pull.need(step.need)
    if (step.reply === null) {
      this.writer.queue(encodeFrame(FRAME_RECONCILE, new Uint8Array(0)))
      this.reconOver = true
    } else {
      this.counters.rounds++
      this.writer.queue(encodeFrame(FRAME_RECONCILE, step.reply))
    }
    this.kickWriter()
  }

  private async onEvents(payload: Uint8Array): Promise<void> {
    const { events, window } = this.pull.settle(payload)
    // Settled: the peer may be asked for more while these are ingested.
    this.ingesting++
    try {
      this.kickWriter()
      await this.ingestSettled(events)
    } finally {
      this.ingesting--
    }
    this.pull.release(window)
    // The deps these events wait for were queued first: ask for them now.
    this.kickWriter()
  }

  private async ingestSettled(events: Uint8Array[]): Promise<void> {
    const peer = this.peer
    const host = this.host
    const ingestMany = host.ingestMany
    if (ingestMany !== undefined && events.length > 1) {
      const result = await this.handOver(() => ingestMany(events, peer))
      if (this.failure === null) {
        this.pull.first(missingDeps(result))
        this.counters.eventsReceived += events.length
        for (const bytes of events) this.counters.eventBytesReceived += bytes.length
        this.progress()
      }
    } else {
      for (const bytes of events) {
        if (this.failure !== null) break
        const result = await this.handOver(() => host.ingest(bytes, peer))
        if (this.failure !== null) break
        this.pull.first(missingDeps(result))
        this.counters.eventsReceived++
        this.counters.eventBytesReceived += bytes.length
        this.progress()
      }
    }
  }

  /**
   * Run an ingest call; wait for it, or for the session to fail (an ingest
   * that hangs must not hold the session). Resolves to what it resolved to
   * (undefined when it threw or the session failed).
   */
  private async handOver(work: () => Promise<unknown>): Promise<unknown> {
    let ingested: Promise<unknown>
    try {
      ingested = work().catch(this.onIngestError)
    } catch (err) {
      ingested = Promise.resolve()
      this.onIngestError(err)
    }
    return await Promise.race([ingested, this.failed.promise])
  }

  private onDone(payload: Uint8Array): void {
    if (payload.length !== 0) throw new SyncProtocolError('DONE with a payload')
    if (!this.reconOver) throw new SyncProtocolError('DONE before the reconciliation ended')
    if (this.serve.pending > 0) throw new SyncProtocolError('DONE while its WANTs are unanswered')
    this.gotDone = true
  }

  // ------------------------------------------------------------ finishing

  private kickWriter(): void {
    if (this.failure !== null || this.finished) return
    this.writer.kick()
  }

  /** Sends DONE when this side is through, and closes when both are. */
  private settle(): void {
    if (this.failure !== null || this.finished) return
    const pull = this.pull
    if (!this.sentDone && this.reconOver && pull.idle && this.ingesting === 0) {
      if (pull.deferredCount > 0) {
        pull.resolveDeferred()
        if (pull.queued > 0) {
          this.kickWriter()
          return
        }
        if (pull.deferredCount > 0) {
          this.deferTimer ??= this.scheduler.after(this.host.limits.deferWaitMs, () => {
            pull.stopDeferring()
            this.kickWriter()
            this.settle()
          })
          return
        }
      }
      this.sentDone = true
      this.writer.queue(encodeFrame(FRAME_DONE))
      this.kickWriter()
      return
    }
    if (this.sentDone && this.gotDone && !this.closeStarted && !this.writer.busy && this.serve.pending === 0) {
      this.closeStarted = true
      this.stream.close().then(
        () => {
          this.whenClosed.resolve()
        },
        (err: unknown) => {
          this.fail(asError(err))
        }
      )
    }
  }

  private readonly onRelease = (): void => {
    if (this.pull.deferredCount === 0 || this.failure !== null || this.finished) return
    this.progress()
    this.settle()
  }

  private progress(): void {
    this.lastProgress = this.scheduler.monotonic()
  }

  private startTimers(): void {
    const { idleTimeoutMs, maxSessionMs } = this.host.limits
    const scheduler = this.scheduler
    this.timers.push(
      scheduler.every(Math.max(20, Math.min(1000, idleTimeoutMs / 4)), () => {
        const idle = scheduler.monotonic() - this.lastProgress
        if (idle > idleTimeoutMs) this.fail(new SyncTimeoutError(`no progress for ${Math.round(idle)} ms`))
      }),
      scheduler.after(maxSessionMs, () => {
        this.fail(new SyncTimeoutError(`session ran past ${maxSessionMs} ms`))
      })
    )
  }

  private fail(err: Error): void {
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

  private cleanup(): void {
    for (const cancel of this.timers) cancel()
    this.deferTimer?.()
    this.unsubscribe?.()
    this.reader.detach()
    this.pull.releaseAll()
  }
}
