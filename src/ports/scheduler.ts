/**
 * Time, timers and randomness, injected. Everything above the pure core that
 * waits, stamps or draws (the replica's write queue, the role drivers, the
 * executor's stagger and leases, sync sessions, presence, redials) takes a
 * Scheduler instead of reaching for `setTimeout`, `Date.now` or
 * `Math.random`. The default is the real clock (`realScheduler`); the
 * simulator gives each node a virtual one, so one seed replays a whole run.
 */
export interface Scheduler {
  /** Wall-clock milliseconds as this node sees them (a skewed clock in tests and the simulator). */
  now: () => number
  /** Monotonic milliseconds for measuring durations (never skewed, never steps back). */
  monotonic: () => number
  /** Run `fn` once after `ms`; the returned function cancels it (calling it late is harmless). */
  after: (ms: number, fn: () => void) => Cancel
  /** Run `fn` every `ms` until cancelled. */
  every: (ms: number, fn: () => void) => Cancel
  /** Run `fn` once the current turn of the event loop is over (setImmediate). */
  soon: (fn: () => void) => Cancel
  /** A number in [0, 1): Math.random for real, a seeded stream in the simulator. */
  random: () => number
}

export type Cancel = () => void

export interface RealSchedulerOptions {
  /** Added to Date.now(): a node told its clock is off (`--clock-offset-ms`, tests of skew). */
  readonly clockOffsetMs?: number
  /** Keep the process alive for pending timers (default false: timers never hold a process open). */
  readonly ref?: boolean
}

/** The real clock and timers of this process. */
export function realScheduler(opts: RealSchedulerOptions = {}): Scheduler {
  const offset = opts.clockOffsetMs ?? 0
  const ref = opts.ref === true
  return {
    now: () => Date.now() + offset,
    monotonic: () => performance.now(),
    after: (ms, fn) => {
      const t = setTimeout(fn, Math.max(0, ms))
      if (!ref) t.unref()
      return () => {
        clearTimeout(t)
      }
    },
    every: (ms, fn) => {
      const t = setInterval(fn, Math.max(1, ms))
      if (!ref) t.unref()
      return () => {
        clearInterval(t)
      }
    },
    soon: fn => {
      const t = setImmediate(fn)
      return () => {
        clearImmediate(t)
      }
    },
    random: () => Math.random()
  }
}

/** Resolves after `ms` on this scheduler's clock. */
export async function sleep(scheduler: Scheduler, ms: number): Promise<void> {
  await new Promise<void>(resolve => {
    scheduler.after(ms, resolve)
  })
}

/**
 * A seeded source of numbers in [0, 1) (mulberry32): the same seed gives the
 * same stream on every machine.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
