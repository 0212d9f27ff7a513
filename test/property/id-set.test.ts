/**
 * The compact id set against a plain model: a sorted array of id strings,
 * string comparisons for bounds, and the fingerprint computed from its
 * definition (SHA-256 of the eight 32-bit lane sums mod 2^32, little-endian,
 * then the count, cut to 16 bytes), which is what the wire shares with older
 * nodes. Random sequences of single adds, bulk adds, removals and snapshots
 * must agree with the model on everything a reader sees, and every snapshot
 * taken along the way must still read the same at the end.
 */
import fc from 'fast-check'
import { sha256 } from '@noble/hashes/sha2.js'
import { describe, expect, it } from 'vitest'
import { END_BOUND, FINGERPRINT_BYTES, IdSet, START_BOUND } from '../../src/sync/reconcile/index.js'
import type { IdSnapshot } from '../../src/sync/reconcile/index.js'
import { seededWords } from '../helpers/random.js'

const BASES = ['0'.repeat(64), 'f'.repeat(64), '7f'.repeat(32), '80'.repeat(32)]
const HEX = '0123456789abcdef'

/**
 * A pool of ids from a seed: most of them copy a random-length prefix of a
 * base id or of an earlier id (so some share their first 32 bits, or all
 * but the last digit), and a few malformed strings, which every call must
 * refuse or ignore.
 */
function pool(seed: number, size: number): string[] {
  const next = seededWords(seed)
  const out: string[] = []
  for (let i = 0; i < size; i++) {
    let id = ''
    for (let w = 0; w < 8; w++) id += next().toString(16).padStart(8, '0')
    const r = next() % 8
    if (r < 3) {
      const base = BASES[next() % BASES.length] as string
      const shared = next() % 65
      id = base.slice(0, shared) + id.slice(shared)
    } else if (r < 5 && out.length > 0) {
      const other = out[next() % out.length] as string
      if (other.length === 64) {
        const shared = 8 + (next() % 57)
        id = other.slice(0, shared) + id.slice(shared)
      }
    }
    out.push(id)
  }
  out.push('A'.repeat(64), `${'0'.repeat(63)}g`, 'abc', '', `${'1'.repeat(64)}0`, 'é'.repeat(64))
  return out
}

const isId = (s: string): boolean => /^[0-9a-f]{64}$/.test(s)

/** The model: a sorted array of distinct valid ids. */
class Model {
  ids: string[] = []

  has(id: string): boolean {
    return this.ids.includes(id)
  }

  add(id: string): 'added' | 'present' | 'invalid' {
    if (!isId(id)) return 'invalid'
    if (this.has(id)) return 'present'
    this.ids = [...this.ids, id].sort()
    return 'added'
  }

  addMany(ids: readonly string[]): { added: number; present: number; invalid: number } {
    let added = 0
    let present = 0
    let invalid = 0
    for (const id of ids) {
      const outcome = this.add(id)
      if (outcome === 'added') added++
      else if (outcome === 'present') present++
      else invalid++
    }
    return { added, present, invalid }
  }

  removeMany(ids: readonly string[]): number {
    const gone = new Set(ids.filter(id => this.has(id)))
    this.ids = this.ids.filter(id => !gone.has(id))
    return gone.size
  }
}

/** First index whose id is at or above the bound, by string order (as the set did before it kept bytes). */
function lowerBound(ids: readonly string[], bound: string): number {
  if (bound === START_BOUND) return 0
  if (bound === END_BOUND) return ids.length
  let i = 0
  while (i < ids.length && (ids[i] as string) < bound) i++
  return i
}

/** The fingerprint of ids[i0..i1), from its definition. */
function fingerprintOf(ids: readonly string[], i0: number, i1: number): Uint8Array {
  const sums = new Array<number>(8).fill(0)
  for (let i = i0; i < i1; i++) {
    for (let l = 0; l < 8; l++)
      sums[l] = ((sums[l] as number) + parseInt((ids[i] as string).slice(8 * l, 8 * l + 8), 16)) % 2 ** 32
  }
  const buf = new Uint8Array(36)
  const view = new DataView(buf.buffer)
  sums.forEach((s, l) => view.setUint32(4 * l, s, true))
  view.setUint32(32, i1 - i0, true)
  return sha256(buf).slice(0, FINGERPRINT_BYTES)
}

/**
 * Bounds to probe: the ends, canonical prefixes of random bytes and of held
 * ids, whole ids, odd-length and non-canonical hex, and a few strings that
 * are not hex at all (placed by string order).
 */
function bounds(ids: readonly string[], next: () => number, count: number): string[] {
  const out = [START_BOUND, END_BOUND, 'g', '0~', 'F']
  for (let i = 0; i < count; i++) {
    const r = next() % 5
    const held = ids.length > 0 ? (ids[next() % ids.length] as string) : 'f'.repeat(64)
    if (r === 0) {
      let b = ''
      const len = 1 + (next() % 32)
      for (let j = 0; j < len; j++)
        b += ((j === len - 1 ? 1 : 0) + (next() % (j === len - 1 ? 255 : 256))).toString(16).padStart(2, '0')
      out.push(b)
    } else if (r === 1) {
      out.push(held.slice(0, 2 * (1 + (next() % 32))))
    } else if (r === 2) {
      out.push(held)
    } else if (r === 3) {
      out.push(held.slice(0, 1 + (next() % 64)))
    } else {
      out.push(held.slice(0, next() % 64) + (HEX[next() % 16] as string))
    }
  }
  return out
}

/** Everything a reader sees of a snapshot, against a sorted copy of the ids it should hold. */
function expectSnapshot(snap: IdSnapshot, ids: readonly string[], next: () => number): void {
  expect(snap.size).toBe(ids.length)
  expect(snap.slice()).toEqual(ids)
  for (let i = 0; i < ids.length; i += 1 + (next() % 7)) expect(snap.idAt(i)).toBe(ids[i])
  expect(() => snap.idAt(ids.length)).toThrow(RangeError)
  if (ids.length > 0) {
    const at = next() % ids.length
    expect(snap.indexOf(ids[at] as string)).toBe(at)
  }
  const bs = bounds(ids, next, 24)
  for (const b of bs) expect(snap.lowerBound(b), `lowerBound(${b})`).toBe(lowerBound(ids, b))
  for (let k = 0; k + 1 < bs.length; k += 2) {
    const [lo, hi] = [bs[k] as string, bs[k + 1] as string]
    const i0 = lowerBound(ids, lo)
    const i1 = Math.max(i0, lowerBound(ids, hi))
    expect(snap.count(lo, hi), `count(${lo}, ${hi})`).toBe(Math.max(0, lowerBound(ids, hi) - i0))
    expect(snap.fingerprint(lo, hi), `fingerprint(${lo}, ${hi})`).toEqual(fingerprintOf(ids, i0, i1))
  }
  // Position ranges of every length: inside one block, across one boundary, over many blocks.
  for (let k = 0; k < 12; k++) {
    const i0 = next() % (ids.length + 1)
    const i1 = i0 + (next() % (ids.length - i0 + 1))
    expect(snap.fingerprintAt(i0, i1), `fingerprintAt(${i0}, ${i1})`).toEqual(fingerprintOf(ids, i0, i1))
  }
  expect(snap.fingerprintAt(0, ids.length)).toEqual(fingerprintOf(ids, 0, ids.length))
}

type Op =
  | { readonly kind: 'add'; readonly pick: number }
  | { readonly kind: 'adds'; readonly from: number; readonly count: number }
  | { readonly kind: 'addMany'; readonly picks: readonly number[]; readonly sorted: boolean }
  | { readonly kind: 'addConcatenated'; readonly picks: readonly number[]; readonly tail: boolean }
  | { readonly kind: 'removeMany'; readonly picks: readonly number[] }
  | { readonly kind: 'snapshot' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('adds' as const), from: fc.nat(), count: fc.integer({ min: 0, max: 300 }) }),
  fc.record({
    kind: fc.constant('addMany' as const),
    picks: fc.array(fc.nat(), { maxLength: 300 }),
    sorted: fc.boolean()
  }),
  fc.record({
    kind: fc.constant('addConcatenated' as const),
    picks: fc.array(fc.nat(), { maxLength: 300 }),
    tail: fc.boolean()
  }),
  fc.record({ kind: fc.constant('removeMany' as const), picks: fc.array(fc.nat(), { maxLength: 120 }) }),
  fc.record({ kind: fc.constant('snapshot' as const) })
)

describe('IdSet against a sorted-array model (property)', () => {
  it('agrees on size, has, outcomes, count, lowerBound, idAt and fingerprints, and keeps every snapshot', () => {
    fc.assert(
      fc.property(fc.integer(), fc.array(opArb, { minLength: 1, maxLength: 25 }), (seed, ops) => {
        const ids = pool(seed, 900)
        const pick = (n: number): string => ids[n % ids.length] as string
        const next = seededWords(seed ^ 0x2545f491)
        const set = new IdSet()
        const model = new Model()
        const held: { snap: IdSnapshot; ids: string[] }[] = []
        for (const op of ops) {
          const version = set.version
          let changed: number
          if (op.kind === 'add') {
            const outcome = set.add(pick(op.pick))
            expect(outcome).toBe(model.add(pick(op.pick)))
            changed = outcome === 'added' ? 1 : 0
          } else if (op.kind === 'adds') {
            changed = 0
            for (let k = 0; k < op.count; k++) {
              const id = pick(op.from + k)
              const outcome = set.add(id)
              expect(outcome).toBe(model.add(id))
              if (outcome === 'added') changed++
            }
          } else if (op.kind === 'addMany') {
            const given = op.picks.map(pick)
            const outcome = set.addMany(op.sorted ? [...given].sort() : given)
            expect(outcome).toEqual(model.addMany(given))
            changed = outcome.added
          } else if (op.kind === 'addConcatenated') {
            // Only 64-character strings keep the stretches aligned; a tail stands for a cut-off last id.
            const given = op.picks.map(pick).filter(id => id.length === 64)
            const outcome = set.addConcatenated(given.join('') + (op.tail ? 'abc' : ''))
            const expected = model.addMany(given)
            expect(outcome).toEqual({ ...expected, invalid: expected.invalid + (op.tail ? 1 : 0) })
            changed = outcome.added
          } else if (op.kind === 'removeMany') {
            const given = op.picks.map(pick)
            changed = set.removeMany(given)
            expect(changed).toBe(model.removeMany(given))
          } else {
            const snap = set.snapshot()
            expect(set.snapshot()).toBe(snap)
            expectSnapshot(snap, model.ids, next)
            held.push({ snap, ids: model.ids })
            changed = 0
          }
          expect(set.version - version).toBe(changed)
          expect(set.size).toBe(model.ids.length)
          for (let k = 0; k < 8; k++) {
            const id = pick(next())
            expect(set.has(id), `has(${id})`).toBe(model.has(id))
          }
        }
        expectSnapshot(set.snapshot(), model.ids, next)
        expect(set.count(START_BOUND, null)).toBe(model.ids.length)
        expect(set.fingerprint(START_BOUND, null)).toEqual(fingerprintOf(model.ids, 0, model.ids.length))
        // Whatever came after, a snapshot reads as it did when it was taken.
        for (const h of held) expectSnapshot(h.snap, h.ids, next)
      }),
      { numRuns: 200 }
    )
  })

  it('builds the same set, to the byte, however the ids arrive', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 0, max: 700 }), fc.integer({ min: 1, max: 50 }), (seed, n, every) => {
        const ids = pool(seed, n).filter(isId)
        const sorted = [...new Set(ids)].sort()
        const oneByOne = new IdSet()
        ids.forEach((id, i) => {
          oneByOne.add(id)
          if (i % every === 0) oneByOne.snapshot()
        })
        const bulk = IdSet.from(sorted)
        const shuffled = IdSet.from([...ids].reverse())
        const expected = fingerprintOf(sorted, 0, sorted.length)
        for (const set of [oneByOne, bulk, shuffled]) {
          expect(set.size).toBe(sorted.length)
          expect(set.snapshot().slice()).toEqual(sorted)
          expect(set.fingerprint(START_BOUND, null)).toEqual(expected)
        }
      }),
      { numRuns: 100 }
    )
  })
})
