import type { Draft } from './grow-tree.js'
import type { Finish } from './node-tasks.js'
import type { NodeId } from './events.js'
import type { TreeNode } from './tree.js'

/** Every draft, breadth-first from the root, children in split order: the order of the tree's `nodes`. */
export function breadthFirst(root: Draft): Draft[] {
  const order: Draft[] = []
  for (let q: Draft[] = [root]; q.length > 0;) {
    const next: Draft[] = []
    for (const d of q) {
      order.push(d)
      next.push(...d.children)
    }
    q = next
  }
  return order
}

/** Where a blocked node's blockers' titles are looked up. */
export interface Titles {
  of(id: NodeId): string
}

/** A node of the tree, from its draft and how its task ends. */
export function treeNode(d: Draft, f: Finish, titles: Titles): TreeNode {
  // Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying.
  return {
    accepted: d.accepted,
    attempts: d.decision?.attempts ?? [],
    awaiting: d.decision?.kind === 'open' ? d.decision.awaiting : (f.view?.awaiting ?? []),
    children: d.children.map(c => c.id),
    dependsOn: d.dependsOnIdx.map(i => d.parent?.children[i]?.id).filter((x): x is NodeId => x !== undefined),
    depth: d.depth,
    detail: d.detail,
    evidence: d.evidence,
    id: d.id,
    index: d.index,
    kind: d.kind,
    leafReason: d.leafReason,
    needs: d.needs,
    parent: d.parent?.id ?? null,
    status: f.status,
    task: f.task,
    title: d.title,
    waiting: waitingReason(d, f, titles)
  }
}

/** Node titles by id, for what blocked tasks wait for; the map is built the first time it is asked. */
export class NodeTitles implements Titles {
  private byId: Map<NodeId, string> | undefined = undefined
  constructor(private readonly order: readonly Draft[]) {}

  of(id: NodeId): string {
    if (this.byId === undefined) {
      this.byId = new Map()
      // The first node with an id wins, as a search in order would find it.
      for (const x of this.order) if (!this.byId.has(x.id)) this.byId.set(x.id, x.title)
    }
    return this.byId.get(id) ?? id
  }
}

/** Why nothing happens at a node right now, in words; null when something can. */
function waitingReason(d: Draft, f: Finish, titles: Titles): string | null {
  switch (f.status) {
    case 'decomposing':
      return d.decision?.kind === 'open' ? d.decision.waiting : 'waiting for proposals from decomposers'
    case 'blocked':
      return `waiting for ${f.blockedBy.map(id => JSON.stringify(titles.of(id))).join(', ')} to finish`
    case 'ready':
      return 'ready: waiting for an executor to claim it'
    case 'in-review':
      return 'waiting for the committee to review the result'
    default:
      return null
  }
}
