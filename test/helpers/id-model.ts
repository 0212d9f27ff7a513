/**
 * A plain model of the sync id set for property tests: a sorted array of id
 * strings, string comparisons for bounds, and the fingerprint computed from
 * its definition (SHA-256 of the eight 32-bit lane sums mod 2^32,
 * little-endian, then the count, cut to 16 bytes), which is what the wire
 * shares with older nodes. The in-memory set (test/property/id-set.test.ts)
 * and the stored one (test/property/stored-ids.test.ts) are held to it.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { expect } from 'vitest'
import { END_BOUND, FINGERPRINT_BYTES, START_BOUND } from '../../src/sync/reconcile/index.js'
import type { IdRanges } from '../../src/sync/reconcile/index.js'
import { seededWords } from './random.js'

export const BASES = ['0'.repeat(64), 'f'.repeat(64), '7f'.repeat(32), '80'.repeat(32)]
const HEX = '0123456789abcdef'

/**
 * A pool of ids from a seed: most of them copy a random-length prefix of a
 * base id or of an earlier id (so some share their first 32 bits, or all
 * but the last digit), and a few malformed strings, which every call must
 * refuse or ignore.
 */
export function pool(seed: number, size: number): string[] {
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

export const isId = (s: string): boolean => /^[0-9a-f]{64}$/.test(s)

/** The model: a sorted array of distinct valid ids. */
export class Model {
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
export function lowerBound(ids: readonly string[], bound: string): number {
  if (bound === START_BOUND) return 0
  if (bound === END_BOUND) return ids.length
  let i = 0
  while (i < ids.length && (ids[i] as string) < bound) i++
  return i
}

/** The fingerprint of ids[i0..i1), from its definition. */
export function fingerprintOf(ids: readonly string[], i0: number, i1: number): Uint8Array {
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
export function bounds(ids: readonly string[], next: () => number, count: number): string[] {
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

/** Everything a session reads of a view, against a sorted copy of the ids it should hold. */
export function expectRanges(snap: IdRanges, ids: readonly string[], next: () => number): void {
  expect(snap.size).toBe(ids.length)
  expect(snap.slice()).toEqual(ids)
  for (let i = 0; i < ids.length; i += 1 + (next() % 7)) expect(snap.idAt(i)).toBe(ids[i])
  expect(() => snap.idAt(ids.length)).toThrow(RangeError)
  const bs = bounds(ids, next, 24)
  for (const b of bs) expect(snap.lowerBound(b), `lowerBound(${b})`).toBe(lowerBound(ids, b))
  // Position ranges of every length: inside one block, across one boundary, over many blocks.
  for (let k = 0; k < 12; k++) {
    const i0 = next() % (ids.length + 1)
    const i1 = i0 + (next() % (ids.length - i0 + 1))
    expect(snap.fingerprintAt(i0, i1), `fingerprintAt(${i0}, ${i1})`).toEqual(fingerprintOf(ids, i0, i1))
    expect(snap.slice(i0, i1)).toEqual(ids.slice(i0, i1))
  }
  expect(snap.fingerprintAt(0, ids.length)).toEqual(fingerprintOf(ids, 0, ids.length))
  // search: held ids at their place, others placed by string order, within [from, to).
  for (let k = 0; k < 8; k++) {
    const probe =
      ids.length > 0 && k % 2 === 0 ? (ids[next() % ids.length] as string) : (bs[next() % bs.length] as string)
    const from = next() % (ids.length + 1)
    const to = from + (next() % (ids.length - from + 1))
    const at = Math.min(to, Math.max(from, lowerBound(ids, probe)))
    const want = at < to && ids[at] === probe ? at : -(at + 1)
    expect(snap.search(probe, from, to), `search(${probe}, ${from}, ${to})`).toBe(want)
  }
}
