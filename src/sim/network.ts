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
  /** Of bytesReceived: plan events by gossip, presence by gossip, and sync streams. */
  eventBytesReceived: number
  presenceBytesReceived: number
  syncBytesReceived: number
}

export interface Endpoint {
  readonly peerId: string
  readonly clock: NodeClock
  /** A gossip message (event or presence) arrived from a neighbour. */
  deliver: (topic: 'events' | 'presence', from: string, id: string, payload: Uint8Array | object, size: number) => void
}

/**
 * The simulated wire: a fixed random topology of bounded degree (a ring plus
 * random chords, about `degree` links per node: the stand-in for gossipsub's
 * mesh, over which messages are flooded), per-link delay, jitter, loss and duplication drawn from the
 * world's seeded stream, and partitions as a predicate over pairs. A message
 * is delivered as a timer of the receiver's clock, so a paused node gets it
 * late and a crashed one never.
 */
export class SimNetwork {
  readonly neighbours = new Map<string, Set<string>>()
  readonly traffic = new Map<string, Traffic>()
  private readonly endpoints = new Map<string, Endpoint>()
  private cutFn: (a: string, b: string) => boolean = () => false
  faults: LinkFaults = CLEAN_LINKS
  private readonly listeners = new Set<() => void>()

  constructor (private readonly time: VirtualTime, private readonly random: () => number, peers: readonly string[], degree: number) {
    for (const p of peers) { this.neighbours.set(p, new Set()); this.traffic.set(p, emptyTraffic()) }
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

  attach (e: Endpoint): void { this.endpoints.set(e.peerId, e) }
  detach (peerId: string): void { this.endpoints.delete(peerId); this.changed() }

  /** Partitions: `cut(a, b)` true means a and b cannot reach each other now. */
  setPartition (cut: ((a: string, b: string) => boolean) | null): void {
    this.cutFn = cut ?? (() => false)
    this.changed()
  }

  /** Told when links come or go (partitions, crashes, restarts): transports cut their streams and re-sync. */
  onChange (fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  changed (): void { for (const fn of [...this.listeners]) fn() }

  /** Whether a and b can exchange messages now (both up, linked, not partitioned, neither paused counts as up). */
  reachable (a: string, b: string): boolean {
    return this.endpoints.has(a) && this.endpoints.has(b) && (this.neighbours.get(a)?.has(b) ?? false) && !this.cutFn(a, b)
  }

  /** The live neighbours a node can reach now. */
  connected (peerId: string): string[] {
    const out: string[] = []
    for (const b of this.neighbours.get(peerId) ?? []) if (this.reachable(peerId, b)) out.push(b)
    return out
  }

  /** The one-way delay of one message on a link now. */
  delay (): number {
    const f = this.faults
    return f.delayMs + this.random() * f.jitterMs
  }

  /** Gossip one message to one neighbour, with the link's faults. */
  send (from: string, to: string, topic: 'events' | 'presence', id: string, payload: Uint8Array | object, size: number): void {
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
      this.time.schedule(this.delay(), () => {
        // The receiver may have crashed and restarted meanwhile: deliver to whoever holds the id now.
        const now = this.endpoints.get(to)
        if (now === undefined || now.clock !== target.clock || this.cutFn(from, to)) return
        const tt = this.traffic.get(to) as Traffic
        tt.messagesReceived++
        tt.bytesReceived += wire
        if (topic === 'events') tt.eventBytesReceived += wire
        else tt.presenceBytesReceived += wire
        now.deliver(topic, from, id, payload, size)
      }, target.clock)
    }
  }

  /** Count sync stream bytes against a node. */
  countStream (peerId: string, direction: 'sent' | 'received', n: number): void {
    const t = this.traffic.get(peerId)
    if (t === undefined) return
    if (direction === 'sent') t.bytesSent += n
    else { t.bytesReceived += n; t.syncBytesReceived += n }
  }
}

function emptyTraffic (): Traffic {
  return { messagesSent: 0, messagesReceived: 0, bytesSent: 0, bytesReceived: 0, duplicatesDropped: 0, eventBytesReceived: 0, presenceBytesReceived: 0, syncBytesReceived: 0 }
}
