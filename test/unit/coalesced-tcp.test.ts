/**
 * coalesceWrites (src/net/coalesced-tcp.ts): a connection's writes of one
 * synchronous run reach the kernel in one `writev`, with the same bytes in
 * the same order; a write after the run starts a new one; and a connection
 * it cannot reach into is left as it was.
 */
import { once } from 'node:events'
import { createServer, connect } from 'node:net'
import type { AddressInfo, Server, Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { coalesceWrites } from '../../src/net/coalesced-tcp.js'
import type { MultiaddrConnection } from '@libp2p/interface'

/** What @libp2p/tcp's connection does: one socket.write per buffer of the list. */
class FakeTcpConnection {
  constructor(readonly socket: Socket) {}
  sendData(list: Uint8Array[]): { sentBytes: number; canSendMore: boolean } {
    let sentBytes = 0
    let canSendMore = true
    for (const buf of list) {
      sentBytes += buf.byteLength
      canSendMore = this.socket.write(buf)
    }
    return { sentBytes, canSendMore }
  }
}

const servers: Server[] = []
const sockets: Socket[] = []
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy()
  for (const s of servers.splice(0)) s.close()
})

/** A connected pair: what the client writes, the server's side collects. */
async function pair(): Promise<{ client: Socket; received: () => Buffer; until: (n: number) => Promise<void> }> {
  const chunks: Buffer[] = []
  let total = 0
  const waiting: Array<{ n: number; resolve: () => void }> = []
  const server = createServer(s => {
    sockets.push(s)
    s.on('data', (b: Buffer) => {
      chunks.push(b)
      total += b.length
      for (const w of waiting.splice(0))
        if (total >= w.n) w.resolve()
        else waiting.push(w)
    })
  })
  servers.push(server)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1')
  client.setNoDelay(true)
  sockets.push(client)
  await once(client, 'connect')
  return {
    client,
    received: () => Buffer.concat(chunks),
    until: async n => {
      if (total >= n) return
      await new Promise<void>(resolve => waiting.push({ n, resolve }))
    }
  }
}

/** Counts the native writes (write or writev requests) a socket makes. */
function countWrites(socket: Socket): () => number {
  let n = 0
  const s = socket as unknown as { _writeGeneric: (...args: unknown[]) => unknown }
  const inner = s._writeGeneric.bind(socket)
  s._writeGeneric = (...args: unknown[]) => {
    n++
    return inner(...args)
  }
  return () => n
}

const frames = (from: number, count: number): Uint8Array[][] =>
  Array.from({ length: count }, (_, i) => [
    Uint8Array.of(0, 3),
    Uint8Array.of(from + i, from + i, from + i),
    Uint8Array.of(255 - i)
  ])

describe('coalesceWrites', () => {
  it('sends a synchronous run of writes in one native write, the bytes unchanged', async () => {
    const { client, received, until } = await pair()
    const writes = countWrites(client)
    const conn = new FakeTcpConnection(client)
    expect(coalesceWrites(conn as unknown as MultiaddrConnection)).toBe(conn)
    const first = frames(1, 10)
    for (const f of first) expect(conn.sendData(f).canSendMore).toBe(true)
    await Promise.resolve()
    expect(writes(), '30 buffers in one run').toBe(1)
    // A second run: a second write.
    const second = frames(100, 4)
    for (const f of second) conn.sendData(f)
    const expected = Buffer.concat([...first, ...second].flat())
    await until(expected.length)
    expect(writes()).toBe(2)
    expect(received().equals(expected)).toBe(true)
  })

  it('without it, each buffer is a native write (what the wrapper saves)', async () => {
    const { client, until } = await pair()
    const writes = countWrites(client)
    const conn = new FakeTcpConnection(client)
    for (const f of frames(1, 10)) conn.sendData(f)
    await until(60)
    expect(writes()).toBeGreaterThanOrEqual(20)
  })

  it('leaves a connection without a socket as it is', () => {
    const other = { sendData: () => ({ sentBytes: 0, canSendMore: true }) }
    const send = other.sendData
    coalesceWrites(other as unknown as MultiaddrConnection)
    expect(other.sendData).toBe(send)
  })
})
