import { decodeEvent } from '../wire/decode.js'
import { foldAll } from '../core/fold.js'
import { isFinished } from '../core/view.js'
import { duplicateExecutions } from './sim-llm.js'
import { isType } from '../core/events.js'
import type { PlanEvent, PlanId } from '../core/events.js'
import type { World } from './world.js'

/** What a run must satisfy once its faults are over. */
export interface RunChecks {
  /** Every plan reached a final status on every node. */
  readonly live: boolean
  /** Every node's treeHash equals the fold of the union of all stores. */
  readonly converged: boolean
  /** No task has more than one accepted result. */
  readonly oneResultPerTask: boolean
  /** Every stored row decodes and verifies. */
  readonly storesValid: boolean
  /** Parked events per node stayed within the fold's bound. */
  readonly memoryBounded: boolean
  /**
   * Neighbours topology: at every sample (once a virtual second) no node held
   * more than maxPeers + NEWCOMER_HEADROOM connections, nor more than
   * maxPeers older than its grace; always true on the fixed graph.
   */
  readonly connectionsBounded: boolean
  /**
   * Neighbours topology: every live node's roster listed every other within
   * the bound (World.rosterBoundMs, rosterFullBoundMs of src/sim/swarm-shape.ts by default). True when
   * they did, false when they did not, or when the run waited for them
   * (`until: 'rosters'`) or ran past the bound without their filling; null
   * (not checked) when the run ended with the plan (`until: 'plan'`), before
   * the bound and before the rosters filled: RunReport.rosterFill then says
   * how full they were. Always true on the fixed graph.
   */
  readonly rostersFull: boolean | null
  /** Executions beyond the first of a task, backups included. */
  readonly duplicateExecutions: number
  /**
   * Claims that cite another member's chain as `prev`: protocol 5's backup executions of a chain held past the plan's
   * backup time (docs/protocol/fold.md 11.8), or takeovers of a lapsed chain. An honest task that runs long is backed
   * up on purpose, so in a run without faults only the executions beyond these count against it.
   */
  readonly claimsOnOthersChains: number
  /** What failed, in words (empty when all holds). */
  readonly problems: string[]
}

/** A share (0..1) as a percentage with one decimal, for the run's words. */
export const pct = (x: number): string => `${Math.round(x * 1000) / 10} %`

/** Parked events a node may hold at the end of a settled run (none should be left; the cap is the fold's own bound). */
const MAX_PARKED_AT_END = 0

/** Check a finished run against the invariants (the union fold is the reference). */
export function checkRun(w: World): RunChecks {
  const problems: string[] = []
  const union = new Map<string, PlanEvent>()
  let storesValid = true
  // Every node holds a copy of the same events: check each distinct byte string once.
  const checked = new Map<string, Uint8Array>()
  for (const n of w.nodes) {
    n.store.load(
      row => {
        const first = checked.get(row.id)
        if (first !== undefined && Buffer.from(first).equals(row.bytes)) return
        checked.set(row.id, row.bytes)
        const d = decodeEvent(row.bytes, { swarm: 'sim', verify: true })
        if (d.kind !== 'event') {
          storesValid = false
          problems.push(
            `node ${n.index} stores an event that does not decode: ${d.kind === 'rejected' ? d.reason : d.kind}`
          )
          return
        }
        union.set(d.event.id, d.event)
      },
      () => {
        storesValid = false
      }
    )
  }
  const reference = foldAll(union.values())
  const plans: ReadonlyArray<PlanId | undefined> = w.plans.length === 0 ? [undefined] : w.plans
  // One plan words its problems as it always did; several name the plan.
  const which = (plan: PlanId | undefined): string =>
    plans.length === 1 || plan === undefined ? '' : ` (plan ${plan.slice(0, 12)})`
  let live = true
  let converged = true
  let memoryBounded = true
  let oneResultPerTask = true
  for (const plan of plans) {
    const refHash = plan === undefined ? undefined : reference.treeHash(plan)
    const refTree = plan === undefined ? undefined : reference.tree(plan)
    if (!(plan !== undefined && refTree !== undefined && isFinished(refTree))) {
      live = false
      problems.push(
        plan === undefined
          ? 'the goal was never published'
          : `the plan is ${refTree?.status ?? 'missing'} in the union of all stores, not finished${which(plan)}`
      )
    }
    if (refHash === undefined) converged = false
    for (const n of w.nodes) {
      const v = n.runtime?.view
      if (v === undefined) {
        converged = false
        if (plan === plans[0]) problems.push(`node ${n.index} is down at the end`)
        continue
      }
      const h = plan === undefined ? undefined : v.treeHash(plan)
      if (h !== refHash) {
        converged = false
        const mine = h?.slice(0, 12) ?? 'none'
        problems.push(
          `node ${n.index} (${n.role}) has treeHash ${mine}, the union fold ${refHash?.slice(0, 12) ?? 'none'}${which(plan)}`
        )
      }
      const t = plan === undefined ? undefined : v.loadTree(plan)
      if (t === undefined || !isFinished(t)) {
        live = false
        problems.push(`node ${n.index} sees the plan ${t?.status ?? 'missing'}${which(plan)}`)
      }
      if (plan !== plans[0]) continue
      const parked = v.health().parked
      if (parked > MAX_PARKED_AT_END) {
        memoryBounded = false
        problems.push(`node ${n.index} still parks ${parked} events`)
      }
    }
    for (const task of refTree?.tasks ?? []) {
      const accepted = task.results.filter(r => r.accepted).length
      if (accepted > 1) {
        oneResultPerTask = false
        problems.push(`task ${task.id.slice(0, 12)} has ${accepted} accepted results`)
      }
    }
  }
  const connectionsBounded = w.connections.overCap.length === 0 && w.connections.overMaxPeers.length === 0
  for (const p of [...w.connections.overCap, ...w.connections.overMaxPeers].slice(0, 5)) problems.push(p)
  let rostersFull: boolean | null = true
  if (w.topology === 'neighbours') {
    const bound = w.rosterBoundMs
    const ranMs = Math.round(w.time.elapsed - w.rosterOriginMs)
    if (w.rosterFullMs !== undefined) {
      if (w.rosterFullMs > bound) {
        rostersFull = false
        problems.push(`the rosters took ${w.rosterFullMs} ms to list every live node (bound ${bound} ms)`)
      }
    } else if (w.until === 'rosters' || ranMs > bound) {
      rostersFull = false
      const fill = w.rosterFill
      problems.push(
        `the rosters did not all list every live node within ${bound} ms (ran ${ranMs} ms` +
          (fill === undefined
            ? ')'
            : `; at the end the emptiest listed ${pct(fill.emptiest)} of the others, ${fill.full} of ${fill.liveNodes} full)`)
      )
    } else {
      rostersFull = null
    }
  }
  const dups = duplicateExecutions(w.calls)
  const onOthers = claimsOnOthersChains(union)
  if (w.faults.kinds.length === 0 && dups > onOthers)
    problems.push(
      `${dups} duplicate LLM executions in a run without faults` +
        (onOthers === 0 ? '' : `, more than its ${onOthers} backups of another member's chain`)
    )
  return {
    live,
    converged,
    oneResultPerTask,
    storesValid,
    memoryBounded,
    connectionsBounded,
    rostersFull,
    duplicateExecutions: dups,
    claimsOnOthersChains: onOthers,
    problems
  }
}

/** Claims whose `prev` is another member's claim or renewal (RunChecks.claimsOnOthersChains). */
function claimsOnOthersChains(events: ReadonlyMap<string, PlanEvent>): number {
  let n = 0
  for (const e of events.values()) {
    if (!isType(e, 'task-claimed') || e.env.body.prev === null) continue
    const prev = events.get(e.env.body.prev)
    const chain = prev !== undefined && (isType(prev, 'task-claimed') || isType(prev, 'claim-renewed'))
    if (chain && prev.env.author !== e.env.author) n++
  }
  return n
}
