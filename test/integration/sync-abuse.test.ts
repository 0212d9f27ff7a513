/**
 * A misbehaving peer on the sync protocol is cut off within its deadline
 * (the stream is reset, a failure is counted, nothing throws), and the honest
 * node goes on syncing with others.
 */
import type { Libp2p, Stream } from '@libp2p/interface'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { IdSet } from '../../src/core/id-set.js'
import { createReconcileSession } from '../../src/sync/reconcile/index.js'
import { FRAME_DONE, FRAME_RECONCILE, encodeEvents, encodeFrame, encodeWant } from '../../src/sync/frames.js'
import { nativeEventIdOfWire } from '../../src/sync/native-hash.js'
import { writeVarint } from '../../src/wire/varint.js'
import { SYNC_PROTOCOL } from '../../src/sync/libp2p-service.js'
import { eventIdOfWire } from '../../src/wire/codec.js'
import type { SyncPeer } from '../helpers/sync-nodes.js'
import { connect, createSyncPeer, createTestNode, fakeEvent, randomId, stopPeers } from '../helpers/sync-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const IDLE_MS = 1_000
/** A misbehaving stream must be cut off within this (idle timeout + slack). */
const CUT_OFF_MS = 4_000

let honest: SyncPeer
let rogue: Libp2p
let other: SyncPeer | undefined

beforeAll(async () => {
  honest = await createSyncPeer({ syncOnConnect: false, limits: { idleTimeoutMs: IDLE_MS } })
  for (let i = 0; i < 10; i++) honest.replica.add(fakeEvent(300))
  rogue = await createTestNode()
  await connect(rogue, honest.node)
})

afterAll(async () => {
  await stopPeers([honest, rogue, other])
})

async function open(): Promise<Stream> {
  const stream = await rogue.dialProtocol(honest.node.peerId, SYNC_PROTOCOL, { signal: AbortSignal.timeout(5_000) })
  stream.addEventListener('message', () => {}) // read and drop whatever the honest node says
  return stream
}

function isOpen(stream: Stream): boolean {
  return stream.status === 'open' || stream.status === 'closing'
}

/** Runs `misbehave` on a fresh stream and checks that the honest node cuts it off and counts a failure. */
async function expectCutOff(
  misbehave: (stream: Stream) => Promise<void>
): Promise<{ ms: number; error: string | undefined }> {
  const failuresBefore = honest.sync.stats().failures
  const sessionsBefore = honest.sessions.length
  const stream = await open()
  const started = Date.now()
  await misbehave(stream).catch(() => {}) // writes fail once the stream is reset: expected
  await waitUntil('the honest node to cut the stream off', () => !isOpen(stream), CUT_OFF_MS)
  await waitUntil('the honest session to end', () => honest.sessions.length > sessionsBefore, CUT_OFF_MS)
  expect(honest.sync.stats().failures).toBe(failuresBefore + 1)
  const last = honest.sessions[honest.sessions.length - 1]
  expect(last?.ok).toBe(false)
  return { ms: Date.now() - started, error: last?.error }
}

async function sendAll(stream: Stream, bytes: Uint8Array): Promise<void> {
  if (!stream.send(bytes)) await stream.onDrain({ signal: AbortSignal.timeout(CUT_OFF_MS) })
}

describe('sync: a misbehaving peer is cut off', () => {
  it('computes the same event id as the wire codec', () => {
    for (let i = 0; i < 20; i++) {
      const e = fakeEvent(100 + i * 37)
      expect(nativeEventIdOfWire(e.bytes)).toBe(eventIdOfWire(e.bytes))
    }
    expect(nativeEventIdOfWire(new Uint8Array(64))).toBeNull()
  })

  it('random bytes', async () => {
    const garbage = new Uint8Array(4096)
    crypto.getRandomValues(garbage)
    const { ms, error } = await expectCutOff(async stream => {
      await sendAll(stream, garbage)
    })
    console.log(`[sync] random bytes: cut off after ${ms} ms (${error})`)
  })

  it('an oversized length prefix, before the frame arrives', async () => {
    const head = new Uint8Array(16)
    const end = writeVarint(head, 0, 100 * 1024 * 1024)
    head[end] = FRAME_RECONCILE
    const { ms, error } = await expectCutOff(async stream => {
      await sendAll(stream, head.subarray(0, end + 1))
    })
    expect(error).toMatch(/exceeds/)
    expect(ms).toBeLessThan(IDLE_MS) // not the idle timeout: at once
  })

  it('WANT frames forever', async () => {
    const { ms, error } = await expectCutOff(async stream => {
      while (isOpen(stream)) {
        await sendAll(stream, encodeWant(Array.from({ length: 1024 }, randomId)))
        await new Promise(resolve => setTimeout(resolve, 1))
      }
    })
    expect(error).toMatch(/wanted|outstanding/)
    console.log(`[sync] WANT spam: cut off after ${ms} ms (${error})`)
  })

  it('RECONCILE frames forever', async () => {
    const set = new IdSet()
    for (let i = 0; i < 1000; i++) set.add(randomId())
    const opening = encodeFrame(FRAME_RECONCILE, createReconcileSession(set).initiate())
    const { ms, error } = await expectCutOff(async stream => {
      while (isOpen(stream)) {
        await sendAll(stream, opening)
        await new Promise(resolve => setTimeout(resolve, 1))
      }
    })
    expect(error).toMatch(/256 messages/)
    console.log(`[sync] RECONCILE spam: cut off after ${ms} ms (${error})`)
  })

  it('unsolicited EVENTS, and DONE out of place', async () => {
    const r1 = await expectCutOff(async stream => {
      await sendAll(stream, encodeEvents(1, [fakeEvent(300).bytes]))
    })
    expect(r1.error).toMatch(/EVENTS/)
    const r2 = await expectCutOff(async stream => {
      await sendAll(stream, encodeFrame(FRAME_DONE))
    })
    expect(r2.error).toMatch(/DONE/)
  })

  it('a stalled frame (slowloris) hits the idle timeout', async () => {
    const { ms, error } = await expectCutOff(async stream => {
      const head = new Uint8Array(8)
      const end = writeVarint(head, 0, 1000)
      await sendAll(stream, head.subarray(0, end + 1))
      for (let i = 0; i < 50 && isOpen(stream); i++) {
        await sendAll(stream, new Uint8Array([1])) // a byte now and then is not progress
        await new Promise(resolve => setTimeout(resolve, 100))
      }
    })
    expect(error).toMatch(/no progress/)
    expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 100)
    console.log(`[sync] slowloris: cut off after ${ms} ms`)
  })

  it('refuses a second inbound session from the same peer at once', async () => {
    const rejectedBefore = honest.sync.stats().rejected
    const first = await open()
    const second = await open()
    await waitUntil('the second stream to be refused', () => !isOpen(second), CUT_OFF_MS)
    expect(honest.sync.stats().rejected).toBe(rejectedBefore + 1)
    await waitUntil('the idle first stream to time out', () => !isOpen(first), CUT_OFF_MS)
  })

  it('the honest node still syncs with an honest peer afterwards', async () => {
    other = await createSyncPeer({ syncOnConnect: false })
    for (let i = 0; i < 10; i++) other.replica.add(fakeEvent(300))
    await connect(honest.node, other.node)
    const stats = await honest.sync.syncWith(other.node.peerId)
    expect(stats.ok).toBe(true)
    expect(honest.replica.ids.size).toBe(20)
    await waitUntil('the other peer to pull too', () => other?.replica.ids.size === 20, 5_000)
  })
})
