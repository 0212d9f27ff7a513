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
import { describe, expect, it } from 'vitest'
import { IdSet } from '../../src/core/id-set.js'
import { START_BOUND } from '../../src/sync/reconcile/index.js'
import type { IdSnapshot } from '../../src/sync/reconcile/index.js'
import { seededWords } from '../helpers/random.js'
import { Model, expectRanges, fingerprintOf, isId, lowerBound, bounds, pool } from '../helpers/id-model.js'

/** Everything a reader sees of a snapshot, against a sorted copy of the ids it should hold. */
function expectSnapshot(snap: IdSnapshot, ids: readonly string[], next: () => number): void {
  expectRanges(snap, ids, next)
  if (ids.length > 0) {
    const at = next() % ids.length
    expect(snap.indexOf(ids[at] as string)).toBe(at)
  }
  const bs = bounds(ids, next, 24)
  for (let k = 0; k + 1 < bs.length; k += 2) {
    const [lo, hi] = [bs[k] as string, bs[k + 1] as string]
    const i0 = lowerBound(ids, lo)
    const i1 = Math.max(i0, lowerBound(ids, hi))
    expect(snap.count(lo, hi), `count(${lo}, ${hi})`).toBe(Math.max(0, lowerBound(ids, hi) - i0))
    expect(snap.fingerprint(lo, hi), `fingerprint(${lo}, ${hi})`).toEqual(fingerprintOf(ids, i0, i1))
  }
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
          // The whole set's fingerprint, read with ids still pending (it is summed without a merge).
          expect(set.fingerprint(START_BOUND, null)).toEqual(fingerprintOf(model.ids, 0, model.ids.length))
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
