/**
 * The id set's own API beyond what reconciliation reads: bulk loading,
 * removal, snapshots that outlive both, and the single-add path once it
 * merges by itself. (test/property/id-set.test.ts checks all of it against a
 * sorted-array model; test/unit/reconcile.test.ts the basics.)
 */
import { describe, expect, it } from 'vitest'
import { idBytesOf } from '../../src/wire/id-bytes.js'
import { IdSet } from '../../src/core/id-set.js'
import { seededWords } from '../helpers/random.js'

function randomIds(count: number, seed: number): string[] {
  const next = seededWords(seed)
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    let id = ''
    for (let w = 0; w < 8; w++) id += next().toString(16).padStart(8, '0')
    out.push(id)
  }
  return out
}

const sorted = (ids: readonly string[]): string[] => [...ids].sort()

describe('IdSet bulk loading', () => {
  it('counts what addMany added, found present and refused, from an array or any iterable', () => {
    const ids = randomIds(3_000, 1)
    const set = new IdSet()
    set.add(ids[0] as string) // pending
    set.addMany(ids.slice(1, 10))
    set.snapshot()
    set.add(ids[10] as string) // pending again
    const given = [...ids.slice(0, 20), ids[15] as string, 'XYZ', (ids[30] as string).toUpperCase()]
    expect(set.addMany(given)).toEqual({ added: 9, present: 12, invalid: 2 })
    function* rest(): Generator<string> {
      yield* ids.slice(20)
    }
    expect(set.addMany(rest())).toEqual({ added: 2_980, present: 0, invalid: 0 })
    expect(set.size).toBe(3_000)
    expect(set.snapshot().slice()).toEqual(sorted(ids))
    expect(set.addMany([])).toEqual({ added: 0, present: 0, invalid: 0 })
  })

  it('loads ids written back to back, as group_concat gives them', () => {
    const ids = randomIds(2_000, 9)
    const set = new IdSet()
    set.add(ids[0] as string)
    const hex = sorted(ids).join('') + 'G'.repeat(64) + '12'
    expect(set.addConcatenated(hex)).toEqual({ added: 1_999, present: 1, invalid: 2 })
    expect(set.snapshot().slice()).toEqual(sorted(ids))
    expect(set.fingerprint('', null)).toEqual(IdSet.from(ids).fingerprint('', null))
    expect(new IdSet().addConcatenated('')).toEqual({ added: 0, present: 0, invalid: 0 })
  })

  it('loads ids as 32 bytes each, as a store gives them, beside ids added one by one', () => {
    const ids = randomIds(2_000, 10)
    const set = new IdSet()
    set.add(ids[0] as string)
    set.add(ids[1] as string)
    const bytes = idBytesOf([...sorted(ids), 'f'.repeat(64)])
    const withTail = new Uint8Array(bytes.length + 5)
    withTail.set(bytes)
    expect(set.addBytes(withTail)).toEqual({ added: 1_999, present: 2, invalid: 1 })
    expect(set.snapshot().slice()).toEqual(sorted([...ids, 'f'.repeat(64)]))
    expect(set.fingerprint('', null)).toEqual(IdSet.from([...ids, 'f'.repeat(64)]).fingerprint('', null))
    expect(new IdSet().addBytes(new Uint8Array(0))).toEqual({ added: 0, present: 0, invalid: 0 })
  })

  it('gives the same snapshot from sorted, shuffled and one-by-one input', () => {
    const ids = randomIds(5_000, 2)
    const fromSorted = IdSet.from(sorted(ids))
    const fromShuffled = IdSet.from(ids)
    const oneByOne = new IdSet()
    for (const id of ids) oneByOne.add(id)
    for (const set of [fromShuffled, oneByOne]) {
      expect(set.snapshot().slice()).toEqual(fromSorted.snapshot().slice())
      expect(set.fingerprint('', null)).toEqual(fromSorted.fingerprint('', null))
      expect(set.fingerprint('4a', 'c0')).toEqual(fromSorted.fingerprint('4a', 'c0'))
    }
  })

  it('single adds past the pending limit merge by themselves and lose nothing', () => {
    const ids = randomIds(70_000, 3)
    const set = new IdSet()
    // Counted, not expected one by one: 70k expect calls would take longer than the adds.
    expect(ids.filter(id => set.add(id) === 'added').length).toBe(70_000)
    expect(ids.slice(0, 1_000).filter(id => set.add(id) === 'present').length).toBe(1_000)
    expect(set.size).toBe(70_000)
    expect(ids.every(id => set.has(id))).toBe(true)
    expect(set.fingerprint('', null)).toEqual(IdSet.from(ids).fingerprint('', null))
  })
})

describe('IdSet removal', () => {
  it('removes held ids, ignores the rest, and says how many went', () => {
    const ids = randomIds(500, 4)
    const set = IdSet.from(ids.slice(0, 400))
    for (const id of ids.slice(400)) set.add(id) // 100 still pending
    const version = set.version
    const gone = [ids[3] as string, ids[3] as string, ids[450] as string, 'nope', randomIds(1, 99)[0] as string]
    expect(set.removeMany(gone)).toBe(2)
    expect(set.version).toBe(version + 2)
    expect(set.size).toBe(498)
    expect(set.has(ids[3] as string)).toBe(false)
    expect(set.has(ids[450] as string)).toBe(false)
    expect(set.has(ids[4] as string)).toBe(true)
    expect(set.removeMany(gone)).toBe(0)
    expect(set.version).toBe(version + 2)
    const rest = ids.filter((_, i) => i !== 3 && i !== 450)
    expect(set.snapshot().slice()).toEqual(sorted(rest))
    expect(set.fingerprint('', null)).toEqual(IdSet.from(rest).fingerprint('', null))
    // A removed id can be added again.
    expect(set.add(ids[3] as string)).toBe('added')
    expect(set.size).toBe(499)
  })

  it('leaves a snapshot taken before the removal as it was', () => {
    const ids = randomIds(2_000, 5)
    const set = IdSet.from(ids)
    const before = set.snapshot()
    const whole = before.fingerprint('', '~')
    const part = before.fingerprint('3', 'b')
    const expired = ids.filter((_, i) => i % 9 === 0)
    expect(set.removeMany(expired)).toBe(expired.length)
    const after = set.snapshot()
    expect(after).not.toBe(before)
    expect(before.size).toBe(2_000)
    expect(before.slice()).toEqual(sorted(ids))
    expect(before.indexOf(expired[0] as string)).toBeGreaterThanOrEqual(0)
    expect(before.fingerprint('', '~')).toEqual(whole)
    expect(before.fingerprint('3', 'b')).toEqual(part)
    expect(after.size).toBe(2_000 - expired.length)
    expect(after.indexOf(expired[0] as string)).toBe(-1)
    expect(after.fingerprint('', '~')).not.toEqual(whole)
  })

  it('removing everything leaves the empty set', () => {
    const ids = randomIds(300, 6)
    const set = IdSet.from(ids)
    expect(set.removeMany(ids)).toBe(300)
    expect(set.size).toBe(0)
    expect(set.fingerprint('', null)).toEqual(new IdSet().fingerprint('', null))
  })
})

describe('IdSnapshot reading', () => {
  it('builds ids on demand, refuses positions outside, clamps slices', () => {
    const ids = sorted(randomIds(200, 7))
    const snap = IdSet.from(ids).snapshot()
    expect(snap.idAt(0)).toBe(ids[0])
    expect(snap.idAt(199)).toBe(ids[199])
    expect(() => snap.idAt(200)).toThrow(RangeError)
    expect(() => snap.idAt(-1)).toThrow(RangeError)
    expect(snap.slice(190, 500)).toEqual(ids.slice(190))
    expect(snap.slice(-5, 2)).toEqual(ids.slice(0, 2))
    expect(snap.search(ids[50] as string)).toBe(50)
    expect(snap.search(ids[50] as string, 51)).toBe(-52)
    expect(snap.indexOf('not an id')).toBe(-1)
  })

  it('places bounds that are not canonical, or not hex, by string order', () => {
    const ids = sorted(randomIds(500, 8))
    const snap = IdSet.from(ids).snapshot()
    const byString = (b: string): number => ids.filter(id => id < b).length
    for (const b of ['8', '80', '800', '8000', 'ab0', 'g', 'A', '7~', 'ffff'.repeat(16), `${ids[9] as string}0`])
      expect(snap.lowerBound(b), b).toBe(byString(b))
  })
})
