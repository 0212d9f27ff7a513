/**
 * Gossip between real libp2p nodes over TCP on 127.0.0.1: delivery through a
 * relay, validator verdicts and scoring, message id = event id, the
 * redial that finds late and restarted peers, and the coalesced writes of
 * the node's TCP transport.
 */
import { Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { InvalidPublishError } from '../../src/net/errors.js'
import type { SwarmNode } from '../../src/net/node.js'
import { createNodePool, fakeEvent, freePort, newKey } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'
import type { Seen } from '../helpers/net-nodes.js'

const pool = createNodePool()
afterEach(async () => {
  await pool.stopAll()
})

type TestNode = SwarmNode & { seen: Seen }

/** A, then B and C bootstrapped to A only: B and C reach each other through A. */
async function line(
  opts: { verdictA?: (id: string) => 'accept' | 'reject' | 'ignore' } = {}
): Promise<[TestNode, TestNode, TestNode]> {
  const a = await pool.start({ verdict: opts.verdictA })
  const boot = [a.addresses()[0] as string]
  const b = await pool.start({ bootstrap: boot })
  const c = await pool.start({ bootstrap: boot })
  await waitUntil('A to see B and C subscribed to the events topic', () => a.eventTopicPeers().length === 2, 15_000)
  await waitUntil(
    'B and C to see A subscribed',
    () => b.eventTopicPeers().includes(a.peerId) && c.eventTopicPeers().includes(a.peerId),
    15_000
  )
  // A relays only to its mesh, which peers join at a heartbeat after subscribing.
  await waitUntil("B and C in A's mesh", () => a.eventMeshPeers().length === 2, 15_000)
  return [a, b, c]
}

describe('gossip over TCP', () => {
  it('delivers an event to every other node, relayed through the bootstrap node', async () => {
    const [a, b, c] = await line()
    expect(b.connectedPeers()).not.toContain(c.peerId)
    const ev = fakeEvent('hello')
    const { recipients } = await b.publishEvent(ev.id, ev.bytes)
    expect(recipients).toBe(1)
    await waitUntil(
      'A and C to validate the event',
      () => a.seen.ids.includes(ev.id) && c.seen.ids.includes(ev.id),
      15_000
    )
    // C got it from A, the relay, not from its author B.
    expect(c.seen.froms[c.seen.ids.indexOf(ev.id)]).toBe(a.peerId)
    expect(b.seen.ids).not.toContain(ev.id) // emitSelf is off
    expect(a.stats().events.accepted).toBe(1)
    expect(b.stats().events.published).toBe(1)
  })

  it("coalesces each connection's writes (coalesced-tcp.ts): its sockets are corked and always uncorked", async () => {
    const proto = Socket.prototype as unknown as { cork: () => void }
    const cork = proto.cork
    const corked = new Set<Socket>()
    let corks = 0
    proto.cork = function (this: Socket) {
      corks++
      corked.add(this)
      cork.call(this)
    }
    try {
      const [a, b, c] = await line()
      const ev = fakeEvent('corked')
      corks = 0
      await b.publishEvent(ev.id, ev.bytes)
      await waitUntil(
        'A and C to validate the event',
        () => a.seen.ids.includes(ev.id) && c.seen.ids.includes(ev.id),
        15_000
      )
      expect(corks, 'the publish and its relay went through corked runs').toBeGreaterThan(0)
      await new Promise(resolve => setImmediate(resolve))
      for (const s of corked) expect(s.writableCorked).toBe(0)
    } finally {
      proto.cork = cork
    }
  })

  it('uses the event id as the gossip message id, so the same bytes are delivered once', async () => {
    const [a, b, c] = await line()
    const msgIds: string[] = []
    a.libp2p.services.pubsub.addEventListener('gossipsub:message', evt => {
      msgIds.push(evt.detail.msgId)
    })
    const ev = fakeEvent('twice')
    await b.publishEvent(ev.id, ev.bytes)
    expect(await b.publishEvent(ev.id, ev.bytes)).toEqual({ recipients: 0 })
    await c.publishEvent(ev.id, ev.bytes) // another publisher of the same bytes: still one message
    const marker = fakeEvent('marker')
    await b.publishEvent(marker.id, marker.bytes)
    await waitUntil(
      'the marker at A and C',
      () => a.seen.ids.includes(marker.id) && c.seen.ids.includes(marker.id),
      15_000
    )
    expect(msgIds).toContain(ev.id)
    expect(a.seen.ids.filter(id => id === ev.id)).toHaveLength(1)
    // C published the bytes itself, so it holds them and drops B's copy unvalidated.
    expect(c.seen.ids).not.toContain(ev.id)
  })

  it('does not forward a rejected event, and lowers the score of the peer that sent it', async () => {
    const bad = new Set<string>()
    const [a, b, c] = await line({ verdictA: id => (bad.has(id) ? 'reject' : 'accept') })
    expect(a.peerScore(b.peerId)).toBeGreaterThanOrEqual(0)
    for (let i = 0; i < 3; i++) {
      const ev = fakeEvent(`bad-${i}`)
      bad.add(ev.id)
      await b.publishEvent(ev.id, ev.bytes)
    }
    const marker = fakeEvent('after-bad')
    await c.publishEvent(marker.id, marker.bytes)
    await waitUntil('A to reject all three', () => a.stats().events.rejected === 3, 15_000)
    await waitUntil('the honest marker at A', () => a.seen.ids.includes(marker.id), 15_000)
    for (const id of bad) expect(c.seen.ids).not.toContain(id)
    await waitUntil("B's score at A to fall below zero", () => a.peerScore(b.peerId) < 0, 5_000)
    expect(a.peerScore(c.peerId)).toBeGreaterThanOrEqual(0)
  })

  it('does not forward an ignored event, and does not penalise its sender', async () => {
    const parked = new Set<string>()
    const [a, b, c] = await line({ verdictA: id => (parked.has(id) ? 'ignore' : 'accept') })
    for (let i = 0; i < 3; i++) {
      const ev = fakeEvent(`parked-${i}`)
      parked.add(ev.id)
      await b.publishEvent(ev.id, ev.bytes)
    }
    const marker = fakeEvent('after-parked')
    await b.publishEvent(marker.id, marker.bytes)
    await waitUntil('the marker at C', () => c.seen.ids.includes(marker.id), 15_000)
    expect(a.stats().events.ignored).toBe(3)
    for (const id of parked) expect(c.seen.ids).not.toContain(id)
    expect(a.peerScore(b.peerId)).toBeGreaterThanOrEqual(0)
  })

  it('reopens a gossip stream that was reset while the connection stays up', async () => {
    const a = await pool.start()
    const b = await pool.start({ bootstrap: [a.addresses()[0] as string] })
    await waitUntil('B to see A subscribed', () => b.eventTopicPeers().includes(a.peerId), 15_000)
    // Reach into gossipsub (as a broken muxer or a remote reset would) and kill B's stream to A.
    const internals = b.libp2p.services.pubsub as unknown as {
      streamsOutbound: Map<string, { rawStream: { abort: (e: Error) => void } }>
    }
    internals.streamsOutbound.get(a.peerId)?.rawStream.abort(new Error('test: stream reset'))
    let n = 0
    await waitUntil(
      'an event from B at A again',
      async () => {
        const ev = fakeEvent(`after-reset-${n++}`)
        await b.publishEvent(ev.id, ev.bytes)
        return a.seen.ids.includes(ev.id) || a.seen.ids.length > 0
      },
      10_000,
      250
    )
    expect(b.connectedPeers()).toEqual([a.peerId])
    expect(b.stats().streamRepairs + a.stats().streamRepairs).toBeGreaterThan(0)
  })

  it('publishes with no peers without failing, and refuses bytes whose id does not match', async () => {
    const a = await pool.start()
    const ev = fakeEvent('alone')
    expect(await a.publishEvent(ev.id, ev.bytes)).toEqual({ recipients: 0 })
    await expect(a.publishEvent(fakeEvent('other').id, ev.bytes)).rejects.toBeInstanceOf(InvalidPublishError)
    await expect(a.publishEvent(ev.id, new Uint8Array(70_000))).rejects.toThrow(/max 65536/)
  })

  it('works with gossipsub signatures (StrictSign) when every node uses them, and not across policies', async () => {
    const a = await pool.start({ signaturePolicy: 'StrictSign' })
    const b = await pool.start({ signaturePolicy: 'StrictSign', bootstrap: [a.addresses()[0] as string] })
    const unsigned = await pool.start({ bootstrap: [a.addresses()[0] as string] })
    await waitUntil('A to see B and the unsigned node subscribed', () => a.eventTopicPeers().length === 2, 15_000)
    const ev = fakeEvent('signed')
    await b.publishEvent(ev.id, ev.bytes)
    await waitUntil('the signed event at A', () => a.seen.ids.includes(ev.id), 15_000)
    const ev2 = fakeEvent('unsigned')
    await unsigned.publishEvent(ev2.id, ev2.bytes)
    const marker = fakeEvent('signed-marker')
    await b.publishEvent(marker.id, marker.bytes)
    await waitUntil('the marker at A', () => a.seen.ids.includes(marker.id), 15_000)
    // Gossipsub itself drops messages of the other policy: they never reach the validator.
    expect(a.seen.ids).not.toContain(ev2.id)
    expect(unsigned.seen.ids).not.toContain(ev.id)
  })

  it('finds a bootstrap peer that starts later, by redialing', async () => {
    const port = await freePort()
    const lateKey = await newKey()
    const { peerIdFromPrivateKey } = await import('@libp2p/peer-id')
    const lateAddr = `/ip4/127.0.0.1/tcp/${port}/p2p/${peerIdFromPrivateKey(lateKey).toString()}`
    const early = await pool.start({ bootstrap: [lateAddr] })
    // Past libp2p's one-shot bootstrap dial and a few failed redials.
    await new Promise(resolve => setTimeout(resolve, 2_500))
    expect(early.connectedPeers()).toHaveLength(0)
    const late = await pool.start({ privateKey: lateKey, listen: [`/ip4/127.0.0.1/tcp/${port}`] })
    await waitUntil(
      'the early node to connect to the late one',
      () => early.connectedPeers().includes(late.peerId),
      10_000
    )
    await waitUntil('subscriptions', () => early.eventTopicPeers().includes(late.peerId), 15_000)
    const ev = fakeEvent('late')
    await early.publishEvent(ev.id, ev.bytes)
    await waitUntil('the event at the late node', () => late.seen.ids.includes(ev.id), 15_000)
  })

  it('finds a restarted node again (same key, same port): bootstrap peers and recently seen peers are redialed', async () => {
    const hubPort = await freePort()
    const hubKey = await newKey()
    let hub = await pool.start({ privateKey: hubKey, listen: [`/ip4/127.0.0.1/tcp/${hubPort}`] })
    const hubAddr = hub.addresses()[0] as string
    const spoke = await pool.start({ bootstrap: [hubAddr] })
    const leafPort = await freePort()
    const leafKey = await newKey()
    // The leaf is not anyone's bootstrap: the hub knows it only as a peer that connected.
    let leaf = await pool.start({
      privateKey: leafKey,
      listen: [`/ip4/127.0.0.1/tcp/${leafPort}`],
      bootstrap: [hubAddr]
    })
    await waitUntil('hub connected to both', () => hub.connectedPeers().length === 2, 15_000)

    // Restart the hub: the spoke and the leaf have it as a bootstrap address.
    await hub.stop()
    await waitUntil('the spoke to notice', () => !spoke.connectedPeers().includes(hub.peerId), 15_000)
    await new Promise(resolve => setTimeout(resolve, 1_000))
    hub = await pool.start({ privateKey: hubKey, listen: [`/ip4/127.0.0.1/tcp/${hubPort}`] })
    await waitUntil('the spoke and the leaf to find the restarted hub', () => hub.connectedPeers().length === 2, 15_000)
    // Subscriptions come after identify, which tells the hub the leaf's listen address.
    await waitUntil('subscriptions after the hub restart', () => hub.eventTopicPeers().length === 2, 15_000)

    // Restart the leaf without any bootstrap address: the hub redials it as a recently seen peer.
    await leaf.stop()
    await waitUntil('the hub to notice', () => !hub.connectedPeers().includes(leaf.peerId), 15_000)
    await new Promise(resolve => setTimeout(resolve, 1_000))
    leaf = await pool.start({ privateKey: leafKey, listen: [`/ip4/127.0.0.1/tcp/${leafPort}`] })
    await waitUntil('the hub to redial the restarted leaf', () => hub.connectedPeers().includes(leaf.peerId), 15_000)

    await waitUntil('subscriptions after the restarts', () => hub.eventTopicPeers().length === 2, 15_000)
    const ev = fakeEvent('after-restarts')
    await hub.publishEvent(ev.id, ev.bytes)
    await waitUntil(
      'the event at the spoke and the leaf',
      () => spoke.seen.ids.includes(ev.id) && leaf.seen.ids.includes(ev.id),
      15_000
    )
  })
})
