import { seededRandom } from '../ports/scheduler.js'
import type { Cancel, Scheduler } from '../ports/scheduler.js'

/** Virtual wall time starts here (2026-01-01T00:00:00Z), so stamps look like real ones. */
export const SIM_EPOCH_MS = Date.UTC(2026, 0, 1)

/**
 * What a timer returns when it knows it queued no promise continuation
 * (e.g. a gossip copy the receiver had already seen): the run then goes on to
 * the next timer without the drain, which would have found nothing to run.
 * A timer that returns anything else is drained after, as always; so a wrong
 * NOTHING_QUEUED would let a continuation run after the next timer instead of
 * before it, and only code that is sure may return it.
 */
export const NOTHING_QUEUED: unique symbol = Symbol('nothing queued')

/** A timer's callback: NOTHING_QUEUED when it surely queued no promise continuation. */
export type TimerFn = () => void | typeof NOTHING_QUEUED

interface Timer {
  /** Moved only by VirtualTime.skip, which moves every timer alike. */
  at: number
  readonly seq: number
  /** Let go of when the timer is cancelled: a cancelled timer waits in the heap until its time, holding nothing. */
  fn: TimerFn
  readonly owner: NodeClock | null
  cancelled: boolean
}

/** A binary min-heap of timers by (at, seq): the order of events in a run, and so the run itself. */
class TimerHeap {
  private readonly items: Timer[] = []
  get size(): number {
    return this.items.length
  }
  push(t: Timer): void {
    const a = this.items
    a.push(t)
    let i = a.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!before(a[i] as Timer, a[p] as Timer)) break
      ;[a[i], a[p]] = [a[p] as Timer, a[i] as Timer]
      i = p
    }
  }

  pop(): Timer | undefined {
    const a = this.items
    const top = a[0]
    const last = a.pop()
    if (a.length > 0 && last !== undefined) {
      a[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < a.length && before(a[l] as Timer, a[m] as Timer)) m = l
        if (r < a.length && before(a[r] as Timer, a[m] as Timer)) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m] as Timer, a[i] as Timer]
        i = m
      }
    }
    return top
  }

  peek(): Timer | undefined {
    return this.items[0]
  }

  /** Every timer `ms` later and the cancelled ones dropped; then the heap made again (a sorted array is one). */
  shift(ms: number): void {
    let k = 0
    for (const t of this.items) {
      if (t.cancelled) continue
      t.at += ms
      this.items[k++] = t
    }
    this.items.length = k
    this.items.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
  }

  /** The nodes' timers `ms` later, the world's where they are; then the heap made again (a sorted array is one). */
  shiftNodes(ms: number): void {
    for (const t of this.items) if (t.owner !== null) t.at += ms
    this.items.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}

/** Let every promise continuation queued so far run (all microtasks drain before a macrotask). */
export async function drainMicrotasks(): Promise<void> {
  await new Promise<void>(resolve => {
    setImmediate(resolve)
  })
}

/**
 * The simulator's one clock: a queue of timers in virtual time, run one at a
 * time in (time, sequence) order with every promise continuation drained in
 * between, exactly as Node runs a macrotask and then its microtasks. Nothing
 * in a run reads the real clock, so a seed decides everything.
 */
export class VirtualTime {
  /** Virtual ms since SIM_EPOCH_MS. */
  elapsed = 0
  /** Timers run so far. */
  steps = 0
  private seq = 0
  private readonly heap = new TimerHeap()

  /** Queues `fn` at `elapsed + delayMs`, for `owner` (a node's clock) or for the world. */
  schedule(delayMs: number, fn: TimerFn, owner: NodeClock | null = null): Cancel {
    const t: Timer = { at: this.elapsed + Math.max(0, delayMs), seq: this.seq++, fn, owner, cancelled: false }
    this.heap.push(t)
    return () => {
      t.cancelled = true
      t.fn = noop
    }
  }

  /** Runs timers until `done()` holds (checked after each one), virtual time passes `untilMs`, or nothing is left. */
  async run(untilMs: number, done: () => boolean = () => false): Promise<'done' | 'deadline' | 'idle'> {
    // What the caller started before handing over (promise chains not yet run) may queue the first timers.
    await drainMicrotasks()
    for (;;) {
      if (done()) return 'done'
      const next = this.heap.peek()
      if (next === undefined) return 'idle'
      if (next.at > untilMs) {
        this.elapsed = untilMs
        return 'deadline'
      }
      this.heap.pop()
      if (next.cancelled) continue
      this.elapsed = next.at
      if (next.owner !== null && !next.owner.accepts(next.fn)) continue
      this.steps++
      if (next.fn() !== NOTHING_QUEUED) await drainMicrotasks()
    }
  }

  get pending(): number {
    return this.heap.size
  }

  /**
   * Skip `ms` of virtual time in which nothing would happen but what the
   * timers already queued do (a long run's idle span, src/sim/long-run/skipper.ts):
   * the clock and every queued timer move on by `ms` together, so to every
   * node it is as if the whole world had been frozen for that long (each
   * node's wall clock jumps, every wait keeps what was left of it). Never
   * called by a run without `--days`.
   */
  skip(ms: number): void {
    if (!(ms > 0)) return
    this.elapsed += ms
    this.heap.shift(ms)
  }

  /**
   * Hold every node's timers `ms` longer while the clock stays: as if every
   * node paused for `ms`, except for what is scheduled from now on (a long
   * run's nodes announce themselves in that window after a skip, so every
   * roster is full again before any node looks at it).
   */
  holdNodes(ms: number): void {
    if (ms > 0) this.heap.shiftNodes(ms)
  }
}

/**
 * One node's Scheduler on the world's clock: its wall clock is skewed by
 * `skewMs`, its randomness is a seeded stream of its own. A paused node's
 * timers are held until it resumes (then they run at once, late, as after a
 * stop-the-world pause); a crashed node's timers never run again.
 */
export class NodeClock {
  readonly scheduler: Scheduler
  private paused = false
  private dead = false
  private held: TimerFn[] = []

  constructor(
    private readonly time: VirtualTime,
    public skewMs: number,
    seed: number
  ) {
    const random = seededRandom(seed)
    this.scheduler = {
      now: () => SIM_EPOCH_MS + this.time.elapsed + this.skewMs,
      monotonic: () => this.time.elapsed,
      after: (ms, fn) => (this.dead ? noop : this.time.schedule(ms, fn, this)),
      every: (ms, fn) => {
        let cancel: Cancel = noop
        let stopped = false
        const tick = (): void => {
          if (stopped) return
          cancel = this.time.schedule(ms, tick, this)
          fn()
        }
        cancel = this.dead ? noop : this.time.schedule(ms, tick, this)
        return () => {
          stopped = true
          cancel()
        }
      },
      soon: fn => (this.dead ? noop : this.time.schedule(0, fn, this)),
      random
    }
  }

  /** Called by the world for each due timer of this node: false when it must not run now. */
  accepts(fn: TimerFn): boolean {
    if (this.dead) return false
    if (this.paused) {
      this.held.push(fn)
      return false
    }
    return true
  }

  get isPaused(): boolean {
    return this.paused
  }
  get isDead(): boolean {
    return this.dead
  }

  pause(): void {
    this.paused = true
  }

  /** Runs what came due while paused, in order, at once. */
  resume(): void {
    if (!this.paused) return
    this.paused = false
    const due = this.held
    this.held = []
    for (const fn of due) this.time.schedule(0, fn, this)
  }

  /** The node crashed: nothing it scheduled runs, and nothing it schedules from now on will. */
  kill(): void {
    this.dead = true
    this.held = []
  }
}

const noop: Cancel = () => {}
