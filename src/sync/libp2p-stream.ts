/**
 * A libp2p 3 Stream as a SyncStream: the events and methods map one to one
 * (stream.ts keeps libp2p's semantics).
 */
import type { Stream, StreamCloseEvent, StreamMessageEvent } from '@libp2p/interface'
import type { SyncStream } from './stream.js'

/**
 * Wraps `stream` for a session whose frames are at most `maxFrameBytes`.
 *
 * A paused stream keeps what arrives: yamux may have up to its window
 * (16 MiB at most) in flight when the session pauses, so the read buffer is
 * raised above that, and a pause never makes libp2p reset the stream.
 */
export function syncStreamOfLibp2p(stream: Stream, maxFrameBytes: number): SyncStream {
  stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, 16 * 1024 * 1024 + 2 * maxFrameBytes)
  return {
    get status() {
      return stream.status
    },
    get readableEnded() {
      return stream.readableEnded
    },
    get readBufferLength() {
      return stream.readBufferLength
    },
    send: bytes => stream.send(bytes),
    onDrain: async () => {
      await stream.onDrain()
    },
    listen: listener => {
      const onMessage = (evt: StreamMessageEvent): void => {
        const data = evt.data
        listener.onData(data instanceof Uint8Array ? data : data.subarray())
      }
      const onEnd = (): void => {
        listener.onEnd()
      }
      const onClose = (evt: StreamCloseEvent): void => {
        listener.onClose(evt.error)
      }
      stream.addEventListener('message', onMessage)
      stream.addEventListener('end', onEnd)
      stream.addEventListener('close', onClose)
      return () => {
        stream.removeEventListener('message', onMessage)
        stream.removeEventListener('end', onEnd)
        stream.removeEventListener('close', onClose)
      }
    },
    pause: () => {
      stream.pause()
    },
    resume: () => {
      stream.resume()
    },
    close: async () => {
      await stream.close()
    },
    abort: err => {
      stream.abort(err)
    }
  }
}
