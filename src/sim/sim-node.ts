import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString } from '../core/events.js'
import type { EventStore } from '../ports/event-store.js'
import type { NodeRuntime } from '../runtime/node-runtime.js'
import type { SimTransport } from './sim-transport.js'
import type { NodeClock } from './virtual-time.js'
import type { SimRole } from './swarm-shape.js'

/** One simulated node: its clock, store (which survives a crash), and what runs on it now. */
export interface SimNode {
  readonly index: number
  readonly role: SimRole
  readonly key: PrivateKey
  /** Its network identity (presence, links); also its author id unless it is a twin. */
  readonly peerId: PeerIdString
  /** A twin (WorldOptions.dishonest): the index of the node whose key it signs with. */
  readonly twinOf?: number
  /** A twin's author: the other node's key and peer id, under which it signs and folds as that node. */
  readonly author?: { readonly key: PrivateKey; readonly peerId: PeerIdString }
  readonly store: EventStore
  clock: NodeClock
  transport: SimTransport | undefined
  runtime: NodeRuntime | undefined
  stopRole: (() => Promise<void>) | undefined
  /** Whether the node's role has no act under way (true for a node without a role). */
  roleIdle: (() => boolean) | undefined
  /** Virtual ms of this node's last fold. */
  lastFoldAt: number
  crashes: number
  /** Virtual ms this node's clock last resumed from a pause (its neighbourhood ticks were held until then). */
  resumedAt: number
}
