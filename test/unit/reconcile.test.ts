import { describe, expect, it } from 'vitest'
import { IdSet } from '../../src/core/id-set.js'
import {
  END_BOUND,
  createReconcileSession,
  decodeReconcileMessage,
  encodeReconcileMessage,
  isEventIdHex,
  reconcileInMemory,
  separatingBound
} from '../../src/sync/reconcile/index.js'
import type { ReconcileOptions, ReconcileSession, WireRange } from '../../src/sync/reconcile/index.js'
import { seededWords } from '../helpers/random.js'
import { TRANSCRIPT_CASES, transcriptDigest } from '../helpers/reconcile-transcripts.js'
import type { EventId } from '../../src/core/events.js'

/** `count` ids from a seed, so every run sees the same ids. */
function randomIds(count: number, seed: number): EventId[] {
  const next = seededWords(seed)
  const out: EventId[] = []
  for (let i = 0; i < count; i++) {
    let id = ''
    for (let w = 0; w < 8; w++) id += next().toString(16).padStart(8, '0')
    out.push(id as EventId)
  }
  return out
}

function setOf(...groups: readonly (readonly string[])[]): IdSet {
  const set = new IdSet()
  for (const group of groups) for (const id of group) set.add(id)
  return set
}

interface Run {
  readonly a: { need: string[]; offer: string[] }
  readonly b: { need: string[]; offer: string[] }
  readonly messages: number
  readonly bytes: number
  readonly largest: number
}

/** Drives a whole exchange, `a` initiating, recording every message. */
function run(a: ReconcileSession, b: ReconcileSession): Run {
  const learnt = {
    a: { need: [] as string[], offer: [] as string[] },
    b: { need: [] as string[], offer: [] as string[] }
  }
  let message: Uint8Array | null = a.initiate()
  let messages = 0
  let bytes = 0
  let largest = 0
  let turn: 'a' | 'b' = 'b'
  while (message !== null) {
    messages++
    bytes += message.length
    largest = Math.max(largest, message.length)
    const step = (turn === 'a' ? a : b).receive(message)
    if ('error' in step) throw new Error(`${turn}: ${step.error}`)
    learnt[turn].need.push(...step.need)
    learnt[turn].offer.push(...step.offer)
    message = step.reply
    turn = turn === 'a' ? 'b' : 'a'
  }
  return { ...learnt, messages, bytes, largest }
}

const sorted = (ids: readonly string[]): string[] => [...ids].sort()

function expectExact(r: Run, onlyA: readonly string[], onlyB: readonly string[]): void {
  expect(sorted(r.a.need)).toEqual(sorted(onlyB))
  expect(sorted(r.a.offer)).toEqual(sorted(onlyA))
  expect(sorted(r.b.need)).toEqual(sorted(onlyA))
  expect(sorted(r.b.offer)).toEqual(sorted(onlyB))
}

const common100k = randomIds(100_000, 1)

describe('IdSet', () => {
  it('adds, dedupes and refuses malformed ids as values', () => {
    const set = new IdSet()
    const [x, y] = randomIds(2, 7) as [EventId, EventId]
    expect(set.add(x)).toBe('added')
    expect(set.add(x)).toBe('present')
    expect(set.add('XYZ')).toBe('invalid')
    expect(set.add(x.toUpperCase())).toBe('invalid')
    expect(set.add(`${x}0`)).toBe('invalid')
    expect(set.has(x)).toBe(true)
    expect(set.has(y)).toBe(false)
    expect(set.size).toBe(1)
    expect(isEventIdHex(y)).toBe(true)
    expect(isEventIdHex('g'.repeat(64))).toBe(false)
  })

  it('keeps snapshots sorted and immutable while ids keep arriving', () => {
    const ids = randomIds(1000, 8)
    const set = setOf(ids.slice(0, 500))
    const first = set.snapshot()
    expect(set.snapshot()).toBe(first)
    for (const id of ids.slice(500)) set.add(id)
    const second = set.snapshot()
    expect(first.size).toBe(500)
    expect(second.size).toBe(1000)
    expect(second.slice()).toEqual(sorted(ids))
    expect(first.slice()).toEqual(sorted(ids.slice(0, 500)))
  })

  it('gives a fingerprint that depends on the set only, and range counts by bound', () => {
    const ids = randomIds(300, 9)
    const oneByOne = new IdSet()
    ids.forEach((id, i) => {
      oneByOne.add(id)
      if (i % 37 === 0) oneByOne.snapshot()
    })
    const atOnce = setOf([...ids].reverse())
    expect(oneByOne.fingerprint('', null)).toEqual(atOnce.fingerprint('', null))
    const s = sorted(ids)
    const lo = separatingBound(s[99] as string, s[100] as string)
    const hi = separatingBound(s[199] as string, s[200] as string)
    expect(atOnce.count('', null)).toBe(300)
    expect(atOnce.count(lo, hi)).toBe(100)
    expect(atOnce.count(lo, null)).toBe(200)
    expect(atOnce.fingerprint(lo, hi)).toEqual(setOf(s.slice(100, 200)).fingerprint('', null))
    expect(atOnce.fingerprint(lo, hi)).not.toEqual(setOf(s.slice(100, 199)).fingerprint('', null))
  })

  it('separates neighbours with the shortest canonical bound', () => {
    const a = `${'ab'.repeat(10)}0f${'0'.repeat(42)}`
    const b = `${'ab'.repeat(10)}10${'0'.repeat(42)}`
    expect(separatingBound(a, b)).toBe(`${'ab'.repeat(10)}10`)
    const z = '0'.repeat(64)
    const one = `${'0'.repeat(63)}1`
    expect(separatingBound(z, one)).toBe(one)
    expect(separatingBound('1'.repeat(64), `2${'0'.repeat(63)}`)).toBe('20')
  })

  it('takes single adds and a snapshot in time that grows with the ids, not their square', () => {
    // Compared within one run rather than against a clock, so that a loaded machine slows both sides alike: 100k
    // ids cost about 5x 20k when an add is O(1) and a snapshot sorts once (n log n); an add that sorted or searched
    // the whole set would cost 25x or more. The best of three runs of each size, to take out a GC pause.
    const timed = (ids: readonly EventId[]): number => {
      let best = Infinity
      for (let run = 0; run < 3; run++) {
        const set = new IdSet()
        const start = performance.now()
        for (const id of ids) set.add(id)
        set.snapshot()
        best = Math.min(best, performance.now() - start)
        expect(set.size).toBe(ids.length)
      }
      return best
    }
    const small = timed(common100k.slice(0, 20_000))
    const large = timed(common100k)
    expect(large / Math.max(small, 1)).toBeLessThan(15)
  })
})

describe('reconciliation', () => {
  it('empty vs empty: one tiny message, nothing learnt', () => {
    const r = run(createReconcileSession(new IdSet()), createReconcileSession(new IdSet()))
    expect(r.messages).toBe(1)
    expect(r.bytes).toBeLessThan(8)
    expectExact(r, [], [])
  })

  it('empty vs 100k (late joiner initiating): ~32 bytes per id, few rounds', () => {
    const joiner = createReconcileSession(new IdSet())
    const full = createReconcileSession(setOf(common100k))
    const r = run(joiner, full)
    expectExact(r, [], common100k)
    expect(r.bytes).toBeLessThan(32 * 100_000 * 1.01)
    expect(r.messages).toBeLessThanOrEqual(10)
    expect(r.largest).toBeLessThanOrEqual(1 << 20)
  })

  it('100k vs empty (full side initiating) works as well', () => {
    const r = run(createReconcileSession(setOf(common100k)), createReconcileSession(new IdSet()))
    expectExact(r, common100k, [])
    expect(r.bytes).toBeLessThan(32 * 100_000 * 1.01)
    expect(r.messages).toBeLessThanOrEqual(10)
  })

  it('empty vs 10k settles in one round trip', () => {
    const ids = randomIds(10_000, 2)
    const r = run(createReconcileSession(new IdSet()), createReconcileSession(setOf(ids)))
    expectExact(r, [], ids)
    expect(r.messages).toBe(2)
    expect(r.bytes).toBeLessThan(32 * 10_000 + 100)
  })

  it('identical 100k: one message of a few hundred bytes', () => {
    const set = setOf(common100k)
    const r = run(createReconcileSession(set), createReconcileSession(setOf(common100k)))
    expectExact(r, [], [])
    expect(r.messages).toBe(1)
    expect(r.bytes).toBeLessThan(1_000)
  })

  it('100k vs 100k differing by 10: a few KB, few rounds, exact differences', () => {
    const [onlyA, onlyB] = [randomIds(5, 3), randomIds(5, 4)]
    const a = createReconcileSession(setOf(common100k, onlyA))
    const b = createReconcileSession(setOf(common100k, onlyB))
    const r = run(a, b)
    expectExact(r, onlyA, onlyB)
    expect(r.bytes).toBeLessThan(20_000)
    expect(r.messages).toBeLessThanOrEqual(8)
    expect(a.stats.bytesSent + b.stats.bytesSent).toBe(r.bytes)
    expect(a.stats.bytesReceived).toBe(b.stats.bytesSent)
    expect(a.stats.messagesSent + b.stats.messagesSent).toBe(r.messages)
  })

  it('costs in proportion to the difference: 1000 differences stay far below the set size', () => {
    const [onlyA, onlyB] = [randomIds(500, 5), randomIds(500, 6)]
    const r = run(createReconcileSession(setOf(common100k, onlyA)), createReconcileSession(setOf(common100k, onlyB)))
    expectExact(r, onlyA, onlyB)
    expect(r.bytes).toBeLessThan(1_000 * 1_000)
  })

  it('stays within maxMessageBytes, continuing over more rounds', () => {
    const ids = randomIds(5_000, 11)
    const options: ReconcileOptions = { maxMessageBytes: 8_192 }
    const r = run(createReconcileSession(new IdSet(), options), createReconcileSession(setOf(ids), options))
    expectExact(r, [], ids)
    expect(r.largest).toBeLessThanOrEqual(8_192)
    expect(r.messages).toBeGreaterThan(2)
  })

  it('is right for the ids present at the start while both sets grow during the exchange', () => {
    const base = randomIds(20_000, 12)
    const [onlyA, onlyB, lateA, lateB] = [randomIds(50, 13), randomIds(50, 14), randomIds(30, 15), randomIds(30, 16)]
    const setA = setOf(base, onlyA)
    const setB = setOf(base, onlyB)
    const a = createReconcileSession(setA)
    const b = createReconcileSession(setB)
    // b gets half of a's extras (say by gossip) and new ids arrive on both sides mid-exchange.
    const learnt = { a: [] as string[], b: [] as string[] }
    let message: Uint8Array | null = a.initiate()
    let turn: 'a' | 'b' = 'b'
    let round = 0
    while (message !== null) {
      round++
      if (round === 2) {
        for (const id of lateA) setA.add(id)
        for (const id of lateB) setB.add(id)
        for (const id of onlyA.slice(0, 25)) setB.add(id)
      }
      const step = (turn === 'a' ? a : b).receive(message)
      if ('error' in step) throw new Error(step.error)
      learnt[turn].push(...step.need)
      message = step.reply
      turn = turn === 'a' ? 'b' : 'a'
    }
    expect(sorted(learnt.a)).toEqual(sorted(onlyB))
    // b does not ask for what reached it meanwhile.
    expect(sorted(learnt.b)).toEqual(sorted(onlyA.slice(25)))
  })

  it('interoperates across different branching and leaf settings', () => {
    const base = randomIds(3_000, 17)
    const [onlyA, onlyB] = [randomIds(40, 18), randomIds(40, 19)]
    const r = run(
      createReconcileSession(setOf(base, onlyA), { branching: 3, maxIdsPerLeaf: 2 }),
      createReconcileSession(setOf(base, onlyB), { branching: 40, maxIdsPerLeaf: 100 })
    )
    expectExact(r, onlyA, onlyB)
  })

  it('works through the in-memory driver used by the simulator', () => {
    const base = randomIds(1_000, 20)
    const [onlyA, onlyB] = [randomIds(3, 21), randomIds(4, 22)]
    const r = reconcileInMemory(createReconcileSession(setOf(base, onlyA)), createReconcileSession(setOf(base, onlyB)))
    if ('error' in r) throw new Error(r.error)
    expect(sorted(r.a.need)).toEqual(sorted(onlyB))
    expect(sorted(r.b.need)).toEqual(sorted(onlyA))
    expect(sorted(r.a.offer)).toEqual(sorted(onlyA))
    expect(sorted(r.b.offer)).toEqual(sorted(onlyB))
  })
})

describe('wire format', () => {
  const ids = sorted(randomIds(40, 23))

  it('round-trips every range mode', () => {
    const ranges: WireRange[] = [
      { mode: 'skip', hi: separatingBound(ids[0] as string, ids[1] as string) },
      { mode: 'ids', hi: separatingBound(ids[4] as string, ids[5] as string), ids: ids.slice(1, 5) },
      {
        mode: 'fingerprint',
        hi: separatingBound(ids[9] as string, ids[10] as string),
        fingerprint: new Uint8Array(16).fill(7)
      },
      {
        mode: 'diff',
        hi: separatingBound(ids[19] as string, ids[20] as string),
        extras: ids.slice(10, 13),
        missing: [0, 5, 6, 300]
      },
      { mode: 'pending', hi: END_BOUND }
    ]
    expect(decodeReconcileMessage(encodeReconcileMessage(ranges))).toEqual(ranges)
  })

  const bad: readonly [string, number[]][] = [
    ['empty message', []],
    ['unknown version', [2, 0, 0]],
    ['unknown mode', [1, 0, 9]],
    ['missing mode', [1, 0]],
    ['absurd id count', [1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0x0f]],
    ['absurd missing count', [1, 0, 3, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]],
    ['over-long varint', [1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0]],
    ['non-minimal varint', [1, 0x80, 0x00, 0]],
    ['bound too long', [1, 34, ...new Array<number>(33).fill(1), 0]],
    ['zero-length bound', [1, 1, 0]],
    ['non-canonical bound', [1, 3, 0xab, 0x00, 0]],
    ['truncated bound', [1, 5, 0xab]],
    ['bounds not ascending', [1, 2, 0xab, 0, 2, 0xaa, 0]],
    ['equal bounds', [1, 2, 0xab, 0, 2, 0xab, 0]],
    ['bytes after the end', [1, 0, 0, 2, 0xab, 0]],
    ['truncated fingerprint', [1, 0, 1, 1, 2, 3]],
    ['truncated id list', [1, 0, 2, 1, ...new Array<number>(31).fill(5)]],
    ['ids above their range', [1, 2, 0x10, 2, 1, ...new Array<number>(32).fill(0x20)]],
    ['ids below their range', [1, 2, 0x10, 0, 2, 0x30, 2, 1, ...new Array<number>(32).fill(0x05)]],
    ['ids not ascending', [1, 0, 2, 2, ...new Array<number>(32).fill(9), ...new Array<number>(32).fill(8)]],
    ['duplicate ids', [1, 0, 2, 2, ...new Array<number>(64).fill(9)]],
    ['truncated missing positions', [1, 0, 3, 0, 3, 1]]
  ]

  for (const [what, bytes] of bad) {
    it(`refuses a message with ${what} as a value`, () => {
      const session = createReconcileSession(setOf(ids))
      const step = session.receive(Uint8Array.from(bytes))
      expect(step).toHaveProperty('error')
      expect(session.error).not.toBeNull()
      // A failed session stays failed.
      expect(session.receive(encodeReconcileMessage([{ mode: 'pending', hi: END_BOUND }]))).toHaveProperty('error')
    })
  }

  it('refuses a diff naming positions beyond our ids', () => {
    const session = createReconcileSession(setOf(ids.slice(0, 3)))
    const step = session.receive(encodeReconcileMessage([{ mode: 'diff', hi: END_BOUND, extras: [], missing: [3] }]))
    expect(step).toHaveProperty('error')
  })

  it('refuses an oversized message', () => {
    const session = createReconcileSession(new IdSet(), { maxMessageBytes: 4_096 })
    const big = encodeReconcileMessage([{ mode: 'ids', hi: END_BOUND, ids: sorted(randomIds(200, 24)) }])
    expect(session.receive(big)).toHaveProperty('error')
  })

  it('never throws on truncated or random bytes', () => {
    const full = setOf(randomIds(500, 25))
    const openers = [
      createReconcileSession(full).initiate(),
      createReconcileSession(setOf(ids.slice(0, 10))).initiate()
    ]
    for (const opener of openers) {
      for (let cut = 0; cut < opener.length; cut++) {
        const step = createReconcileSession(full).receive(opener.subarray(0, cut))
        expect(typeof step).toBe('object')
      }
    }
    // Cut inside an id list: always an error.
    const list = openers[1] as Uint8Array
    expect(createReconcileSession(full).receive(list.subarray(0, list.length - 1))).toHaveProperty('error')
    const next = seededWords(26)
    for (let i = 0; i < 2_000; i++) {
      const bytes = new Uint8Array(next() % 200)
      for (let j = 0; j < bytes.length; j++) bytes[j] = next() & 0xff
      if (i % 2 === 0 && bytes.length > 0) bytes[0] = 1
      const step = createReconcileSession(full).receive(bytes)
      expect(typeof step).toBe('object')
    }
  })

  it('gives up after maxRounds against a peer that never settles', () => {
    const session = createReconcileSession(setOf(randomIds(100, 27)), { maxRounds: 20 })
    const stall = encodeReconcileMessage([{ mode: 'pending', hi: END_BOUND }])
    let rounds = 0
    let step = session.receive(stall)
    while (!('error' in step)) {
      expect(step.reply).not.toBeNull()
      rounds++
      step = session.receive(stall)
    }
    expect(rounds).toBe(20)
    expect(step.error).toMatch(/more than 20 messages/)
  })

  it('refuses messages after it has finished', () => {
    const a = createReconcileSession(new IdSet())
    const b = createReconcileSession(new IdSet())
    const step = b.receive(a.initiate())
    expect(step).toEqual({ reply: null, need: [], offer: [] })
    expect(b.done).toBe(true)
    expect(b.receive(a.initiate())).toHaveProperty('error')
  })
})

/**
 * Digests of whole exchanges as protocol-1 nodes ran them, before the id set
 * kept its ids as bytes (computed with that code): the same sets must give
 * the same messages, byte for byte, and the same needs and offers.
 */
const PROTOCOL_1_TRANSCRIPTS: Record<string, string> = {
  'equal sets': '1f3444a9395e9607132223baf61e8c35619bbcfb8a6233c096d5b9889d075016',
  'few differences': 'e6c02dbec5dfc249e211bf14bfa6ee17d916d13772347f2f9374291561736ef5',
  clustered: '5a0f59aa355ecffc7099a0a43cb7b1fccb856adc1f4ddadd5a5475e9709a3a08',
  'small shaping': '37658f29c0e9e82358d4c7460a11a5e4b093121002bd5b29d98351f3f75ab1d2',
  'newcomer, tight': 'ec310b462bcd1a18921056360dd0e6305661f6d9deef9e40fa335d6ee895c323',
  'newcomer answers': 'b0a0ace2e07310d7278e2ac29d7b2eaf5a71febda652785ced9c2c7b49b8f23a',
  'disjoint, tight': '7664906edf597076cb22a03dd185a78ce4c6527286824ff78a163156d3384f99',
  tiny: 'b8feb2b2e46276a121acefac30a1e8e1ed675d402fb74b0fa1732f4c837da728'
}

describe('reconciliation on the wire', () => {
  it.each(TRANSCRIPT_CASES.map(c => [c.name, c] as const))('%s: the same bytes as protocol-1 nodes send', (name, c) => {
    expect(transcriptDigest(c)).toBe(PROTOCOL_1_TRANSCRIPTS[name])
  })
})
