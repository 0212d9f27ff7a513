/**
 * Cuts sync frames (frames.ts) out of a SyncStream, with backpressure.
 *
 * The reader never throws past `next()`: framing errors and stream failures
 * become a rejected `next()`, which the session turns into an error stat.
 */
import { SyncProtocolError } from './errors.js'
import type { SyncStream } from './stream.js'

/** Bytes-received progress that counts as activity even before a whole frame has arrived. */
export const TRICKLE_PROGRESS_BYTES = 16 * 1024

/**
 * Buffers at most about `highWater` bytes (then pauses the stream, which
 * with yamux stops window updates, so the remote stops sending); resumes once
 * the consumer has drained half of it. The consumer reads one frame at a time
 * and awaits its work before asking for the next, so nothing is read faster
 * than it is handled.
 */
export class FrameReader {
  private chunks: Uint8Array[] = []
  private head = 0 // offset into chunks[0]
  private buffered = 0
  private eof = false
  private failure: Error | null = null
  private wake: (() => void) | null = null
  private paused = false
  private trickle = 0
  private detached = false
  private readonly unlisten: () => void

  constructor(
    private readonly stream: SyncStream,
    private readonly maxFrameBytes: number,
    private readonly highWater: number,
    private readonly onBytes: (n: number, progress: boolean) => void
  ) {
    this.unlisten = stream.listen({ onData: this.onData, onEnd: this.onEnd, onClose: this.onClose })
    if (stream.readableEnded) this.eof = true
    if (stream.status !== 'open' && stream.status !== 'closing') this.eof = true
  }

  /** Stops listening (when the session ends). */
  detach(): void {
    if (this.detached) return
    this.detached = true
    this.unlisten()
    this.chunks = []
    this.buffered = 0
    this.signal()
  }

  /** Fails every pending and future `next()` with this error. */
  fail(err: Error): void {
    if (this.failure === null) this.failure = err
    this.signal()
  }

  /**
   * The next frame (type byte + payload), or null once the remote closed its
   * writable end cleanly between frames. Rejects on a framing error, an
   * oversized frame (as soon as its length prefix is read), a truncated
   * final frame, or a failed stream.
   */
  async next(): Promise<Uint8Array | null> {
    for (;;) {
      if (this.failure !== null) throw this.failure
      const frame = this.tryParse()
      if (frame !== null) {
        if (this.paused && this.buffered <= this.highWater / 2) this.setPaused(false)
        return frame
      }
      if (this.eof || this.detached) {
        if (this.buffered > 0) throw new SyncProtocolError('stream ended inside a frame')
        return null
      }
      if (this.paused) this.setPaused(false)
      await new Promise<void>(resolve => {
        this.wake = resolve
      })
    }
  }

  private readonly onData = (bytes: Uint8Array): void => {
    if (bytes.length === 0 || this.detached) return
    this.chunks.push(bytes)
    this.buffered += bytes.length
    this.trickle += bytes.length
    const progress = this.trickle >= TRICKLE_PROGRESS_BYTES
    if (progress) this.trickle = 0
    this.onBytes(bytes.length, progress)
    if (!this.paused && this.buffered >= this.highWater) this.setPaused(true)
    this.signal()
  }

  private readonly onEnd = (): void => {
    this.eof = true
    this.signal()
  }

  private readonly onClose = (error?: Error): void => {
    if (error !== undefined) {
      this.fail(error)
      return
    }
    if (this.stream.readBufferLength === 0) this.eof = true
    else if (this.paused) this.setPaused(false)
    this.signal()
  }

  private setPaused(paused: boolean): void {
    try {
      if (paused) this.stream.pause()
      else this.stream.resume()
      this.paused = paused
    } catch {
      // the readable end is closing or closed: nothing more to pause or resume
      this.paused = false
    }
  }

  private signal(): void {
    const wake = this.wake
    this.wake = null
    wake?.()
  }

  /** The byte at logical offset `i` of the buffered data (i < buffered). */
  private byteAt(i: number): number {
    let k = 0
    let off = this.head + i
    while (off >= (this.chunks[k] as Uint8Array).length) {
      off -= (this.chunks[k] as Uint8Array).length
      k++
    }
    return (this.chunks[k] as Uint8Array)[off] as number
  }

  private tryParse(): Uint8Array | null {
    if (this.buffered === 0) return null
    // length prefix (read across chunks, so not with wire/varint's readVarint)
    let value = 0
    let scale = 1
    let prefix = 0
    for (;;) {
      if (prefix >= this.buffered) return null
      if (prefix >= 5) throw new SyncProtocolError('frame length prefix longer than 5 bytes')
      const b = this.byteAt(prefix)
      value += (b & 0x7f) * scale
      prefix++
      if ((b & 0x80) === 0) {
        if (prefix > 1 && b === 0) throw new SyncProtocolError('non-minimal frame length prefix')
        break
      }
      scale *= 128
    }
    if (value === 0) throw new SyncProtocolError('empty frame (no type byte)')
    if (value > this.maxFrameBytes)
      throw new SyncProtocolError(`frame of ${value} bytes exceeds the ${this.maxFrameBytes}-byte limit`)
    if (this.buffered < prefix + value) return null
    this.skip(prefix)
    return this.take(value)
  }

  private skip(n: number): void {
    this.take(n)
  }

  private take(n: number): Uint8Array {
    const first = this.chunks[0] as Uint8Array
    let out: Uint8Array
    if (first.length - this.head >= n) {
      out = first.subarray(this.head, this.head + n)
      this.head += n
      if (this.head === first.length) {
        this.chunks.shift()
        this.head = 0
      }
    } else {
      out = new Uint8Array(n)
      let filled = 0
      while (filled < n) {
        const chunk = this.chunks[0] as Uint8Array
        const part = Math.min(chunk.length - this.head, n - filled)
        out.set(chunk.subarray(this.head, this.head + part), filled)
        filled += part
        this.head += part
        if (this.head === chunk.length) {
          this.chunks.shift()
          this.head = 0
        }
      }
    }
    this.buffered -= n
    return out
  }
}
