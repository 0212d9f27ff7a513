import { NOTHING_QUEUED } from './virtual-time.js'
import type { NodeClock, VirtualTime } from './virtual-time.js'

/** What one link does to a message, while faults are on. */
export interface LinkFaults {
  /** Base one-way delay (ms). */
  readonly delayMs: number
  /** Added uniformly in [0, jitterMs): messages overtake each other (reordering). */
  readonly jitterMs: number
  /** Probability a message is lost. */
  readonly loss: number
  /** Probability a message is delivered twice. */
  readonly duplicate: number
}

/** A quiet network: 2-5 ms per hop, nothing lost. */
export const CLEAN_LINKS: LinkFaults = { delayMs: 2, jitterMs: 3, loss: 0, duplicate: 0 }

/**
 * Gossip framing per message beyond the event's own bytes (topic, message id,
 * protobuf and yamux/noise framing): an estimate, counted the same for every
 * message, so that bytes per node compare across swarm sizes.
 */
export const GOSSIP_OVERHEAD_BYTES = 120

/** Per-node traffic, as the simulated network counted it. */
export interface Traffic {
  messagesSent: number
  messagesReceived: number
  bytesSent: number
  bytesReceived: number
  /** Deliveries dropped by gossip's seen cache (copies of a message already handled). */
  duplicatesDropped: number
  /** Of messagesReceived: plan events and presence (gossip deliveries). */
  eventMessagesReceived: number
  presenceMessagesReceived: number
  /** Of bytesReceived: plan events by gossip, presence by gossip, and sync streams. */
  eventBytesReceived: number
  presenceBytesReceived: number
  syncBytesReceived: number
}

export interface Endpoint {
  readonly peerId: string
  readonly clock: NodeClock
  /** This node has handled a gossip message with this id already (so another copy will be dropped). */
  seen: (id: string) => boolean
  /**
   * A gossip message (event or presence) arrived from a neighbour; NOTHING_QUEUED when that started nothing
   * asynchronous (a copy already seen).
   */
  deliver: (
    topic: 'events' | 'presence',
    from: string,
    id: string,
    payload: Uint8Array | object,
    size: number
  ) => void | typeof NOTHING_QUEUED
}

/** How links between simulated nodes come about (WorldOptions.topology). */
export type SimTopology = 'fixed' | 'neighbours'

/**
 * The simulated wire. Links are either a fixed random graph of bounded
 * degree (`fixed`: a ring plus random chords, about `degree` links per
 * node, built once), or connections (`neighbours`): none at first, opened by
 * `dial` (one round trip of the link's delay, refused across a partition, to
 * a node down or paused, or to a node at `connectionCap`, as libp2p's
 * connection manager refuses inbound connections beyond maxConnections) and
 * closed by `hangUp`, a crash or a partition. Gossip is flooded over the
 * links there are. Per-link delay, jitter, loss and duplication are drawn
 * from the world's seeded stream, partitions are a predicate over pairs. A
 * message is delivered as a timer of the receiver's clock, so a paused node
 * gets it late and a crashed one never.
 */
export class SimNetwork {
  readonly neighbours = new Map<string, Set<string>>()
  readonly traffic = new Map<string, Traffic>()
  private readonly endpoints = new Map<string, Endpoint>()
  private cutFn: (a: string, b: string) => boolean = () => false
  faults: LinkFaults = CLEAN_LINKS
  private readonly listeners = new Set<() => void>()
  /** Virtual ms each connection opened at (`neighbours` only), by `linkKey`. */
  private readonly openedAt = new Map<string, number>()
  /** Who dialed each connection (`neighbours` only), by `linkKey`. */
  private readonly openedBy = new Map<string, string>()
  private readonly linkListeners = new Map<string, (peer: string, up: boolean) => void>()
  /** Gossip copies on their way now by the clock that will deliver them, and dials (null): see `inFlight`. */
  private readonly pending = new Map<NodeClock | null, number>()

  constructor(
    private readonly time: VirtualTime,
    private readonly random: () => number,
    peers: readonly string[],
    degree: number,
    readonly topology: SimTopology = 'fixed',
    readonly connectionCap = Infinity
  ) {
    for (const p of peers) {
      this.neighbours.set(p, new Set())
      this.traffic.set(p, emptyTraffic())
    }
    if (topology === 'neighbours') return
    const n = peers.length
    const link = (a: string, b: string): void => {
      if (a === b) return
      this.neighbours.get(a)?.add(b)
      this.neighbours.get(b)?.add(a)
    }
    if (n <= degree + 1) {
      for (const a of peers) for (const b of peers) link(a, b)
    } else {
      // A ring (so the graph is connected) plus chords to random peers: about `degree` links per node, a diameter of about log n.
      const chords = Math.max(1, Math.round((degree - 2) / 2))
      for (let i = 0; i < n; i++) link(peers[i] as string, peers[(i + 1) % n] as string)
      for (let i = 0; i < n; i++) {
        for (let c = 0; c < chords; c++) link(peers[i] as string, peers[Math.floor(this.random() * n)] as string)
      }
    }
  }

  /** Told of each connection of `peerId` that opens or closes (`neighbours` only); one listener per node. */
  onLink(peerId: string, fn: ((peer: string, up: boolean) => void) | null): void {
    if (fn === null) this.linkListeners.delete(peerId)
    else this.linkListeners.set(peerId, fn)
  }

  /** `peer` dialed the connection `self` holds to it (`neighbours` only). */
  dialedBy(self: string, peer: string): boolean {
    return this.openedBy.get(linkKey(self, peer)) === peer
  }

  /** Connections a node holds now (`neighbours`), or its links in the fixed graph. */
  linkCount(peerId: string): number {
    return this.neighbours.get(peerId)?.size ?? 0
  }

  /** Virtual ms a node's connection to `peer` has been open (0 when there is none or the graph is fixed). */
  linkAgeMs(peerId: string, peer: string): number {
    const at = this.openedAt.get(linkKey(peerId, peer))
    return at === undefined ? 0 : this.time.elapsed - at
  }

  /**
   * Open a connection from `from` to `to` (`neighbours`): it takes one round
   * trip, and fails when either end is down or paused, the dialer restarted meanwhile,
   * the pair is partitioned, or either end already holds connectionCap
   * connections. Resolves at once when they are connected already.
   */
  async dial(from: string, to: string): Promise<void> {
    if (this.topology !== 'neighbours') throw new Error('dial: the fixed topology has no connections to open')
    if (this.neighbours.get(from)?.has(to) === true) return
    const a = this.endpoints.get(from)
    const rtt = this.delay() + this.delay()
    this.count(null, 1)
    await new Promise<void>((resolve, reject) => {
      this.time.schedule(
        rtt,
        () => {
          this.count(null, -1)
          const a2 = this.endpoints.get(from)
          const b2 = this.endpoints.get(to)
          if (a === undefined || a2?.clock !== a.clock || a.clock.isPaused) {
            reject(new Error('the dialer is down'))
            return
          }
          if (b2 === undefined || b2.clock.isPaused || this.cutFn(from, to)) {
            reject(new Error(`no route to ${to}`))
            return
          }
          if (this.neighbours.get(from)?.has(to) === true) {
            resolve()
            return
          }
          if (this.linkCount(to) >= this.connectionCap || this.linkCount(from) >= this.connectionCap) {
            reject(new Error('connection refused: maxConnections'))
            return
          }
          this.connect(from, to)
          this.openedBy.set(linkKey(from, to), from)
          resolve()
        },
        null
      )
    })
  }

  /** Close the connection between a and b (either side hanging up, a crash, a partition). */
  hangUp(a: string, b: string): void {
    if (this.neighbours.get(a)?.delete(b) !== true) return
    this.neighbours.get(b)?.delete(a)
    this.openedAt.delete(linkKey(a, b))
    this.openedBy.delete(linkKey(a, b))
    this.linkListeners.get(a)?.(b, false)
    this.linkListeners.get(b)?.(a, false)
  }

  private connect(a: string, b: string): void {
    this.neighbours.get(a)?.add(b)
    this.neighbours.get(b)?.add(a)
    this.openedAt.set(linkKey(a, b), this.time.elapsed)
    this.linkListeners.get(a)?.(b, true)
    this.linkListeners.get(b)?.(a, true)
  }

  attach(e: Endpoint): void {
    this.endpoints.set(e.peerId, e)
  }
  detach(peerId: string): void {
    this.endpoints.delete(peerId)
    // A process that is gone has no connections: its peers see them close.
    if (this.topology === 'neighbours') for (const b of [...(this.neighbours.get(peerId) ?? [])]) this.hangUp(peerId, b)
    this.linkListeners.delete(peerId)
    this.changed()
  }

  /** Partitions: `cut(a, b)` true means a and b cannot reach each other now; connections across the cut close. */
  setPartition(cut: ((a: string, b: string) => boolean) | null): void {
    this.cutFn = cut ?? (() => false)
    if (this.topology === 'neighbours' && cut !== null) {
      for (const [a, links] of this.neighbours) for (const b of [...links]) if (a < b && cut(a, b)) this.hangUp(a, b)
    }
    this.changed()
  }

  /** Told when links come or go (partitions, crashes, restarts): transports cut their streams and re-sync. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  changed(): void {
    for (const fn of [...this.listeners]) fn()
  }

  /** Whether a and b can exchange messages now (both up, linked, not partitioned, neither paused counts as up). */
  reachable(a: string, b: string): boolean {
    return (
      this.endpoints.has(a) && this.endpoints.has(b) && (this.neighbours.get(a)?.has(b) ?? false) && !this.cutFn(a, b)
    )
  }

  /** The live neighbours a node can reach now. */
  connected(peerId: string): string[] {
    // Connections never outlive an end (detach hangs up) nor cross a partition (setPartition hangs up, dial refuses):
    // every one is reachable, and this runs on every presence a node hears (the neighbourhood's `connected`).
    if (this.topology === 'neighbours') return [...(this.neighbours.get(peerId) ?? [])]
    const out: string[] = []
    for (const b of this.neighbours.get(peerId) ?? []) if (this.reachable(peerId, b)) out.push(b)
    return out
  }

  /** The one-way delay of one message on a link now. */
  delay(): number {
    const f = this.faults
    return f.delayMs + this.random() * f.jitterMs
  }

  /** Gossip one message to one neighbour, with the link's faults. */
  send(
    from: string,
    to: string,
    topic: 'events' | 'presence',
    id: string,
    payload: Uint8Array | object,
    size: number
  ): void {
    if (!this.reachable(from, to)) return
    const wire = size + GOSSIP_OVERHEAD_BYTES
    const tf = this.traffic.get(from) as Traffic
    tf.messagesSent++
    tf.bytesSent += wire
    if (this.random() < this.faults.loss) return
    const copies = this.random() < this.faults.duplicate ? 2 : 1
    for (let c = 0; c < copies; c++) {
      const target = this.endpoints.get(to)
      if (target === undefined) return
      const delay = this.delay()
      // A copy of what the receiver already handled does nothing but count when it lands (its seen set only grows):
      // counted now, with no timer. Most of a flood's copies are such (each node gets one from every neighbour),
      // and at 1000 nodes a mass start queued ~800,000 of them at once. Counted a few ms early, and also when the
      // receiver crashes or is cut off before it would have landed; what any node does is the same.
      if (target.seen(id)) {
        this.received(to, topic, wire).duplicatesDropped++
        continue
      }
      this.count(target.clock, 1)
      this.time.schedule(
        delay,
        () => {
          this.count(target.clock, -1)
          // The receiver may have crashed and restarted meanwhile: deliver to whoever holds the id now.
          const now = this.endpoints.get(to)
          if (now === undefined || now.clock !== target.clock || this.cutFn(from, to)) return NOTHING_QUEUED
          this.received(to, topic, wire)
          return now.deliver(topic, from, id, payload, size)
        },
        target.clock
      )
    }
  }

  private count(clock: NodeClock | null, by: number): void {
    const n = (this.pending.get(clock) ?? 0) + by
    if (n === 0) this.pending.delete(clock)
    else this.pending.set(clock, n)
  }

  /**
   * Gossip copies and dials on their way now (a long run skips idle time
   * only when there are none); copies to a node that crashed meanwhile are
   * never delivered and not counted.
   */
  inFlight(): number {
    let n = 0
    for (const [clock, k] of this.pending) {
      if (clock !== null && clock.isDead) this.pending.delete(clock)
      else n += k
    }
    return n
  }

  /** Count one gossip message received by `to`. */
  private received(to: string, topic: 'events' | 'presence', wire: number): Traffic {
    const tt = this.traffic.get(to) as Traffic
    tt.messagesReceived++
    tt.bytesReceived += wire
    if (topic === 'events') {
      tt.eventMessagesReceived++
      tt.eventBytesReceived += wire
    } else {
      tt.presenceMessagesReceived++
      tt.presenceBytesReceived += wire
    }
    return tt
  }

  /** Count presence received other than by gossip (a roster exchange's reply) against a node. */
  countPresence(peerId: string, n: number): void {
    const t = this.traffic.get(peerId)
    if (t === undefined) return
    t.bytesReceived += n
    t.presenceBytesReceived += n
  }

  /** Count sync stream bytes against a node. */
  countStream(peerId: string, direction: 'sent' | 'received', n: number): void {
    const t = this.traffic.get(peerId)
    if (t === undefined) return
    if (direction === 'sent') t.bytesSent += n
    else {
      t.bytesReceived += n
      t.syncBytesReceived += n
    }
  }
}

function linkKey(a: string, b: string): string {
  return a < b ? `${a} ${b}` : `${b} ${a}`
}

function emptyTraffic(): Traffic {
  return {
    messagesSent: 0,
    messagesReceived: 0,
    bytesSent: 0,
    bytesReceived: 0,
    duplicatesDropped: 0,
    eventMessagesReceived: 0,
    presenceMessagesReceived: 0,
    eventBytesReceived: 0,
    presenceBytesReceived: 0,
    syncBytesReceived: 0
  }
}
