/**
 * How much this node pulls from one peer by sync: a token bucket per peer,
 * of events and of bytes, shared by the sessions with it (inbound and
 * outbound alike). A peer that offers more valid events than its quota (a
 * member flooding the store) has the rest wait for a later session: the
 * reconciliation finds them again then, so nothing is lost, only spread out.
 * Honest catch-up stays within it: a late joiner also pulls from every other
 * peer, each with its own bucket. A local policy, not a rule of the protocol (ADR-0046).
 */

/** A peer's quota; both buckets start full and refill continuously over a minute. */
export interface PullQuotaLimits {
  /** Events asked of one peer per minute. Default 300 000 (about what one core verifies in a minute). */
  readonly pullEventsPerMinute: number
  /** Event bytes taken from one peer per minute. Default 512 MiB. */
  readonly pullBytesPerMinute: number
}

export const DEFAULT_PULL_QUOTA: PullQuotaLimits = {
  pullEventsPerMinute: 300_000,
  pullBytesPerMinute: 512 * 1024 * 1024
}

/** Buckets kept at most; beyond it the peer heard of least recently is forgotten (and starts full again). */
export const MAX_QUOTA_PEERS = 4_096

/** The event size reserved per id asked before a peer's events were seen (then their running average). */
export const INITIAL_EVENT_BYTES = 2_048

interface Bucket {
  events: number
  bytes: number
  atMs: number
  /** Running average size of this peer's events: reserved per id asked, settled when they come. */
  avg: number
}

export class PullQuota {
  private readonly buckets = new Map<string, Bucket>()
  private leftTotal = 0

  constructor(
    private readonly limits: PullQuotaLimits,
    /** Monotonic ms (the session's scheduler). */
    private readonly now: () => number
  ) {
    if (!(limits.pullEventsPerMinute > 0) || !(limits.pullBytesPerMinute > 0))
      throw new RangeError(
        `a pull quota needs pullEventsPerMinute > 0 and pullBytesPerMinute > 0, got ` +
          `${limits.pullEventsPerMinute} and ${limits.pullBytesPerMinute}`
      )
  }

  /**
   * How many events may be asked of `peer` now: as many as both buckets
   * hold (bytes at the peer's average event size, at least one while any
   * bytes are left); 0 once either is spent.
   */
  allowance(peer: string): number {
    const b = this.bucket(peer)
    if (b.bytes <= 0 || b.events < 1) return 0
    return Math.min(Math.floor(b.events), Math.max(1, Math.floor(b.bytes / b.avg)))
  }

  /** `n` events were asked of `peer`: taken from the events bucket, and their average size reserved in bytes. */
  asked(peer: string, n: number): void {
    const b = this.bucket(peer)
    b.events -= n
    b.bytes -= n * b.avg
  }

  /**
   * An EVENTS frame from `peer` settled `settled` ids asked with `events`:
   * the reservation is swapped for their real size (the bucket may go below
   * zero, by at most about one frame: it then waits the longer).
   */
  received(peer: string, settled: number, events: readonly Uint8Array[]): void {
    const b = this.bucket(peer)
    let bytes = 0
    for (const e of events) bytes += e.length
    b.bytes += settled * b.avg - bytes
    if (events.length > 0) b.avg = Math.max(64, 0.7 * b.avg + (0.3 * bytes) / events.length)
  }

  /** `n` ids a session left for a later one because the quota was spent. */
  left(n: number): void {
    this.leftTotal += n
  }

  /** Ids left for later sessions since start. */
  get leftForLater(): number {
    return this.leftTotal
  }

  private bucket(peer: string): Bucket {
    const t = this.now()
    const { pullEventsPerMinute: events, pullBytesPerMinute: bytes } = this.limits
    let b = this.buckets.get(peer)
    if (b === undefined) {
      b = { events, bytes, atMs: t, avg: INITIAL_EVENT_BYTES }
      if (this.buckets.size >= MAX_QUOTA_PEERS) this.buckets.delete(this.buckets.keys().next().value as string)
    } else {
      const elapsed = Math.max(0, t - b.atMs)
      b.events = Math.min(events, b.events + (events * elapsed) / 60_000)
      b.bytes = Math.min(bytes, b.bytes + (bytes * elapsed) / 60_000)
      b.atMs = t
      this.buckets.delete(peer)
    }
    this.buckets.set(peer, b)
    return b
  }
}
