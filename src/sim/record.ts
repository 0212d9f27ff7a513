import type { PlanEvent } from '../core/events.js'
import type { CallRecord } from './sim-llm.js'

/** One event as its author published it: virtual ms at the author's own fold. */
export interface Published {
  readonly event: PlanEvent
  readonly author: number
  readonly atMs: number
}

/**
 * What a run kept for the critical path (src/sim/critical-path.ts) and the
 * central scheduler (WorldOptions.record): every event with its author and
 * publish time, when each watched node (node 0 and every role node) first
 * folded it, and every model call each node made, in virtual ms from the
 * start of the run.
 */
export class SimRecord {
  readonly events = new Map<string, Published>()
  /** Event id -> node index -> virtual ms of that node's first fold of it. */
  readonly foldAt = new Map<string, Map<number, number>>()
  /** Node index -> its calls, in the order made. */
  readonly calls = new Map<number, CallRecord[]>()

  published(event: PlanEvent, author: number, atMs: number): void {
    if (!this.events.has(event.id)) this.events.set(event.id, { event, author, atMs })
  }

  folded(id: string, node: number, atMs: number): void {
    let m = this.foldAt.get(id)
    if (m === undefined) {
      m = new Map()
      this.foldAt.set(id, m)
    }
    if (!m.has(node)) m.set(node, atMs)
  }

  called(node: number, call: CallRecord): void {
    const list = this.calls.get(node)
    if (list === undefined) this.calls.set(node, [call])
    else list.push(call)
  }

  /** Virtual ms node `node` first folded event `id`, or undefined. */
  foldedAt(id: string, node: number): number | undefined {
    return this.foldAt.get(id)?.get(node)
  }
}
