import { childId, rollupId } from '../../src/core/derive.js'
import { PlanBuilder, makePeers, subgoals } from './plan-builder.js'
import type { EventId, NodeId, PeerIdString, PlanEvent, PlanId, PlanParams, TaskId } from '../../src/core/events.js'

/**
 * A plan of the given shape as a stream of events in the order a swarm makes them: the goal; level by level, three
 * proposals and then the committee's three ballots for every node of the level; then every leaf's claim, one renewal
 * and result (the executors taking turns), and each composite's roll-up (claim, result) as soon as its last child is
 * done. `fanouts[i]` is how many children each node of depth i gets (at most 7, the protocol's cap on subgoals); the
 * leaves are at depth `fanouts.length`. Stamps advance 1 ms per event, so every event is stamped after its deps.
 * `params` overrides the goal's parameters; `builder` makes more events of the plan (a failure, a retry).
 */
export async function bigPlanEvents(
  fanouts: readonly number[],
  params: Partial<PlanParams> = {}
): Promise<{ events: PlanEvent[]; plan: PlanId; nodes: number; builder: PlanBuilder }> {
  const peers = await makePeers(9)
  const [author, d1, d2, d3, s1, s2, s3, e1, e2] = peers.map(p => p.id) as [PeerIdString, ...PeerIdString[]]
  const scorers = [s1, s2, s3] as PeerIdString[]
  const executors = [e1, e2] as PeerIdString[]
  const b = new PlanBuilder(
    author,
    scorers,
    { maxDepth: fanouts.length, maxNodes: 5_000, minChildren: 2, maxChildren: 7, leaseMs: 600_000, ...params },
    1_000,
    `a plan of shape ${fanouts.join('x')}`
  )
  const events: PlanEvent[] = [b.goal]
  let t = 2_000
  const now = (): number => ++t
  let level: NodeId[] = [b.root]
  const parent = new Map<NodeId, NodeId>()
  const children = new Map<NodeId, NodeId[]>()
  const levels: NodeId[][] = []
  for (const [depth, fanout] of fanouts.entries()) {
    levels.push(level)
    const winners = level.map(node => {
      const proposals = [d1, d2, d3].map((d, v) =>
        b.propose(
          d as PeerIdString,
          node,
          1,
          subgoals(
            Array.from({ length: fanout }, (_, i) => `step ${i + 1} of ${node.slice(0, 6)} v${v}`),
            { leaf: depth === fanouts.length - 1 }
          ),
          now()
        )
      )
      events.push(...proposals)
      return { node, proposals }
    })
    const next: NodeId[] = []
    for (const { node, proposals } of winners) {
      const winner = proposals[0] as PlanEvent<'split-proposed'>
      for (const s of scorers) events.push(b.ballot(s, { node, attempt: 1 }, winner, now(), { judged: proposals }))
      const kids: NodeId[] = []
      for (let i = 0; i < fanout; i++) kids.push(childId(node, winner.id, i))
      for (const k of kids) parent.set(k, node)
      children.set(node, kids)
      next.push(...kids)
    }
    level = next
  }
  const done = new Map<NodeId, EventId>()
  // A composite is rolled up as soon as its last child is done, as the swarm does.
  const rollUp = (node: NodeId | undefined): void => {
    if (node === undefined) return
    const kids = children.get(node) as NodeId[]
    if (!kids.every(k => done.has(k))) return
    const evidence = kids.map(k => done.get(k) as EventId)
    const claim = b.claim(executors[0] as PeerIdString, rollupId(node), now(), { evidence })
    const result = b.result(claim, now(), `the roll-up of ${node.slice(0, 8)}`)
    events.push(claim, result)
    done.set(node, result.id)
    rollUp(parent.get(node))
  }
  level.forEach((leaf, i) => {
    const claim = b.claim(executors[i % 2] as PeerIdString, leaf as string as TaskId, now())
    const renewal = b.renew(claim, claim, now())
    const result = b.result(claim, now(), `the result of ${leaf.slice(0, 8)}`, { inputTokens: 10, outputTokens: 20 }, [
      renewal.id
    ])
    events.push(claim, renewal, result)
    done.set(leaf, result.id)
    rollUp(parent.get(leaf))
  })
  const nodes = levels.reduce((n, l) => n + l.length, level.length)
  return { events, plan: b.plan, nodes, builder: b }
}
