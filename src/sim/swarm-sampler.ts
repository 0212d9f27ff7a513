import { NEIGHBOUR_TICK_MS, TRIM_AFTER_MS } from '../net/neighbours.js'
import type { SimNetwork } from './network.js'
import type { SimNode } from './sim-node.js'
import type { VirtualTime } from './virtual-time.js'

/** How full the live nodes' rosters were when a run ended: other live nodes listed, as a share of all of them. */
export interface RosterFill {
  readonly liveNodes: number
  /** The emptiest roster's share (0..1), and the median one's. */
  readonly emptiest: number
  readonly median: number
  /** Live nodes whose roster listed every other live node. */
  readonly full: number
}

/** One second of a run as `--trace` shows it. */
export interface TraceSample {
  readonly atMs: number
  /** Timers run so far, and timers queued now (cancelled ones included). */
  readonly steps: number
  readonly pendingTimers: number
  /** Gossip deliveries in the last second, all nodes together: plan events, presence. */
  readonly eventMessages: number
  readonly presenceMessages: number
  readonly liveNodes: number
  /** Live nodes with no connection at all. */
  readonly alone: number
  readonly connectionsMedian: number
  readonly connectionsMax: number
  /** Fewest other live nodes a live node's roster lists, and how many rosters list all of them. */
  readonly rosterMin: number
  readonly rostersFull: number
}

/** What the connection sampler saw (neighbours topology), once a virtual second. */
export interface ConnectionSamples {
  /** Most connections any node held at a sample. */
  maxConnections: number
  /** Median over the run's last sample of connections per live node. */
  medianAtEnd: number
  /** Samples where a node held more than maxPeers + NEWCOMER_HEADROOM (libp2p's maxConnections). */
  overCap: string[]
  /** Samples where a node held more than maxPeers connections older than its grace (TRIM_AFTER_MS) plus two neighbour ticks. */
  overMaxPeers: string[]
}

/** The swarm as the sampler sees it (a World). */
export interface SampledSwarm {
  readonly time: VirtualTime
  readonly network: SimNetwork
  readonly nodes: readonly SimNode[]
  readonly maxPeers: number
  /** Where rosterFullMs counts from: the start, or the end of the faults in a run with faults. */
  readonly rosterOriginMs: number
}

/**
 * What a run sees of its swarm without touching it: every node's
 * connections against their bounds, whether and when every live roster
 * listed every live node, and the `--trace` view. It only reads, so a run
 * is the same sampled or not.
 */
export class SwarmSampler {
  readonly connections: ConnectionSamples = { maxConnections: 0, medianAtEnd: 0, overCap: [], overMaxPeers: [] }
  /**
   * Virtual ms from the start (from the end of the faults in a run with
   * faults) until every live node's roster first listed every other live
   * node (neighbours topology; sampled once a virtual second).
   */
  rosterFullMs: number | undefined
  /** Deliveries counted at the last trace sample (`trace` only): events, presence. */
  private traced = { events: 0, presence: 0 }
  /** Where rostersFull starts looking: the node whose roster was short at the last sample. */
  private rosterCursor = 0

  constructor(
    private readonly swarm: SampledSwarm,
    private readonly trace: ((s: TraceSample) => void) | undefined
  ) {}

  /**
   * Once a virtual second (neighbours topology): every node's connections
   * against its bounds, and whether every live node's roster lists every
   * other live node.
   */
  sampleConnections(): void {
    const { network: net, nodes, maxPeers } = this.swarm
    const now = this.swarm.time.elapsed
    const grace = TRIM_AFTER_MS + 2 * NEIGHBOUR_TICK_MS
    const counts: number[] = []
    for (const n of nodes) {
      if (n.runtime === undefined) continue
      const links = [...(net.neighbours.get(n.peerId) ?? [])]
      counts.push(links.length)
      this.connections.maxConnections = Math.max(this.connections.maxConnections, links.length)
      if (links.length > net.connectionCap)
        this.connections.overCap.push(
          `node ${n.index} held ${links.length} connections at ${now} ms (cap ${net.connectionCap})`
        )
      // A paused node's trim did not run: its bound holds again two ticks after it resumed.
      if (n.clock.isPaused || now - n.resumedAt < 2 * NEIGHBOUR_TICK_MS) continue
      const old = links.filter(b => net.linkAgeMs(n.peerId, b) >= grace).length
      if (old > maxPeers)
        this.connections.overMaxPeers.push(
          `node ${n.index} held ${old} connections older than ${grace} ms at ${now} ms (max-peers ${maxPeers})`
        )
    }
    counts.sort((a, b) => a - b)
    this.connections.medianAtEnd = counts[Math.floor((counts.length - 1) / 2)] ?? 0
    const origin = this.swarm.rosterOriginMs
    if (this.rosterFullMs === undefined && now >= origin && this.rostersFull()) this.rosterFullMs = now - origin
    this.traceSample()
  }

  /** Hands `trace` what the swarm looks like now (nothing without it). */
  traceSample(): void {
    const trace = this.trace
    if (trace === undefined) return
    const { network, nodes, time } = this.swarm
    let events = 0
    let presence = 0
    for (const t of network.traffic.values()) {
      events += t.eventMessagesReceived
      presence += t.presenceMessagesReceived
    }
    const live = liveIds(nodes)
    const counts: number[] = []
    let alone = 0
    let rosterMin = Infinity
    let full = 0
    for (const n of nodes) {
      const v = n.runtime?.view
      if (v === undefined) continue
      const c = network.linkCount(n.peerId)
      counts.push(c)
      if (c === 0) alone++
      let listed = 0
      for (const r of v.roster()) if (r.peerId !== n.peerId && live.has(r.peerId)) listed++
      rosterMin = Math.min(rosterMin, listed)
      if (listed >= live.size - 1) full++
    }
    counts.sort((a, b) => a - b)
    trace({
      atMs: time.elapsed,
      steps: time.steps,
      pendingTimers: time.pending,
      eventMessages: events - this.traced.events,
      presenceMessages: presence - this.traced.presence,
      liveNodes: live.size,
      alone,
      connectionsMedian: counts[Math.floor((counts.length - 1) / 2)] ?? 0,
      connectionsMax: counts[counts.length - 1] ?? 0,
      rosterMin: rosterMin === Infinity ? 0 : rosterMin,
      rostersFull: full
    })
    this.traced = { events, presence }
  }

  /** Every live node's roster lists every other live node. */
  rostersFull(): boolean {
    const nodes = this.swarm.nodes
    const live = liveIds(nodes)
    // Each roster lists up to n peers: checking them all every second cost n² a sample at 1000 nodes.
    // Start from the node found short last time (a full roster rarely loses an entry within its TTL),
    // so a sample is one roster until that one fills; true only after a pass over every node.
    const n = nodes.length
    for (let k = 0; k < n; k++) {
      const i = (this.rosterCursor + k) % n
      const node = nodes[i] as SimNode
      const v = node.runtime?.view
      if (v === undefined) continue
      let listed = 0
      for (const r of v.roster()) if (r.peerId !== node.peerId && live.has(r.peerId)) listed++
      if (listed < live.size - 1) {
        this.rosterCursor = i
        return false
      }
    }
    return true
  }

  /** How full every live roster is now (one pass over every roster: n² at the end of a run, not every second). */
  measureRosterFill(): RosterFill {
    const nodes = this.swarm.nodes
    const live = liveIds(nodes)
    const others = Math.max(1, live.size - 1)
    const shares: number[] = []
    let full = 0
    for (const n of nodes) {
      const v = n.runtime?.view
      if (v === undefined) continue
      let listed = 0
      for (const r of v.roster()) if (r.peerId !== n.peerId && live.has(r.peerId)) listed++
      if (listed >= live.size - 1) full++
      shares.push(listed / others)
    }
    shares.sort((a, b) => a - b)
    return {
      liveNodes: live.size,
      emptiest: shares[0] ?? 0,
      median: shares[Math.floor((shares.length - 1) / 2)] ?? 0,
      full
    }
  }
}

/** The peer ids of the nodes up now. */
function liveIds(nodes: readonly SimNode[]): Set<string> {
  const live = new Set<string>()
  for (const n of nodes) if (n.runtime !== undefined) live.add(n.peerId)
  return live
}
