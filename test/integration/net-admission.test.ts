/**
 * Admission and identity on the network: swarm keys (pnet), the peer
 * allowlist, signed presence and the roster.
 */
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import * as dagCbor from '@ipld/dag-cbor'
import { afterEach, describe, expect, it } from 'vitest'
import { parseAllowList } from '../../src/net/allow-list.js'
import { AllowListError, SwarmKeyError } from '../../src/net/errors.js'
import { decodePresence, encodePresence, MAX_PRESENCE_AGE_MS, presenceSignedMessage } from '../../src/net/presence.js'
import type { Presence } from '../../src/net/presence.js'
import { createRoster, ROSTER_TTL_MS } from '../../src/net/roster.js'
import { intervalCapability } from '../../src/net/presence-interval.js'
import { PRESENCE_INTERVAL_MS } from '../../src/net/presence-announcer.js'
import { generateSwarmKey, parseSwarmKey } from '../../src/net/swarm-key.js'
import { joinWire } from '../../src/wire/codec.js'
import { presenceTopic } from '../../src/wire/topics.js'
import { createNodePool, fakeEvent, newKey } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const pool = createNodePool()
afterEach(async () => {
  await pool.stopAll()
})

/** Short enough that a dial which hangs on a wrong key fails fast. */
const SHORT_DIAL_MS = 2_000

describe('swarm key files', () => {
  it('generates keys that parse, and normalises spelling', () => {
    const text = generateSwarmKey()
    expect(text).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}\n$/)
    const key = parseSwarmKey(text)
    expect(
      parseSwarmKey(
        text
          .toUpperCase()
          .replace('/KEY/SWARM/PSK/1.0.0/', '/key/swarm/psk/1.0.0/')
          .replace('/BASE16/', '/base16/')
          .replace(/\n/g, '\r\n')
      )
    ).toEqual(key)
    expect(generateSwarmKey()).not.toBe(text)
  })

  it.each([
    ['an empty file', '', /0 lines/],
    ['a wrong header', '/key/swarm/psk/2.0.0/\n/base16/\n' + 'a'.repeat(64), /first line/],
    ['another codec', '/key/swarm/psk/1.0.0/\n/base64/\n' + 'a'.repeat(64), /second line/],
    ['a short key', '/key/swarm/psk/1.0.0/\n/base16/\n' + 'a'.repeat(62), /exactly 64 hex/],
    ['non-hex', '/key/swarm/psk/1.0.0/\n/base16/\n' + 'g'.repeat(64), /exactly 64 hex/],
    ['extra lines', '/key/swarm/psk/1.0.0/\n/base16/\n' + 'a'.repeat(64) + '\nmore', /4 lines/]
  ])('refuses %s with a SwarmKeyError that says what a key file looks like', (_what, text, detail) => {
    let err: unknown
    try {
      parseSwarmKey(text)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(SwarmKeyError)
    expect((err as Error).name).toBe('SwarmKeyError')
    expect((err as Error).message).toMatch(detail)
    expect((err as Error).message).toMatch(/generateSwarmKey/)
  })
})

describe('allowlist files', () => {
  it('reads one peer id per line, with comments and blank lines', async () => {
    const a = peerIdFromPrivateKey(await newKey()).toString()
    const b = peerIdFromPrivateKey(await newKey()).toString()
    const set = parseAllowList(`# scorers\n${a}\n\n  ${b}   # the laptop\n${a}\n`)
    expect([...set].sort()).toEqual([a, b].sort())
  })

  it('names the line of an entry that is not a peer id', async () => {
    const a = peerIdFromPrivateKey(await newKey()).toString()
    let err: unknown
    try {
      parseAllowList(`${a}\n# ok\n${a.slice(0, -2)}\n`)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(AllowListError)
    expect((err as AllowListError).line).toBe(3)
    expect((err as Error).message).toMatch(/line 3/)
    expect(() => parseAllowList(`${a} ${a}`)).toThrow(/line 1: .*more than one word/)
  })
})

describe('private network (pnet)', () => {
  it('connects nodes that share a swarm key and gossips between them', async () => {
    const swarmKey = parseSwarmKey(generateSwarmKey())
    const a = await pool.start({ swarmKey })
    const b = await pool.start({ swarmKey, bootstrap: [a.addresses()[0] as string] })
    await waitUntil('B to see A subscribed', () => b.eventTopicPeers().includes(a.peerId), 15_000)
    const ev = fakeEvent('pnet')
    await b.publishEvent(ev.id, ev.bytes)
    await waitUntil('the event at A', () => a.seen.ids.includes(ev.id), 15_000)
  })

  it('keeps out a node without the key, and a node with another key, both ways', async () => {
    const swarmKey = parseSwarmKey(generateSwarmKey())
    const member = await pool.start({ swarmKey, dialTimeoutMs: SHORT_DIAL_MS })
    const keyless = await pool.start({ dialTimeoutMs: SHORT_DIAL_MS })
    const other = await pool.start({ swarmKey: parseSwarmKey(generateSwarmKey()), dialTimeoutMs: SHORT_DIAL_MS })
    const addr = (n: { addresses: () => string[] }): ReturnType<typeof multiaddr> =>
      multiaddr(n.addresses()[0] as string)
    const attempts = [
      keyless.libp2p.dial(addr(member)),
      other.libp2p.dial(addr(member)),
      member.libp2p.dial(addr(keyless)),
      member.libp2p.dial(addr(other))
    ]
    const results = await Promise.allSettled(attempts)
    expect(results.map(r => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected'])
    expect(member.connectedPeers()).toEqual([])
  })
})

describe('peer allowlist', () => {
  it('lets listed peers in and keeps a stranger out, inbound and outbound', async () => {
    const friendKey = await newKey()
    const friendId = peerIdFromPrivateKey(friendKey).toString()
    const gate = await pool.start({ allowPeers: new Set([friendId]), dialTimeoutMs: SHORT_DIAL_MS })
    const friend = await pool.start({ privateKey: friendKey, bootstrap: [gate.addresses()[0] as string] })
    const stranger = await pool.start({ dialTimeoutMs: SHORT_DIAL_MS })
    await waitUntil('the friend to connect', () => gate.connectedPeers().includes(friend.peerId), 15_000)
    const admitted: string[] = []
    gate.onPeerConnected(id => admitted.push(id))

    // Outbound from the gate: refused before dialling.
    await expect(gate.libp2p.dial(multiaddr(stranger.addresses()[0] as string))).rejects.toThrow(/gater/)
    await expect(gate.libp2p.dial(stranger.libp2p.peerId)).rejects.toThrow(/gater/)
    // Inbound: the gate learns who is calling only at the end of the handshake and
    // drops the connection there; the stranger may briefly think it got through.
    await stranger.libp2p.dial(multiaddr(gate.addresses()[0] as string)).catch(() => undefined)
    await waitUntil("the stranger's connection to be closed", () => stranger.connectedPeers().length === 0, 15_000)
    expect(admitted).toEqual([])
    expect(gate.connectedPeers()).toEqual([friend.peerId])
    expect(stranger.eventTopicPeers()).toEqual([])
  })
})

describe('presence', () => {
  const info = { role: 'scorer', capabilities: ['score', 'review'], load: 0.5, version: 'plan-swarm/0.1.0' }

  it('announces a signed presence on start and on new peers, with addresses', async () => {
    const heard: Presence[] = []
    const a = await pool.start({ onPresence: p => heard.push(p), presence: { ...info, role: 'observer' } })
    const b = await pool.start({ presence: info, bootstrap: [a.addresses()[0] as string] })
    const p = await waitUntil("B's presence at A", () => heard.find(x => x.peerId === b.peerId), 15_000)
    // The node adds how long it waits until its next announcement (receivers keep the entry for five of those).
    expect(p).toMatchObject({
      role: 'scorer',
      capabilities: ['score', 'review', intervalCapability(PRESENCE_INTERVAL_MS)],
      load: 0.5,
      version: 'plan-swarm/0.1.0'
    })
    expect(p.addresses).toContain(b.addresses()[0])
    expect(Math.abs(p.sentMs - Date.now())).toBeLessThan(5_000)
    // B's own announcement may reach A first by the roster exchange; the gossiped one follows.
    await waitUntil("A to accept B's gossiped presence", () => a.stats().presence.accepted >= 1, 15_000)
  })

  it('announces once it has a first peer only; a later neighbour learns of it (and of its peers) from the roster exchange', async () => {
    const slow = { presenceIntervalMs: 600_000 }
    const a = await pool.start({ ...slow, presence: { ...info, role: 'observer' } })
    const c = await pool.start({ ...slow, presence: info, bootstrap: [a.addresses()[0] as string] })
    await waitUntil(
      'C to see A on the presence topic',
      () => c.libp2p.services.pubsub.getSubscribers(presenceTopic('test')).some(p => p.toString() === a.peerId),
      15_000
    )
    // A announced at start (to nobody) and once its first peer subscribed.
    await waitUntil('A to announce to C', () => a.stats().presence.published >= 2, 15_000)
    // Settled: its start-up announcements (at start, its addresses, its first peer) are out.
    let last = -1
    await waitUntil(
      'A to be quiet',
      async () => {
        const now = a.stats().presence.published
        const quiet = now === last
        last = now
        if (!quiet) await new Promise(resolve => setTimeout(resolve, 600))
        return quiet
      },
      15_000
    )
    const published = a.stats().presence.published
    const heard: Presence[] = []
    const b = await pool.start({
      ...slow,
      presence: info,
      bootstrap: [a.addresses()[0] as string],
      onPresence: p => heard.push(p)
    })
    await waitUntil(
      'B to learn of A and C',
      () => heard.some(p => p.peerId === a.peerId) && heard.some(p => p.peerId === c.peerId),
      15_000
    )
    expect(heard.find(p => p.peerId === a.peerId)?.role).toBe('observer')
    await waitUntil(
      "B to be on A's presence topic",
      () => a.libp2p.services.pubsub.getSubscribers(presenceTopic('test')).some(p => p.toString() === b.peerId),
      15_000
    )
    await new Promise(resolve => setTimeout(resolve, 500))
    // A had a peer already: B's arrival made it announce nothing swarm-wide.
    expect(a.stats().presence.published).toBe(published)
  })

  it('rejects a forged presence (bad signature, or claiming another peer) and penalises its sender', async () => {
    const heard: Presence[] = []
    const a = await pool.start({ onPresence: p => heard.push(p) })
    const forger = await pool.start({ bootstrap: [a.addresses()[0] as string] })
    await waitUntil(
      'the forger to see A on the presence topic',
      () => forger.libp2p.services.pubsub.getSubscribers(presenceTopic('test')).some(p => p.toString() === a.peerId),
      15_000
    )

    const victimKey = await newKey()
    const forgerKey = await newKey()
    // 1. Signed by the forger's key but naming the victim.
    const genuine = await encodePresence('test', info, [], Date.now(), victimKey)
    const body = dagCbor.decode<Record<string, unknown>>(genuine.subarray(0, genuine.length - 64))
    const claimBody = dagCbor.encode({ ...body, sentMs: Date.now() + 1 })
    const claimVictim = joinWire(claimBody, await forgerKey.sign(presenceSignedMessage('test', claimBody)))
    // 2. A genuine presence with one signature bit flipped.
    const flipped = genuine.slice()
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 1
    // 3. Not CBOR at all.
    const garbage = new Uint8Array(100).fill(0xff)
    for (const bytes of [claimVictim, flipped, garbage]) {
      await forger.libp2p.services.pubsub.publish(presenceTopic('test'), bytes)
    }
    await waitUntil('A to reject all three', () => a.stats().presence.rejected === 3, 15_000)
    expect(heard.filter(p => p.peerId === peerIdFromPrivateKey(victimKey).toString())).toEqual([])
    await waitUntil("the forger's score at A to fall below zero", () => a.peerScore(forger.peerId) < 0, 5_000)
  })

  it('checks signatures, bounds and freshness when decoding', async () => {
    const key = await newKey()
    const now = Date.now()
    const bytes = await encodePresence('test', info, ['/ip4/127.0.0.1/tcp/1'], now, key)
    const ok = await decodePresence('test', bytes, now)
    expect(ok.ok && ok.presence.peerId).toBe(peerIdFromPrivateKey(key).toString())
    // Signed for another swarm: the domain differs, so the signature does not verify.
    expect(await decodePresence('other', bytes, now)).toMatchObject({ ok: false, verdict: 'reject' })
    // Old or far-future copies are ignored, not rejected: a relay may be slow, a clock may be off.
    expect(await decodePresence('test', bytes, now + MAX_PRESENCE_AGE_MS + 1)).toMatchObject({
      ok: false,
      verdict: 'ignore'
    })
    expect(await decodePresence('test', bytes, now - 60_000)).toMatchObject({ ok: false, verdict: 'ignore' })
    await expect(encodePresence('test', { ...info, role: 'Not A Role' }, [], now, key)).rejects.toThrow(/role/)
    await expect(encodePresence('test', { ...info, load: Number.NaN }, [], now, key)).rejects.toThrow(/load/)
  })
})

describe('roster', () => {
  const presence = (peerId: string, sentMs: number, role = 'executor'): Presence => ({
    peerId,
    role,
    capabilities: [],
    load: 1,
    version: 'v',
    addresses: ['/ip4/10.0.0.1/tcp/1'],
    sentMs
  })

  it('lists peers with the time since they were heard, and expires them after the TTL', () => {
    const roster = createRoster()
    const t0 = 1_000_000
    expect(roster.update(presence('p1', t0), t0)).toBe(true)
    expect(roster.update(presence('p2', t0, 'scorer'), t0 + 5_000)).toBe(true)
    expect(roster.list(t0 + 6_000)).toEqual([
      {
        peerId: 'p2',
        role: 'scorer',
        capabilities: [],
        lastSeenMs: 1_000,
        firstSeenMs: 1_000,
        load: 1,
        version: 'v',
        addresses: ['/ip4/10.0.0.1/tcp/1']
      },
      {
        peerId: 'p1',
        role: 'executor',
        capabilities: [],
        lastSeenMs: 6_000,
        firstSeenMs: 6_000,
        load: 1,
        version: 'v',
        addresses: ['/ip4/10.0.0.1/tcp/1']
      }
    ])
    expect(roster.list(t0 + ROSTER_TTL_MS - 1).map(e => e.peerId)).toEqual(['p2', 'p1'])
    expect(roster.list(t0 + ROSTER_TTL_MS).map(e => e.peerId)).toEqual(['p2'])
    expect(roster.get('p1', t0 + ROSTER_TTL_MS)).toBeUndefined()
    expect(roster.list(t0 + 5_000 + ROSTER_TTL_MS)).toEqual([])
  })

  it('is refreshed by newer announcements only, so a replay cannot keep or bring back a departed peer', () => {
    const roster = createRoster({ ttlMs: 10_000 })
    const t0 = 1_000_000
    roster.update(presence('p1', t0), t0)
    expect(roster.update(presence('p1', t0), t0 + 8_000)).toBe(false) // replayed copy
    expect(roster.list(t0 + 10_000)).toEqual([])
    expect(roster.update(presence('p1', t0), t0 + 12_000)).toBe(false) // still remembered after expiry
    expect(roster.list(t0 + 12_000)).toEqual([])
    expect(roster.update(presence('p1', t0 + 12_000), t0 + 12_000)).toBe(true) // a fresh one
    expect(roster.get('p1', t0 + 12_000)?.lastSeenMs).toBe(0)
  })

  it('keeps at most maxEntries, dropping the least recently heard', () => {
    const roster = createRoster({ maxEntries: 2 })
    roster.update(presence('p1', 1), 1)
    roster.update(presence('p2', 2), 2)
    roster.update(presence('p1', 3), 3)
    roster.update(presence('p3', 4), 4)
    expect(roster.list(5).map(e => e.peerId)).toEqual(['p3', 'p1'])
  })
})
