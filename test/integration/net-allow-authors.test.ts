/**
 * With an allow-list, authors are admitted, not only connections: an admitted
 * member that relays events or presence signed by a key not on the list gets
 * them rejected (its gossip score drops), counted and never stored; sync
 * does not store them either, nor fetch them again. Real peers on 127.0.0.1.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { DEFAULT_PARAMS, PROTOCOL_VERSION } from '../../src/core/events.js'
import { encodePresence } from '../../src/net/presence.js'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import { signEvent } from '../../src/wire/sign.js'
import { eventsTopic, presenceTopic } from '../../src/wire/topics.js'
import { createNodePool, newKey } from '../helpers/net-nodes.js'
import { PeerFleet } from '../helpers/peers.js'
import { waitUntil } from '../helpers/wait.js'
import type { Envelope, PeerIdString } from '../../src/core/events.js'
import type { Presence } from '../../src/net/presence.js'
import type { Peer } from '../../src/app/peer.js'
import type { PrivateKey } from '@libp2p/interface'

async function rejectedBy(peer: Peer, reason: string, source: string): Promise<number> {
  const m = await peer.metrics.rejected.get()
  return m.values.filter(v => v.labels.reason === reason && v.labels.source === source).reduce((n, v) => n + v.value, 0)
}

async function goalBy(key: PrivateKey, text: string): Promise<{ id: string; bytes: Uint8Array }> {
  const author = peerIdFromPrivateKey(key).toString() as PeerIdString
  const env: Envelope<'goal-submitted'> = {
    v: PROTOCOL_VERSION,
    swarm: 'test',
    type: 'goal-submitted',
    plan: '',
    author,
    hlc: { ms: Date.now(), c: 0 },
    deps: [],
    body: { text, params: { ...DEFAULT_PARAMS, committee: [author], quorum: 1 } }
  }
  const signed = await signEvent(env, key)
  return { id: signed.event.id, bytes: signed.bytes }
}

describe('an allow-list admits authors, not only connections', () => {
  let fleet: PeerFleet
  afterEach(async () => {
    await fleet.stopAll()
  })

  it('rejects events and presence of keys not on it, from gossip and from sync', async () => {
    fleet = new PeerFleet()
    const gateDir = join(fleet.root, 'gate')
    const memberDir = join(fleet.root, 'member')
    const gateId = (await loadOrCreateIdentity(gateDir)).peerId
    const memberIdentity = await loadOrCreateIdentity(memberDir)
    const list = join(fleet.root, 'allow.txt')
    writeFileSync(list, `${gateId}\n${memberIdentity.peerId}\n`)
    const gate = await fleet.start('gate', ['--allow-peers', list], { dataDir: gateDir, syncIntervalMs: 600_000 })
    const member = await fleet.start(
      'member',
      ['--allow-peers', list, '--bootstrap', gate.node.addresses()[0] as string],
      { dataDir: memberDir, syncIntervalMs: 600_000 }
    )
    await waitUntil(
      'the member on the events topic at the gate',
      () => gate.node.eventTopicPeers().includes(member.node.peerId),
      15_000
    )
    const stranger = await generateKeyPair('Ed25519')
    const strangerId = peerIdFromPrivateKey(stranger).toString()

    // Sync: the member's store holds a stranger's goal (its modified code took it in); the gate pulls it and refuses it.
    const stored = await goalBy(stranger, 'a goal by a key nobody admitted')
    expect(member.replica.ingest(stored.bytes, 'local').verdict).toBe('accept')
    const own = await goalBy(memberIdentity.privateKey, "the member's own goal")
    expect(member.replica.ingest(own.bytes, 'local').verdict).toBe('accept')
    const first = await gate.sync.syncWith(member.node.peerId, { fresh: true })
    expect(first.ok).toBe(true)
    expect(gate.replica.ids.has(own.id)).toBe(true)
    expect(gate.replica.ids.has(stored.id)).toBe(false)
    expect(await rejectedBy(gate, 'not-allowed', 'sync')).toBe(1)
    // Not fetched again by the next session.
    const again = await gate.sync.syncWith(member.node.peerId, { fresh: true })
    expect(again.ok).toBe(true)
    expect(again.wanted).toBe(0)
    expect(await rejectedBy(gate, 'not-allowed', 'sync')).toBe(1)

    // Gossip: the member relays a stranger's event and a stranger's presence; the gate rejects both.
    const pubsub = member.node.libp2p.services.pubsub
    const gossiped = await goalBy(stranger, 'another goal by a stranger')
    await pubsub.publish(eventsTopic('test'), gossiped.bytes)
    const presence = await encodePresence(
      'test',
      { role: 'scorer', capabilities: [], load: 0, version: 'x' },
      [],
      Date.now(),
      stranger
    )
    await pubsub.publish(presenceTopic('test'), presence)
    await waitUntil(
      'the gate to refuse the gossiped event',
      async () => (await rejectedBy(gate, 'not-allowed', 'gossip')) === 1,
      15_000
    )
    await waitUntil('the gate to refuse the presence', () => gate.node.stats().presence.notAllowed === 1, 15_000)
    expect(gate.replica.ids.has(gossiped.id)).toBe(false)
    expect(gate.roster.get(strangerId, gate.now())).toBeUndefined()
    expect(gate.view.roster().map(r => r.peerId)).not.toContain(strangerId)
    // gossipsub recomputes scores on its heartbeat: the relay's penalty shows within a few.
    await waitUntil(
      "the member's gossip score at the gate to drop below zero",
      () => gate.node.peerScore(member.node.peerId) < 0,
      20_000
    )
  })
})

describe('a roster exchange with an allow-list', () => {
  const pool = createNodePool()
  afterEach(async () => {
    await pool.stopAll()
  })

  it("skips the announcements of keys not on the list that a member's roster holds", async () => {
    const info = { role: 'scorer', capabilities: [], load: 0, version: 'v' }
    const slow = { presenceIntervalMs: 600_000 }
    const memberKey = await newKey()
    const memberId = peerIdFromPrivateKey(memberKey).toString()
    // The member runs no allow-list of its own: it heard a stranger and keeps its announcement.
    const member = await pool.start({ ...slow, privateKey: memberKey, presence: info })
    const stranger = await pool.start({ ...slow, presence: info, bootstrap: [member.addresses()[0] as string] })
    await waitUntil(
      "the member to hold the stranger's announcement",
      () => member.stats().presence.accepted >= 1,
      15_000
    )
    const heard: Presence[] = []
    const gate = await pool.start({
      ...slow,
      presence: { ...info, role: 'observer' },
      allowPeers: new Set([memberId]),
      bootstrap: [member.addresses()[0] as string],
      onPresence: p => heard.push(p)
    })
    await waitUntil('the gate to learn of the member', () => heard.some(p => p.peerId === memberId), 15_000)
    // The exchange came and went (it hands the member's own announcement first, then the rest).
    await new Promise(resolve => setTimeout(resolve, 1_000))
    expect(heard.map(p => p.peerId)).not.toContain(stranger.peerId)
    expect(gate.connectedPeers()).toEqual([memberId])
  })
})
