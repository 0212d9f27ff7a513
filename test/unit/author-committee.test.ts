/**
 * The default committee (src/author/committee.ts) is drawn, not refused: at
 * most MAX_COMMITTEE, and one member's many keys (heard of only lately, or
 * several behind one address or relay) are never half of it. The submitter
 * is told when its committee cannot outvote one faulty member. The roster
 * (src/net/roster.ts) keeps when it first heard of a peer and where it
 * connects from.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  committeeWarnings,
  defaultCommittee,
  drawCommittee,
  MIN_FAULT_TOLERANT_COMMITTEE,
  NEW_IDENTITY_MS
} from '../../src/author/committee.js'
import { MAX_COMMITTEE } from '../../src/core/limits.js'
import { createRoster } from '../../src/net/roster.js'
import type { Candidate } from '../../src/author/committee.js'
import type { RosterEntry } from '../../src/ports/node-view.js'

const OLD = NEW_IDENTITY_MS * 3
const honest = (n: number, prefix = 'h'): Candidate[] =>
  Array.from({ length: n }, (_, i) => ({ peerId: `${prefix}${i}`, firstSeenMs: OLD + i, source: `ip:10.0.0.${i}` }))

describe('drawCommittee', () => {
  it('takes every scorer of a small honest swarm', () => {
    expect(drawCommittee(honest(5), 'me').committee).toEqual(['h0', 'h1', 'h2', 'h3', 'h4'])
    // Unknown sources and a young roster (a client that just started): every key alike.
    const fresh = Array.from({ length: 6 }, (_, i) => ({ peerId: `f${i}`, firstSeenMs: 1_000 }))
    expect(drawCommittee(fresh, 'me').committee).toHaveLength(6)
  })

  it('draws at most MAX_COMMITTEE from more scorers than that, the same ones every time', () => {
    const many = honest(40)
    const a = drawCommittee(many, 'me')
    expect(a.committee).toHaveLength(MAX_COMMITTEE)
    expect(a.leftOut).toBe(40 - MAX_COMMITTEE)
    expect(drawCommittee([...many].reverse(), 'me').committee).toEqual(a.committee)
    // Long-known first.
    expect(a.committee).toContain('h39')
    expect(a.committee).not.toContain('h0')
  })

  it('keeps fresh keys a minority: three new identities are not three of six', () => {
    const sybils = Array.from({ length: 3 }, (_, i) => ({ peerId: `s${i}`, firstSeenMs: 2_000 }))
    const { committee } = drawCommittee([...honest(3), ...sybils], 'me')
    expect(committee.filter(id => id.startsWith('s')).length * 2).toBeLessThan(committee.length)
    const more = drawCommittee([...honest(8), ...sybils], 'me').committee
    expect(more.filter(id => id.startsWith('s'))).not.toHaveLength(0)
    expect(more.filter(id => id.startsWith('s')).length * 2).toBeLessThan(more.length)
  })

  it('keeps many keys behind one address a minority, its first key trusted or not', () => {
    const behind = Array.from({ length: 30 }, (_, i) => ({
      peerId: `x${i}`,
      firstSeenMs: OLD * 2 + i,
      source: 'ip:203.0.113.7'
    }))
    const { committee } = drawCommittee([...honest(6), ...behind], 'me')
    expect(committee.filter(id => id.startsWith('x')).length * 2).toBeLessThan(committee.length)
    expect(committee.filter(id => id.startsWith('h'))).toHaveLength(6)
  })

  it('never lets one source or the fresh keys hold half of it (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 60 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 2 * OLD }),
        (h, x, oneSource, xAge) => {
          const attacker = Array.from({ length: x }, (_, i) => ({
            peerId: `x${i}`,
            firstSeenMs: oneSource ? xAge + i : Math.min(xAge, NEW_IDENTITY_MS - 1),
            ...(oneSource ? { source: 'relay:R' } : {})
          }))
          const { committee } = drawCommittee([...honest(h), ...attacker], 'me')
          const bad = committee.filter(id => id.startsWith('x')).length
          expect(committee.length).toBeLessThanOrEqual(MAX_COMMITTEE)
          expect(committee.length).toBeGreaterThan(0)
          // One long-known key with its own source is a member like any other; a second key never makes half.
          if (bad >= 2) expect(bad * 2).toBeLessThan(committee.length)
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe('standing in the draw (ADR-0048)', () => {
  it('draws a scorer with a poor record last, as a suspect, the worst after the rest', () => {
    const clean = honest(6)
    const poor: Candidate[] = [
      { peerId: 'p0', firstSeenMs: OLD * 9, source: 'ip:10.1.0.1', evidence: 3, penalty: 3 },
      { peerId: 'p1', firstSeenMs: OLD * 9, source: 'ip:10.1.0.2', evidence: 1, penalty: 1 }
    ]
    // Six trusted leave room for three suspects: both poor scorers come in, after the clean ones.
    expect(drawCommittee([...poor, ...clean], 'me').committee).toEqual([...clean.map(c => c.peerId), 'p0', 'p1'].sort())
    // Room for one suspect only (four trusted): the lesser record is drawn, the worse left out.
    const few = drawCommittee([...poor, ...honest(4)], 'me')
    expect(few.committee).toContain('p1')
    expect(few.committee).not.toContain('p0')
    // Without standing, the oldest are trusted and both would be in.
    const plain = poor.map(({ peerId, firstSeenMs, source }) => ({ peerId, firstSeenMs, source }))
    expect(drawCommittee([...plain, ...honest(4)], 'me').committee).toEqual(expect.arrayContaining(['p0', 'p1']))
  })

  it('keeps a scorer with only honest-looking evidence trusted, after every clean one', () => {
    const late: Candidate = { peerId: 'l0', firstSeenMs: OLD * 9, source: 'ip:10.2.0.1', evidence: 2, penalty: 0 }
    const full = honest(MAX_COMMITTEE)
    expect(drawCommittee([late, ...full], 'me').committee).not.toContain('l0')
    expect(drawCommittee([late, ...honest(5)], 'me').committee).toContain('l0')
  })

  it('reads the records from the view', () => {
    const entry = (peerId: string): RosterEntry => ({
      peerId,
      role: 'scorer',
      capabilities: [],
      lastSeenMs: 0,
      firstSeenMs: OLD,
      source: `ip:${peerId}`,
      load: 0,
      version: 'v',
      addresses: []
    })
    const roster = ['a', 'b', 'c', 'e'].map(entry)
    const record = { peer: 'e', counts: {}, total: 1, plans: [], equivocatedIn: [], penalty: 1 } as never
    const drawn = defaultCommittee({
      roster: () => roster,
      role: 'observer',
      me: 'me' as never,
      standing: () => [record]
    })
    // Three trusted leave no room for a suspect.
    expect(drawn.committee).toEqual(['a', 'b', 'c'])
    expect(drawn.warnings[1]).toMatch(/1 scorers in sight were left out.*evidence against them/)
    expect(defaultCommittee({ roster: () => roster, role: 'observer', me: 'me' as never }).committee).toContain('e')
  })
})

describe('what the submitter is told', () => {
  it('warns of a committee of fewer than 4, and says what to do', () => {
    for (const n of [1, 2, 3]) {
      const [w] = committeeWarnings(Array.from({ length: n }, (_, i) => `p${i}`))
      expect(w).toMatch(new RegExp(`committee of ${n} cannot outvote`))
      expect(w).toMatch(/start more scorers/)
      expect(w).toMatch(/--committee/)
    }
    expect(committeeWarnings(['a', 'b', 'c', 'd'])).toEqual([])
    expect(MIN_FAULT_TOLERANT_COMMITTEE).toBe(4)
  })

  it("draws from a node's roster, itself included when it scores, and says what it left out", () => {
    const entry = (peerId: string, firstSeenMs: number, source?: string): RosterEntry => ({
      peerId,
      role: 'scorer',
      capabilities: [],
      lastSeenMs: 0,
      firstSeenMs,
      ...(source === undefined ? {} : { source }),
      load: 0,
      version: 'v',
      addresses: []
    })
    const roster = [
      entry('a', OLD),
      entry('b', OLD),
      ...Array.from({ length: 3 }, (_, i) => entry(`s${i}`, 1_000, 'relay:R'))
    ]
    const { committee, warnings } = defaultCommittee({ roster: () => roster, role: 'scorer', me: 'me' as never })
    expect(committee).toEqual(['a', 'b', 'me'])
    expect(warnings[0]).toMatch(/committee of 3 cannot outvote/)
    expect(warnings[1]).toMatch(/3 scorers in sight were left out/)
  })
})

describe('the roster', () => {
  const presence = (peerId: string, sentMs: number): Parameters<ReturnType<typeof createRoster>['update']>[0] => ({
    peerId,
    role: 'scorer',
    capabilities: [],
    load: 0,
    version: 'v',
    addresses: [],
    sentMs
  })

  it('keeps when it first heard of a peer across refreshes, and the last source it was told', () => {
    const roster = createRoster()
    const t0 = 1_000_000
    roster.update(presence('p', t0), t0, 'ip:10.0.0.1')
    roster.update(presence('p', t0 + 3_000), t0 + 3_000)
    expect(roster.get('p', t0 + 4_000)).toMatchObject({ firstSeenMs: 4_000, lastSeenMs: 1_000, source: 'ip:10.0.0.1' })
    // A late copy refreshes nothing, but a source learnt with it is kept.
    expect(roster.update(presence('p', t0 + 1_000), t0 + 5_000, 'relay:R')).toBe(false)
    expect(roster.get('p', t0 + 5_000)).toMatchObject({ firstSeenMs: 5_000, lastSeenMs: 2_000, source: 'relay:R' })
  })
})
