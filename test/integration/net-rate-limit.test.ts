/**
 * Per-peer rate limits: the token bucket itself, and a flooding peer being
 * throttled while an honest peer still gets through.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createPeerRateLimiter } from '../../src/net/rate-limit.js'
import { createNodePool, fakeEvent } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const pool = createNodePool()
afterEach(async () => {
  await pool.stopAll()
})

describe('token bucket', () => {
  it('allows a burst, then the sustained rate, per peer', () => {
    const limiter = createPeerRateLimiter({ ratePerSecond: 10, burst: 5 })
    const t0 = 1_000
    const taken = Array.from({ length: 8 }, () => limiter.take('p', t0))
    expect(taken).toEqual([true, true, true, true, true, false, false, false])
    expect(limiter.take('q', t0)).toBe(true) // another peer has its own bucket
    expect(limiter.take('p', t0 + 99)).toBe(false)
    expect(limiter.take('p', t0 + 100)).toBe(true) // 10/s: one token per 100 ms
    expect(limiter.take('p', t0 + 100)).toBe(false)
    // Refill stops at the burst.
    expect(Array.from({ length: 7 }, () => limiter.take('p', t0 + 60_000)).filter(Boolean)).toHaveLength(5)
  })

  it('stays bounded in peers, dropping idle buckets first', () => {
    const limiter = createPeerRateLimiter({ ratePerSecond: 1, burst: 1 }, 3)
    limiter.take('busy', 0)
    limiter.take('a', 0)
    limiter.take('b', 0)
    limiter.take('c', 10_000) // a, b and busy have refilled by now: dropping them loses nothing
    expect(limiter.size()).toBeLessThanOrEqual(3)
    expect(limiter.take('c', 10_000)).toBe(false)
    expect(() => createPeerRateLimiter({ ratePerSecond: 0, burst: 1 })).toThrow(RangeError)
  })
})

describe('a flooding peer', () => {
  it('is throttled (counted per peer, not penalised) while an honest peer still gets through', async () => {
    const target = await pool.start({ eventRateLimit: { ratePerSecond: 100, burst: 100 } })
    const boot = [target.addresses()[0] as string]
    const flooder = await pool.start({ bootstrap: boot })
    const honest = await pool.start({ bootstrap: boot })
    await waitUntil('both subscribed at the target', () => target.eventTopicPeers().length === 2, 15_000)
    await waitUntil(
      'the target subscribed at both',
      () => flooder.eventTopicPeers().length === 1 && honest.eventTopicPeers().length === 1,
      15_000
    )

    const started = Date.now()
    const FLOOD = 1_000
    for (let i = 0; i < FLOOD; i++) {
      const ev = fakeEvent(`flood-${i}`, 200)
      await flooder.publishEvent(ev.id, ev.bytes)
    }
    const ev = fakeEvent('honest')
    await honest.publishEvent(ev.id, ev.bytes)
    await waitUntil('the honest event at the target', () => target.seen.ids.includes(ev.id), 10_000)
    await waitUntil('the flood to be counted', () => target.stats().events.received >= FLOOD, 10_000)
    const elapsedS = (Date.now() - started) / 1000

    const stats = target.stats()
    expect(stats.events.throttled).toBeGreaterThan(0)
    expect(stats.throttledByPeer[flooder.peerId]).toBe(stats.events.throttled)
    expect(stats.throttledByPeer[honest.peerId]).toBeUndefined()
    // What got through from the flooder is what its bucket allowed.
    const fromFlooder = target.seen.froms.filter(f => f === flooder.peerId).length
    expect(fromFlooder).toBeLessThanOrEqual(100 + Math.ceil(100 * elapsedS) + 5)
    expect(fromFlooder + stats.events.throttled).toBe(FLOOD)
    // Throttling is an 'ignore': the flooder's score is not pushed down by it.
    expect(target.peerScore(flooder.peerId)).toBeGreaterThanOrEqual(0)
  })
})
