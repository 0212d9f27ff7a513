import { hashParts, hashPartsEach } from './hash.js'
import type { EventId, NodeId, TaskId } from './events.js'

/** A child's id: every replica that sees the same accepted split makes the same children. */
export function childId(parent: NodeId, proposal: EventId, index: number): NodeId {
  return hashParts(parent, proposal, String(index)) as NodeId
}

/** childId(parent, proposal, i) for i < count, hashed in one pass. */
export function childIds(parent: NodeId, proposal: EventId, count: number): string[] {
  const indexes: string[] = []
  for (let i = 0; i < count; i++) indexes.push(String(i))
  return hashPartsEach([parent, proposal], indexes)
}

/** A composite node's roll-up task id. */
export function rollupId(node: NodeId): TaskId {
  return hashParts(node, 'rollup') as TaskId
}
