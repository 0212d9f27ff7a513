/**
 * The byte stream a sync session runs over: the narrow duplex that the
 * session and its FrameReader need, and nothing of libp2p. A libp2p Stream
 * becomes one through `syncStreamOfLibp2p` (libp2p-stream.ts); the simulator
 * and tests connect two sessions with `createMemoryStreamPair`
 * (memory-stream.ts).
 *
 * The semantics are libp2p 3's, which the session was written against:
 *
 *   - `send` queues the bytes and says whether the sender should wait for
 *     `onDrain` before the next send; it throws once the writable end is
 *     closed or the stream failed.
 *   - `close` ends the writable end (half-close) once what was sent has gone
 *     out; the remote then sees its data, then `onEnd`.
 *   - `abort` fails the stream at once: both ends see `onClose` with an error.
 *   - `onClose` comes once, when the stream is finished: without an error
 *     when both ends closed cleanly, with one when it was aborted or reset.
 *   - `pause` holds received bytes in the stream (and, where the transport
 *     can, stops the remote); `resume` delivers them, then new ones.
 */

/** Where a stream is in its life. `closing`: one end closed its writable end, the other not yet. */
export type SyncStreamStatus = 'open' | 'closing' | 'closed' | 'aborted' | 'reset'

/** Callbacks of a stream's reader. */
export interface SyncStreamListener {
  /** Bytes from the remote, in the order it sent them (never empty). */
  readonly onData: (bytes: Uint8Array) => void
  /** The remote closed its writable end, and every byte it sent before was delivered. */
  readonly onEnd: () => void
  /** The stream is finished: cleanly (no error), or aborted or reset (the error says why). */
  readonly onClose: (error?: Error) => void
}

export interface SyncStream {
  readonly status: SyncStreamStatus
  /** True once `onEnd` was delivered (read it rather than wait for an event that may have passed). */
  readonly readableEnded: boolean
  /** Bytes received and not yet delivered (held while paused). */
  readonly readBufferLength: number
  /** Queues bytes for the remote; false means "wait for onDrain before sending more". Throws when the stream cannot send. */
  send: (bytes: Uint8Array) => boolean
  /** Resolves when sending may go on; rejects if the stream fails first. */
  onDrain: () => Promise<void>
  /** Starts delivering to this listener; the returned function stops it. */
  listen: (listener: SyncStreamListener) => () => void
  /** Holds received bytes in the stream until `resume`. */
  pause: () => void
  resume: () => void
  /** Closes the writable end; resolves once what was sent has gone out. */
  close: () => Promise<void>
  /** Fails the stream now, at both ends. Harmless when it is already finished. */
  abort: (err: Error) => void
}
