/**
 * The node's stream muxer (createSwarmNode, src/net/node.ts, with
 * `halfWindowUpdates` only): yamux, with local changes to what a connection
 * sends and nothing another node sees in the protocol (any yamux peer, with
 * or without them, reads the same bytes the same way).
 * docs/performance.md, "Transport cost per event", has what each saved.
 *
 * 1. Window updates when half the window is used. @chainsafe/libp2p-yamux 8
 *    answers every data frame it receives with a window update frame (its
 *    `sendWindowUpdate` returns early only while the window is still whole),
 *    so each gossip message a node takes in costs a frame back: a yamux
 *    header, a noise frame around it, its encryption here and its decryption
 *    and handling there. Here a stream sends its update once less than half
 *    of its receive window is left, as Hashicorp's yamux and go-yamux do
 *    (the spec leaves the timing to the receiver). The stream's opening
 *    update (SYN, ACK) and a paused stream go through unchanged. The window
 *    grows as plain yamux grows it: plain yamux doubles it (up to 16 MiB) at
 *    an update within 4 round trips of the update before, and it updates at
 *    every data frame, so here the same test runs at every data frame, and a
 *    frame that passes it sends its update. Without that, the window stayed
 *    at 256 KiB under a burst read slowly; a sender put all of it in one
 *    frame and waited for the update, which could only leave once that frame
 *    was read, so the rest of the burst sat in the sender's buffer, slower to
 *    arrive and dropped if the connection was aborted meanwhile (a peer's
 *    ping timing out on a loaded machine; test/unit/swarm-yamux.test.ts).
 * 2. Frames of one synchronous run in one noise frame (measured, not used by
 *    the node: it added nothing on top of 1). Every yamux frame is
 *    handed to noise on its own and becomes a noise frame (a length, a
 *    ChaCha20-Poly1305 seal, a tag) that the receiver splits and opens on its
 *    own. Here the muxer's frames of one run are gathered and handed to noise
 *    in a microtask, as one buffer: one seal (noise splits past 65,519
 *    bytes), one open on the other side. Bytes and their order on the
 *    stream are as they were. A full transport still pauses the streams (at the
 *    flush, and from the next frame on); closing the connection flushes
 *    first; an abort drops what is not yet sent, as it would drop it anyway.
 *
 * bench/net/transport-cost.ts measures each (variants half, frames, both).
 */
import { yamux } from '@chainsafe/libp2p-yamux'
import type { YamuxMuxerInit } from '@chainsafe/libp2p-yamux'
import type { MessageStream, StreamMuxer, StreamMuxerFactory } from '@libp2p/interface'

export interface SwarmYamuxOptions {
  /** Send a stream's window update only when less than half its receive window is left (default true). */
  readonly halfWindowUpdates?: boolean
  /** Hand the frames of one synchronous run to the encrypted connection as one write (default false: measured, not
   * kept; bench/net/transport-cost.ts's `frames` variant). */
  readonly coalesceFrames?: boolean
}

/** What the yamux stream holds, as far as the window update needs it (@chainsafe/libp2p-yamux 8, stream.ts). */
interface YamuxStreamInside {
  state: number
  recvWindow: number
  recvWindowCapacity: number
  maxStreamWindowSize: number
  epochStart: number
  getRTT: () => number
  sendWindowUpdate: () => void
}

/** What the yamux muxer holds, as far as this needs it (AbstractStreamMuxer, YamuxMuxer). */
interface YamuxMuxerInside {
  _newStream?: (...args: unknown[]) => unknown
  send?: (data: Chunk) => boolean
}

/** What a message stream's send takes: a Uint8Array or a Uint8ArrayList (a list of them). */
type Chunk = Parameters<MessageStream['send']>[0]

/** yamux's StreamState.Established: neither the SYN nor the ACK left to send, not paused. */
const ESTABLISHED = 3

export function swarmYamux(init: YamuxMuxerInit = {}, options: SwarmYamuxOptions = {}): () => StreamMuxerFactory {
  const make = yamux(init)
  const halfWindow = options.halfWindowUpdates ?? true
  const coalesce = options.coalesceFrames ?? false
  return () => {
    const factory = make()
    const create = factory.createStreamMuxer.bind(factory)
    factory.createStreamMuxer = maConn => {
      const muxer = create(maConn)
      if (halfWindow) halfWindowUpdates(muxer)
      if (coalesce) coalesceFrames(muxer, maConn)
      return muxer
    }
    return factory
  }
}

/** Each stream the muxer makes sends its window update once half its receive window is used, or to grow the window. */
export function halfWindowUpdates(muxer: StreamMuxer): void {
  const inside = muxer as unknown as YamuxMuxerInside
  const newStream = inside._newStream
  if (typeof newStream !== 'function') return
  inside._newStream = function (this: unknown, ...args: unknown[]) {
    const stream = newStream.apply(this, args) as YamuxStreamInside
    const update = stream.sendWindowUpdate
    if (
      typeof update !== 'function' ||
      typeof stream.recvWindowCapacity !== 'number' ||
      typeof stream.maxStreamWindowSize !== 'number' ||
      typeof stream.epochStart !== 'number' ||
      typeof stream.getRTT !== 'function'
    ) {
      return stream
    }
    stream.sendWindowUpdate = function (this: YamuxStreamInside) {
      if (stream.state === ESTABLISHED) {
        // Plain yamux's growth test (stream.ts, sendWindowUpdate), run at every data frame as plain yamux runs it,
        // against the frame before: a frame that grows the window sends its update. Plain yamux's update sets
        // epochStart to the time it is sent.
        const now = Date.now()
        const rtt = stream.getRTT()
        const grows = stream.recvWindow < stream.maxStreamWindowSize && rtt > -1 && now - stream.epochStart <= rtt * 4
        if (grows) {
          // Grown here, by the test just run: plain yamux's, run again a millisecond later, could say otherwise and
          // send an update that grows nothing.
          stream.recvWindow = Math.min(stream.recvWindow * 2, stream.maxStreamWindowSize)
          stream.epochStart = Number.NEGATIVE_INFINITY
        } else if (stream.recvWindowCapacity * 2 > stream.recvWindow) {
          // Where plain yamux's update would have set it: the next frame's growth is measured from this one.
          stream.epochStart = now
          return
        }
      }
      update.call(stream)
    }
    return stream
  }
}

/** The muxer's frames of one synchronous run go to `maConn` (the encrypted connection) as one write. */
export function coalesceFrames(muxer: StreamMuxer, maConn: MessageStream): void {
  const inside = muxer as unknown as YamuxMuxerInside
  const send = inside.send
  if (typeof send !== 'function') return
  // AbstractMessageStream's write side ('writable', 'closing', 'closed'); its overall status where that is missing.
  const writable = (): boolean => {
    const ws = (maConn as unknown as { writeStatus?: unknown }).writeStatus
    return ws === undefined ? maConn.status === 'open' : ws === 'writable'
  }
  let pending: Chunk[] = []
  let bytes = 0
  const flush = (): void => {
    const chunks = pending
    const length = bytes
    pending = []
    bytes = 0
    if (chunks.length === 0) return
    // A connection closed or closing meanwhile: what the frames would have met had they gone out at once.
    if (!writable()) return
    try {
      send.call(muxer, chunks.length === 1 ? (chunks[0] as Chunk) : joined(chunks, length))
    } catch (err) {
      muxer.abort(err as Error)
    }
  }
  inside.send = (data: Chunk): boolean => {
    // Closed or closing: let the muxer's send say so as it would.
    if (!writable()) return send.call(muxer, data)
    if (pending.length === 0) queueMicrotask(flush)
    pending.push(data)
    bytes += data.byteLength
    // Full as the connection is now. Its own 'drain' listener (added before the muxer's) clears this before the
    // muxer wakes its streams; a flush that fills it has the muxer pause them (AbstractStreamMuxer.send).
    return !maConn.writableNeedsDrain
  }
  const close = maConn.close.bind(maConn)
  maConn.close = async (opts?: Parameters<MessageStream['close']>[0]) => {
    flush()
    await close(opts)
  }
}

/** The chunks in one buffer (noise seals a contiguous buffer: it would copy a list into one anyway). */
function joined(chunks: readonly Chunk[], length: number): Uint8Array {
  const out = new Uint8Array(length)
  let at = 0
  for (const chunk of chunks) {
    if (chunk instanceof Uint8Array) {
      out.set(chunk, at)
      at += chunk.byteLength
    } else {
      for (const part of chunk) {
        out.set(part, at)
        at += part.byteLength
      }
    }
  }
  return out
}
