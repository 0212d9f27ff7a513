/**
 * How many goals one node takes from its surfaces (the dashboard's submit
 * form and API, MCP's plan_submit) in a minute: `--goals-per-minute`. A
 * runaway agent loop or a script posting goals as fast as it can is refused
 * here with a reason and a wait, before anything is signed. The swarm itself
 * does not count goals by time (no rule over authors' own stamps is both
 * order-independent and monotonic; docs/adr/0039): what bounds a flood
 * there is the open-plan limit per author, under which goals beyond the
 * limit wait and cost nothing but their storage.
 */

const WINDOW_MS = 60_000

export class GoalRate {
  private readonly taken: number[] = []

  /** `perMinute`: goals taken in any 60 s (`--goals-per-minute`, default 60); 0 means no limit. */
  constructor(readonly perMinute: number) {}

  /** Why a goal submitted at `now` is refused, or null when it may go. */
  refusal(now: number): string | null {
    if (this.perMinute <= 0) return null
    this.forget(now)
    if (this.taken.length < this.perMinute) return null
    const waitS = Math.max(1, Math.ceil(((this.taken[0] as number) + WINDOW_MS - now) / 1_000))
    return (
      `this node takes at most ${this.perMinute} ${this.perMinute === 1 ? 'goal' : 'goals'} a minute ` +
      `(--goals-per-minute), and ${this.taken.length} came in the last minute: try again in ${waitS} s`
    )
  }

  /** A goal was published at `now`. */
  took(now: number): void {
    this.forget(now)
    this.taken.push(now)
  }

  private forget(now: number): void {
    let drop = 0
    while (drop < this.taken.length && (this.taken[drop] as number) <= now - WINDOW_MS) drop++
    if (drop > 0) this.taken.splice(0, drop)
  }
}
