/**
 * Hybrid logical clock: stamps are strictly after everything the clock has
 * produced or observed (so an event is always stamped after its deps), and
 * never behind wall time.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { HLC_ZERO, HybridClock, compareHlc, maxHlc, receiveHlc, tickHlc } from '../../src/core/hlc.js'
import type { Hlc } from '../../src/core/events.js'

const h = (ms: number, c = 0): Hlc => ({ ms, c })
const arbHlc = fc.record({ ms: fc.integer({ min: 0, max: 2 ** 40 }), c: fc.nat({ max: 1000 }) })
const arbWall = fc.integer({ min: 0, max: 2 ** 40 })

describe('hlc: compareHlc', () => {
  it.each([
    [h(1, 0), h(2, 0), -1],
    [h(2, 0), h(1, 9), 1],
    [h(5, 1), h(5, 2), -1],
    [h(5, 3), h(5, 3), 0]
  ])('%o vs %o -> %i', (a, b, sign) => {
    expect(Math.sign(compareHlc(a, b))).toBe(sign)
  })
})

describe('hlc: tickHlc', () => {
  it.each([
    { name: 'wall ahead: wall time, counter 0', last: h(100, 7), wall: 150, want: h(150, 0) },
    { name: 'wall equal: same ms, counter + 1', last: h(100, 7), wall: 100, want: h(100, 8) },
    { name: 'wall behind: same ms, counter + 1', last: h(100, 7), wall: 50, want: h(100, 8) },
    { name: 'from zero', last: HLC_ZERO, wall: 0, want: h(0, 1) }
  ])('$name', ({ last, wall, want }) => {
    expect(tickHlc(last, wall)).toEqual(want)
  })

  it('is strictly after the last stamp and never behind wall time', () => {
    fc.assert(
      fc.property(arbHlc, arbWall, (last, wall) => {
        const next = tickHlc(last, wall)
        expect(compareHlc(next, last)).toBeGreaterThan(0)
        expect(next.ms).toBeGreaterThanOrEqual(wall)
      }),
      { numRuns: 500 }
    )
  })
})

describe('hlc: receiveHlc', () => {
  it.each([
    { name: 'wall ahead of both', last: h(10, 3), remote: h(20, 5), wall: 30, want: h(30, 0) },
    { name: 'remote ahead', last: h(10, 3), remote: h(20, 5), wall: 15, want: h(20, 6) },
    { name: 'local ahead', last: h(25, 3), remote: h(20, 5), wall: 15, want: h(25, 4) },
    { name: 'local and remote equal ms', last: h(20, 3), remote: h(20, 5), wall: 15, want: h(20, 6) },
    { name: 'all three equal ms', last: h(20, 9), remote: h(20, 5), wall: 20, want: h(20, 10) }
  ])('$name', ({ last, remote, wall, want }) => {
    expect(receiveHlc(last, remote, wall)).toEqual(want)
  })

  it('is strictly after both the local and the remote stamp, and never behind wall time', () => {
    fc.assert(
      fc.property(arbHlc, arbHlc, arbWall, (last, remote, wall) => {
        const next = receiveHlc(last, remote, wall)
        expect(compareHlc(next, last)).toBeGreaterThan(0)
        expect(compareHlc(next, remote)).toBeGreaterThan(0)
        expect(next.ms).toBeGreaterThanOrEqual(wall)
      }),
      { numRuns: 500 }
    )
  })
})

describe('hlc: maxHlc', () => {
  it.each([
    { stamps: [], want: HLC_ZERO },
    { stamps: [h(3, 1), h(5, 0), h(5, 2), h(4, 9)], want: h(5, 2) }
  ])('max of $stamps.length stamps', ({ stamps, want }) => {
    expect(maxHlc(stamps)).toEqual(want)
  })
})

describe('hlc: HybridClock', () => {
  it('stamps strictly increase with a frozen, a forward and a backward wall clock', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 1, maxLength: 50 }), steps => {
        let wall = 1_000_000
        const clock = new HybridClock(() => wall)
        let prev = clock.peek()
        for (const step of steps) {
          wall += step
          const next = clock.stamp()
          expect(compareHlc(next, prev)).toBeGreaterThan(0)
          expect(next.ms).toBeGreaterThanOrEqual(wall)
          expect(clock.peek()).toEqual(next)
          prev = next
        }
      }),
      { numRuns: 200 }
    )
  })

  it(
    'stamps whole milliseconds from a clock that reads fractions (the wire takes safe integers ' +
      'only; found by the simulator, seed 30012)',
    () => {
      fc.assert(
        fc.property(
          fc.array(fc.double({ min: 0, max: 5_000, noNaN: true }), { minLength: 1, maxLength: 30 }),
          arbHlc,
          (steps, remote) => {
            let wall = 1_767_225_630_871.4214
            const clock = new HybridClock(() => wall)
            for (const step of steps) {
              wall += step
              clock.observe(remote)
              const s = clock.stamp()
              expect(Number.isSafeInteger(s.ms)).toBe(true)
              expect(s.ms).toBeGreaterThanOrEqual(Math.floor(wall))
            }
          }
        ),
        { numRuns: 200 }
      )
    }
  )

  it('a stamp is strictly after every stamp it must follow (its deps), even ones from a clock far ahead', () => {
    fc.assert(
      fc.property(arbWall, fc.array(arbHlc, { maxLength: 8 }), (wall, after) => {
        const clock = new HybridClock(() => wall)
        const s = clock.stamp(after)
        for (const a of after) expect(compareHlc(s, a)).toBeGreaterThan(0)
        // And every later stamp is after this one.
        expect(compareHlc(clock.stamp(), s)).toBeGreaterThan(0)
      }),
      { numRuns: 300 }
    )
  })

  it('observe moves the clock past a remote stamp, and ignores stamps it is already past', () => {
    let wall = 100
    const clock = new HybridClock(() => wall)
    clock.observe(h(5_000, 4))
    expect(clock.peek()).toEqual(h(5_000, 5))
    expect(clock.stamp()).toEqual(h(5_000, 6))
    clock.observe(h(10, 0))
    expect(clock.peek()).toEqual(h(5_000, 6))
    wall = 6_000
    expect(clock.stamp()).toEqual(h(6_000, 0))
  })
})
