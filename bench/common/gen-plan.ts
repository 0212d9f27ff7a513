import { PlanBuilder, makePeers, subgoals } from '../../test/helpers/plan-builder.js'
import { childId, rollupId } from '../../src/core/derive.js'
import type { PrivateKey } from '@libp2p/interface'
import type { EventId, NodeId, PeerIdString, PlanEvent, PlanParams, TaskId } from '../../src/core/events.js'

/**
 * A big, fully valid plan for the fold benchmark: a complete tree of the given
 * fan-out and depth, three competing proposals and a full committee vote per
 * composite node, and per leaf a claim, `renewals` renewals and a result; every
 * composite then rolls up. Stamps advance by 1 ms per event, so every event is
 * stamped after its deps.
 */
export async function generatePlan(opts: {
  fanout: number
  depth: number
  renewals: number
  /** Plan parameters over the generator's own (retainDays, say). */
  params?: Partial<PlanParams>
  /**
   * Wall ms the stamps start from (default 0: fixed stamps, the same plan every run). Real nodes need recent
   * stamps: a finished plan stamped in 1970 has expired under its retention, and a node lets it go at once.
   */
  startMs?: number
}): Promise<{ events: PlanEvent[]; peers: Array<{ id: PeerIdString; key: PrivateKey }>; builder: PlanBuilder }> {
  const peers = await makePeers(9)
  const [author, d1, d2, d3, s1, s2, s3, e1, e2] = peers.map(p => p.id) as [PeerIdString, ...PeerIdString[]]
  const decomposers = [d1, d2, d3] as PeerIdString[]
  const executors = [e1, e2] as PeerIdString[]
  const start = opts.startMs ?? 0
  const b = new PlanBuilder(
    author,
    [s1, s2, s3] as PeerIdString[],
    {
      maxDepth: opts.depth,
      maxNodes: 5_000,
      minChildren: 2,
      maxChildren: 7,
      leaseMs: 60_000,
      maxClaimMs: 86_400_000,
      ...opts.params
    },
    start + 1_000
  )
  const events: PlanEvent[] = [b.goal]
  let t = start + 2_000
  const now = (): number => ++t
  const done = new Map<NodeId, EventId>()

  const grow = (node: NodeId, depth: number): void => {
    if (depth >= opts.depth) {
      const task = node as string as TaskId
      const claim = b.claim(executors[depth % 2] as PeerIdString, task, now())
      events.push(claim)
      let prev: PlanEvent = claim
      for (let i = 0; i < opts.renewals; i++) {
        prev = b.renew(claim, prev, now())
        events.push(prev)
      }
      const result = b.result(claim, now(), `result of ${node.slice(0, 8)}`, { inputTokens: 10, outputTokens: 20 }, [
        prev.id
      ])
      events.push(result)
      done.set(node, result.id)
      return
    }
    const titles = Array.from({ length: opts.fanout }, (_, i) => `part ${i + 1} of ${node.slice(0, 6)}`)
    const proposals = decomposers.map((d, i) =>
      b.propose(
        d,
        node,
        1,
        subgoals(
          titles.map(x => `${x} v${i}`),
          { leaf: false }
        ),
        now()
      )
    )
    events.push(...proposals)
    const winner = proposals[0] as PlanEvent<'split-proposed'>
    for (const s of [s1, s2, s3] as PeerIdString[])
      events.push(b.ballot(s, { node, attempt: 1 }, winner, now(), { judged: proposals }))
    const children = titles.map((_, i) => childId(node, winner.id, i))
    for (const c of children) grow(c, depth + 1)
    const task = rollupId(node)
    const claim = b.claim(executors[0] as PeerIdString, task, now(), {
      evidence: children.map(c => done.get(c) as EventId)
    })
    const result = b.result(claim, now(), `roll-up of ${node.slice(0, 8)}`)
    events.push(claim, result)
    done.set(node, result.id)
  }
  grow(b.root, 0)
  return { events, peers, builder: b }
}
