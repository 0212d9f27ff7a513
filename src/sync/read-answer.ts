/**
 * Reads what a peer sends on a stream until it closes its end: the bytes, or
 * a rejection when it sends more than `cap`, fails, or is not done within
 * `timeoutMs`. The short question-and-answer protocols (open-ids.ts,
 * plan-summary.ts) use it on both ends.
 */
import type { Stream, StreamMessageEvent } from '@libp2p/interface'
import type { Scheduler } from '../ports/scheduler.js'

export async function readToEnd(
  stream: Stream,
  cap: number,
  timeoutMs: number,
  scheduler: Scheduler,
  what: string
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let size = 0
  await new Promise<void>((resolve, reject) => {
    const cancel = scheduler.after(timeoutMs, () => {
      stream.abort(new Error(`${what} timed out`))
      reject(new Error(`no whole ${what} within ${timeoutMs} ms`))
    })
    const settle = (err?: Error): void => {
      cancel()
      if (err === undefined) resolve()
      else reject(err)
    }
    stream.addEventListener('message', (evt: StreamMessageEvent) => {
      const data = evt.data instanceof Uint8Array ? evt.data : evt.data.subarray()
      size += data.length
      if (size > cap) {
        stream.abort(new Error(`${what} too long`))
        settle(new Error(`${what} over ${cap} bytes`))
        return
      }
      chunks.push(data)
    })
    stream.addEventListener('close', evt => {
      settle(evt.error)
    })
    stream.addEventListener('end', () => {
      settle()
    })
    if (stream.readableEnded) settle()
  })
  return Buffer.concat(chunks, size)
}
