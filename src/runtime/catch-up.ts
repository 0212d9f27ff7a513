/**
 * While a node catches up on a long history, the plans it has only part of
 * look under way: a task whose claim and result have not arrived yet looks
 * free, a split whose ballots have not arrived looks undecided. A newcomer
 * that acted on them would claim, propose and vote in plans that finished
 * long ago (at 100k events of history, 234 such events, each a model call
 * for an executor). So while history is streaming in, the roles leave alone
 * every plan with no event stamped in the last HISTORY_QUIET_MS: a plan
 * that is really under way has recent events (claims are renewed every few
 * seconds, and new events reach a newcomer by gossip), and what is left
 * alone is decided again as soon as the stream stops.
 *
 * "Streaming in" is a rate, not a state: at least CATCH_UP_EVENTS (200) events
 * taken in by sync within the last two windows of CATCH_UP_WINDOW_MS. A
 * node in step with its peers repairs a few events a round; a newcomer, a
 * node back from days down, or a partition healing takes in thousands.
 */

/**
 * Sync events within two windows that mean a node is catching up. A node in
 * step repairs a few a round; a newcomer's first frame alone holds hundreds,
 * and a threshold above that let it act on old plans before the second.
 */
export const CATCH_UP_EVENTS = 200
export const CATCH_UP_WINDOW_MS = 10_000
/** While catching up, a plan whose newest event is older than this is taken as history and left alone. */
export const HISTORY_QUIET_MS = 120_000

export class CatchUp {
  private windowStart = 0
  private current = 0
  private previous = 0

  /** Counts events sync took in (accepted, not duplicates) at `nowMs`. */
  note(events: number, nowMs: number): void {
    this.roll(nowMs)
    this.current += events
  }

  /** Whether history is streaming in now. */
  active(nowMs: number): boolean {
    this.roll(nowMs)
    return this.current + this.previous >= CATCH_UP_EVENTS
  }

  /** Why the roles leave a plan alone now (its newest stamp is `lastStampMs`), or null. */
  heldReason(lastStampMs: number | undefined, nowMs: number): string | null {
    if (lastStampMs === undefined || nowMs - lastStampMs < HISTORY_QUIET_MS || !this.active(nowMs)) return null
    return (
      `waits while this node catches up on the swarm's history: nothing of it was stamped in the last ` +
      `${HISTORY_QUIET_MS / 1_000} s, so its other events may not have arrived yet`
    )
  }

  private roll(nowMs: number): void {
    const elapsed = nowMs - this.windowStart
    if (elapsed < CATCH_UP_WINDOW_MS) return
    this.previous = elapsed < 2 * CATCH_UP_WINDOW_MS ? this.current : 0
    this.current = 0
    this.windowStart = nowMs - (elapsed % CATCH_UP_WINDOW_MS)
  }
}
