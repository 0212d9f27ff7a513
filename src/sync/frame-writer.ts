/**
 * The writing side of a session: one pump that sends control frames
 * (RECONCILE, DONE) first, then WANT and EVENTS frames as the session builds
 * them, and waits for the stream to drain whenever it says so. Only one pump
 * runs at a time; while the stream takes frames without pushing back it runs
 * synchronously, to the end of what there is to send.
 */
import { asError } from './errors.js'
import type { SessionCounters } from './stats.js'
import type { SyncStream } from './stream.js'

export interface FrameWriterHooks {
  /** The next data frame (after every control frame), or null when there is none now. */
  readonly next: () => Uint8Array | null
  /** True once the session failed: the pump stops. */
  readonly stopped: () => boolean
  /** A frame was sent and taken by the stream. */
  readonly progress: () => void
  /** The pump ran out of frames. */
  readonly drained: () => void
  /** Sending failed (the stream threw or closed while draining). */
  readonly failed: (err: Error) => void
}

export class FrameWriter {
  private readonly control: Uint8Array[] = []
  private writing = false

  constructor(
    private readonly stream: SyncStream,
    private readonly counters: SessionCounters,
    private readonly hooks: FrameWriterHooks
  ) {}

  /** Queues a control frame; `kick` sends it. */
  queue(frame: Uint8Array): void {
    this.control.push(frame)
  }

  /** A pump is running or a control frame waits. */
  get busy(): boolean {
    return this.writing || this.control.length > 0
  }

  /** Starts the pump unless it runs. */
  kick(): void {
    if (this.writing) return
    this.writing = true
    void this.pump()
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        if (this.hooks.stopped()) {
          this.writing = false
          return
        }
        const frame = this.control.shift() ?? this.hooks.next()
        if (frame === null) {
          this.writing = false
          this.hooks.drained()
          return
        }
        this.counters.bytesSent += frame.length
        if (!this.stream.send(frame)) await this.stream.onDrain()
        this.hooks.progress()
      }
    } catch (err) {
      this.writing = false
      this.hooks.failed(asError(err))
    }
  }
}
