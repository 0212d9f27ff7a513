/**
 * Frames of the catch-up protocol (`/plan-swarm/sync/1.0.0`) and a reader
 * that cuts them out of a libp2p 3 stream with backpressure.
 *
 * A frame is
 *
 *     varint L (unsigned LEB128, at most 5 bytes, minimal)  L = 1 + payload bytes, 1 <= L <= maxFrameBytes
 *     type     one byte
 *     payload  L - 1 bytes
 *
 * Types:
 *
 *     1 RECONCILE  a message of the range-reconciliation core (src/core/reconcile.ts);
 *                  an EMPTY payload means "my side of the reconciliation is over"
 *                  (the core returned a null reply)
 *     2 WANT       k >= 1 ids, 32 raw bytes each (k <= MAX_WANT_IDS_PER_FRAME)
 *     3 EVENTS     varint n (how many of the oldest outstanding wanted ids this frame
 *                  settles, n >= 1), then events, each as varint length + wire bytes
 *                  (envelope || 64-byte signature), in the order they were wanted;
 *                  an id the sender lacks is settled without an event
 *     4 DONE       empty: "my reconciliation is over, every WANT of mine is settled,
 *                  and I will send nothing but EVENTS for your WANTs"
 *
 * The reader never throws past `next()`: framing errors and stream failures
 * become a rejected `next()`, which the session turns into an error stat.
 */
import type { Stream, StreamCloseEvent, StreamMessageEvent } from '@libp2p/interface'

export const FRAME_RECONCILE = 1
export const FRAME_WANT = 2
export const FRAME_EVENTS = 3
export const FRAME_DONE = 4

export const ID_BYTES = 32

/** A protocol violation by the peer (or a local limit it exceeded). */
export class SyncProtocolError extends Error {
  override readonly name = 'SyncProtocolError'
}

/** The session made no progress for too long, or ran past its hard deadline. */
export class SyncTimeoutError extends Error {
  override readonly name = 'SyncTimeoutError'
}

/** The session was stopped locally (service stopped, or the node is shutting down). */
export class SyncAbortedError extends Error {
  override readonly name = 'SyncAbortedError'
}

export function varintSize (value: number): number {
  let size = 1
  while (value >= 0x80) {
    value = Math.floor(value / 128)
    size++
  }
  return size
}

export function writeVarint (out: Uint8Array, pos: number, value: number): number {
  while (value >= 0x80) {
    out[pos++] = (value % 128) | 0x80
    value = Math.floor(value / 128)
  }
  out[pos++] = value
  return pos
}

/**
 * Reads a minimal unsigned LEB128 varint of at most 5 bytes (< 2^32) at `pos`.
 * Returns [value, next position], or null if the bytes end first, or throws on a malformed varint.
 */
export function readVarint (bytes: Uint8Array, pos: number): [number, number] | null {
  let value = 0
  let scale = 1
  for (let i = 0; i < 5; i++) {
    if (pos + i >= bytes.length) return null
    const b = bytes[pos + i] as number
    value += (b & 0x7f) * scale
    if ((b & 0x80) === 0) {
      if (i > 0 && b === 0) throw new SyncProtocolError('non-minimal varint')
      if (value > 0xffffffff) throw new SyncProtocolError('varint out of range')
      return [value, pos + i + 1]
    }
    scale *= 128
  }
  throw new SyncProtocolError('varint longer than 5 bytes')
}

/** One whole frame: length prefix, type, payload. */
export function encodeFrame (type: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  const len = 1 + payload.length
  const out = new Uint8Array(varintSize(len) + len)
  let pos = writeVarint(out, 0, len)
  out[pos++] = type
  out.set(payload, pos)
  return out
}

const HEX: readonly string[] = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))

export function idFromBytes (bytes: Uint8Array, at: number): string {
  let s = ''
  for (let i = at; i < at + ID_BYTES; i++) s += HEX[bytes[i] as number] as string
  return s
}

function nibble (code: number): number {
  return code <= 57 ? code - 48 : code - 87
}

/** Writes a (valid, lowercase) 64-hex-digit id as 32 bytes at `at`. */
export function idToBytes (id: string, out: Uint8Array, at: number): void {
  for (let i = 0; i < ID_BYTES; i++) out[at + i] = (nibble(id.charCodeAt(2 * i)) << 4) | nibble(id.charCodeAt(2 * i + 1))
}

/** A WANT frame for these ids. */
export function encodeWant (ids: readonly string[]): Uint8Array {
  const payload = new Uint8Array(ids.length * ID_BYTES)
  for (let i = 0; i < ids.length; i++) idToBytes(ids[i] as string, payload, i * ID_BYTES)
  return encodeFrame(FRAME_WANT, payload)
}

/** An EVENTS frame settling `settled` wanted ids with these events (in wanted order). */
export function encodeEvents (settled: number, events: readonly Uint8Array[]): Uint8Array {
  let size = varintSize(settled)
  for (const e of events) size += varintSize(e.length) + e.length
  const payload = new Uint8Array(size)
  let pos = writeVarint(payload, 0, settled)
  for (const e of events) {
    pos = writeVarint(payload, pos, e.length)
    payload.set(e, pos)
    pos += e.length
  }
  return encodeFrame(FRAME_EVENTS, payload)
}

/** Parses an EVENTS payload; throws SyncProtocolError when malformed. Events are copies. */
export function decodeEvents (payload: Uint8Array): { settled: number, events: Uint8Array[] } {
  const head = readVarint(payload, 0)
  if (head === null) throw new SyncProtocolError('EVENTS frame without a settled count')
  const [settled, start] = head
  if (settled === 0) throw new SyncProtocolError('EVENTS frame settles no wanted id')
  const events: Uint8Array[] = []
  let pos = start
  while (pos < payload.length) {
    const lenAt = readVarint(payload, pos)
    if (lenAt === null) throw new SyncProtocolError('truncated event length')
    const [len, at] = lenAt
    if (len > payload.length - at) throw new SyncProtocolError('event length exceeds the frame')
    events.push(payload.slice(at, at + len))
    pos = at + len
  }
  if (events.length > settled) throw new SyncProtocolError('EVENTS frame carries more events than it settles')
  return { settled, events }
}

/** Bytes-received progress that counts as activity even before a whole frame has arrived. */
export const TRICKLE_PROGRESS_BYTES = 16 * 1024

/**
 * Cuts frames out of a stream. Buffers at most about `highWater` bytes (then
 * pauses the stream, which with yamux stops window updates, so the remote
 * stops sending); resumes once the consumer has drained half of it. The
 * consumer reads one frame at a time and awaits its work before asking for
 * the next, so nothing is read faster than it is handled.
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

  constructor (
    private readonly stream: Stream,
    private readonly maxFrameBytes: number,
    private readonly highWater: number,
    private readonly onBytes: (n: number, progress: boolean) => void
  ) {
    stream.addEventListener('message', this.onMessage)
    stream.addEventListener('end', this.onEnd)
    stream.addEventListener('close', this.onClose)
    if (stream.readableEnded) this.eof = true
    if (stream.status !== 'open' && stream.status !== 'closing') this.eof = true
  }

  /** Stops listening (when the session ends). */
  detach (): void {
    if (this.detached) return
    this.detached = true
    this.stream.removeEventListener('message', this.onMessage)
    this.stream.removeEventListener('end', this.onEnd)
    this.stream.removeEventListener('close', this.onClose)
    this.chunks = []
    this.buffered = 0
    this.signal()
  }

  /** Fails every pending and future `next()` with this error. */
  fail (err: Error): void {
    if (this.failure === null) this.failure = err
    this.signal()
  }

  /**
   * The next frame (type byte + payload), or null once the remote closed its
   * writable end cleanly between frames. Rejects on a framing error, an
   * oversized frame (as soon as its length prefix is read), a truncated
   * final frame, or a failed stream.
   */
  async next (): Promise<Uint8Array | null> {
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
      await new Promise<void>(resolve => { this.wake = resolve })
    }
  }

  private readonly onMessage = (evt: StreamMessageEvent): void => {
    const data = evt.data
    const bytes = data instanceof Uint8Array ? data : data.subarray()
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

  private readonly onClose = (evt: StreamCloseEvent): void => {
    if (evt.error !== undefined) {
      this.fail(evt.error)
      return
    }
    if (this.stream.readBufferLength === 0) this.eof = true
    else if (this.paused) this.setPaused(false)
    this.signal()
  }

  private setPaused (paused: boolean): void {
    try {
      if (paused) this.stream.pause()
      else this.stream.resume()
      this.paused = paused
    } catch {
      // the readable end is closing or closed: nothing more to pause or resume
      this.paused = false
    }
  }

  private signal (): void {
    const wake = this.wake
    this.wake = null
    wake?.()
  }

  /** The byte at logical offset `i` of the buffered data (i < buffered). */
  private byteAt (i: number): number {
    let k = 0
    let off = this.head + i
    while (off >= (this.chunks[k] as Uint8Array).length) {
      off -= (this.chunks[k] as Uint8Array).length
      k++
    }
    return (this.chunks[k] as Uint8Array)[off] as number
  }

  private tryParse (): Uint8Array | null {
    if (this.buffered === 0) return null
    // length prefix
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
    if (value > this.maxFrameBytes) throw new SyncProtocolError(`frame of ${value} bytes exceeds the ${this.maxFrameBytes}-byte limit`)
    if (this.buffered < prefix + value) return null
    this.skip(prefix)
    return this.take(value)
  }

  private skip (n: number): void {
    this.take(n)
  }

  private take (n: number): Uint8Array {
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
