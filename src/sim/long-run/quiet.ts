import { expiresAtMs } from '../../core/retention.js'
import { isFinished } from '../../core/view.js'
import { SIM_EPOCH_MS } from '../virtual-time.js'
import { EXPIRY_COALESCE_MS } from './timing.js'
import type { PlanId } from '../../core/events.js'
import type { World } from '../world.js'
import type { Ledger } from './ledger.js'

/** Node 0's view of when a finished plan expires (elapsed ms), or undefined. */
export function expiryOf(world: World, plan: PlanId): number | undefined {
  const r = world.nodes[0]?.runtime?.replica.fold.facts(plan)
  const at = r === undefined ? null : expiresAtMs(r)
  return at === null ? undefined : at - SIM_EPOCH_MS
}

/**
 * Why the swarm is not quiet now, or null when it is: no goal being
 * published, no message, dial, sync session or act under way, every live
 * node holding the same set of events and every plan finished on it, and
 * nothing due to expire. Plans it finds finished everywhere leave
 * `ledger.open`, with their expiry noted.
 */
export function unquiet(world: World, ledger: Ledger, publishing: number): string | null {
  const nodes = world.nodes
  if (publishing > 0) return 'a goal is being published'
  if (world.network.inFlight() > 0) return 'messages or dials on their way'
  let size: number | undefined
  for (const n of nodes) {
    const rt = n.runtime
    if (rt === undefined) continue
    if (n.transport?.busy() === true) return `node ${n.index} is in a sync session`
    if (n.roleIdle !== undefined && !n.roleIdle()) return `node ${n.index} is acting`
    if (rt.replica.fold.events.parkedCount > 0) return `node ${n.index} parks events`
    if (size === undefined) size = rt.replica.ids.size
    else if (rt.replica.ids.size !== size) return `node ${n.index} holds ${rt.replica.ids.size} events, another ${size}`
  }
  let fp: string | undefined
  for (const n of nodes) {
    const rt = n.runtime
    if (rt === undefined) continue
    const f = Buffer.from(rt.replica.ids.fingerprint('', null)).toString('hex')
    if (fp === undefined) fp = f
    else if (f !== fp) return `node ${n.index} holds other events than another`
  }
  for (const l of ledger.open) {
    for (const n of nodes) {
      const fold = n.runtime?.replica.fold
      if (fold === undefined) continue
      const t = fold.tree(l.plan)
      if (t === undefined ? !fold.isEvicted(l.plan) : !isFinished(t))
        return `plan ${l.plan.slice(0, 12)} is under way on node ${n.index}`
    }
  }
  for (const l of [...ledger.open]) {
    l.expiresAt = expiryOf(world, l.plan)
    ledger.open.delete(l)
  }
  // A node restarted after a long time down works off its backlog (25 plans a pass) before the swarm is quiet.
  for (const n of nodes)
    if ((n.runtime?.replica.expiredBy(SIM_EPOCH_MS + world.time.elapsed).length ?? 0) > 0)
      return `plans are due to expire on node ${n.index}`
  return null
}

/** The first plan expiry after now that the swarm has not reached, as a landing time (elapsed), or Infinity. */
export function nextExpiryLanding(world: World): number {
  const now = world.time.elapsed
  let first = Infinity
  const fold = world.nodes[0]?.runtime?.replica.fold
  for (const plan of fold?.plansUnsorted() ?? []) {
    const at = expiryOf(world, plan)
    if (at !== undefined && at > now && at < first) first = at
  }
  return first === Infinity ? Infinity : first + EXPIRY_COALESCE_MS
}
