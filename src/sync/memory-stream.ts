/**
 * Two connected SyncStreams in memory, on a Scheduler's clock: what the
 * simulator (and unit tests) run real sync sessions over.
 *
 * Each chunk sent reaches the other end through `scheduler.after(delay)`,
 * in order: a chunk whose delay is shorter than the one before it waits for
 * it (FIFO per direction, like one TCP connection), so jitter reorders
 * nothing. A half-close travels the same way, behind the data; an abort
 * fails the local end at once and resets the remote one a delay later.
 * `cut()` severs the link (a partition, a crash): both ends fail at once and
 * what is in flight is lost.
 *
 * Flow control: `send` says "wait for drain" once more than `windowBytes`
 * sent bytes have not been read at the other end yet (a paused reader holds
 * them), as yamux's window does.
 */
import type { Cancel, Scheduler } from '../ports/scheduler.js'
import { StreamCutError } from './errors.js'
import type { SyncStream, SyncStreamListener, SyncStreamStatus } from './stream.js'

export type MemoryDirection = 'a-to-b' | 'b-to-a'

export interface MemoryStreamOptions {
  /** Delay of each chunk in ms: a number, or a function of its size and direction (jitter, bandwidth, skew). Default 0. */
  readonly delayMs?: number | ((bytes: number, direction: MemoryDirection) => number)
  /** Called with the size of every chunk as it is sent (byte counters per direction). */
  readonly onBytes?: (bytes: number, direction: MemoryDirection) => void
  /** Unread bytes in flight before `send` asks the sender to wait for drain. Default 256 KiB. */
  readonly windowBytes?: number
}

export interface MemoryStreamPair {
  /** One end (the opener's, by convention). */
  readonly a: SyncStream
  /** The other end. */
  readonly b: SyncStream
  /** Severs the link: both ends fail now with a StreamCutError (`onClose` with it), bytes in flight are lost. Harmless twice. */
  readonly cut: (reason?: string) => void
}

export const DEFAULT_MEMORY_WINDOW_BYTES = 256 * 1024

export function createMemoryStreamPair(scheduler: Scheduler, opts: MemoryStreamOptions = {}): MemoryStreamPair {
  const delay = opts.delayMs ?? 0
  const delayOf = typeof delay === 'number' ? () => delay : delay
  const window = opts.windowBytes ?? DEFAULT_MEMORY_WINDOW_BYTES
  const a = new MemoryEnd('a-to-b', window, opts.onBytes)
  const b = new MemoryEnd('b-to-a', window, opts.onBytes)
  a.connect(b, new Link(scheduler, b, bytes => delayOf(bytes, 'a-to-b')))
  b.connect(a, new Link(scheduler, a, bytes => delayOf(bytes, 'b-to-a')))
  let cut = false
  return {
    a,
    b,
    cut: reason => {
      if (cut) return
      cut = true
      const err = new StreamCutError(reason ?? 'the link was cut')
      a.sever(err)
      b.sever(err)
    }
  }
}

/** What travels on a link: data, the sender's half-close, or its abort (a reset). */
type Packet =
  | { readonly kind: 'data'; readonly bytes: Uint8Array }
  | { readonly kind: 'end'; readonly onArrive: () => void }
  | { readonly kind: 'reset' }

/** One direction of the pair: packets in order, each after its own delay, none overtaking another. */
class Link {
  private readonly queue: Array<{ readonly packet: Packet; arrived: boolean; cancel: Cancel | null }> = []
  private dead = false

  constructor(
    private readonly scheduler: Scheduler,
    private readonly to: MemoryEnd,
    private readonly delayOf: (bytes: number) => number
  ) {}

  push(packet: Packet): void {
    if (this.dead) return
    const entry: { packet: Packet; arrived: boolean; cancel: Cancel | null } = { packet, arrived: false, cancel: null }
    this.queue.push(entry)
    const ms = this.delayOf(packet.kind === 'data' ? packet.bytes.length : 0)
    entry.cancel = this.scheduler.after(Number.isFinite(ms) && ms > 0 ? ms : 0, () => {
      entry.arrived = true
      entry.cancel = null
      this.flush()
    })
  }

  /** Drops everything in flight and cancels its timers. */
  kill(): void {
    this.dead = true
    for (const entry of this.queue) entry.cancel?.()
    this.queue.length = 0
  }

  private flush(): void {
    while (!this.dead && this.queue[0]?.arrived === true) {
      const { packet } = this.queue.shift() as { packet: Packet }
      this.to.arrive(packet)
    }
  }
}

const END = Symbol('end')

class MemoryEnd implements SyncStream {
  status: SyncStreamStatus = 'open'
  readableEnded = false
  readBufferLength = 0
  private writableEnded = false
  private paused = false
  private flushQueued = false
  private failure: Error | null = null
  /** Bytes this end sent that the other end has not delivered to its reader yet. */
  private unread = 0
  private readonly buffer: Array<Uint8Array | typeof END> = []
  private readonly listeners = new Set<SyncStreamListener>()
  private drainWaiters: Array<PromiseWithResolvers<void>> = []
  private closeWaiter: PromiseWithResolvers<void> | null = null
  private remote!: MemoryEnd
  private link!: Link

  constructor(
    private readonly direction: MemoryDirection,
    private readonly windowBytes: number,
    private readonly onBytes: MemoryStreamOptions['onBytes']
  ) {}

  connect(remote: MemoryEnd, link: Link): void {
    this.remote = remote
    this.link = link
  }

  send(bytes: Uint8Array): boolean {
    if (this.failure !== null) throw this.failure
    if (this.writableEnded) throw new Error('cannot send: this end of the stream is closed for writing')
    const copy = bytes.slice()
    this.onBytes?.(copy.length, this.direction)
    this.unread += copy.length
    this.link.push({ kind: 'data', bytes: copy })
    return this.unread < this.windowBytes
  }

  async onDrain(): Promise<void> {
    if (this.failure !== null) throw this.failure
    if (this.unread < this.windowBytes) return
    const waiter = Promise.withResolvers<void>()
    this.drainWaiters.push(waiter)
    await waiter.promise
  }

  listen(listener: SyncStreamListener): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    // Delivered on a microtask, never from inside resume(): a reader that pauses again in onData must see its pause stick.
    if (this.buffer.length > 0 && !this.flushQueued) {
      this.flushQueued = true
      queueMicrotask(() => {
        this.flushQueued = false
        this.flushBuffer()
      })
    }
  }

  async close(): Promise<void> {
    if (this.failure !== null) throw this.failure
    if (this.writableEnded) return await (this.closeWaiter?.promise ?? Promise.resolve())
    this.writableEnded = true
    this.closeWaiter = Promise.withResolvers<void>()
    if (this.status === 'open') this.status = 'closing'
    this.link.push({
      kind: 'end',
      onArrive: () => {
        this.closeWaiter?.resolve()
      }
    })
    await this.closeWaiter.promise
  }

  abort(err: Error): void {
    if (this.isFinished()) return
    this.fail('aborted', err)
    this.link.push({ kind: 'reset' })
  }

  /** A packet from the remote reached this end. */
  arrive(packet: Packet): void {
    if (packet.kind === 'end') packet.onArrive()
    if (this.isFinished()) {
      if (packet.kind === 'data') this.remote.delivered(packet.bytes.length)
      return
    }
    switch (packet.kind) {
      case 'reset':
        this.fail('reset', new Error('stream reset by the remote'))
        return
      case 'data':
        if (this.paused || this.buffer.length > 0) {
          this.buffer.push(packet.bytes)
          this.readBufferLength += packet.bytes.length
        } else {
          this.deliver(packet.bytes)
        }
        return
      case 'end':
        if (this.paused || this.buffer.length > 0) this.buffer.push(END)
        else this.deliverEnd()
    }
  }

  /** The link was cut. */
  sever(err: Error): void {
    this.link.kill()
    if (!this.isFinished()) this.fail('reset', err)
    this.closeWaiter?.reject(err)
  }

  /** The remote delivered `n` of this end's bytes to its reader. */
  private delivered(n: number): void {
    this.unread -= n
    if (this.unread >= this.windowBytes || this.drainWaiters.length === 0) return
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const w of waiters) w.resolve()
  }

  private flushBuffer(): void {
    while (!this.paused && !this.isFinished() && this.buffer.length > 0) {
      const item = this.buffer.shift() as Uint8Array | typeof END
      if (item === END) {
        this.deliverEnd()
      } else {
        this.readBufferLength -= item.length
        this.deliver(item)
      }
    }
  }

  private deliver(bytes: Uint8Array): void {
    this.remote.delivered(bytes.length)
    for (const l of [...this.listeners]) l.onData(bytes)
  }

  private deliverEnd(): void {
    this.readableEnded = true
    if (this.status === 'open') this.status = 'closing'
    for (const l of [...this.listeners]) l.onEnd()
    this.finishIfDone()
  }

  private finishIfDone(): void {
    if (!this.writableEnded || !this.readableEnded || this.isFinished()) return
    this.status = 'closed'
    for (const l of [...this.listeners]) l.onClose()
  }

  private isFinished(): boolean {
    return this.status === 'closed' || this.status === 'aborted' || this.status === 'reset'
  }

  private fail(status: 'aborted' | 'reset', err: Error): void {
    this.status = status
    this.failure = err
    for (const item of this.buffer) if (item !== END) this.remote.delivered(item.length)
    this.buffer.length = 0
    this.readBufferLength = 0
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const w of waiters) w.reject(err)
    this.closeWaiter?.reject(err)
    for (const l of [...this.listeners]) l.onClose(err)
  }
}
