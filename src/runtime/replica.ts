import { logger } from '@libp2p/logger'
import { Fold, summarizeTree } from '../core/fold.js'
import { planOf } from '../core/event-set.js'
import { HybridClock } from '../core/hlc.js'
import { IdSet } from '../core/id-set.js'
import type { SyncIds } from '../sync/reconcile/index.js'
import { eventVersion } from '../core/events.js'
import { needsPhrase, unmetNeeds } from '../core/needs.js'
import { isFinished } from '../core/view.js'
import { compareEvents } from '../core/order.js'
import { isExpired } from '../core/retention.js'
import { CatchUp, HISTORY_QUIET_MS } from './catch-up.js'
import { AuthorLimit, DEFAULT_OPEN_PLANS_PER_AUTHOR, planStanding } from '../core/admission.js'
import { decodeEvent } from '../wire/decode.js'
import type { DecodeResult, DecodedEvent, SignatureVerifier } from '../wire/decode.js'
import { signEvent } from '../wire/sign.js'
import { eventIdOfWire } from '../wire/codec.js'
import { nativeSha256HexOfText } from '../sync/native-hash.js'
import { VerifyPool, checkWireSignature, createNativeVerifier } from './verify.js'
import type { VerifyJob } from './verify.js'
import { WriteQueue } from './write-queue.js'
import { QuietPlans } from './quiet-plans.js'
import type { PrivateKey } from '@libp2p/interface'
import { realScheduler } from '../ports/scheduler.js'
import type { Scheduler } from '../ports/scheduler.js'
import type { Verdict } from '../ports/transport.js'
import type { AddOutcome } from '../core/event-set.js'
import type { EventStore, StoredEvent } from '../ports/event-store.js'
import type { NodeMetrics } from './metrics.js'
import type { Bodies, EventId, EventType, NodeId, PeerIdString, PlanEvent, PlanId } from '../core/events.js'
import type { PlanRecord, PlanSummary } from '../core/fold.js'
import type { PlanTree, TreeNode } from '../core/tree.js'
import type { PlanLine, PlanScope } from '../ports/node-view.js'

const log = logger('plan-swarm:replica')

/** Wire-rejected ids remembered so sync does not fetch them again. */
export const MAX_REFUSED_IDS = 10_000

/** Waiting nodes a plan's /status line names at most. */
export const STATUS_WAITING_MAX = 5

/** The finished plans /status lists at most, those with the latest last event (GET /plans lists every one). */
export const STATUS_FINISHED_MAX = 100

/** Stored rows folded per batch when a node starts. */
const LOAD_PAGE = 5_000

/**
 * A finished plan leaves memory once it has folded no event for this long,
 * by the replica's clock (ADR-0012): long enough that the stragglers
 * of its end (late renewals, duplicate results, a roll-up's echo) find it in
 * memory, short enough that memory follows the plans under way.
 */
export const EVICT_QUIET_MS = 60_000

export type EventSource = 'gossip' | 'sync' | 'local' | 'store'

export type { Verdict }

export interface IngestResult {
  readonly verdict: Verdict
  readonly id?: EventId
  /** reject: the reason; ignore: 'duplicate' | 'parked' */
  readonly why?: string
  readonly detail?: string
  /** parked for missing deps: the ids it waits for (a sync session asks its peer for them first). */
  readonly missing?: readonly EventId[]
}

export interface ReplicaInit {
  readonly swarm: string
  readonly key: PrivateKey
  readonly peerId: PeerIdString
  readonly store: EventStore
  readonly metrics: NodeMetrics
  /** Local wall clock in ms (tests skew it); default the scheduler's. */
  readonly now?: () => number
  /** Timers (the write queue commits on `soon`); default the real clock. */
  readonly scheduler?: Scheduler
  /** Signature checks; default Node's native Ed25519 (the simulator shares a memoized one). */
  readonly verifier?: SignatureVerifier
  /** Check sync batches on this thread with `verifier` instead of worker threads (the simulator: one thread, no real time). */
  readonly inlineVerify?: boolean
  /** How long a finished plan stays in memory after its last event; default EVICT_QUIET_MS, Infinity keeps every plan. */
  readonly evictQuietMs?: number
  /** Open plans one author may have under way before their next goal waits (0: no limit); default 20. */
  readonly openPlansPerAuthor?: number
}

/**
 * One node's copy of the plan log: every event, whichever way it came
 * (gossip, sync, this node's roles, its own store at start), goes through
 * decode -> verify -> fold -> store -> notify here, one at a time.
 *
 * Writes to the store are queued when an event folds and committed together,
 * in one transaction, as soon as the event loop turns (`flush`): a SQLite
 * commit costs about as much as the rest of the per-event work, and keeping
 * it off the gossip validator's path lets the event be relayed (and the roles
 * act on it) a commit sooner. Until then `getBytes` answers from the queue,
 * so what this node tells its peers it has, it can always send them. A kill
 * in that window loses only others' events folded in the same turn; they were
 * relayed already, and sync brings them back after a restart. This node's own
 * events are committed before `author` returns, so before they are published
 * (ADR-0011).
 *
 * Memory follows the plans under way, not every plan ever held: `tick`
 * evicts a finished plan once it has been quiet for `evictQuietMs` (after
 * committing the queue). Its ids stay in `ids` and its rows in the store; its
 * treeHash and summary stay in the fold. Any event of it, from any source,
 * brings it back from the store first (the fold's `loadPlan`), and so does
 * `loadTree` for a reader that needs the whole tree.
 */
export class Replica {
  readonly fold: Fold
  /**
   * Ids this node holds (folded or of another version): what sync
   * reconciles. In memory until `load`, which hands the set to the store
   * where the store keeps one (SQLite: on disk, see src/store/stored-ids.ts).
   */
  get ids(): SyncIds {
    return this.held
  }
  private held: SyncIds = new IdSet()
  readonly clock: HybridClock
  private readonly listeners = new Set<(events: readonly PlanEvent[]) => void>()
  /** Which plans wait for their author's earlier plans (src/core/admission.ts). */
  readonly authorLimit: AuthorLimit
  /** Whether history is streaming in by sync (see catch-up.ts): plans quiet for long wait meanwhile. */
  readonly catchUp = new CatchUp()
  /** Smoothed delay between another peer signing an event and this node folding it from gossip. */
  lagMs = 0
  /** Wire bytes of parked events, kept to store them when they fold; pruned with the parked set. */
  private readonly parkedBytes = new Map<EventId, Uint8Array>()
  /**
   * Ids whose envelope the wire rejected (anything but a bad signature: every copy with that
   * envelope is rejected the same way), so sync does not fetch them again from a peer that
   * keeps offering them. Bounded, oldest first out. A bad signature is left out: a genuine
   * event with the same envelope (and so the same id) may still come.
   */
  private readonly refusedIds = new Set<string>()
  private readonly verifier: SignatureVerifier
  private readonly scheduler: Scheduler
  private readonly now: () => number
  /** Rows folded but not yet committed; see the class comment. */
  private readonly writes: WriteQueue
  /** Signature checks of sync batches, on worker threads. */
  readonly verifyPool: VerifyPool
  /** Per plan in memory: local ms of its last folded event, or of its return to memory. */
  private readonly quiet: QuietPlans
  /** Plans taken out of memory and brought back since start (a plan may do both several times). */
  readonly evictions = { evicted: 0, reloaded: 0 }
  /** Plans expired here (ADR-0040): every late event of them is refused. */
  private readonly expired: Set<string>
  /** Plans imported from an archive: kept here, never expired, never offered to peers. */
  private readonly kept: Set<string>
  /** Plans expired since start, plans restored from their records at start, and late events refused. */
  readonly retention = { expired: 0, restored: 0, refused: 0 }

  constructor(private readonly init: ReplicaInit) {
    this.scheduler = init.scheduler ?? realScheduler()
    const now = init.now ?? this.scheduler.now
    this.now = now
    this.verifier = init.verifier ?? createNativeVerifier()
    this.clock = new HybridClock(now)
    this.verifyPool = new VerifyPool(init.swarm)
    this.quiet = new QuietPlans(init.evictQuietMs ?? EVICT_QUIET_MS)
    this.authorLimit = new AuthorLimit(init.openPlansPerAuthor ?? DEFAULT_OPEN_PLANS_PER_AUTHOR, plan =>
      planStanding(this.fold, plan)
    )
    this.writes = new WriteQueue(init.store, this.scheduler)
    this.expired = new Set(init.store.expiredPlans())
    this.kept = new Set(init.store.keptPlans())
    this.fold = new Fold({
      hashText: nativeSha256HexOfText,
      onRejected: (id, reason, detail) => {
        init.metrics.reject(reason, 'parked')
        log('rejected parked event %s: %s (%s)', id, reason, detail)
      },
      loadPlan: plan => this.storedEvents(plan),
      loadSummary: (plan, hash) => {
        const json = init.store.record(plan)
        const record = json === undefined ? undefined : parseRecord(json)
        // A record from an earlier eviction, whose last write failed, is not this plan's summary.
        return record?.hash === hash ? record.summary : undefined
      },
      onReloaded: (plan, { events, sameHash }) => {
        this.evictions.reloaded++
        this.quiet.touch(plan, now())
        if (sameHash) log('plan %s back in memory: %d events', plan, events)
        // Only lost rows do this (a damaged row moved aside); a restart reloads the ids from the store, and sync fetches what is missing.
        else
          log.error(
            'plan %s came back from the store with %d events and another treeHash than it left with: ' +
              'rows are missing; restart this node to fetch them again',
            plan,
            events
          )
      }
    })
  }

  get peerId(): PeerIdString {
    return this.init.peerId
  }

  get swarm(): string {
    return this.init.swarm
  }

  /**
   * Fold what is in the store (already verified when it was stored), a page
   * of rows at a time. A plan that left memory with a record (see
   * `evictQuiet`) whose event count the store still matches is known from
   * that record and not folded: a node with a long history folds only the
   * plans under way, and starts in about the time those take.
   */
  load(): { loaded: number; damaged: number; rejected: number; restored: number } {
    const store = this.init.store
    let rejected = 0
    let page: Uint8Array[] = []
    const flush = (): void => {
      const { decoded, results } = this.screen(page, 'store')
      for (const r of this.foldScreened(page, decoded, results, 'store')) if (r.verdict === 'reject') rejected++
      page = []
    }
    const onRow = (row: StoredEvent): void => {
      page.push(row.bytes)
      if (page.length >= LOAD_PAGE) flush()
    }
    const onDamaged = (d: { rowid: number; problem: string }): void => {
      log.error('store row %d is damaged (%s): skipped', d.rowid, d.problem)
    }
    // Restored plans are the fold's evicted ones: no set of 10k ids beside it while the node starts.
    let restored = 0
    for (const { plan, json } of store.currentRecords()) {
      if (this.kept.has(plan)) continue
      const record = parseRecord(json)
      if (record !== undefined && this.fold.restore(plan as PlanId, record)) restored++
    }
    let loaded = 0
    let damaged = 0
    if (restored === 0) ({ loaded, damaged } = store.load(onRow, onDamaged))
    else {
      for (const plan of store.plans()) {
        if (this.fold.isEvicted(plan as PlanId)) continue
        const c = store.loadPlan(plan, onRow, onDamaged)
        loaded += c.loaded
        damaged += c.damaged
      }
    }
    flush()
    // Every id added while loading is a stored row's, so the set is built afresh from the store.
    const stored = store.syncIds?.()
    if (stored !== undefined) this.held = stored
    else {
      const ids = new IdSet()
      if (this.kept.size === 0) ids.addBytes(store.idsBytes())
      else ids.addMany(store.ids().filter(id => !this.keptId(id)))
      this.held = ids
    }
    this.retention.restored = restored
    this.init.metrics.stored.set(this.ids.size)
    return { loaded, damaged, rejected, restored }
  }

  /** Whether a stored id is one of a kept plan's (they stay out of the sync id set). */
  private keptId(id: string): boolean {
    const e = this.fold.events.get(id as EventId)
    return e !== undefined && this.kept.has(planOf(e))
  }

  /**
   * An evicted plan's events as stored, plus any still queued (the queue is
   * committed before a plan is evicted, but a store that refused a commit
   * keeps them queued).
   */
  private storedEvents(plan: PlanId): PlanEvent[] {
    const out: PlanEvent[] = []
    const take = (bytes: Uint8Array): void => {
      const d = decodeEvent(bytes, { swarm: this.init.swarm, verify: false })
      if (d.kind === 'event') out.push(d.event)
    }
    this.init.store.loadPlan(
      plan,
      row => {
        take(row.bytes)
      },
      d => {
        log.error('store row %d is damaged (%s): skipped', d.rowid, d.problem)
      }
    )
    for (const row of this.writes.ofPlan(plan)) take(row.bytes)
    return out
  }

  /**
   * Held (folded, parked, or of another version), refused at the wire for its
   * envelope, or of a plan expired here: sync need not fetch it again.
   */
  has(id: string): boolean {
    return (
      this.ids.has(id) ||
      this.fold.events.has(id as EventId) ||
      this.refusedIds.has(id) ||
      (this.expired.size > 0 && this.init.store.isTombstone(id))
    )
  }

  /**
   * The ids of the events of the plans under way in memory, and of those
   * finished within HISTORY_QUIET_MS (a peer catching up acts on those, so
   * its view of them must be whole), at most `max`: the plan heard of last
   * first, each plan's events in stamp order (deps before what cites them).
   * A peer catching up asks for these first (src/sync/open-ids.ts).
   * While this node is itself catching up, a plan it holds in part looks
   * under way whatever its age, so then only plans with a recent stamp count
   * (the rule its own roles follow, catch-up.ts): otherwise a `--history
   * open` peer would be handed pieces of the history.
   */
  openIds(max: number): string[] {
    const open: Array<{ last: number; events: PlanEvent[] }> = []
    const recent = this.now() - HISTORY_QUIET_MS
    const catchingUp = this.catchUp.active(this.now())
    for (const plan of this.fold.plans()) {
      if (this.fold.isEvicted(plan)) {
        // Finished and quiet for a minute (out of memory), but perhaps not for two: read from the store.
        const last = this.fold.facts(plan)?.lastStampMs ?? 0
        if (last >= recent) open.push({ last, events: this.storedEvents(plan) })
        continue
      }
      const tree = this.fold.tree(plan)
      const index = this.fold.events.plan(plan)
      if (tree === undefined || index === undefined) continue
      if ((isFinished(tree) || catchingUp) && index.lastStampMs < recent) continue
      open.push({ last: index.lastStampMs, events: [...index.events.values()] })
    }
    open.sort((a, b) => b.last - a.last)
    const out: string[] = []
    for (const { events } of open) {
      for (const e of events.sort(compareEvents)) {
        if (out.length >= max) return out
        out.push(e.id)
      }
    }
    return out
  }

  getBytes(id: string): Uint8Array | undefined {
    return this.writes.bytes(id) ?? this.init.store.get(id)
  }

  /**
   * Commit queued rows now (the queue commits itself when the event loop
   * turns; call this before closing the store). If the store refuses them
   * (disk full, say), they stay queued and the next flush tries again.
   */
  flush(): void {
    this.writes.flush()
  }

  onFolded(fn: (events: readonly PlanEvent[]) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /**
   * Take one event's bytes from anywhere. Never throws for bad input: a
   * rejection is a verdict with a reason, counted in the metrics.
   * `signedHere`: the bytes were just signed with this node's key, so the
   * signature check (the largest part of the work) is skipped.
   */
  ingest(bytes: Uint8Array, source: EventSource, opts: { signedHere?: boolean } = {}): IngestResult {
    const verify = source !== 'store' && opts.signedHere !== true
    const decoded = decodeEvent(bytes, { swarm: this.init.swarm, verify, verifier: this.verifier })
    if (decoded.kind === 'rejected') return this.refused(bytes, decoded.reason, decoded.detail, source)
    const late = this.lateFor(decoded, source)
    if (late !== undefined) return late
    if (decoded.kind === 'other-version') return this.otherVersion(decoded, bytes, source)
    const e = decoded.event
    // Held already, perhaps by a plan out of memory: a duplicate, without bringing the plan back.
    if (this.ids.has(e.id)) return this.duplicate(e.id, source)
    return this.settle(e, bytes, this.fold.add(e, this.now()), source)
  }

  /**
   * `ingest` for many events at once (a sync round, the store at start):
   * events already held are skipped before their signatures are checked, the
   * rest are checked in parallel on worker threads, folded as one batch (in
   * stamp order, so little waits for its deps) and stored in one
   * transaction. The same verdicts as ingesting them one by one, in order.
   */
  async ingestMany(batch: readonly Uint8Array[], source: EventSource): Promise<IngestResult[]> {
    const toCheck: number[] = []
    const jobs: VerifyJob[] = []
    // On worker threads, each signature is sent off as soon as its event is decoded: checks overlap the decoding.
    const pooled = source === 'store' || this.init.inlineVerify === true ? undefined : this.verifyPool.batch()
    const { decoded, results } = this.screen(batch, source, (i, author) => {
      if (source === 'store') return
      toCheck.push(i)
      if (pooled === undefined) jobs.push({ author, bytes: batch[i] as Uint8Array })
      else pooled.add({ author, bytes: batch[i] as Uint8Array })
    })
    if (toCheck.length > 0) {
      const ok =
        pooled === undefined
          ? jobs.map(j => checkWireSignature(this.verifier, this.init.swarm, j.author, j.bytes))
          : await pooled.done()
      toCheck.forEach((i, k) => {
        if (ok[k] === true) return
        const d = decoded[i] as Exclude<DecodeResult, { kind: 'rejected' }>
        results[i] = this.rejected(
          'bad-signature',
          'signature does not verify for its author',
          source,
          d.kind === 'event' ? d.event.id : d.id
        )
      })
    }
    return this.foldScreened(batch, decoded, results, source)
  }

  /**
   * Decode a batch without checking signatures; settle what is undecodable or held already.
   * `unsettled` hears of each event left (index, claimed author) as soon as it is decoded.
   */
  private screen(
    batch: readonly Uint8Array[],
    source: EventSource,
    unsettled?: (i: number, author: string) => void
  ): { decoded: DecodeResult[]; results: Array<IngestResult | undefined> } {
    const results = new Array<IngestResult | undefined>(batch.length).fill(undefined)
    const decoded = batch.map((bytes, i) => {
      const d = decodeEvent(bytes, { swarm: this.init.swarm, verify: false })
      if (d.kind === 'rejected') results[i] = this.refused(bytes, d.reason, d.detail, source)
      else {
        const id = d.kind === 'event' ? d.event.id : d.id
        results[i] = this.lateFor(d, source) ?? (this.has(id) ? this.duplicate(id, source) : undefined)
        if (results[i] === undefined) unsettled?.(i, d.kind === 'event' ? d.event.env.author : d.author)
      }
      return d
    })
    return { decoded, results }
  }

  /** Fold (and store, in one transaction) the events of a screened, checked batch that are not settled yet. */
  private foldScreened(
    batch: readonly Uint8Array[],
    decoded: readonly DecodeResult[],
    results: Array<IngestResult | undefined>,
    source: EventSource
  ): IngestResult[] {
    const events: PlanEvent[] = []
    const bytesOf = new Map<EventId, { i: number; bytes: Uint8Array }>()
    decoded.forEach((d, i) => {
      if (results[i] !== undefined || d.kind === 'rejected') return
      if (d.kind === 'other-version') {
        results[i] = this.otherVersion(d, batch[i] as Uint8Array, source)
        return
      }
      if (bytesOf.has(d.event.id)) return
      events.push(d.event)
      bytesOf.set(d.event.id, { i, bytes: batch[i] as Uint8Array })
    })
    if (events.length > 0) {
      for (const { event, outcome } of this.fold.addBatch(events, this.now())) {
        const at = bytesOf.get(event.id) as { i: number; bytes: Uint8Array }
        results[at.i] = this.settle(event, at.bytes, outcome, source)
      }
      this.flush()
    }
    // What is still unsettled was a second copy of an event earlier in the batch.
    const out = results.map((r, i) => r ?? this.duplicate((decoded[i] as DecodedEvent).event.id, source))
    if (source === 'sync')
      this.catchUp.note(out.filter(r => r.verdict !== 'reject' && r.why !== 'duplicate').length, this.now())
    return out
  }

  /** A refusal if the event belongs to a plan expired here (ADR-0040), else undefined. */
  private lateFor(d: DecodeResult, source: EventSource): IngestResult | undefined {
    if (this.expired.size === 0 || d.kind === 'rejected') return undefined
    const plan = d.kind === 'event' ? planOf(d.event) : d.plan === '' ? d.id : d.plan
    if (!this.expired.has(plan)) return undefined
    this.retention.refused++
    const id = d.kind === 'event' ? d.event.id : d.id
    return this.rejected('expired', `plan ${plan} expired here: its events are kept only in its archive`, source, id)
  }

  /** A wire rejection: counted, and its id remembered (see `refusedIds`) unless only the signature was bad. */
  private refused(bytes: Uint8Array, reason: string, detail: string, source: EventSource): IngestResult {
    const id = reason === 'bad-signature' || source === 'store' ? null : eventIdOfWire(bytes)
    if (id !== null) {
      this.refusedIds.add(id)
      if (this.refusedIds.size > MAX_REFUSED_IDS)
        this.refusedIds.delete(this.refusedIds.values().next().value as string)
    }
    return this.rejected(reason, detail, source)
  }

  private rejected(reason: string, detail: string, source: EventSource, id?: EventId): IngestResult {
    this.init.metrics.reject(reason, source)
    log('rejected %s event %s: %s (%s)', source, id ?? '', reason, detail)
    return { verdict: 'reject', id, why: reason, detail }
  }

  private duplicate(id: EventId, source: EventSource): IngestResult {
    this.init.metrics.ignored.inc({ why: 'duplicate', source })
    return { verdict: 'ignore', id, why: 'duplicate' }
  }

  private otherVersion(
    d: { id: EventId; v: number; plan: string },
    bytes: Uint8Array,
    source: EventSource
  ): IngestResult {
    if (this.ids.has(d.id)) return { verdict: 'ignore', id: d.id, why: 'duplicate' }
    if (source !== 'store') this.writes.add({ id: d.id, plan: d.plan, bytes, receivedMs: this.now() })
    this.ids.add(d.id)
    this.init.metrics.ignored.inc({ why: `version-${d.v}`, source })
    return { verdict: 'accept', id: d.id, why: 'other-version' }
  }

  /** What an outcome of the fold means for the network and the store. */
  private settle(e: PlanEvent, bytes: Uint8Array, outcome: AddOutcome, source: EventSource): IngestResult {
    const m = this.init.metrics
    switch (outcome.status) {
      case 'duplicate':
        return this.duplicate(e.id, source)
      case 'parked':
        this.parkedBytes.set(e.id, bytes)
        m.ignored.inc({ why: outcome.why, source })
        m.parked.set(this.fold.events.parkedCount)
        return {
          verdict: 'ignore',
          id: e.id,
          why: 'parked',
          detail:
            outcome.why === 'clock-ahead'
              ? 'stamped too far ahead of local time'
              : `waiting for ${outcome.missing.length} deps`,
          missing: outcome.missing
        }
      case 'rejected':
        return this.rejected(outcome.reason, outcome.detail, source, e.id)
      case 'folded':
        this.afterFold(outcome.folded, e, bytes, source)
        return { verdict: 'accept', id: e.id }
      default: {
        const never: never = outcome
        throw new Error(`unhandled outcome ${JSON.stringify(never)}`)
      }
    }
  }

  /**
   * Fold events whose time has come (stamped ahead of our clock), expire old
   * parked ones, and evict finished plans that went quiet; call about once a
   * second.
   */
  tick(): void {
    const { folded } = this.fold.events.tick(this.now())
    if (folded.length > 0) this.afterFold(folded, undefined, undefined, 'gossip')
    if (this.parkedBytes.size > this.fold.events.parkedCount) {
      for (const id of this.parkedBytes.keys()) if (!this.fold.events.has(id)) this.parkedBytes.delete(id)
    }
    this.init.metrics.parked.set(this.fold.events.parkedCount)
    this.evictQuiet()
    const out = this.fold.evictedCount
    this.init.metrics.plans.set({ where: 'disk' }, out)
    this.init.metrics.plans.set({ where: 'memory' }, this.fold.planCount() - out)
  }

  /**
   * Take finished plans that folded nothing for `evictQuietMs` out of memory.
   * The queue is committed first, so that the store can give their events
   * back (`storedEvents` reads what a refused commit left queued, too).
   * Finished only: a plan under way (or out of budget, which a raise
   * resumes) is read by the roles on every pass.
   */
  private evictQuiet(): void {
    let flushed = false
    for (const { plan, quietForMs } of this.quiet.quiet(this.now())) {
      const tree = this.fold.tree(plan)
      if (tree === undefined) {
        this.quiet.forget(plan)
        continue
      }
      if (!isFinished(tree)) continue
      if (!flushed) {
        this.flush()
        flushed = true
      }
      const record = this.fold.record(plan)
      if (record !== undefined && this.fold.evict(plan)) {
        this.quiet.forget(plan)
        this.evictions.evicted++
        this.keepRecord(plan, record)
        log('plan %s (%s) left memory after %d ms quiet', plan, tree.status, quietForMs)
      }
    }
  }

  /**
   * Store an evicted plan's record, so a restart knows it without folding it
   * and the fold reads its summary from there (best effort: without it, the
   * plan folds again when its summary is asked for, and at the next start).
   */
  private keepRecord(plan: PlanId, record: PlanRecord): void {
    try {
      this.init.store.putRecord(plan, this.init.store.countByPlan(plan), JSON.stringify(record))
    } catch (err) {
      log.error('could not keep the record of plan %s: %s', plan, (err as Error).message)
    }
  }

  /**
   * Finished plans whose retention ran out by `nowMs` (src/core/retention.ts),
   * oldest first; imported plans are kept and never listed.
   */
  expiredBy(nowMs: number): PlanId[] {
    const out: Array<{ plan: PlanId; at: number }> = []
    for (const plan of this.fold.plansUnsorted()) {
      if (this.kept.has(plan)) continue
      const r = this.fold.facts(plan)
      if (r !== undefined && isExpired(r, nowMs)) out.push({ plan, at: r.lastStampMs })
    }
    return out.sort((a, b) => a.at - b.at || (a.plan < b.plan ? -1 : 1)).map(x => x.plan)
  }

  /**
   * Expire a plan: hand its stored rows and record to `archive` (which must
   * have them safely on disk when it returns), then take the plan out of the
   * store in one transaction, out of the fold and out of the sync id set.
   * From then on every event of it is refused. A kill before the
   * transaction leaves the plan whole in the store, and the next start
   * expires it again; after it, nothing of it is left but its tombstones.
   * False (nothing done) while an event of it is parked.
   */
  expire(plan: PlanId, archive: (rows: readonly StoredEvent[], record: PlanRecord) => void): boolean {
    const record = this.fold.record(plan)
    if (record === undefined || this.fold.events.hasParked(plan)) return false
    this.flush()
    const rows: StoredEvent[] = []
    this.init.store.loadPlan(plan, row => rows.push(row))
    archive(rows, record)
    const ids = this.init.store.expirePlan(plan, this.now())
    this.fold.forget(plan)
    this.quiet.forget(plan)
    // A set kept by the store heard of the deletion already; one in memory learns of it here.
    this.ids.removeMany(ids)
    this.expired.add(plan)
    this.retention.expired++
    this.init.metrics.stored.set(this.ids.size)
    log('plan %s expired: %d events archived and removed', plan, ids.length)
    return true
  }

  /** Forget expired plans listed before `beforeMs` with their tombstones: their events are refused no more. */
  forgetExpired(beforeMs: number): number {
    const n = this.init.store.purgeExpired(beforeMs)
    if (n > 0) {
      this.expired.clear()
      for (const p of this.init.store.expiredPlans()) this.expired.add(p)
    }
    return n
  }

  private afterFold(
    folded: readonly PlanEvent[],
    first: PlanEvent | undefined,
    firstBytes: Uint8Array | undefined,
    source: EventSource
  ): void {
    const now = this.now()
    for (const f of folded) {
      this.clock.observe(f.env.hlc)
      if (source !== 'store') {
        // Events unparked by this one waited in memory only: their bytes come from the parked copy.
        const bytes = f === first ? firstBytes : this.parkedBytes.get(f.id)
        if (bytes !== undefined) this.writes.add({ id: f.id, plan: planOf(f), bytes, receivedMs: now })
      }
      this.parkedBytes.delete(f.id)
      if (this.kept.size === 0 || !this.kept.has(planOf(f))) this.ids.add(f.id)
      this.quiet.touch(planOf(f), now)
      this.authorLimit.touch(planOf(f))
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
  async author<T extends EventType>(
    type: T,
    plan: PlanId | '',
    cites: readonly EventId[],
    body: Bodies[T]
  ): Promise<{ event: PlanEvent<T>; bytes: Uint8Array }> {
    const deps = [...new Set(plan === '' ? cites : [plan as string as EventId, ...cites])].sort()
    // What it cites must be in memory to stamp after it.
    if (plan !== '') this.fold.reload(plan)
    const depEvents = deps.map(d => {
      const e = this.fold.events.get(d)
      if (e === undefined) throw new Error(`cannot cite ${d}: this node does not hold it folded`)
      return e
    })
    const hlc = this.clock.stamp(depEvents.map(d => d.env.hlc))
    // A goal's version follows from its parameters, any other event's from its plan's goal (ADR-0024).
    const v = eventVersion(type, body, plan === '' ? undefined : depEvents.find(d => d.id === (plan as string)))
    const env = { v, swarm: this.init.swarm, type, plan, author: this.init.peerId, hlc, deps, body }
    const signed = await signEvent(env, this.init.key)
    const r = this.ingest(signed.bytes, 'local', { signedHere: true })
    if (r.verdict !== 'accept') throw new Error(`own ${type} event was not folded: ${r.why ?? ''} ${r.detail ?? ''}`)
    // Own events are on disk before anyone can hear of them: after a kill and a restart this node
    // still knows what it signed, and does not sign a different claim or ballot in its place.
    this.flush()
    return { event: signed.event as PlanEvent<T>, bytes: signed.bytes }
  }

  /**
   * The plan's tree if it is in memory: undefined for an evicted plan, so
   * that loops over every plan (the roles, the observer) stay as cheap as the
   * plans under way. A reader of one plan that must see it whole uses
   * `loadTree`.
   */
  tree(plan: PlanId): PlanTree | undefined {
    const t0 = performance.now()
    const tree = this.fold.tree(plan)
    this.init.metrics.foldSeconds.observe((performance.now() - t0) / 1000)
    return tree
  }

  /**
   * Why the roles leave a plan alone: it waits for its author's earlier plans
   * to finish (src/core/admission.ts), or it has been quiet for long while
   * this node catches up on history (catch-up.ts); null when neither.
   */
  heldReason(plan: PlanId): string | null {
    return (
      this.authorLimit.reason(plan) ?? this.catchUp.heldReason(this.fold.events.plan(plan)?.lastStampMs, this.now())
    )
  }

  /**
   * The plan's tree, bringing an evicted plan back into memory first: one
   * indexed store read and a fold of its events (ADR-0012). It
   * leaves again once quiet for `evictQuietMs`.
   */
  loadTree(plan: PlanId): PlanTree | undefined {
    this.fold.reload(plan)
    return this.tree(plan)
  }

  /** The plan's events (loading an evicted plan back, as `loadTree`), or undefined for a plan this node does not hold. */
  planEvents(plan: PlanId): PlanEvent[] | undefined {
    if (this.loadTree(plan) === undefined) return undefined
    return [...(this.fold.events.plan(plan)?.events.values() ?? [])]
  }

  /**
   * One line per plan, as /status shows it; `waiting` says why the plan
   * cannot go on where it stands (nodes waiting for proposals, ballots or an
   * executor; at most STATUS_WAITING_MAX of them), empty once it is finished.
   */
  private waitingOf(t: PlanTree, executorOffers: readonly ReadonlySet<string>[]): string[] {
    const held = this.heldReason(t.plan)
    const lines = waitingLines(t, unmetNeeds(t, executorOffers))
    return held === null ? lines : [`the plan ${held}`, ...lines.slice(0, STATUS_WAITING_MAX - 1)]
  }

  /** The lines of the plans of `scope` (see PlanScope). */
  planSummaries(executorOffers: readonly ReadonlySet<string>[] = [], scope: PlanScope = 'all'): PlanLine[] {
    const lines: PlanLine[] = []
    const ids = this.fold.plans()
    const shown = scope === 'all' ? undefined : this.recentlyFinished(ids, STATUS_FINISHED_MAX)
    for (const id of ids) {
      // An evicted plan answers from its summary: it is finished, so nothing waits.
      const t = this.tree(id)
      if (shown !== undefined && (t === undefined || isFinished(t)) && !shown.has(id)) continue
      const s = t === undefined ? (this.fold.summary(id) as PlanSummary) : summarizeTree(t)
      lines.push({
        id,
        goal: s.goal,
        status: s.status,
        treeHash: this.fold.treeHash(id) as string,
        nodes: s.nodes,
        done: s.done,
        spentTokens: s.spentTokens,
        budgetTokens: s.budgetTokens,
        waiting: t === undefined || isFinished(t) ? [] : this.waitingOf(t, executorOffers)
      })
    }
    return lines
  }

  /** The `max` finished plans of `plans` whose last event is the latest. */
  private recentlyFinished(plans: readonly PlanId[], max: number): Set<PlanId> {
    const finished: Array<{ plan: PlanId; last: number }> = []
    for (const plan of plans) {
      const f = this.fold.facts(plan)
      if (f !== undefined && isFinished(f)) finished.push({ plan, last: f.lastStampMs })
    }
    finished.sort((a, b) => b.last - a.last || (a.plan < b.plan ? -1 : 1))
    return new Set(finished.slice(0, max).map(x => x.plan))
  }
}

/** A stored record, or undefined if it cannot be read (the plan is folded instead). */
function parseRecord(json: string): PlanRecord | undefined {
  try {
    const r = JSON.parse(json) as PlanRecord
    return typeof r.hash === 'string' && typeof r.lastStampMs === 'number' && typeof r.summary === 'object'
      ? r
      : undefined
  } catch {
    return undefined
  }
}

/** Why the plan's nodes wait, a line each (a ready task whose needs no live executor meets says so). */
function waitingLines(t: PlanTree, unmet: ReadonlyMap<NodeId, readonly string[]>): string[] {
  return t.nodes
    .filter(n => n.waiting !== null && n.status !== 'blocked')
    .sort((a, b) => Number(unmet.has(b.id)) - Number(unmet.has(a.id)))
    .slice(0, STATUS_WAITING_MAX)
    .map(n => {
      const needs = unmet.get(n.id)
      const why = needs === undefined ? (n.waiting as string) : `waits for ${needsPhrase(needs)}`
      return `"${n.title}": ${why}${reviewersAwaited(t, n)}`
    })
}

/** Whom a node in review waits for, as a suffix for its waiting line (a split's line names them already). */
function reviewersAwaited(tree: PlanTree, node: TreeNode): string {
  if (node.status !== 'in-review') return ''
  const who = tree.tasks.find(t => t.id === node.task)?.awaiting ?? []
  return who.length === 0 ? '' : ` (from ${who.join(', ')})`
}
