import type { Hlc } from './events.js'

/**
 * Hybrid logical clock arithmetic. Wall time always comes in as an argument:
 * the core never reads a clock.
 *
 * Invariant: a stamp produced by `tick` or `receive` is strictly greater than
 * every stamp the clock has produced or seen, so an event is always stamped
 * later than the events it builds on.
 */

export const HLC_ZERO: Hlc = { ms: 0, c: 0 }

export function compareHlc(a: Hlc, b: Hlc): number {
  return a.ms !== b.ms ? a.ms - b.ms : a.c - b.c
}

/**
 * Whole milliseconds of a wall clock: a stamp's `ms` must be a safe integer
 * (the wire refuses anything else), and a clock source may read fractions
 * (a fractional offset, `performance.timeOrigin + performance.now()`, the
 * simulator's virtual time). test/sim/regressions.json keeps the simulator
 * seed that showed it (30012).
 */
function wholeMs(wallMs: number): number {
  return Math.floor(wallMs)
}

/** The stamp for a new local event, given the last stamp and wall time. */
export function tickHlc(last: Hlc, wallMs: number): Hlc {
  const ms = wholeMs(wallMs)
  return ms > last.ms ? { ms, c: 0 } : { ms: last.ms, c: last.c + 1 }
}

/** Merge a remote stamp into the local clock (receive rule), given wall time. */
export function receiveHlc(last: Hlc, remote: Hlc, wallMs: number): Hlc {
  const ms = Math.max(last.ms, remote.ms, wholeMs(wallMs))
  if (ms === last.ms && ms === remote.ms) return { ms, c: Math.max(last.c, remote.c) + 1 }
  if (ms === last.ms) return { ms, c: last.c + 1 }
  if (ms === remote.ms) return { ms, c: remote.c + 1 }
  return { ms, c: 0 }
}

/** The largest of several stamps (HLC_ZERO for none). */
export function maxHlc(stamps: Iterable<Hlc>): Hlc {
  let best = HLC_ZERO
  for (const s of stamps) if (compareHlc(s, best) > 0) best = s
  return best
}

/**
 * A local clock: stamps strictly after everything it has seen. `now` is
 * injected so tests can skew it.
 */
export class HybridClock {
  private last: Hlc = HLC_ZERO
  constructor(private readonly now: () => number) {}

  /** A stamp for a new event that must come after all of `after` (e.g. its deps). */
  stamp(after: Iterable<Hlc> = []): Hlc {
    for (const h of after) this.observe(h)
    this.last = tickHlc(this.last, this.now())
    return this.last
  }

  /** Fold a received stamp into the clock. Callers hold back stamps too far ahead before calling this. */
  observe(remote: Hlc): void {
    if (compareHlc(remote, this.last) > 0) this.last = receiveHlc(this.last, remote, this.now())
  }

  peek(): Hlc {
    return this.last
  }
}
