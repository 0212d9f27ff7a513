import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { IdSet } from '../../src/core/id-set.js'
import { createReconcileSession } from '../../src/sync/reconcile/index.js'
import { seededWords } from '../helpers/random.js'
import type { ReconcileOptions, ReconcileSession } from '../../src/sync/reconcile/index.js'

const BASES = ['0'.repeat(64), 'f'.repeat(64), '7f'.repeat(32), '80'.repeat(32)]

/**
 * Random 64-hex ids. With `clustered`, most ids copy a random-length prefix of
 * one of a few base ids (down to all but the last digit), so neighbours share
 * long prefixes and range bounds get long; the bases themselves sit at the
 * edges and the middle of the id space. The seed is one fast-check picks (and reports on failure).
 */
function idSource(seed: number, clustered: boolean): () => string {
  const next = seededWords(seed)
  return () => {
    let id = ''
    for (let w = 0; w < 8; w++) id += next().toString(16).padStart(8, '0')
    if (clustered && next() % 4 !== 0) {
      const base = BASES[next() % BASES.length] as string
      const shared = next() % 65
      id = base.slice(0, shared) + id.slice(shared)
    }
    return id
  }
}

interface Scenario {
  readonly common: string[]
  readonly onlyA: string[]
  readonly onlyB: string[]
}

function scenario(seed: number, clustered: boolean, common: number, onlyA: number, onlyB: number): Scenario {
  const next = idSource(seed, clustered)
  const seen = new Set<string>()
  const take = (count: number): string[] => {
    const out: string[] = []
    for (let i = 0; i < count * 4 && out.length < count; i++) {
      const id = next()
      if (!seen.has(id)) {
        seen.add(id)
        out.push(id)
      }
    }
    return out
  }
  return { common: take(common), onlyA: take(onlyA), onlyB: take(onlyB) }
}

function setOf(...groups: readonly (readonly string[])[]): IdSet {
  const set = new IdSet()
  for (const group of groups) for (const id of group) set.add(id)
  return set
}

interface Learnt {
  need: string[]
  offer: string[]
}

interface Run {
  readonly a: Learnt
  readonly b: Learnt
  readonly messages: number
  readonly bytes: number
  readonly largest: number
}

/** Runs an exchange (`first` initiating); `between` may change the sets before each receive. */
function exchange(
  a: ReconcileSession,
  b: ReconcileSession,
  aFirst: boolean,
  between?: (round: number) => void
): Run | { error: string } {
  const learnt = { a: { need: [], offer: [] } as Learnt, b: { need: [], offer: [] } as Learnt }
  let turn: 'a' | 'b' = aFirst ? 'b' : 'a'
  let message: Uint8Array | null = (aFirst ? a : b).initiate()
  let messages = 0
  let bytes = 0
  let largest = 0
  while (message !== null) {
    messages++
    bytes += message.length
    largest = Math.max(largest, message.length)
    between?.(messages)
    const step = (turn === 'a' ? a : b).receive(message)
    if ('error' in step) return { error: `${turn}: ${step.error}` }
    learnt[turn].need.push(...step.need)
    learnt[turn].offer.push(...step.offer)
    message = step.reply
    turn = turn === 'a' ? 'b' : 'a'
  }
  return { ...learnt, messages, bytes, largest }
}

const sorted = (ids: readonly string[]): string[] => [...ids].sort()

/** Splits one side makes before it lists a range: the least s with ceil(n / b^s) <= leaf. */
function splits(n: number, branching: number, leaf: number): number {
  let s = 0
  let count = n
  while (count > leaf) {
    count = Math.ceil(count / branching)
    s++
  }
  return s
}

const shapingArb = fc.record({
  branching: fc.integer({ min: 2, max: 16 }),
  maxIdsPerLeaf: fc.integer({ min: 1, max: 16 })
})

/** Both sides must share maxMessageBytes; small budgets force partial replies and "pending" ranges (below 512 B they are raised to 512). */
const budgetArb = fc.oneof(fc.constant(1 << 20), fc.integer({ min: 300, max: 4_000 }))

const optionsArb: fc.Arbitrary<ReconcileOptions> = fc
  .tuple(shapingArb, budgetArb)
  .map(([shaping, maxMessageBytes]) => ({ ...shaping, maxMessageBytes }))

const shapeArb = fc.oneof(
  // heavy overlap
  fc.record({
    common: fc.integer({ min: 0, max: 60 }),
    onlyA: fc.integer({ min: 0, max: 4 }),
    onlyB: fc.integer({ min: 0, max: 4 })
  }),
  // partial overlap
  fc.record({
    common: fc.integer({ min: 0, max: 30 }),
    onlyA: fc.integer({ min: 0, max: 30 }),
    onlyB: fc.integer({ min: 0, max: 30 })
  }),
  // disjoint
  fc.record({ common: fc.constant(0), onlyA: fc.integer({ min: 0, max: 40 }), onlyB: fc.integer({ min: 0, max: 40 }) }),
  // one side a subset of the other
  fc.record({ common: fc.integer({ min: 0, max: 40 }), onlyA: fc.constant(0), onlyB: fc.integer({ min: 0, max: 40 }) })
)

describe('reconciliation (property)', () => {
  it('need and offer are exactly the set differences, for arbitrary small sets and options', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.boolean(),
        shapeArb,
        shapingArb,
        shapingArb,
        budgetArb,
        fc.boolean(),
        (seed, clustered, shape, shapingA, shapingB, maxMessageBytes, aFirst) => {
          const s = scenario(seed, clustered, shape.common, shape.onlyA, shape.onlyB)
          const a = createReconcileSession(setOf(s.common, s.onlyA), { ...shapingA, maxMessageBytes })
          const b = createReconcileSession(setOf(s.common, s.onlyB), { ...shapingB, maxMessageBytes })
          const r = exchange(a, b, aFirst)
          if ('error' in r) throw new Error(r.error)
          expect(sorted(r.a.need)).toEqual(sorted(s.onlyB))
          expect(sorted(r.a.offer)).toEqual(sorted(s.onlyA))
          expect(sorted(r.b.need)).toEqual(sorted(s.onlyA))
          expect(sorted(r.b.offer)).toEqual(sorted(s.onlyB))
          // Neither side ever sends more than it (or its peer) allows.
          expect(r.largest).toBeLessThanOrEqual(Math.max(512, maxMessageBytes))
        }
      ),
      { numRuns: 1_500 }
    )
  })

  it('takes at most splits(nA) + splits(nB) + 2 messages when no reply is cut short', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.boolean(),
        shapeArb,
        fc.integer({ min: 2, max: 16 }),
        fc.integer({ min: 1, max: 16 }),
        fc.boolean(),
        (seed, clustered, shape, branching, maxIdsPerLeaf, aFirst) => {
          const s = scenario(seed, clustered, shape.common * 20, shape.onlyA, shape.onlyB)
          const options = { branching, maxIdsPerLeaf }
          const setA = setOf(s.common, s.onlyA)
          const setB = setOf(s.common, s.onlyB)
          const r = exchange(createReconcileSession(setA, options), createReconcileSession(setB, options), aFirst)
          if ('error' in r) throw new Error(r.error)
          expect(r.messages).toBeLessThanOrEqual(
            splits(setA.size, branching, maxIdsPerLeaf) + splits(setB.size, branching, maxIdsPerLeaf) + 2
          )
        }
      ),
      { numRuns: 300 }
    )
  })

  it('stays right for the ids present at the start while ids keep arriving on both sides', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.boolean(),
        shapeArb,
        optionsArb,
        fc.boolean(),
        fc.array(
          fc.record({
            round: fc.integer({ min: 1, max: 8 }),
            side: fc.constantFrom('a', 'b'),
            what: fc.constantFrom('fresh', 'other')
          }),
          { maxLength: 20 }
        ),
        (seed, clustered, shape, options, aFirst, arrivals) => {
          const s = scenario(seed, clustered, shape.common, shape.onlyA, shape.onlyB)
          const fresh = idSource(seed ^ 0x5bd1e995, false)
          const setA = setOf(s.common, s.onlyA)
          const setB = setOf(s.common, s.onlyB)
          const a = createReconcileSession(setA, options)
          const b = createReconcileSession(setB, options)
          let k = 0
          const r = exchange(a, b, aFirst, round => {
            for (const arrival of arrivals) {
              if (arrival.round !== round) continue
              const [to, from] = arrival.side === 'a' ? [setA, s.onlyB] : [setB, s.onlyA]
              // Either a brand-new id, or one of the other side's extras arriving by gossip.
              to.add(arrival.what === 'fresh' || from.length === 0 ? fresh() : (from[k++ % from.length] as string))
            }
          })
          if ('error' in r) throw new Error(r.error)
          const startA = new Set([...s.common, ...s.onlyA])
          const startB = new Set([...s.common, ...s.onlyB])
          // Needs: only the peer's start extras, and all of them except those that arrived meanwhile.
          for (const id of r.a.need) expect(startB.has(id) && !startA.has(id)).toBe(true)
          for (const id of r.b.need) expect(startA.has(id) && !startB.has(id)).toBe(true)
          for (const id of s.onlyB) expect(r.a.need.includes(id) || setA.has(id)).toBe(true)
          for (const id of s.onlyA) expect(r.b.need.includes(id) || setB.has(id)).toBe(true)
          // Offers: exactly our start extras.
          expect(sorted(r.a.offer)).toEqual(sorted(s.onlyA))
          expect(sorted(r.b.offer)).toEqual(sorted(s.onlyB))
        }
      ),
      { numRuns: 1_000 }
    )
  })

  it('reconciles its starting snapshots while ids are removed on both sides: same messages, same results', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.boolean(),
        shapeArb,
        optionsArb,
        fc.boolean(),
        fc.array(
          fc.record({
            round: fc.integer({ min: 1, max: 8 }),
            side: fc.constantFrom('a', 'b'),
            count: fc.integer({ min: 1, max: 20 }),
            from: fc.nat()
          }),
          { maxLength: 10 }
        ),
        (seed, clustered, shape, options, aFirst, removals) => {
          const s = scenario(seed, clustered, shape.common, shape.onlyA, shape.onlyB)
          const quiet = exchange(
            createReconcileSession(setOf(s.common, s.onlyA), options),
            createReconcileSession(setOf(s.common, s.onlyB), options),
            aFirst
          )
          const setA = setOf(s.common, s.onlyA)
          const setB = setOf(s.common, s.onlyB)
          const a = createReconcileSession(setA, options)
          const b = createReconcileSession(setB, options)
          const held = { a: [...s.common, ...s.onlyA], b: [...s.common, ...s.onlyB] }
          const r = exchange(a, b, aFirst, round => {
            for (const removal of removals) {
              if (removal.round !== round) continue
              const ids = held[removal.side]
              const gone: string[] = []
              for (let k = 0; k < Math.min(removal.count, ids.length); k++)
                gone.push(ids[(removal.from + k) % ids.length] as string)
              const target = removal.side === 'a' ? setA : setB
              target.removeMany(gone)
            }
          })
          // Removals after the start change nothing the sessions say or learn: they work on their snapshots.
          expect(r).toEqual(quiet)
        }
      ),
      { numRuns: 300 }
    )
  })

  it('medium sets: exact differences at a cost that follows the difference', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.boolean(),
        fc.integer({ min: 0, max: 3_000 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 0, max: 20 }),
        fc.boolean(),
        (seed, clustered, common, onlyA, onlyB, aFirst) => {
          const s = scenario(seed, clustered, common, onlyA, onlyB)
          const r = exchange(
            createReconcileSession(setOf(s.common, s.onlyA)),
            createReconcileSession(setOf(s.common, s.onlyB)),
            aFirst
          )
          if ('error' in r) throw new Error(r.error)
          expect(sorted(r.a.need)).toEqual(sorted(s.onlyB))
          expect(sorted(r.b.need)).toEqual(sorted(s.onlyA))
          expect(sorted(r.a.offer)).toEqual(sorted(s.onlyA))
          expect(sorted(r.b.offer)).toEqual(sorted(s.onlyB))
          const d = s.onlyA.length + s.onlyB.length
          expect(r.bytes).toBeLessThanOrEqual(600 + 1_500 * d)
        }
      ),
      { numRuns: 60 }
    )
  })

  it('large sets: a few runs of up to 60k ids', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: 20_000, max: 60_000 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 50 }),
        fc.boolean(),
        (seed, common, onlyA, onlyB, aFirst) => {
          const s = scenario(seed, false, common, onlyA, onlyB)
          const r = exchange(
            createReconcileSession(setOf(s.common, s.onlyA)),
            createReconcileSession(setOf(s.common, s.onlyB)),
            aFirst
          )
          if ('error' in r) throw new Error(r.error)
          expect(sorted(r.a.need)).toEqual(sorted(s.onlyB))
          expect(sorted(r.b.need)).toEqual(sorted(s.onlyA))
          expect(sorted(r.a.offer)).toEqual(sorted(s.onlyA))
          expect(sorted(r.b.offer)).toEqual(sorted(s.onlyB))
          const d = s.onlyA.length + s.onlyB.length
          expect(r.bytes).toBeLessThanOrEqual(600 + 1_500 * d)
          expect(r.messages).toBeLessThanOrEqual(8)
        }
      ),
      { numRuns: 4 }
    )
  })
})
