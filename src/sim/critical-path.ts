import type { PlanEvent, PlanId } from '../core/events.js'
import type { CallRecord } from './sim-llm.js'
import type { World } from './world.js'

/**
 * Where a plan's time went, on its critical path: the chain of events, each
 * the one its successor's author heard last before acting, from the goal to
 * the result that finished the plan on node 0. Every virtual ms between the
 * goal and node 0 seeing the plan finished lies in exactly one segment, so
 * the parts add up to the plan's makespan:
 *
 * - `llm`: the model calls on the path (decompose, ballot, execution);
 * - `gossip`: an event on its way from its author to the next actor (hops,
 *   link delays, the replica's verify and fold), and the last result's way
 *   to node 0;
 * - `confirm`: an executor's confirmation wait between its claim and its
 *   model call (roles/claim-rules.ts CONFIRM_MS, stretched with the lag);
 * - `stagger`: a claimable task waiting for the executor's turn
 *   (rank x STAGGER_MS, one more while its view of the executors is not yet
 *   stable; stretched with the lag), beyond driver and slot waits;
 * - `ballotWindow`: a scorer waiting beyond its last proposal heard
 *   (roles/scorer.ts BALLOT_WINDOW_MS), beyond driver and slot waits;
 * - `driver`: the role driver's coalescing of a fold into a pass (5 ms) at
 *   each decision on the path (and its poll, were a decision left to it);
 * - `slot`: the actor had every slot busy (the driver's concurrency, and an
 *   executor's claims per plan) while the work waited;
 * - `publish`: from a call's end to its event (signing, none in virtual time);
 * - `other`: any wait not named above (a decomposer's wait beyond driver and
 *   slot, an event of another type on the path).
 */
export interface PathParts {
  llm: number
  gossip: number
  confirm: number
  stagger: number
  ballotWindow: number
  driver: number
  slot: number
  publish: number
  other: number
}

export const PATH_PARTS: ReadonlyArray<keyof PathParts> = [
  'llm',
  'gossip',
  'confirm',
  'stagger',
  'ballotWindow',
  'driver',
  'slot',
  'publish',
  'other'
]

export interface CriticalPath {
  readonly plan: PlanId
  /** Goal published to node 0 seeing the plan finished (the sum of the parts). */
  readonly makespanMs: number
  readonly parts: PathParts
  /** Events on the path. */
  readonly events: number
  /** Their types, the goal first (a claim and its result are two). */
  readonly trail: readonly string[]
  /** Model calls on the path by kind, and the path's hops (events heard from another node). */
  readonly calls: number
  readonly hops: number
}

/** The role driver's delay from a fold to the pass it starts (roles/driver.ts `schedule`). */
export const DRIVER_COALESCE_MS = 5

/** When an act ended, for a node's busy slots: an executor's claim holds its slot until its result (or failure). */
interface Act {
  readonly start: number
  readonly end: number
  /** The plan (executor acts only), for its per-plan limit. */
  readonly plan: string | null
}

const empty = (): PathParts => ({
  llm: 0,
  gossip: 0,
  confirm: 0,
  stagger: 0,
  ballotWindow: 0,
  driver: 0,
  slot: 0,
  publish: 0,
  other: 0
})

/** How long within [from, to) node `acts` had `cap` acts running (or `planCap` of `plan`). */
function fullTime(acts: readonly Act[], from: number, to: number, cap: number, plan: string, planCap: number): number {
  if (to <= from) return 0
  const edges: Array<[number, number, boolean]> = []
  for (const a of acts) {
    if (a.end <= from || a.start >= to) continue
    edges.push([Math.max(from, a.start), 1, a.plan === plan], [Math.min(to, a.end), -1, a.plan === plan])
  }
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1])
  let all = 0
  let mine = 0
  let full = 0
  let last = from
  for (const [t, d, same] of edges) {
    if (all >= cap || mine >= planCap) full += t - last
    last = t
    all += d
    if (same) mine += d
  }
  if (all >= cap || mine >= planCap) full += to - last
  return full
}

/** The critical path of one plan of a recorded run (WorldOptions.record), which must have finished on node 0. */
export function criticalPath(w: World, plan: PlanId, concurrency = 4): CriticalPath {
  const rec = w.record
  if (rec === undefined) throw new Error('criticalPath: the run was not recorded (WorldOptions.record)')
  const endAt = w.finishedAtByPlan.get(plan)
  const tree = w.nodes[0]?.runtime?.view.loadTree(plan)
  const last = tree?.deliverable?.result
  if (endAt === undefined || tree === undefined || last === undefined)
    throw new Error(`criticalPath: plan ${plan} did not finish on node 0`)
  const planCap = tree.params.maxClaimsPerExecutor
  const acts = actsByNode(w)
  const parts = empty()
  let events = 0
  const trail: string[] = []
  let calls = 0
  let hops = 0
  const pub = (id: string): { event: PlanEvent; author: number; atMs: number } => {
    const p = rec.events.get(id)
    if (p === undefined) throw new Error(`criticalPath: event ${id} was never published in the run`)
    return p
  }
  let cur = pub(last)
  parts.gossip += endAt - cur.atMs
  if (cur.author !== 0) hops++
  for (;;) {
    events++
    const e = cur.event
    trail.push(e.env.type)
    const a = cur.author
    const type = e.env.type
    if (type === 'goal-submitted') break
    let actStart = cur.atMs
    const kind =
      type === 'result-reported'
        ? 'execute'
        : type === 'split-proposed'
          ? 'decompose'
          : type === 'ballot-cast'
            ? 'score'
            : null
    if (kind !== null) {
      const call = lastCallBefore(rec.calls.get(a) ?? [], kind, cur.atMs)
      if (call !== undefined) {
        calls++
        parts.publish += cur.atMs - call.endMs
        parts.llm += call.endMs - call.startMs
        actStart = call.startMs
      }
    }
    if (type === 'result-reported') {
      const claim = pub((e as PlanEvent<'result-reported'>).env.body.claim)
      parts.confirm += actStart - claim.atMs
      cur = claim
      continue
    }
    // The dep this node heard last before acting: what let it act.
    let pred: string | undefined
    let heard = -Infinity
    for (const d of e.env.deps) {
      const t = rec.foldedAt(d, a)
      if (t !== undefined && t <= actStart && t > heard) {
        heard = t
        pred = d
      }
    }
    if (pred === undefined) throw new Error(`criticalPath: event ${e.id} (${type}) has no dep its author folded`)
    const wait = actStart - heard
    const slot = Math.min(
      wait,
      fullTime(
        acts.get(a) ?? [],
        heard,
        actStart,
        concurrency,
        e.env.plan,
        type === 'task-claimed' ? planCap : Infinity
      )
    )
    const driver = Math.min(wait - slot, DRIVER_COALESCE_MS)
    const rest = wait - slot - driver
    parts.slot += slot
    parts.driver += driver
    if (type === 'task-claimed') parts.stagger += rest
    else if (type === 'ballot-cast') parts.ballotWindow += rest
    else parts.other += rest
    const p = pub(pred)
    parts.gossip += heard - p.atMs
    if (p.author !== a) hops++
    cur = p
  }
  const makespanMs = endAt - cur.atMs
  return { plan, makespanMs, parts, events, trail: trail.reverse(), calls, hops }
}

/** The last call of `kind` a node's record holds that ended by `atMs` and was not aborted. */
function lastCallBefore(
  calls: readonly CallRecord[],
  kind: 'execute' | 'decompose' | 'score',
  atMs: number
): CallRecord | undefined {
  let best: CallRecord | undefined
  for (const c of calls) {
    if (c.aborted || c.endMs > atMs + 1e-6) continue
    const k = c.kind === 'execute-leaf' || c.kind === 'execute-rollup' ? 'execute' : c.kind
    if (k !== kind) continue
    if (best === undefined || c.endMs > best.endMs) best = c
  }
  return best
}

/**
 * Every node's acts, for its busy slots: a decomposer's or scorer's model
 * calls; an executor's claims, each from the claim until its result, failure
 * or release (a claim that lost its race: until its aborted call or its
 * confirmation ended, taken as the next claim's start or 150 ms).
 */
function actsByNode(w: World): Map<number, Act[]> {
  const rec = w.record
  const out = new Map<number, Act[]>()
  if (rec === undefined) return out
  const ends = new Map<string, number>()
  for (const p of rec.events.values()) {
    const t = p.event.env.type
    if (t === 'result-reported' || t === 'task-failed' || t === 'task-released') {
      const claim = (p.event.env.body as { claim: string }).claim
      ends.set(claim, Math.min(ends.get(claim) ?? Infinity, p.atMs))
    }
  }
  const add = (node: number, act: Act): void => {
    const list = out.get(node)
    if (list === undefined) out.set(node, [act])
    else list.push(act)
  }
  for (const p of rec.events.values())
    if (p.event.env.type === 'task-claimed')
      add(p.author, { start: p.atMs, end: ends.get(p.event.id) ?? p.atMs + 150, plan: p.event.env.plan })
  for (const [node, calls] of rec.calls) {
    if (w.nodes[node]?.role === 'executor') continue
    for (const c of calls) add(node, { start: c.startMs, end: c.endMs, plan: null })
  }
  return out
}

/** Sum of the parts. */
export function partsTotal(p: PathParts): number {
  return PATH_PARTS.reduce((s, k) => s + p[k], 0)
}
