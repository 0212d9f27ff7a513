import { describe, expect, it } from 'vitest'
import {
  createNeighbourhood,
  DIAL_COUNTS_MS,
  DIALS_PER_TICK,
  NEIGHBOUR_TICK_MS,
  NEWCOMER_HEADROOM,
  SERVED_AFTER_MS,
  TARGET_PEERS,
  TRIM_AFTER_MS
} from '../../src/net/neighbours.js'
import {
  createPresenceAnnouncer,
  PRESENCE_JITTER,
  PRESENCE_JOIN_DEBOUNCE_MS
} from '../../src/net/presence-announcer.js'
import { createSimRosterExchange } from '../../src/sim/sim-roster-exchange.js'
import {
  announcedInterval,
  intervalCapability,
  presenceIntervalFor,
  rosterTtlFor,
  PRESENCE_MESSAGES_PER_SECOND,
  PRESENCE_MIN_INTERVAL_MS
} from '../../src/net/presence-interval.js'
import { createRoster, ROSTER_TTL_MS } from '../../src/net/roster.js'
import { seededRandom } from '../../src/ports/scheduler.js'
import type { Scheduler } from '../../src/ports/scheduler.js'

/** A scheduler whose time moves only when told. */
function manualScheduler(): Scheduler & { advance: (ms: number) => void } {
  let now = 1_000_000
  const timers: Array<{ at: number; fn: () => void; every?: number; dead: boolean }> = []
  const add = (ms: number, fn: () => void, every?: number): (() => void) => {
    const t = { at: now + ms, fn, every, dead: false }
    timers.push(t)
    return () => {
      t.dead = true
    }
  }
  return {
    now: () => now,
    monotonic: () => now,
    after: (ms, fn) => add(ms, fn),
    every: (ms, fn) => add(ms, fn, ms),
    soon: fn => add(0, fn),
    random: seededRandom(7),
    advance: ms => {
      const end = now + ms
      for (;;) {
        const due = timers.filter(t => !t.dead && t.at <= end).sort((a, b) => a.at - b.at)[0]
        if (due === undefined) break
        now = due.at
        if (due.every !== undefined) due.at += due.every
        else due.dead = true
        due.fn()
      }
      now = end
    }
  }
}

/** Lets every dial promise (and what it chains) settle. */
async function settled(): Promise<void> {
  await new Promise(resolve => setImmediate(resolve))
}

const presence = (
  i: number
): {
  peerId: string
  role: string
  capabilities: string[]
  load: number
  version: string
  addresses: string[]
  sentMs: number
} => ({
  peerId: `peer-${i}`,
  role: 'executor',
  capabilities: [],
  load: 0,
  version: 'v',
  addresses: [`/ip4/10.0.0.${i}/tcp/4001/p2p/peer-${i}`],
  sentMs: 0
})

describe('neighbours: bounded degree', () => {
  it('counts dials under way: a roster exchange of 64 peers heard at once opens the target, not 64', async () => {
    const s = manualScheduler()
    const connected = new Set<string>()
    const pending: Array<() => void> = []
    const dialed: string[] = []
    const n = createNeighbourhood({
      self: 'me',
      maxPeers: 24,
      scheduler: s,
      connected: () => [...connected],
      // A dial takes a round trip: it connects only when the test says so.
      dial: async peer => {
        dialed.push(peer)
        await new Promise<void>(resolve => {
          pending.push(() => {
            connected.add(peer)
            resolve()
          })
        })
      },
      mayDial: () => true
    })
    n.start()
    for (let i = 0; i < 64; i++) n.heard(presence(i))
    expect(dialed).toHaveLength(TARGET_PEERS)
    s.advance(NEIGHBOUR_TICK_MS)
    expect(dialed).toHaveLength(TARGET_PEERS)
    // A dial that never settles stops counting after a while: the node dials others.
    s.advance(DIAL_COUNTS_MS)
    expect(dialed.length).toBeGreaterThan(TARGET_PEERS)
    for (const open of pending.splice(0, TARGET_PEERS)) open()
    await new Promise(resolve => setImmediate(resolve))
    expect(connected.size).toBe(TARGET_PEERS)
    const before = dialed.length
    s.advance(NEIGHBOUR_TICK_MS)
    expect(dialed).toHaveLength(before)
    n.stop()
  })

  it('dials towards the target and never beyond it, however many peers it hears of', async () => {
    const s = manualScheduler()
    const connected = new Set<string>()
    const dialed: string[] = []
    const n = createNeighbourhood({
      self: 'me',
      maxPeers: 24,
      scheduler: s,
      connected: () => [...connected],
      dial: async peer => {
        dialed.push(peer)
        connected.add(peer)
      },
      mayDial: () => true
    })
    n.start()
    for (let i = 0; i < 200; i++) n.heard(presence(i))
    await settled()
    expect(n.known()).toBe(200)
    expect(connected.size).toBe(TARGET_PEERS)
    // Neighbours leave; the tick refills a few at a time, back to the target, not more.
    for (const p of [...connected].slice(0, 5)) connected.delete(p)
    s.advance(NEIGHBOUR_TICK_MS)
    await settled()
    expect(connected.size).toBe(TARGET_PEERS - 5 + DIALS_PER_TICK)
    s.advance(10 * NEIGHBOUR_TICK_MS)
    await settled()
    expect(connected.size).toBe(TARGET_PEERS)
    expect(new Set(dialed).size).toBe(dialed.length)
    n.stop()
  })

  it('over max-peers, closes served inbound connections first, newest first, until the headroom is free; then old ones', async () => {
    const s = manualScheduler()
    // A bootstrap peer at a mass start: 8 peers it dialed long ago, and 24 newcomers that dialed it, one every 100 ms.
    const openedAt = new Map<string, number>()
    const inbound = new Set<string>()
    for (let i = 0; i < 8; i++) openedAt.set(`out-${i}`, s.now() - 60_000)
    for (let i = 0; i < 24; i++) {
      openedAt.set(`in-${i}`, s.now() - 2_400 + 100 * i)
      inbound.add(`in-${i}`)
    }
    const closed: string[] = []
    const n = createNeighbourhood({
      self: 'seed',
      maxPeers: 24,
      scheduler: s,
      connected: () => [...openedAt.keys()],
      dial: async () => {},
      mayDial: () => true,
      hangUp: async peer => {
        closed.push(peer)
        openedAt.delete(peer)
      },
      inbound: peer => inbound.has(peer),
      // The newest newcomer's roster exchange has not been answered yet (a loaded machine): it stays.
      served: peer => peer !== 'in-23',
      connectedForMs: peer => {
        const at = openedAt.get(peer)
        return at === undefined ? undefined : s.now() - at
      }
    })
    n.start()
    s.advance(NEIGHBOUR_TICK_MS)
    // 32 open, 24 allowed: back to 24 - NEWCOMER_HEADROOM, every one closed a newcomer served its roster (open >=
    // SERVED_AFTER_MS), newest first.
    expect(closed).toHaveLength(32 - (24 - NEWCOMER_HEADROOM))
    expect(closed).not.toContain('in-23')
    expect(closed[0]).toBe('in-22')
    const ages = closed.map(id => 2_400 - 100 * Number(id.slice(3)) + NEIGHBOUR_TICK_MS)
    expect(closed.every(id => id.startsWith('in-'))).toBe(true)
    expect(ages.every(a => a >= SERVED_AFTER_MS)).toBe(true)
    expect([...ages].sort((a, b) => a - b)).toEqual(ages)
    expect(openedAt.size).toBe(24 - NEWCOMER_HEADROOM)
    // Nothing more while within max-peers, and the connections this node opened stay.
    closed.length = 0
    s.advance(TRIM_AFTER_MS)
    expect(closed).toEqual([])
    expect([...openedAt.keys()].filter(id => id.startsWith('out-'))).toHaveLength(8)
    n.stop()
  })

  it('over max-peers with no inbound connection served, closes only connections older than TRIM_AFTER_MS', async () => {
    const s = manualScheduler()
    const openedAt = new Map<string, number>()
    for (let i = 0; i < 20; i++) openedAt.set(`old-${i}`, s.now() - 60_000)
    for (let i = 0; i < 8; i++) openedAt.set(`new-${i}`, s.now())
    const closed: string[] = []
    const n = createNeighbourhood({
      self: 'me',
      maxPeers: 24,
      scheduler: s,
      connected: () => [...openedAt.keys()],
      dial: async () => {},
      mayDial: () => true,
      hangUp: async peer => {
        closed.push(peer)
        openedAt.delete(peer)
      },
      inbound: () => false,
      connectedForMs: peer => {
        const at = openedAt.get(peer)
        return at === undefined ? undefined : s.now() - at
      }
    })
    n.start()
    s.advance(NEIGHBOUR_TICK_MS)
    expect(closed).toHaveLength(4)
    expect(closed.every(id => id.startsWith('old-'))).toBe(true)
    n.stop()
  })

  it('goes direct to a peer it reaches through a relay once that peer announces an address of its own', async () => {
    const s = manualScheduler()
    const relayed = new Set(['peer-1', 'peer-2'])
    const direct: Array<[string, readonly string[]]> = []
    const n = createNeighbourhood({
      self: 'me',
      maxPeers: 24,
      scheduler: s,
      connected: () => ['peer-1', 'peer-2', 'peer-3'],
      dial: async () => {},
      mayDial: () => true,
      relayedOnly: peer => relayed.has(peer),
      dialDirect: async (peer, addresses) => {
        direct.push([peer, addresses])
      }
    })
    const circuit = (i: number): string => `/ip4/11.0.0.9/tcp/4001/p2p/relay/p2p-circuit/p2p/peer-${i}`
    // Only a relay address so far (no port forward yet): nothing to do.
    n.heard({ ...presence(1), addresses: [circuit(1)] })
    expect(direct).toEqual([])
    // It announces a forwarded port: one direct dial, at that address only, and not again within REDIAL_PEER_MS.
    n.heard({ ...presence(1), addresses: ['/ip4/11.0.0.2/tcp/4001/p2p/peer-1', circuit(1)] })
    n.heard({ ...presence(1), addresses: ['/ip4/11.0.0.2/tcp/4001/p2p/peer-1', circuit(1)] })
    expect(direct).toEqual([['peer-1', ['/ip4/11.0.0.2/tcp/4001/p2p/peer-1']]])
    // A peer reached directly already is left alone.
    n.heard(presence(3))
    expect(direct).toHaveLength(1)
  })

  it('dials nobody outside the allowlist, and nothing with a max of 0 room', async () => {
    const s = manualScheduler()
    const dialed: string[] = []
    const n = createNeighbourhood({
      self: 'me',
      maxPeers: 24,
      scheduler: s,
      connected: () => [],
      dial: async p => {
        dialed.push(p)
      },
      mayDial: p => p === 'peer-3'
    })
    for (let i = 0; i < 10; i++) n.heard(presence(i))
    expect(dialed).toEqual(['peer-3'])
    expect(n.randomStranger()).toBe('peer-3')
  })
})

describe('presence interval', () => {
  it('is the minimum in a small swarm and grows so that a node receives a constant number of announcements a second', () => {
    expect(presenceIntervalFor(1)).toBe(PRESENCE_MIN_INTERVAL_MS)
    expect(presenceIntervalFor((PRESENCE_MIN_INTERVAL_MS * PRESENCE_MESSAGES_PER_SECOND) / 1000)).toBe(
      PRESENCE_MIN_INTERVAL_MS
    )
    for (const n of [40, 100, 1000, 10_000]) {
      const perSecond = n / (presenceIntervalFor(n) / 1000)
      expect(perSecond).toBeLessThanOrEqual(PRESENCE_MESSAGES_PER_SECOND)
      expect(perSecond).toBeGreaterThan(PRESENCE_MESSAGES_PER_SECOND * 0.99)
    }
    expect(rosterTtlFor(1000)).toBe(5 * presenceIntervalFor(1000))
  })

  it('travels as a capability, and the roster keeps a peer for five of the intervals it announced', () => {
    expect(announcedInterval([intervalCapability(250_000)])).toBe(250_000)
    expect(announcedInterval(['gpu', 'presence-interval-ms=abc'])).toBeUndefined()
    const roster = createRoster()
    const t0 = 5_000_000
    roster.update({ ...presence(1), capabilities: [intervalCapability(250_000)], sentMs: t0 }, t0)
    roster.update({ ...presence(2), sentMs: t0 }, t0)
    const later = t0 + ROSTER_TTL_MS + 1
    expect(roster.list(later).map(e => e.peerId)).toEqual(['peer-1'])
    expect(roster.list(t0 + 5 * 250_000 - 1).map(e => e.peerId)).toEqual(['peer-1'])
    expect(roster.list(t0 + 5 * 250_000 + 1)).toEqual([])
  })
})

describe('presence announcer', () => {
  it('announces when its first peer joins the presence topic, not when later ones do', async () => {
    const s = manualScheduler()
    const published: number[] = []
    const a = createPresenceAnnouncer({
      intervalMs: 60_000,
      scheduler: s,
      initial: presence(0),
      publish: async () => {
        published.push(s.now())
      }
    })
    await a.announce()
    expect(published).toHaveLength(1)
    a.peerJoined(1)
    s.advance(PRESENCE_JOIN_DEBOUNCE_MS)
    expect(published).toHaveLength(2)
    // A node with neighbours already: a new one learns of it from the roster exchange.
    for (let k = 2; k < 10; k++) a.peerJoined(k)
    s.advance(10 * PRESENCE_JOIN_DEBOUNCE_MS)
    expect(published).toHaveLength(2)
    // Alone again, then a peer: announce again.
    a.peerJoined(1)
    s.advance(PRESENCE_JOIN_DEBOUNCE_MS)
    expect(published).toHaveLength(3)
    // The periodic announcement: within the interval +- PRESENCE_JITTER of the last one.
    s.advance(60_000 * (1 - PRESENCE_JITTER) - 1)
    expect(published).toHaveLength(3)
    s.advance(60_000 * 2 * PRESENCE_JITTER + 2)
    expect(published).toHaveLength(4)
    // A new address: announced soon, changes close together once.
    a.changed()
    a.changed()
    s.advance(PRESENCE_JOIN_DEBOUNCE_MS)
    expect(published).toHaveLength(5)
    a.stop()
  })
})

describe('presence announcements promise the next', () => {
  it('each says how long until the next, and the next comes within that (give or take the jitter), as the swarm grows', async () => {
    const s = manualScheduler()
    const heard: Array<{ at: number; intervalMs: number }> = []
    let peers = 1
    const a = createPresenceAnnouncer({
      intervalMs: () => presenceIntervalFor(peers),
      scheduler: s,
      initial: presence(0),
      publish: async (_info, intervalMs) => {
        heard.push({ at: s.now(), intervalMs })
      }
    })
    await a.announce()
    // The swarm grows from 1 to 200 peers over ten minutes, while it also gets new neighbours now and then.
    for (let t = 0; t < 600_000; t += 1_000) {
      peers = 1 + Math.floor(t / 3_000)
      if (t % 47_000 === 0) a.changed()
      s.advance(1_000)
    }
    a.stop()
    expect(heard.length).toBeGreaterThan(20)
    for (let i = 1; i < heard.length; i++) {
      const prev = heard[i - 1] as { at: number; intervalMs: number }
      const gap = (heard[i] as { at: number }).at - prev.at
      expect(gap).toBeLessThanOrEqual(prev.intervalMs * (1 + PRESENCE_JITTER) + 1)
    }
  })
})

describe('simulated roster exchange', () => {
  it("hands a peer this node's own announcement first, then a sample of the rest", () => {
    const s = manualScheduler()
    const x = createSimRosterExchange('peer-0', s)
    for (let i = 1; i < 200; i++) x.remember({ ...presence(i), sentMs: s.now() })
    x.remember({ ...presence(0), sentMs: s.now() })
    const sample = x.sample()
    expect(sample).toHaveLength(64)
    expect(sample[0]?.peerId).toBe('peer-0')
    expect(new Set(sample.map(p => p.peerId)).size).toBe(64)
  })
})
