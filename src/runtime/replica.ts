import { logger } from '@libp2p/logger'
import { Fold } from '../core/fold.js'
import { planOf } from '../core/event-set.js'
import { HybridClock } from '../core/hlc.js'
import { IdSet } from '../core/id-set.js'
import type { SyncIds } from '../sync/reconcile/index.js'
import { eventVersion } from '../core/events.js'
import { CatchUp, HISTORY_QUIET_MS } from './catch-up.js'
import { AuthorLimit, DEFAULT_OPEN_PLANS_PER_AUTHOR, planStanding } from '../core/admission.js'
import { decodeEvent } from '../wire/decode.js'
import type { DecodeResult, SignatureVerifier } from '../wire/decode.js'
import { signEvent } from '../wire/sign.js'
import { nativeSha256HexOfText } from '../sync/native-hash.js'
import { VerifyPool, checkWireSignature, countedVerifier, createNativeVerifier } from './verify.js'
import type { VerifyJob } from './verify.js'
import { WriteQueue } from './write-queue.js'
import { EVICT_QUIET_MS, PlanLifecycle } from './plan-lifecycle.js'
import { planLines } from './plan-lines.js'
import { openPlanIds } from './open-plans.js'
import { IngestVerdicts } from './ingest-verdicts.js'
import type { EventSource, IngestResult } from './ingest-verdicts.js'
import type { PrivateKey } from '@libp2p/interface'
import { realScheduler } from '../ports/scheduler.js'
import type { Scheduler } from '../ports/scheduler.js'
import type { Verdict } from '../ports/transport.js'
import type { AddOutcome } from '../core/event-set.js'
import type { EventStore, StoredEvent } from '../ports/event-store.js'
import type { NodeMetrics } from './metrics.js'
import type { Bodies, EventId, EventType, PeerIdString, PlanEvent, PlanId } from '../core/events.js'
import type { PlanRecord } from '../core/fold.js'
import type { PlanTree } from '../core/tree.js'
import type { PlanLine, PlanScope } from '../ports/node-view.js'
import type { LoopSlices } from '../ports/loop-slices.js'
import { foldBatch, foldSliced, screenSliced } from './batch-fold.js'
import type { BatchHost } from './batch-fold.js'

const log = logger('plan-swarm:replica')

/** Stored rows folded per batch when a node starts. */
const LOAD_PAGE = 5_000

export { EVICT_QUIET_MS } from './plan-lifecycle.js'
export { STATUS_FINISHED_MAX, STATUS_WAITING_MAX } from './plan-lines.js'

export { MAX_REFUSED_IDS } from './ingest-verdicts.js'
export type { EventSource, IngestResult } from './ingest-verdicts.js'
export type { Verdict }

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
  /** With an allow-list: the only authors whose events are taken from the network (see IngestVerdicts). */
  readonly allowAuthors?: ReadonlySet<string>
  /**
   * Cut the work of a sync batch into slices of the event loop (decoded SCREEN_CHUNK, folded FOLD_CHUNK events at a
   * time), so that a request does not wait behind a whole batch; the libp2p peer passes the ones its gossip shares.
   * Without it a batch is ingested in one go (the simulator, most tests).
   */
  readonly slices?: LoopSlices
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
 * `loadTree` for a reader that needs the whole tree. Eviction and expiry,
 * and the records kept about them, are the `PlanLifecycle` this replica
 * holds (plan-lifecycle.ts); the /status lines are plan-lines.ts.
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
  /** Counts and logs what is turned away; remembers the ids the wire refused. */
  private readonly verdicts: IngestVerdicts
  private readonly verifier: SignatureVerifier
  private readonly scheduler: Scheduler
  private readonly now: () => number
  /** Rows folded but not yet committed; see the class comment. */
  private readonly writes: WriteQueue
  /** Signature checks of sync batches, on worker threads. */
  readonly verifyPool: VerifyPool
  /** Eviction, expiry, and the plans imported from archives. */
  private readonly life: PlanLifecycle
  /** What folding a batch (batch-fold.ts) does through this replica. */
  private readonly batchHost: BatchHost = {
    otherVersion: (d, bytes, source) => this.otherVersion(d, bytes, source),
    addBatch: events => this.fold.addBatch(events, this.now()),
    settle: (e, bytes, outcome, source) => this.settle(e, bytes, outcome, source),
    flush: () => {
      this.flush()
    },
    duplicate: (id, source) => this.verdicts.duplicate(id, source),
    synced: n => {
      this.catchUp.note(n, this.now())
    }
  }

  /** Plans taken out of memory and brought back since start (a plan may do both several times). */
  get evictions(): { readonly evicted: number; readonly reloaded: number } {
    return this.life.evictions
  }

  /** Plans expired since start, plans restored from their records at start, and late events refused. */
  get retention(): { readonly expired: number; readonly restored: number; readonly refused: number } {
    return this.life.retention
  }

  constructor(private readonly init: ReplicaInit) {
    this.scheduler = init.scheduler ?? realScheduler()
    const now = init.now ?? this.scheduler.now
    this.now = now
    this.verifier = countedVerifier(init.verifier ?? createNativeVerifier(), () => init.metrics.signatureChecks.inc())
    this.clock = new HybridClock(now)
    this.verifyPool = new VerifyPool(init.swarm, undefined, n => init.metrics.signatureChecks.inc(n))
    this.authorLimit = new AuthorLimit(init.openPlansPerAuthor ?? DEFAULT_OPEN_PLANS_PER_AUTHOR, plan =>
      planStanding(this.fold, plan)
    )
    this.writes = new WriteQueue(init.store, this.scheduler)
    this.verdicts = new IngestVerdicts(init.metrics, init.allowAuthors, init.peerId)
    this.fold = new Fold({
      hashText: nativeSha256HexOfText,
      onRejected: (id, reason, detail) => {
        init.metrics.reject(reason, 'parked')
        log('rejected parked event %s: %s (%s)', id, reason, detail)
      },
      loadPlan: plan => this.storedEvents(plan),
      loadSummary: (plan, hash) => this.life.loadSummary(plan, hash),
      onReloaded: (plan, info) => {
        this.life.reloaded(plan, info)
      }
    })
    this.life = new PlanLifecycle({
      fold: this.fold,
      store: init.store,
      metrics: init.metrics,
      evictQuietMs: init.evictQuietMs ?? EVICT_QUIET_MS,
      ids: () => this.ids,
      flush: () => {
        this.flush()
      },
      now
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
      for (const r of foldBatch(this.batchHost, page, decoded, results, 'store')) if (r.verdict === 'reject') rejected++
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
    const restored = this.life.restoreRecords()
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
      if (!this.life.keepsAny) ids.addBytes(store.idsBytes())
      else ids.addMany(store.ids().filter(id => !this.keptId(id)))
      this.held = ids
    }
    this.init.metrics.stored.set(this.ids.size)
    return { loaded, damaged, rejected, restored }
  }

  /** Whether a stored id is one of a kept plan's (they stay out of the sync id set). */
  private keptId(id: string): boolean {
    const e = this.fold.events.get(id as EventId)
    return e !== undefined && this.life.isKept(planOf(e))
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
      this.verdicts.isRefused(id) ||
      this.life.isTombstone(id)
    )
  }

  /**
   * The ids of the events of the plans under way in memory, and of those
   * finished within HISTORY_QUIET_MS, at most `max`, the plan heard of last
   * first (open-plans.ts): a peer catching up asks for these first
   * (src/sync/open-ids.ts). While this node is itself catching up, only
   * plans with a recent stamp count (the rule its own roles follow,
   * catch-up.ts).
   */
  openIds(max: number): string[] {
    const recent = this.now() - HISTORY_QUIET_MS
    const catchingUp = this.catchUp.active(this.now())
    return openPlanIds(this.fold, plan => this.storedEvents(plan), max, recent, catchingUp)
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
    if (decoded.kind === 'rejected') return this.verdicts.refused(bytes, decoded.reason, decoded.detail, source)
    const late = this.lateFor(decoded, source)
    if (late !== undefined) return late
    if (decoded.kind === 'other-version') return this.otherVersion(decoded, bytes, source)
    const e = decoded.event
    // Held already, perhaps by a plan out of memory: a duplicate, without bringing the plan back.
    if (this.ids.has(e.id)) return this.verdicts.duplicate(e.id, source)
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
    const unsettled = (i: number, author: string): void => {
      if (source === 'store') return
      toCheck.push(i)
      if (pooled === undefined) jobs.push({ author, bytes: batch[i] as Uint8Array })
      else pooled.add({ author, bytes: batch[i] as Uint8Array })
    }
    const slices = this.init.slices
    const { decoded, results } =
      slices === undefined
        ? this.screen(batch, source, unsettled)
        : await screenSliced(slices, batch, unsettled, (part, u) => this.screen(part, source, u))
    if (toCheck.length > 0) {
      const ok =
        pooled === undefined
          ? jobs.map(j => checkWireSignature(this.verifier, this.init.swarm, j.author, j.bytes))
          : await pooled.done()
      toCheck.forEach((i, k) => {
        if (ok[k] === true) return
        const d = decoded[i] as Exclude<DecodeResult, { kind: 'rejected' }>
        results[i] = this.verdicts.rejected(
          'bad-signature',
          'signature does not verify for its author',
          source,
          d.kind === 'event' ? d.event.id : d.id
        )
      })
    }
    return slices === undefined
      ? foldBatch(this.batchHost, batch, decoded, results, source)
      : await foldSliced(this.batchHost, slices, batch, decoded, results, source)
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
      if (d.kind === 'rejected') results[i] = this.verdicts.refused(bytes, d.reason, d.detail, source)
      else {
        const id = d.kind === 'event' ? d.event.id : d.id
        results[i] = this.lateFor(d, source) ?? (this.has(id) ? this.verdicts.duplicate(id, source) : undefined)
        if (results[i] === undefined) unsettled?.(i, d.kind === 'event' ? d.event.env.author : d.author)
      }
      return d
    })
    return { decoded, results }
  }

  /** A refusal if the event's author is not on the allow-list, or it belongs to a plan expired here (ADR-0040). */
  private lateFor(d: DecodeResult, source: EventSource): IngestResult | undefined {
    if (d.kind === 'rejected') return undefined
    const stranger = this.verdicts.notAllowed(d, source)
    if (stranger !== undefined || !this.life.expiresAny) return stranger
    const plan = d.kind === 'event' ? planOf(d.event) : d.plan === '' ? d.id : d.plan
    if (!this.life.refusesLate(plan)) return undefined
    const id = d.kind === 'event' ? d.event.id : d.id
    return this.verdicts.rejected(
      'expired',
      `plan ${plan} expired here: its events are kept only in its archive`,
      source,
      id
    )
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
        return this.verdicts.duplicate(e.id, source)
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
        return this.verdicts.rejected(outcome.reason, outcome.detail, source, e.id)
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
    this.life.evictQuiet()
    const out = this.fold.evictedCount
    this.init.metrics.plans.set({ where: 'disk' }, out)
    this.init.metrics.plans.set({ where: 'memory' }, this.fold.planCount() - out)
  }

  /**
   * Finished plans whose retention ran out by `nowMs` (src/core/retention.ts),
   * oldest first; imported plans are kept and never listed.
   */
  expiredBy(nowMs: number): PlanId[] {
    return this.life.expiredBy(nowMs)
  }

  /**
   * Expire a plan, handing its stored rows and record to `archive` first;
   * from then on every event of it is refused (see `PlanLifecycle.expire`).
   * False (nothing done) while an event of it is parked.
   */
  expire(plan: PlanId, archive: (rows: readonly StoredEvent[], record: PlanRecord) => void): boolean {
    return this.life.expire(plan, archive)
  }

  /** Forget expired plans listed before `beforeMs` with their tombstones: their events are refused no more. */
  forgetExpired(beforeMs: number): number {
    return this.life.forgetExpired(beforeMs)
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
      if (!this.life.isKept(planOf(f))) this.ids.add(f.id)
      this.life.touch(planOf(f), now)
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
    return this.heldAt(plan, this.now())
  }

  private heldAt(plan: PlanId, nowMs: number): string | null {
    return this.authorLimit.reason(plan) ?? this.catchUp.heldReason(this.fold.events.plan(plan)?.lastStampMs, nowMs)
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

  /** The lines of the plans of `scope` (see PlanScope), as /status shows them (plan-lines.ts). */
  planSummaries(executorOffers: readonly ReadonlySet<string>[] = [], scope: PlanScope = 'all'): PlanLine[] {
    const fold = this.fold
    const source = {
      plans: () => fold.plans(),
      tree: (plan: PlanId) => this.tree(plan),
      summary: (plan: PlanId) => fold.summary(plan),
      treeHash: (plan: PlanId) => fold.treeHash(plan),
      facts: (plan: PlanId) => fold.facts(plan),
      heldReason: (plan: PlanId, nowMs: number) => this.heldAt(plan, nowMs)
    }
    return planLines(source, executorOffers, scope, this.now())
  }
}
