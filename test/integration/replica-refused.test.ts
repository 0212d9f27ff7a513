/**
 * A replica remembers the ids of events the wire rejected for what their
 * envelope says, so sync does not fetch them again from a peer that keeps
 * offering them (found by the hostile-peer resilience scenario: each honest
 * node pulled every garbage event about three times). A bad signature is not
 * remembered: a genuine event with the same envelope has the same id and
 * must still be taken.
 */
import { describe, expect, it } from 'vitest'
import * as dagCbor from '@ipld/dag-cbor'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { PROTOCOL_VERSION, DEFAULT_PARAMS } from '../../src/core/events.js'
import type { Envelope, PeerIdString } from '../../src/core/events.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { MAX_REFUSED_IDS, Replica } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import { eventIdOfWire, encodeEnvelope } from '../../src/wire/codec.js'
import { signEventSync, signRawSync } from '../../src/wire/sign.js'

const SWARM = 'test'

async function setup(): Promise<{
  replica: Replica
  env: Envelope
  key: Awaited<ReturnType<typeof generateKeyPair>>
  other: Awaited<ReturnType<typeof generateKeyPair>>
}> {
  const key = await generateKeyPair('Ed25519')
  const other = await generateKeyPair('Ed25519')
  const me = peerIdFromPrivateKey(key).toString() as PeerIdString
  const replica = new Replica({
    swarm: SWARM,
    key,
    peerId: me,
    store: openEventStore({ memory: true }),
    metrics: new NodeMetrics(),
    now: Date.now
  })
  const env: Envelope = {
    v: PROTOCOL_VERSION,
    swarm: SWARM,
    type: 'goal-submitted',
    plan: '',
    author: me,
    hlc: { ms: 1_000, c: 0 },
    deps: [],
    body: { text: 'plan a picnic', params: { ...DEFAULT_PARAMS, committee: [me], quorum: 1 } }
  }
  return { replica, env, key, other }
}

describe('replica: wire-rejected ids are not fetched again', () => {
  it('remembers garbage, non-canonical and wrong-shape ids, so sync does not want them', async () => {
    const { replica, env, key } = await setup()
    const garbage = new Uint8Array(300).map((_, i) => (i * 37) & 0xff)
    const reordered = (() => {
      const rec = env as unknown as Record<string, unknown>
      const keys = Object.keys(rec).reverse()
      const parts = [
        Uint8Array.of(0xa0 | keys.length),
        ...keys.flatMap(k => [dagCbor.encode(k), dagCbor.encode(rec[k])])
      ]
      return signRawSync(SWARM, Uint8Array.from(parts.flatMap(p => [...p])), key)
    })()
    const wrongShape = signRawSync(SWARM, dagCbor.encode({ ...env, body: { text: 'x' } }), key)
    for (const [bytes, reason] of [
      [garbage, 'undecodable'],
      [reordered, 'not-canonical'],
      [wrongShape, 'wrong-shape']
    ] as const) {
      const r = replica.ingest(bytes, 'sync')
      expect(r.why).toBe(reason)
      expect(replica.has(eventIdOfWire(bytes) as string), reason).toBe(true)
      expect(replica.ids.has(eventIdOfWire(bytes) as string)).toBe(false)
    }
    // The canonical event is another envelope, another id: still taken.
    expect(replica.ingest(signEventSync(env, key).bytes, 'sync').verdict).toBe('accept')
  })

  it('does not remember a bad signature: the genuine event with that envelope still comes in', async () => {
    const { replica, env, key, other } = await setup()
    const forged = signRawSync(SWARM, encodeEnvelope(env), other)
    const id = eventIdOfWire(forged) as string
    expect(replica.ingest(forged, 'sync').why).toBe('bad-signature')
    expect(replica.has(id)).toBe(false)
    const genuine = signEventSync(env, key)
    expect(genuine.event.id).toBe(id)
    expect(replica.ingest(genuine.bytes, 'sync').verdict).toBe('accept')
    expect(replica.has(id)).toBe(true)
  })

  it('keeps at most MAX_REFUSED_IDS of them, oldest out first', async () => {
    const { replica } = await setup()
    const first = new Uint8Array(100).fill(1)
    replica.ingest(first, 'gossip')
    for (let i = 0; i < MAX_REFUSED_IDS; i++) {
      const b = new Uint8Array(100)
      new DataView(b.buffer).setUint32(0, i + 2)
      replica.ingest(b, 'gossip')
    }
    expect(replica.has(eventIdOfWire(first) as string)).toBe(false)
  })
})
