/**
 * swarmYamux (src/net/swarm-yamux.ts), over an in-memory connection pair:
 * a receiver sends a window update only once half its window is used, and
 * flow control still carries a transfer many windows long; the window grows
 * as plain yamux grows it; the frames of one synchronous run reach the
 * connection in one write, in order; a close right after a run sends the run
 * first; and either change talks to plain yamux.
 */
import { yamux } from '@chainsafe/libp2p-yamux'
import type { MessageStream, Stream, StreamMuxer, StreamMuxerFactory } from '@libp2p/interface'
import { multiaddrConnectionPair } from '@libp2p/utils'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { swarmYamux } from '../../src/net/swarm-yamux.js'

type Chunk = Parameters<MessageStream['send']>[0]

const bytesOf = (c: Chunk): Uint8Array => (c instanceof Uint8Array ? c : c.subarray())

/** Every `send` a connection is given, in order. */
function spy(conn: MessageStream): Uint8Array[] {
  const calls: Uint8Array[] = []
  const send = conn.send.bind(conn)
  conn.send = (data: Chunk) => {
    calls.push(bytesOf(data))
    return send(data)
  }
  return calls
}

interface Frame {
  type: number
  flags: number
  stream: number
  length: number
}

/** The yamux frames in what a side sent (a 12-byte header; a data frame's payload after it). */
function frames(sent: readonly Uint8Array[]): Frame[] {
  const all = Buffer.concat(sent)
  const out: Frame[] = []
  for (let at = 0; at + 12 <= all.length;) {
    const f = {
      type: all.readUInt8(at + 1),
      flags: all.readUInt16BE(at + 2),
      stream: all.readUInt32BE(at + 4),
      length: all.readUInt32BE(at + 8)
    }
    out.push(f)
    at += 12 + (f.type === 0 ? f.length : 0)
  }
  return out
}

/** Window updates that only give window back (no SYN, ACK, FIN or RST). */
const plainUpdates = (fs: readonly Frame[]): Frame[] => fs.filter(f => f.type === 1 && f.flags === 0)

async function connected(
  dialer: () => StreamMuxerFactory,
  listener: () => StreamMuxerFactory
): Promise<{
  a: StreamMuxer
  b: StreamMuxer
  aConn: MessageStream
  bConn: MessageStream
  aSent: Uint8Array[]
  bSent: Uint8Array[]
  out: Stream
  inbound: Stream
}> {
  const [aConn, bConn] = multiaddrConnectionPair()
  const aSent = spy(aConn)
  const bSent = spy(bConn)
  const a = dialer().createStreamMuxer(aConn)
  const b = listener().createStreamMuxer(bConn)
  const inboundP = new Promise<Stream>(resolve => {
    b.addEventListener('stream', evt => {
      resolve(evt.detail)
    })
  })
  const out = await a.createStream()
  // The SYN goes with the first data frame.
  out.send(new Uint8Array([0]))
  const inbound = await inboundP
  return { a, b, aConn, bConn, aSent, bSent, out, inbound }
}

/** Collect `n` bytes from a stream. */
async function read(stream: Stream, n: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  let got = 0
  for await (const chunk of stream) {
    const bytes = bytesOf(chunk)
    parts.push(bytes)
    got += bytes.byteLength
    if (got >= n) break
  }
  return Buffer.concat(parts)
}

const tick = async (): Promise<void> => {
  await new Promise(resolve => setImmediate(resolve))
}

describe('swarmYamux: window updates', () => {
  it('plain yamux answers every data frame with a window update; half-window updates send at most six for 200 small ones', async () => {
    for (const [make, expectPerFrame] of [
      [yamux, true],
      [() => swarmYamux({}, { halfWindowUpdates: true, coalesceFrames: false }), false]
    ] as const) {
      const s = await connected(make(), make())
      const reading = read(s.inbound, 1 + 200 * 100)
      let received = 0
      s.inbound.addEventListener('message', evt => {
        received += evt.data.byteLength
      })
      for (let i = 0; i < 200; i++) {
        s.out.send(new Uint8Array(100).fill(i & 255))
        // Each message in a frame of its own: the next goes once this one is there.
        while (received < (i + 1) * 100) await tick()
      }
      const got = await reading
      expect(got.byteLength).toBe(1 + 200 * 100)
      const updates = plainUpdates(frames(s.bSent))
      // The first frame's update also acknowledges the stream (ACK), so it is not a plain one.
      const dataFrames = frames(s.aSent).filter(f => f.type === 0).length
      expect(dataFrames).toBe(201)
      // Half-window updates: none for the 20 KB, but the frames come within 4 round trips of each other (the muxers'
      // keep-alive ping measured it), so the window grows as plain yamux grows it, an update a doubling: 256 KiB to
      // 16 MiB in six.
      if (expectPerFrame) expect(updates.length).toBeGreaterThanOrEqual(dataFrames - 1)
      else expect(updates.length).toBeLessThanOrEqual(6)
      s.a.abort(new Error('done'))
      s.b.abort(new Error('done'))
    }
  })

  it('a transfer of 4 MiB, 16 initial windows, arrives whole with half-window updates', async () => {
    const make = (): (() => StreamMuxerFactory) => swarmYamux({}, { halfWindowUpdates: true, coalesceFrames: false })
    const s = await connected(make(), make())
    const total = 4 * 1024 * 1024
    const reading = read(s.inbound, 1 + total)
    const chunk = 8 * 1024
    for (let at = 0; at < total; at += chunk) {
      const buf = new Uint8Array(chunk).fill((at / chunk) & 255)
      if (!s.out.send(buf)) await s.out.onDrain()
    }
    const got = await reading
    expect(got.byteLength).toBe(1 + total)
    for (let at = 0; at < total; at += chunk) expect(got[1 + at]).toBe((at / chunk) & 255)
    // Window given back in halves at least, not frame by frame (512 data frames of 8 KiB).
    const updates = plainUpdates(frames(s.bSent))
    expect(updates.length).toBeGreaterThan(0)
    expect(updates.length).toBeLessThan(100)
    for (const u of updates) expect(u.length).toBeGreaterThanOrEqual(128 * 1024)
    s.a.abort(new Error('done'))
    s.b.abort(new Error('done'))
  })
})

/** What a yamux stream and muxer hold, as far as the window's growth shows. */
interface WindowInside {
  recvWindow: number
}

describe('swarmYamux: the window grows as plain yamux grows it', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  // Plain yamux doubles a stream's window at an update sent within 4 round trips of the one before; it sends one
  // every data frame, so under steady traffic the window reaches 16 MiB within a few frames. An update only every
  // half window came 4 round trips after the one before whenever the reader took that long for half a window (a
  // loaded process): the window stayed at 256 KiB, the sender sent all of it as one frame and waited for the update,
  // which could only leave once that frame was read, and the rest of a burst waited in the sender's buffer (where a
  // connection aborted meanwhile drops it). Here a clock under the test's control: 10 ms a round trip, a data frame
  // of 8 KiB every 5 ms (well within 4 round trips of the one before), so half a window takes 80 ms.
  it('frames 5 ms apart with 10 ms round trips: the window reaches 16 MiB, as it does with plain yamux', async () => {
    let clock = 1_000_000
    vi.spyOn(Date, 'now').mockImplementation(() => clock)
    const windows: Record<string, number> = {}
    for (const [name, make] of [
      ['plain', () => yamux({ enableKeepAlive: false })],
      ['half', () => swarmYamux({ enableKeepAlive: false }, { halfWindowUpdates: true, coalesceFrames: false })]
    ] as const) {
      const s = await connected(make(), make())
      for (const m of [s.a, s.b]) (m as unknown as { rtt: number }).rtt = 10
      const total = 2 * 1024 * 1024
      const reading = read(s.inbound, 1 + total)
      const chunk = 8 * 1024
      for (let at = 0; at < total; at += chunk) {
        clock += 5
        if (!s.out.send(new Uint8Array(chunk).fill(1))) await s.out.onDrain()
        await tick()
      }
      expect((await reading).byteLength).toBe(1 + total)
      windows[name] = (s.inbound as unknown as WindowInside).recvWindow
      s.a.abort(new Error('done'))
      s.b.abort(new Error('done'))
    }
    expect(windows).toEqual({ plain: 16 * 1024 * 1024, half: 16 * 1024 * 1024 })
  })
})

describe('swarmYamux: frames of one run in one write', () => {
  it('five messages sent in one run reach the connection in one send, in order; plain yamux sends five', async () => {
    for (const [make, sends] of [
      [yamux, 5],
      [() => swarmYamux({}, { halfWindowUpdates: false, coalesceFrames: true }), 1]
    ] as const) {
      const s = await connected(make(), make())
      await tick()
      const before = s.aSent.length
      const reading = read(s.inbound, 1 + 5 * 10)
      for (let i = 1; i <= 5; i++) s.out.send(new Uint8Array(10).fill(i))
      const got = await reading
      expect(s.aSent.length - before).toBe(sends)
      expect([...got.subarray(1)]).toEqual([1, 2, 3, 4, 5].flatMap(i => new Array<number>(10).fill(i)))
      s.a.abort(new Error('done'))
      s.b.abort(new Error('done'))
    }
  })

  it('a close of the connection right after a run sends the run first', async () => {
    const make = (): (() => StreamMuxerFactory) => swarmYamux({}, { halfWindowUpdates: false, coalesceFrames: true })
    const s = await connected(make(), make())
    await tick()
    const before = s.aSent.length
    s.out.send(new Uint8Array([7, 7, 7]))
    s.out.send(new Uint8Array([8, 8]))
    await s.aConn.close()
    const sent = frames(s.aSent.slice(before)).filter(f => f.type === 0)
    expect(sent.map(f => f.length)).toEqual([3, 2])
  })

  it('talks to plain yamux both ways, either change on either side', async () => {
    const ours = (): (() => StreamMuxerFactory) => swarmYamux({}, { halfWindowUpdates: true, coalesceFrames: true })
    for (const [dialer, listener] of [
      [ours(), yamux()],
      [yamux(), ours()]
    ] as const) {
      const s = await connected(dialer, listener)
      const total = 1024 * 1024
      const there = read(s.inbound, 1 + total)
      for (let at = 0; at < total; at += 4096) {
        if (!s.out.send(new Uint8Array(4096).fill(1))) await s.out.onDrain()
      }
      expect((await there).byteLength).toBe(1 + total)
      // And back, on the same stream.
      const back = read(s.out, 3)
      s.inbound.send(new Uint8Array([1, 2, 3]))
      expect([...(await back)]).toEqual([1, 2, 3])
      s.a.abort(new Error('done'))
      s.b.abort(new Error('done'))
    }
  })
})
