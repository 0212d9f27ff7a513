import { logger } from '@libp2p/logger'
import { Fold } from '../core/fold.js'
import { HybridClock } from '../core/hlc.js'
import { IdSet } from '../core/reconcile.js'
import { PROTOCOL_VERSION } from '../core/events.js'
import { decodeEvent } from '../wire/decode.js'
import { signEvent } from '../wire/sign.js'
import { nativeSha256HexOfText } from './hash-text.js'
import type { PrivateKey } from '@libp2p/interface'
import type { EventStore } from '../store/event-store.js'
import type { NodeMetrics } from './metrics.js'
import type { Bodies, EventId, EventType, PeerIdString, PlanEvent, PlanId } from '../core/events.js'
import type { PlanTree } from '../core/tree.js'

const log = logger('plan-swarm:replica')

export type EventSource = 'gossip' | 'sync' | 'local' | 'store'

/** What gossipsub should do with a message: forward it, penalise the sender, or drop it quietly. */
export type Verdict = 'accept' | 'reject' | 'ignore'

export interface IngestResult {
  readonly verdict: Verdict
  readonly id?: EventId
  /** reject: the reason; ignore: 'duplicate' | 'parked' */
  readonly why?: string
  readonly detail?: string
}

export interface ReplicaInit {
  readonly swarm: string
  readonly key: PrivateKey
  readonly peerId: PeerIdString
  readonly store: EventStore
  readonly metrics: NodeMetrics
  /** Local wall clock in ms (tests skew it). */
  readonly now: () => number
}

/**
 * One node's copy of the plan log: every event, whichever way it came
 * (gossip, sync, this node's roles, its own store at start), goes through
 * decode -> verify -> fold -> store -> notify here, one at a time.
 *
 * Invariant: an event is stored once it is folded (or, for another protocol
 * version, once verified), and only then relayed; so what this node tells its
 * peers it has, it can always send them, including after a restart.
 */
export class Replica {
  readonly fold: Fold
  /** Ids this node holds (folded or of another version): what sync reconciles. */
  readonly ids = new IdSet()
  readonly clock: HybridClock
  private readonly listeners = new Set<(events: readonly PlanEvent[]) => void>()
  /** Smoothed delay between another peer signing an event and this node folding it from gossip. */
  lagMs = 0
  /** Wire bytes of parked events, kept to store them when they fold; pruned with the parked set. */
  private readonly parkedBytes = new Map<EventId, Uint8Array>()

  constructor (private readonly init: ReplicaInit) {
    this.clock = new HybridClock(init.now)
    this.fold = new Fold({
      hashText: nativeSha256HexOfText,
      onRejected: (id, reason, detail) => {
        init.metrics.reject(reason, 'parked')
        log('rejected parked event %s: %s (%s)', id, reason, detail)
      }
    })
  }

  get peerId (): PeerIdString {
    return this.init.peerId
  }

  get swarm (): string {
    return this.init.swarm
  }

  /** Fold everything in the store (already verified when it was stored). */
  load (): { loaded: number, damaged: number, rejected: number } {
    let rejected = 0
    const counts = this.init.store.load(row => {
      const r = this.ingest(row.bytes, 'store')
      if (r.verdict === 'reject') rejected++
    }, d => { log.error('store row %d is damaged (%s): skipped', d.rowid, d.problem) })
    return { ...counts, rejected }
  }

  /** Held (folded, parked, or of another version): sync need not send it again. */
  has (id: string): boolean {
    return this.ids.has(id) || this.fold.events.has(id as EventId)
  }

  getBytes (id: string): Uint8Array | undefined {
    return this.init.store.get(id)
  }

  onFolded (fn: (events: readonly PlanEvent[]) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /**
   * Take one event's bytes from anywhere. Never throws for bad input: a
   * rejection is a verdict with a reason, counted in the metrics.
   */
  ingest (bytes: Uint8Array, source: EventSource): IngestResult {
    const m = this.init.metrics
    const decoded = decodeEvent(bytes, { swarm: this.init.swarm, verify: source !== 'store' })
    if (decoded.kind === 'rejected') {
      m.reject(decoded.reason, source)
      log('rejected %s event: %s (%s)', source, decoded.reason, decoded.detail)
      return { verdict: 'reject', why: decoded.reason, detail: decoded.detail }
    }
    if (decoded.kind === 'other-version') {
      if (this.ids.has(decoded.id)) return { verdict: 'ignore', id: decoded.id, why: 'duplicate' }
      if (source !== 'store') this.init.store.put({ id: decoded.id, plan: decoded.plan, bytes, receivedMs: this.init.now() })
      this.ids.add(decoded.id)
      m.ignored.inc({ why: `version-${decoded.v}`, source })
      return { verdict: 'accept', id: decoded.id, why: 'other-version' }
    }
    const e = decoded.event
    const outcome = this.fold.add(e, this.init.now())
    switch (outcome.status) {
      case 'duplicate':
        m.ignored.inc({ why: 'duplicate', source })
        return { verdict: 'ignore', id: e.id, why: 'duplicate' }
      case 'parked':
        this.parkedBytes.set(e.id, bytes)
        m.ignored.inc({ why: outcome.why, source })
        m.parked.set(this.fold.events.parkedCount)
        return { verdict: 'ignore', id: e.id, why: 'parked', detail: outcome.why === 'clock-ahead' ? 'stamped too far ahead of local time' : `waiting for ${outcome.missing.length} deps` }
      case 'rejected':
        m.reject(outcome.reason, source)
        log('rejected %s event %s: %s (%s)', source, e.id, outcome.reason, outcome.detail)
        return { verdict: 'reject', id: e.id, why: outcome.reason, detail: outcome.detail }
      case 'folded':
        this.afterFold(outcome.folded, e, bytes, source)
        return { verdict: 'accept', id: e.id }
      default: {
        const never: never = outcome
        throw new Error(`unhandled outcome ${JSON.stringify(never)}`)
      }
    }
  }

  /** Fold events whose time has come (stamped ahead of our clock) and expire old parked ones; call about once a second. */
  tick (): void {
    const { folded } = this.fold.events.tick(this.init.now())
    if (folded.length > 0) this.afterFold(folded, undefined, undefined, 'gossip')
    if (this.parkedBytes.size > this.fold.events.parkedCount) {
      for (const id of this.parkedBytes.keys()) if (!this.fold.events.has(id)) this.parkedBytes.delete(id)
    }
    this.init.metrics.parked.set(this.fold.events.parkedCount)
  }

  private afterFold (folded: readonly PlanEvent[], first: PlanEvent | undefined, firstBytes: Uint8Array | undefined, source: EventSource): void {
    const now = this.init.now()
    for (const f of folded) {
      this.clock.observe(f.env.hlc)
      if (source !== 'store') {
        // Events unparked by this one waited in memory only: their bytes come from the parked copy.
        const bytes = f === first ? firstBytes : this.parkedBytes.get(f.id)
        if (bytes !== undefined) this.init.store.put({ id: f.id, plan: planOf(f), bytes, receivedMs: now })
      }
      this.parkedBytes.delete(f.id)
      this.ids.add(f.id)
      this.init.metrics.accepted.inc({ source })
      if (source === 'gossip' && f.env.author !== this.init.peerId) {
        // How late others' events reach us (their stamp is their wall clock at signing): a moving
        // estimate that roles use to size waits that must outlast propagation.
        const lag = Math.min(10_000, Math.max(0, now - f.env.hlc.ms))
        this.lagMs = this.lagMs * 0.9 + lag * 0.1
      }
    }
    this.init.metrics.stored.set(this.ids.size)
    this.init.metrics.parked.set(this.fold.events.parkedCount)
    for (const fn of this.listeners) fn(folded)
  }

  /**
   * Make, sign, fold and store an event of this node. Deps are the plan's
   * goal plus `cites`; the stamp is after all of them. Returns the wire
   * bytes to publish.
   */
  async author<T extends EventType> (type: T, plan: PlanId | '', cites: readonly EventId[], body: Bodies[T]): Promise<{ event: PlanEvent<T>, bytes: Uint8Array }> {
    const deps = [...new Set(plan === '' ? cites : [plan as string as EventId, ...cites])].sort()
    const depEvents = deps.map(d => {
      const e = this.fold.events.get(d)
      if (e === undefined) throw new Error(`cannot cite ${d}: this node does not hold it folded`)
      return e
    })
    const hlc = this.clock.stamp(depEvents.map(d => d.env.hlc))
    const env = { v: PROTOCOL_VERSION, swarm: this.init.swarm, type, plan, author: this.init.peerId, hlc, deps, body }
    const signed = await signEvent(env, this.init.key)
    const r = this.ingest(signed.bytes, 'local')
    if (r.verdict !== 'accept') throw new Error(`own ${type} event was not folded: ${r.why ?? ''} ${r.detail ?? ''}`)
    return { event: signed.event as PlanEvent<T>, bytes: signed.bytes }
  }

  tree (plan: PlanId): PlanTree | undefined {
    const t0 = performance.now()
    const tree = this.fold.tree(plan)
    this.init.metrics.foldSeconds.observe((performance.now() - t0) / 1000)
    return tree
  }

  /** One line per plan, as /status shows it. */
  planSummaries (): Array<{ id: PlanId, goal: string, status: string, treeHash: string, nodes: number, done: number, spentTokens: number, budgetTokens: number }> {
    return this.fold.plans().map(id => {
      const t = this.tree(id) as PlanTree
      return {
        id,
        goal: t.goal,
        status: t.status,
        treeHash: this.fold.treeHash(id) as string,
        nodes: t.nodes.length,
        done: t.nodes.filter(n => n.status === 'done').length,
        spentTokens: t.spentTokens,
        budgetTokens: t.budgetTokens
      }
    })
  }
}

function planOf (e: PlanEvent): string {
  return e.env.type === 'goal-submitted' ? e.id : e.env.plan
}
