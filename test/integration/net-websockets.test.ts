/**
 * WebSockets: a node that listens on a `/ws` address only and one
 * that dials it with `--websockets` connect over WebSockets (on Node 20, through
 * `ws` installed as the global WebSocket) and gossip an event across.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createNodePool, fakeEvent } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const pool = createNodePool()
afterEach(async () => {
  await pool.stopAll()
})

describe('WebSockets', () => {
  it('a node listening only on /ws is reached over WebSockets and gossips an event', async () => {
    const a = await pool.start({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
    const wsAddress = a.addresses().find(x => x.includes('/ws'))
    expect(wsAddress).toBeDefined()
    const b = await pool.start({ bootstrap: [wsAddress as string], network: { websockets: true } })
    await waitUntil('B connected to A', () => b.connectedPeers().includes(a.peerId), 15_000)
    expect(b.connections().find(c => c.peer === a.peerId)?.address).toMatch(/\/ws(\/|$)/)
    await waitUntil(
      'A and B subscribed to each other',
      () => a.eventTopicPeers().includes(b.peerId) && b.eventTopicPeers().includes(a.peerId),
      15_000
    )
    const ev = fakeEvent('over websockets')
    await b.publishEvent(ev.id, ev.bytes)
    await waitUntil('A to validate the event', () => a.seen.ids.includes(ev.id), 15_000)
  })
})
