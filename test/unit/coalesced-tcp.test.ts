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

  it('a socket destroyed during a run is not left corked', async () => {
    const { client } = await pair()
    const conn = new FakeTcpConnection(client)
    coalesceWrites(conn as unknown as MultiaddrConnection)
    conn.sendData(frames(1, 1)[0] as Uint8Array[])
    expect(client.writableCorked).toBe(1)
    client.destroy()
    await Promise.resolve()
    expect(client.writableCorked).toBe(0)
    // A write after the destroy starts no run: nothing corks a socket that is gone.
    conn.sendData(frames(2, 1)[0] as Uint8Array[])
    expect(client.writableCorked).toBe(0)
    client.on('error', () => undefined)
  })

  it('a socket ended during a run sends what was written, and is not left corked', async () => {
    const { client, received, until } = await pair()
    const conn = new FakeTcpConnection(client)
    coalesceWrites(conn as unknown as MultiaddrConnection)
    const run = frames(1, 5)
    for (const f of run) conn.sendData(f)
    client.end()
    await Promise.resolve()
    expect(client.writableCorked).toBe(0)
    const expected = Buffer.concat(run.flat())
    await until(expected.length)
    expect(received().equals(expected)).toBe(true)
  })

  it('a write that throws still ends the run: the socket is uncorked and what was written is sent', async () => {
    const { client, received, until } = await pair()
    const conn = new FakeTcpConnection(client)
    const send = conn.sendData.bind(conn)
    conn.sendData = (list: Uint8Array[]) => {
      send(list)
      throw new Error('after the write')
    }
    coalesceWrites(conn as unknown as MultiaddrConnection)
    const run = frames(1, 2)
    for (const f of run) expect(() => conn.sendData(f)).toThrow('after the write')
    await Promise.resolve()
    expect(client.writableCorked).toBe(0)
    const expected = Buffer.concat(run.flat())
    await until(expected.length)
    expect(received().equals(expected)).toBe(true)
  })

  it('a run past the high-water mark says so, and the drain that follows its flush comes', async () => {
    const { client, received, until } = await pair()
    const conn = new FakeTcpConnection(client)
    coalesceWrites(conn as unknown as MultiaddrConnection)
    const big = Array.from({ length: 8 }, (_, i) => [new Uint8Array(client.writableHighWaterMark / 4).fill(i)])
    const said = big.map(f => conn.sendData(f).canSendMore)
    expect(said.slice(0, 3)).toEqual([true, true, true])
    expect(said.slice(3)).not.toContain(true)
    const drained = once(client, 'drain')
    await Promise.resolve()
    expect(client.writableCorked).toBe(0)
    await drained
    const expected = Buffer.concat(big.flat())
    await until(expected.length)
    expect(received().equals(expected)).toBe(true)
  })

  it('leaves a connection without a socket as it is', () => {
    const other = { sendData: () => ({ sentBytes: 0, canSendMore: true }) }
    const send = other.sendData
    coalesceWrites(other as unknown as MultiaddrConnection)
    expect(other.sendData).toBe(send)
  })
})
