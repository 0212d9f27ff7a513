import { eventVersion } from '../../core/events.js'
import { signEvent } from '../../wire/sign.js'
import { maxHlc } from '../../core/hlc.js'
import type { PrivateKey } from '@libp2p/interface'
import type { Bodies, EventId, EventType, Hlc, PeerIdString, PlanEvent, PlanId } from '../../core/events.js'
import type { NodeRuntime } from '../../runtime/node-runtime.js'
import type { NodeView } from '../../ports/node-view.js'
import type { PlanTree, TaskView } from '../../core/tree.js'

/** Publishes events of one identity with any stamp it likes: what a member whose code is modified can do. */
export interface Forger {
  readonly me: PeerIdString
  /**
   * Sign `body` as this identity with the stamp `at` (default: the node's clock, after the deps), fold it here
   * and gossip it. Undefined when the node's own replica refuses it (a stamp before a dep, an unknown dep).
   */
  forge: <T extends EventType>(
    type: T,
    plan: PlanId,
    cites: readonly EventId[],
    body: Bodies[T],
    at?: Hlc
  ) => Promise<PlanEvent<T> | undefined>
}

/**
 * A forger over a simulated node's runtime: events are made as `Replica.author` makes them (deps the goal plus
 * the cites, the plan's version, signed by `key`) but with the stamp chosen, and go out through the node's own
 * transport, so every honest node receives a correctly signed event it must fold.
 */
export function forgerOf(runtime: NodeRuntime, key: PrivateKey, me: PeerIdString): Forger {
  const replica = runtime.replica
  return {
    me,
    forge: async (type, plan, cites, body, at) => {
      const deps = [...new Set([plan as string as EventId, ...cites])].sort()
      replica.fold.reload(plan)
      const depEvents = deps.map(d => replica.fold.events.get(d))
      if (depEvents.some(e => e === undefined)) return undefined
      const held = depEvents as PlanEvent[]
      const hlc = at ?? replica.clock.stamp(held.map(e => e.env.hlc))
      const goal = held.find(e => e.id === (plan as string))
      const env = {
        v: eventVersion(type, body, goal),
        swarm: runtime.view.swarm,
        type,
        plan,
        author: me,
        hlc,
        deps,
        body
      }
      const signed = await signEvent(env, key)
      const r = replica.ingest(signed.bytes, 'local', { signedHere: true })
      if (r.verdict !== 'accept') return undefined
      replica.flush()
      await runtime.transport.publish(signed.event.id, signed.bytes)
      return signed.event as PlanEvent<typeof type>
    }
  }
}

/**
 * The earliest stamp a claim of `task` may have and still count: one tick after its readyAt and after every
 * event it cites (its evidence), so it is stamped after its deps and before any honest claim.
 */
export function justAfterReady(view: NodeView, task: TaskView): Hlc {
  const stamps: Hlc[] = task.readyAt === null ? [] : [task.readyAt]
  for (const id of task.evidence) {
    const e = view.event(id)
    if (e !== undefined) stamps.push(e.env.hlc)
  }
  const last = maxHlc(stamps)
  return { ms: last.ms, c: last.c + 1 }
}

/** A view whose publications are this identity's (a sybil's): the honest roles run on it unchanged. */
export function viewAs(view: NodeView, forger: Forger): NodeView {
  return {
    ...view,
    me: forger.me,
    publish: async (type, plan, cites, body) => {
      if (plan === '') return await view.publish(type, plan, cites, body)
      const e = await forger.forge(type, plan, cites, body)
      if (e === undefined) throw new Error(`a sybil's ${type} was not folded`)
      return { event: e, bytes: new Uint8Array() }
    }
  }
}

/** Whether the plan takes no more work (finished or out of budget): where the honest roles stop. */
export function stopped(tree: PlanTree): boolean {
  return tree.status !== 'planning' && tree.status !== 'executing'
}
