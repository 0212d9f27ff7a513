/**
 * Standing in gossipsub's score over real libp2p on 127.0.0.1 (ADR-0048): a
 * peer whose standing counts against it scores below zero at the node that
 * holds the evidence and leaves that node's mesh; a peer with a clean record
 * beside it keeps its place and its score.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createNodePool } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const pool = createNodePool()
afterEach(async () => {
  await pool.stopAll()
})

describe('standing as the application score', () => {
  it('prunes a peer with a poor record from the mesh, and keeps an honest one', async () => {
    const penalties = new Map<string, number>()
    const a = await pool.start({ penalty: peer => penalties.get(peer) ?? 0 })
    const boot = [a.addresses()[0] as string]
    const honest = await pool.start({ bootstrap: boot })
    const poor = await pool.start({ bootstrap: boot })
    await waitUntil("both in A's mesh", () => a.eventMeshPeers().length === 2, 15_000)
    expect(a.peerScore(poor.peerId)).toBeGreaterThanOrEqual(0)
    // Three equivocations in A's plans: 3 points, -15, below what any credit can offset.
    penalties.set(poor.peerId, 3)
    await waitUntil("the poor peer's score at A to fall below zero", () => a.peerScore(poor.peerId) < 0, 10_000)
    await waitUntil("the poor peer out of A's mesh", () => !a.eventMeshPeers().includes(poor.peerId), 10_000)
    expect(a.eventMeshPeers()).toContain(honest.peerId)
    expect(a.peerScore(honest.peerId)).toBeGreaterThanOrEqual(0)
    // Still connected: its events arrive by sync, and by gossip from others' meshes.
    expect(a.connectedPeers()).toContain(poor.peerId)
  })
})
