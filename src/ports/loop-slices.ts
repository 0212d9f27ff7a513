import type { Scheduler } from './scheduler.js'

/** How long the event work may hold the event loop before a request waiting on a socket gets its turn. */
export const SLICE_MS = 10
/** A turn that runs the queue may take up to this many slices, as long as the rest of the loop took since the last. */
export const MAX_SLICES_A_TURN = 5

/**
 * Event work cut into slices of the event loop, so that nothing waits long
 * behind it: a gossiped event's ingest, a chunk of a sync batch, each is
 * handed to `run`, which runs it at once while the current slice has budget
 * left and otherwise queues it for a later turn of the loop (`soon`,
 * setImmediate for real). Between two slices the loop polls its sockets, so
 * a `/status` request, the dashboard's stream or a gossip frame waits at most
 * about a slice of this work, not the whole backlog.
 *
 * Work runs in the order it was handed over: once something is queued,
 * everything after it is queued too, and each later turn runs the queue from
 * its head until its budget is spent (at least one item a turn). A slice
 * starts with the first work after the loop turned, and ends at the next turn.
 * So that a backlog is not starved by the rest of the loop's work (sockets,
 * encryption, timers), a turn that runs the queue may go on for as long as
 * the loop took since the last such turn, up to MAX_SLICES_A_TURN slices:
 * the event work keeps at least about half of a busy loop.
 * The budget is in the scheduler's monotonic time: in the simulator, whose
 * clock does not move while code runs, a slice never runs out and nothing is
 * put off.
 */
export class LoopSlices {
  private startedAt: number | undefined
  private endQueued = false
  private drainQueued = false
  /** When the last turn that ran the queue ended (monotonic ms). */
  private drainedAt: number | undefined
  private readonly queue: Array<() => void> = []
  /** Items put off to a later turn so far, and the turns that ran the queue. */
  readonly counts = { deferred: 0, turns: 0 }

  constructor(
    private readonly scheduler: Pick<Scheduler, 'monotonic' | 'soon'>,
    readonly budgetMs = SLICE_MS
  ) {}

  /** Items waiting for a later turn. */
  get waiting(): number {
    return this.queue.length
  }

  /** `work()`, now or in a later turn; resolves to what it returns (rejects with what it throws). */
  async run<T>(work: () => T): Promise<T> {
    if (this.queue.length === 0 && !this.spent()) return work()
    this.counts.deferred++
    return await new Promise<T>((resolve, reject) => {
      this.queue.push(() => {
        try {
          resolve(work())
        } catch (err) {
          reject(err as Error)
        }
      })
      this.drainSoon()
    })
  }

  /** `work(from, to)` over `[0, n)` in chunks of `size`, each an item of work; what each chunk returned, in order. */
  async chunks<T>(n: number, size: number, work: (from: number, to: number) => T): Promise<T[]> {
    const out: T[] = []
    for (let from = 0; from < n; from += size) out.push(await this.run(() => work(from, Math.min(n, from + size))))
    return out
  }

  /** Resolves now while the slice has budget left (and nothing is queued), else in a later turn: a yield point. */
  async turn(): Promise<void> {
    await this.run(() => undefined)
  }

  /** Whether the slice under way used its budget; starts one when none is. */
  private spent(): boolean {
    const now = this.scheduler.monotonic()
    if (this.startedAt === undefined) {
      this.start(now)
      return false
    }
    return now - this.startedAt >= this.budgetMs
  }

  /** A slice from `now`, ending when the loop next turns. */
  private start(now: number): void {
    this.startedAt = now
    if (this.endQueued) return
    this.endQueued = true
    this.scheduler.soon(() => {
      this.endQueued = false
      this.startedAt = undefined
    })
  }

  private drainSoon(): void {
    if (this.drainQueued) return
    this.drainQueued = true
    this.scheduler.soon(() => {
      this.drain()
    })
  }

  /** One turn's slice of the queue, from its head. */
  private drain(): void {
    this.drainQueued = false
    this.counts.turns++
    const now = this.scheduler.monotonic()
    const rest = this.drainedAt === undefined ? 0 : now - this.drainedAt
    const budget = Math.min(Math.max(this.budgetMs, rest), MAX_SLICES_A_TURN * this.budgetMs)
    this.start(now)
    do (this.queue.shift() as () => void)()
    while (this.queue.length > 0 && this.scheduler.monotonic() - now < budget)
    this.drainedAt = this.scheduler.monotonic()
    if (this.queue.length > 0) this.drainSoon()
  }
}
