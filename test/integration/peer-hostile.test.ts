import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import * as dagCbor from '@ipld/dag-cbor'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { foldAll } from '../../src/core/fold.js'
import { createSwarmNode } from '../../src/net/node.js'
import { encodeEnvelope, eventIdOfWire } from '../../src/wire/codec.js'
import { signEvent, signRawSync } from '../../src/wire/sign.js'
import { eventsTopic } from '../../src/wire/topics.js'
import { PROTOCOL_VERSION } from '../../src/core/events.js'
import { PeerFleet, loadEvents } from '../helpers/peers.js'
import { waitUntil } from '../helpers/wait.js'
import type { Envelope, EventId, PeerIdString } from '../../src/core/events.js'
import type { SwarmNode } from '../../src/net/node.js'
import type { Peer } from '../../src/app/peer.js'

async function rejected(peer: Peer): Promise<Record<string, number>> {
  const m = await peer.metrics.rejected.get()
  const out: Record<string, number> = {}
  for (const v of m.values) out[String(v.labels.reason)] = (out[String(v.labels.reason)] ?? 0) + v.value
  return out
}

/** A CBOR map written with its keys in the given (non-canonical) order. */
function reordered(env: Envelope): Uint8Array {
  const rec = env as unknown as Record<string, unknown>
  const keys = ['v', 'swarm', 'type', 'plan', 'author', 'hlc', 'deps', 'body']
  const parts = [Uint8Array.of(0xa0 | keys.length), ...keys.flatMap(k => [dagCbor.encode(k), dagCbor.encode(rec[k])])]
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

describe('a hostile peer in the swarm', () => {
  let fleet: PeerFleet
  let hostile: SwarmNode | undefined
  afterEach(async () => {
    await hostile?.stop()
    await fleet.stopAll()
  })

  it('gets every bad event rejected and counted by reason, and the honest peers still converge', async () => {
    fleet = new PeerFleet()
    const a = await fleet.start('a')
    const b = await fleet.start('b', ['--bootstrap', a.node.addresses()[0] as string])
    const c = await fleet.start('c', ['--bootstrap', a.node.addresses()[0] as string])
    const { events, peers } = await generatePlan({ fanout: 3, depth: 2, renewals: 2, startMs: Date.now() - 3_600_000 })
    const keys = new Map(peers.map(p => [p.id as string, p.key]))
    const goal = events[0]
    if (goal?.env.type !== 'goal-submitted') throw new Error('generator starts with the goal')
    const honestBytes = await loadEvents(a, events, keys)

    const hostileKey = await generateKeyPair('Ed25519')
    const hostileId = peerIdFromPrivateKey(hostileKey).toString() as PeerIdString
    hostile = await createSwarmNode({
      privateKey: hostileKey,
      swarm: 'test',
      listen: ['/ip4/127.0.0.1/tcp/0'],
      bootstrap: [a.node.addresses()[0] as string],
      mdns: false,
      eventValidator: () => 'accept'
    })
    const h = hostile
    await waitUntil('the hostile peer to reach a subscriber', () => h.eventTopicPeers().length > 0, 20_000)

    const env = (over: Partial<Envelope>): Envelope =>
      ({ ...goal.env, hlc: { ms: goal.env.hlc.ms + 50_000, c: 0 }, ...over }) as Envelope
    const proposal = events.find(e => e.env.type === 'split-proposed') as (typeof events)[number]
    const bad: Array<{ what: string; bytes: Uint8Array }> = [
      { what: 'garbage', bytes: new Uint8Array(randomBytes(400)) },
      {
        what: 'forged author',
        bytes: signRawSync('test', encodeEnvelope(env({ author: a.replica.peerId })), hostileKey)
      },
      { what: 'non-canonical', bytes: signRawSync('test', reordered(env({ author: hostileId })), hostileKey) },
      { what: 'other swarm', bytes: (await signEvent(env({ author: hostileId, swarm: 'other' }), hostileKey)).bytes },
      {
        what: 'ballot from outside the committee',
        bytes: (
          await signEvent(
            {
              v: PROTOCOL_VERSION,
              swarm: 'test',
              type: 'ballot-cast',
              plan: goal.id,
              author: hostileId,
              hlc: { ms: proposal.env.hlc.ms + 10, c: 0 },
              deps: [goal.id, proposal.id].sort() as EventId[],
              body: {
                node: goal.id as never,
                attempt: 1,
                committee: goal.id,
                scores: [{ proposal: proposal.id, score: 90, notes: 'mine' }],
                choice: proposal.id,
                notes: '',
                usage: { inputTokens: 0, outputTokens: 0 }
              }
            },
            hostileKey
          )
        ).bytes
      },
      { what: 'oversized', bytes: new Uint8Array(70 * 1024).fill(7) }
    ]
    const pubsub = h.libp2p.services.pubsub
    for (let round = 0; round < 3; round++) {
      for (const x of bad) await pubsub.publish(eventsTopic('test'), x.bytes).catch(() => {})
      // Replays of events the honest peers already hold: ignored, never stored twice.
      for (const bytes of honestBytes.slice(0, 20)) await pubsub.publish(eventsTopic('test'), bytes).catch(() => {})
      await new Promise(resolve => setTimeout(resolve, 300))
    }

    await waitUntil(
      'the honest peers to converge',
      () => b.replica.ids.size === events.length && c.replica.ids.size === events.length,
      60_000
    )
    // The peers folded decoded events; the reference folds the generator's objects: equal hashes
    // show the hash does not depend on how objects were built (key order), only on the set.
    const want = foldAll(events).swarmHash()
    for (const p of [a, b, c]) expect(p.replica.fold.swarmHash()).toBe(want)
    for (const p of [a, b, c]) {
      expect(p.replica.ids.size).toBe(events.length)
      for (const x of bad) {
        const id = eventIdOfWire(x.bytes)
        if (id !== null) expect(p.replica.ids.has(id), `${x.what} must not be held`).toBe(false)
      }
    }
    // a is the hostile peer's neighbour: it saw every bad event and counted each by reason.
    await waitUntil(
      'a to count the rejections',
      async () => {
        const r = await rejected(a)
        return (
          (r.undecodable ?? 0) > 0 &&
          (r['bad-signature'] ?? 0) > 0 &&
          (r['not-canonical'] ?? 0) > 0 &&
          (r['wrong-swarm'] ?? 0) > 0 &&
          (r['not-in-committee'] ?? 0) > 0
        )
      },
      20_000
    )
    // gossipsub recomputes scores on its heartbeat: wait for the penalty to show.
    await waitUntil("the hostile peer's gossip score to drop below zero", () => a.node.peerScore(hostileId) < 0, 20_000)
  })
})
