import type { PlanId } from '../core/events.js'

/**
 * When each plan in memory last folded an event (or came back to memory),
 * by the node's clock: the eviction policy's input. A plan quiet for
 * `quietMs` is a candidate to leave memory (the replica evicts it only once
 * it is finished).
 */
export class QuietPlans {
  private readonly lastActive = new Map<PlanId, number>()

  constructor(readonly quietMs: number) {}

  touch(plan: PlanId, nowMs: number): void {
    this.lastActive.set(plan, nowMs)
  }

  forget(plan: PlanId): void {
    this.lastActive.delete(plan)
  }

  /** Plans quiet for at least `quietMs` at `nowMs`, with how long. */
  *quiet(nowMs: number): Iterable<{ plan: PlanId; quietForMs: number }> {
    for (const [plan, at] of [...this.lastActive]) {
      if (nowMs - at >= this.quietMs) yield { plan, quietForMs: nowMs - at }
    }
  }
}
