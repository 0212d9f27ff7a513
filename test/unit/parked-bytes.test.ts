/**
 * Parked events are capped in bytes as well as in number
 * (src/core/parked-events.ts): events that wait for deps nobody sends cannot
 * hold more than MAX_PARKED_BYTES, the oldest going first, as with the count
 * cap; and eventBytes estimates an event's encoded size closely enough to
 * cap by.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { EventSet } from '../../src/core/event-set.js'
import { ParkedEvents, eventBytes, MAX_PARKED_BYTES } from '../../src/core/parked-events.js'
import { signEventSync } from '../../src/wire/sign.js'
import { makeEvent, makePeers, subgoals } from '../helpers/plan-builder.js'
import type { EventId, PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { Rec } from '../../src/core/id-records.js'
import type { PrivateKey } from '@libp2p/interface'

let author: { id: PeerIdString; key: PrivateKey }

beforeAll(async () => {
  author = (await makePeers(1))[0] as { id: PeerIdString; key: PrivateKey }
})

const fakeId = (i: number): EventId => i.toString(16).padStart(64, 'f') as EventId

/** A proposal of about `chars` characters of rationale, waiting for a dep nobody has. */
function waiting(i: number, rationale: string): PlanEvent {
  return makeEvent({
    type: 'split-proposed',
    plan: fakeId(1),
    author: author.id,
    hlc: { ms: 1_000 + i, c: 0 },
    deps: [fakeId(1), fakeId(1_000_000 + i)],
    body: {
      node: fakeId(1) as never,
      attempt: 1,
      subgoals: subgoals(['a', 'b']),
      rationale,
      usage: { inputTokens: 0, outputTokens: 0 }
    }
  })
}

describe('eventBytes', () => {
  it('is within a few percent of the signed wire size, never far below it', () => {
    for (const rationale of ['short', 'x'.repeat(4_000), '€'.repeat(4_000), '😀'.repeat(2_000)]) {
      const e = waiting(0, rationale)
      const wire = signEventSync(e.env, author.key).bytes.length
      const est = eventBytes(e)
      expect(est).toBeGreaterThanOrEqual(wire * 0.95)
      expect(est).toBeLessThanOrEqual(wire * 1.1 + 400)
    }
  })
})

/** eventBytes as first written (Object.entries, every string's units counted one by one): the definition. */
function referenceBytes(e: PlanEvent): number {
  const utf8 = (s: string): number => {
    let n = s.length
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1
    }
    return n
  }
  const value = (v: unknown): number => {
    if (typeof v === 'string') return 2 + utf8(v)
    if (typeof v === 'number') return 9
    if (v === null || typeof v === 'boolean' || v === undefined) return 1
    if (Array.isArray(v)) return v.reduce((n: number, x) => n + value(x), 3)
    if (typeof v === 'object') return Object.entries(v).reduce((n, [k, x]) => n + 1 + k.length + value(x), 3)
    return 1
  }
  return 128 + e.id.length + value(e.env)
}

describe('eventBytes counts as its definition does', () => {
  it('for every string, ASCII or not (lone surrogates, pairs, each UTF-8 length)', () => {
    const edges = [
      '',
      'a',
      '\x7f',
      '\x80',
      '\u07ff',
      '\u0800',
      '\ud7ff',
      '\ud800',
      '\udfff',
      '\ue000',
      '\uffff',
      '😀',
      'a😀\ud800b'
    ]
    for (const rationale of edges) expect(eventBytes(waiting(0, rationale))).toBe(referenceBytes(waiting(0, rationale)))
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary-ascii' }), (rationale, title) => {
        const e = waiting(0, rationale)
        const withTitle: PlanEvent = {
          id: e.id,
          env: { ...e.env, body: { ...(e.env.body as object), subgoals: subgoals([title, rationale]) } } as never
        }
        expect(eventBytes(e)).toBe(referenceBytes(e))
        expect(eventBytes(withTitle)).toBe(referenceBytes(withTitle))
      }),
      { numRuns: 500 }
    )
  })

  it('for inherited keys, which it leaves out as Object.entries does', () => {
    const e = waiting(0, 'x')
    const body = Object.create({ inherited: 'y'.repeat(100) }) as Record<string, unknown>
    Object.assign(body, e.env.body)
    const odd: PlanEvent = { id: e.id, env: { ...e.env, body } as PlanEvent['env'] }
    expect(eventBytes(odd)).toBe(referenceBytes(odd))
    expect(eventBytes(odd)).toBe(eventBytes(e))
  })
})

describe('parked events capped in bytes', () => {
  it('drop the oldest once their bytes pass the cap, and count what they hold', () => {
    const known = new Map<EventId, PlanEvent | Rec>()
    const one = eventBytes(waiting(0, 'x'.repeat(1_000)))
    const parked = new ParkedEvents(known, 1_000, one * 5)
    for (let i = 0; i < 12; i++) {
      const e = waiting(i, 'x'.repeat(1_000))
      const refs = e.env.deps.map(d => known.get(d) ?? parked.recordFor(d))
      parked.park(e, undefined, refs, 0, 'missing-deps', refs.length)
    }
    expect(parked.count).toBe(5)
    expect(parked.bytes).toBe(one * 5)
    // The newest five, oldest first.
    expect(parked.snapshot().map(s => s.event.env.hlc.ms)).toEqual([1_007, 1_008, 1_009, 1_010, 1_011])
    for (const s of parked.snapshot()) parked.unpark(parked.recOf(s.event.id) as Rec)
    expect(parked.count).toBe(0)
    expect(parked.bytes).toBe(0)
    // Nothing is left of the dropped events' records either.
    expect(known.size).toBe(0)
  })

  it(`hold at most MAX_PARKED_BYTES (${MAX_PARKED_BYTES / (1 << 20)} MiB) in an event set, whatever the count cap`, () => {
    const set = new EventSet({ maxParked: 100_000 })
    const big = '€'.repeat(20_000)
    const size = eventBytes(waiting(0, big))
    expect(size).toBeGreaterThan(59_000)
    const n = Math.ceil((MAX_PARKED_BYTES * 1.5) / size)
    // The core takes verified events and never rehashes them: a made-up id saves hashing 90 MB.
    const proto = waiting(0, big)
    const at = (i: number): PlanEvent => ({
      id: fakeId(2_000_000 + i),
      env: { ...proto.env, hlc: { ms: 1_000 + i, c: 0 }, deps: [fakeId(1), fakeId(1_000_000 + i)] }
    })
    for (let i = 0; i < n; i++) expect(set.add(at(i), 10_000).status).toBe('parked')
    expect(set.parkedCount).toBe(Math.floor(MAX_PARKED_BYTES / size))
    expect(set.parkedCount * size).toBeLessThanOrEqual(MAX_PARKED_BYTES)
    // The newest stay.
    const ids = set.parkedEvents().map(p => p.id)
    expect(ids[0]).toBe(fakeId(2_000_000 + n - set.parkedCount))
    expect(ids.at(-1)).toBe(fakeId(2_000_000 + n - 1))
  })
})
