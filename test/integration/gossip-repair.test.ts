/**
 * Gossip stream opens with a stalled connection: one peer's connection stays
 * open but carries nothing (a stuck middlebox). gossipsub 17.1.1 opens
 * outbound streams one at a time for all peers, so without the per-peer opens
 * of gossip-stream-repair every other peer waits out the stalled open's 10 s
 * negotiation timeout (and, with repairs queuing more, never gets a stream).
 */
import { createConnection, createServer } from 'node:net'
import type { Server, Socket } from 'node:net'
import type { Connection, PeerId } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import { afterEach, describe, expect, it } from 'vitest'
import type { SwarmNode } from '../../src/net/node.js'
import { createNodePool, fakeEvent } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const pool = createNodePool()
const servers: Server[] = []
const sockets: Socket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  await Promise.all(
    servers.splice(0).map(
      async s =>
        await new Promise<void>(resolve => {
          s.close(() => {
            resolve()
          })
        })
    )
  )
  await pool.stopAll()
})

/** A TCP forwarder to 127.0.0.1:`port` that, once frozen, holds every byte (connections stay open). */
async function freezableForwarder(port: number): Promise<{ port: number; freeze: () => void }> {
  let frozen = false
  const server = createServer(client => {
    const upstream = createConnection({ host: '127.0.0.1', port })
    sockets.push(client, upstream)
    client.on('data', d => {
      if (!frozen) upstream.write(d)
    })
    upstream.on('data', d => {
      if (!frozen) client.write(d)
    })
    client.on('error', () => {
      upstream.destroy()
    })
    upstream.on('error', () => {
      client.destroy()
    })
    client.on('close', () => {
      upstream.destroy()
    })
    upstream.on('close', () => {
      client.destroy()
    })
  })
  servers.push(server)
  await new Promise<void>(resolve => {
    server.listen(0, '127.0.0.1', () => {
      resolve()
    })
  })
  const addr = server.address()
  return {
    port: typeof addr === 'object' && addr !== null ? addr.port : 0,
    freeze: () => {
      frozen = true
    }
  }
}

interface Internals {
  streamsOutbound: Map<string, { rawStream: { status: string; abort: (err: Error) => void } }>
  onPeerConnected: (peerId: PeerId, connection: Connection) => void
}
const internals = (n: SwarmNode): Internals => n.libp2p.services.pubsub as unknown as Internals
const outboundOpen = (from: SwarmNode, to: SwarmNode): boolean =>
  internals(from).streamsOutbound.get(to.peerId)?.rawStream.status === 'open'
const connectionTo = (from: SwarmNode, to: SwarmNode): Connection => {
  const c = from.libp2p.getConnections().find(x => x.remotePeer.toString() === to.peerId && x.status === 'open')
  if (c === undefined) throw new Error(`no connection from ${from.peerId} to ${to.peerId}`)
  return c
}

describe('gossip stream opens', () => {
  it('a stalled connection to one peer does not hold up the outbound stream to another', async () => {
    const a = await pool.start()
    const b = await pool.start({ bootstrap: [a.addresses()[0] as string] })
    const fwd = await freezableForwarder(Number((a.addresses()[0] as string).split('/')[4]))
    const viaFwd = multiaddr(`/ip4/127.0.0.1/tcp/${fwd.port}/p2p/${a.peerId}`)
    // C has no listen address (A cannot dial it) and knows A only through the forwarder.
    const c = await pool.start({ listen: [], bootstrap: [viaFwd.toString()] })
    const pin = (): void => {
      void c.libp2p.peerStore.patch(a.libp2p.peerId, { multiaddrs: [viaFwd] }).catch(() => {})
    }
    c.libp2p.addEventListener('peer:identify', pin)
    await waitUntil(
      'A to have outbound gossip streams to B and C',
      () => outboundOpen(a, b) && outboundOpen(a, c),
      15_000
    )

    fwd.freeze()
    const ia = internals(a)
    // A loses both outbound streams; C's open is queued first and stalls on the frozen connection.
    for (const peer of [c, b]) {
      ia.streamsOutbound.get(peer.peerId)?.rawStream.abort(new Error('test: stream lost'))
      await waitUntil('the aborted stream to be forgotten', () => !ia.streamsOutbound.has(peer.peerId), 15_000)
    }
    ia.onPeerConnected(c.libp2p.peerId, connectionTo(a, c))
    ia.onPeerConnected(b.libp2p.peerId, connectionTo(a, b))

    // gossipsub's own negotiation timeout is 10 s: B must not wait for it.
    await waitUntil('A to reopen its outbound stream to B', () => outboundOpen(a, b), 5_000)
    const ev = fakeEvent('after the stall')
    await a.publishEvent(ev.id, ev.bytes)
    await waitUntil("B to receive A's event", () => b.seen.ids.includes(ev.id), 5_000)
    expect(outboundOpen(a, c)).toBe(false)
  }, 60_000)
})
