/**
 * Catch-up: the `/plan-swarm/sync/1.0.0` stream protocol.
 *
 * Two peers reconcile their event-id sets with the pure range-reconciliation
 * core (src/sync/reconcile/), so the cost is in proportion to the
 * difference, and each side pulls the events it lacks. It runs
 *
 *   - on every new connection (only the peer with the smaller peer id string
 *     opens, so two connecting peers do not both start one),
 *   - every `intervalMs` (jittered) with a random connected peer, from both
 *     sides, which repairs whatever gossip missed,
 *   - on demand (`syncWith`).
 *
 * With `scope: 'open'` (`--history open`) its sessions reconcile nothing: it
 * asks the peer's plans under way (open-ids.ts) before each session it opens
 * and pulls only those (session.ts has the frames). A peer whose sessions show
 * it is scoped is asked the same in turn, so what it publishes is pulled.
 *
 * At most one session per peer and direction runs at a time: a second
 * `syncWith` joins the running one (a `fresh` one waits it out and starts
 * the next), a second inbound stream from a peer is refused. Events received are handed to `ingest`, which must verify them
 * exactly like gossiped ones.
 *
 * This is the one part of src/sync that knows libp2p: it registers the
 * protocol, hooks `peer:connect`, dials, and hands each stream (through
 * syncStreamOfLibp2p) to a SyncSession. Its timers and its random choices
 * come from the Scheduler it is given (the real one by default).
 *
 * Frames and session rules: see frames.ts and session.ts.
 */
import type { Connection, Libp2p, Logger, PeerId, Stream } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import { peerIdFromString } from '@libp2p/peer-id'
import type { Cancel, Scheduler } from '../ports/scheduler.js'
import { realScheduler } from '../ports/scheduler.js'
import { SYNC_PROTOCOL } from '../wire/topics.js'
import { asError, SyncAbortedError } from './errors.js'
import { InflightIds } from './inflight.js'
import { syncStreamOfLibp2p } from './libp2p-stream.js'
import { MAX_OPEN_IDS, OPEN_IDS_PROTOCOL, OPEN_IDS_TIMEOUT_MS, askOpenIds, serveOpenIds } from './open-ids.js'
import { PLAN_SUMMARY_PROTOCOL, PLAN_SUMMARY_TIMEOUT_MS, askPlanSummary, servePlanSummary } from './plan-summary.js'
import type { PlanSummaryAnswer } from '../ports/transport.js'
import type { SyncLimits } from './limits.js'
import { DEFAULT_SYNC_LIMITS } from './limits.js'
import type { SyncIds } from './reconcile/index.js'
import { DEFAULT_PULL_QUOTA, PullQuota } from './pull-quota.js'
import type { PullQuotaLimits } from './pull-quota.js'
import { SyncSession } from './session.js'
import type { SessionHost } from './session-host.js'
import type { SyncStats } from './stats.js'
import { failedStats } from './stats.js'

export { SYNC_PROTOCOL }
export type { SyncLimits, SyncStats }
export { DEFAULT_SYNC_LIMITS, MAX_OUTSTANDING_WANTS, MAX_WANT_IDS_PER_FRAME } from './limits.js'
export { SyncAbortedError, SyncProtocolError, SyncTimeoutError } from './errors.js'

export interface SyncServiceInit {
  readonly libp2p: Libp2p
  /** The live set of held ids (folded + stored): what is reconciled. */
  readonly ids: SyncIds
  /** Held, folded or parked: such ids are never requested. */
  readonly has: (id: string) => boolean
  /** Wire bytes of a held event, or undefined. */
  readonly getBytes: (id: string) => Uint8Array | undefined
  /** Verifies and stores an event received by sync (exactly like gossip). Awaited, in order. */
  readonly ingest: (bytes: Uint8Array, from: string) => Promise<unknown>
  /**
   * Optional: takes all the events of one EVENTS frame at once (same checks
   * as `ingest`, e.g. with signatures checked in parallel). Awaited.
   */
  readonly ingestMany?: (batch: readonly Uint8Array[], from: string) => Promise<unknown>
  /**
   * Optional: the ids of the events of this node's plans under way (at most
   * `max`, each plan's in stamp order), served on OPEN_IDS_PROTOCOL.
   */
  readonly openIds?: (max: number) => readonly string[]
  /** Optional: whether to ask each new peer for its plans under way first (a node that has just started or is catching up). */
  readonly wantsOpenIds?: () => boolean
  /**
   * 'open' (`--history open`): reconcile nothing, and pull only the peers'
   * plans under way, asked on OPEN_IDS_PROTOCOL before every session (see
   * session.ts). Default 'all'.
   */
  readonly scope?: 'all' | 'open'
  /** Optional: this node's summary of a plan it holds, served on PLAN_SUMMARY_PROTOCOL. */
  readonly summaryOf?: (plan: string) => PlanSummaryAnswer | undefined
  /** Periodic sync with a random connected peer; default 10 000 ms (jittered ±20 %); 0 turns it off. */
  readonly intervalMs?: number
  /** Delay after `peer:connect` before the on-connect sync; default 100 ms. */
  readonly onConnectDelayMs?: number
  /** Sync on every new connection (default true). */
  readonly syncOnConnect?: boolean
  /** Inbound sessions at once, all peers together (default 16); one per peer regardless. */
  readonly maxInboundSessions?: number
  /** Timeout for opening the stream (dial + protocol negotiation); default 10 000 ms. */
  readonly openTimeoutMs?: number
  /** Session bounds (defaults: DEFAULT_SYNC_LIMITS). */
  readonly limits?: Partial<SyncLimits>
  /** What may be pulled from one peer a minute, across its sessions (defaults: DEFAULT_PULL_QUOTA). */
  readonly pullQuota?: Partial<PullQuotaLimits>
  /** Called with the stats of every finished session, inbound and outbound. */
  readonly onSession?: (stats: SyncStats) => void
  readonly log?: Logger
  /** Clock, timers and randomness of the service and its sessions (default: realScheduler()). */
  readonly scheduler?: Scheduler
}

/** Totals since start. */
export interface SyncTotals {
  readonly sessions: number
  readonly inbound: number
  readonly outbound: number
  readonly ok: number
  readonly failures: number
  /** Inbound streams refused (a session with that peer already running, or too many at once). */
  readonly rejected: number
  readonly active: number
  readonly bytesSent: number
  readonly bytesReceived: number
  readonly eventsSent: number
  readonly eventsReceived: number
  /** Ids left for a later session because the peer's pull quota was spent (see pull-quota.ts). */
  readonly quotaLeft: number
}

export interface SyncWithOptions {
  /** Only a session that starts after this call counts (see SyncService.syncWith). */
  readonly fresh?: boolean
}

export interface SyncService {
  /** Registers the protocol handler, the on-connect hook and the periodic timer. */
  start(): Promise<void>
  /** Unregisters, aborts running sessions (they resolve with an error stat), clears timers. */
  stop(): Promise<void>
  /**
   * Syncs with this peer now (dialing it if needed); joins a session already
   * running to it. With `fresh`, joins only a session that starts after the
   * call (waiting out one already running), so a success means the peer holds
   * everything this node held at the call. Never rejects.
   */
  syncWith(peer: PeerId | string, options?: SyncWithOptions): Promise<SyncStats>
  /** A connected peer's summary of a plan (asking at most three), or null when none holds it or can say. */
  askSummary(plan: string): Promise<{ from: string; summary: PlanSummaryAnswer } | null>
  stats(): SyncTotals
}

const asPeerId = (peer: PeerId | string): PeerId => (typeof peer === 'string' ? peerIdFromString(peer) : peer)

export function createSyncService(init: SyncServiceInit): SyncService {
  return new SyncServiceImpl(init)
}

class SyncServiceImpl implements SyncService {
  private readonly libp2p: Libp2p
  private readonly log: Logger
  private readonly limits: SyncLimits
  private readonly intervalMs: number
  private readonly onConnectDelayMs: number
  private readonly openTimeoutMs: number
  private readonly maxInbound: number
  private readonly scheduler: Scheduler
  private readonly inflight = new InflightIds()
  private readonly quota: PullQuota
  private readonly inbound = new Map<string, { session: SyncSession; done: Promise<unknown> }>()
  private readonly outbound = new Map<string, { session: SyncSession | null; done: Promise<SyncStats> }>()
  private readonly timers = new Set<Cancel>()
  /** Ids of a peer's plans under way that arrived before a session with it started: that session asks for them first. */
  private readonly openIdsOf = new Map<string, readonly string[]>()
  /** When each scoped peer was last asked for its plans under way (at most once per interval). */
  private readonly scopedAsked = new Map<string, number>()
  private readonly scoped: boolean
  private controller = new AbortController()
  private running = false
  private periodic: Cancel | null = null
  private totals = {
    sessions: 0,
    inbound: 0,
    outbound: 0,
    ok: 0,
    failures: 0,
    rejected: 0,
    bytesSent: 0,
    bytesReceived: 0,
    eventsSent: 0,
    eventsReceived: 0
  }

  constructor(private readonly init: SyncServiceInit) {
    this.libp2p = init.libp2p
    this.log = init.log ?? logger('plan-swarm:sync')
    this.limits = { ...DEFAULT_SYNC_LIMITS, ...init.limits }
    this.intervalMs = init.intervalMs ?? 10_000
    this.onConnectDelayMs = init.onConnectDelayMs ?? 100
    this.openTimeoutMs = init.openTimeoutMs ?? 10_000
    this.maxInbound = init.maxInboundSessions ?? 16
    this.scheduler = init.scheduler ?? realScheduler()
    this.scoped = init.scope === 'open'
    this.quota = new PullQuota({ ...DEFAULT_PULL_QUOTA, ...init.pullQuota }, () => this.scheduler.monotonic())
  }

  async start(): Promise<void> {
    if (this.running) return
    this.running = true
    this.controller = new AbortController()
    await this.libp2p.handle(SYNC_PROTOCOL, this.onStream, {
      maxInboundStreams: 4,
      maxOutboundStreams: 4,
      runOnLimitedConnection: true
    })
    const openIds = this.init.openIds
    if (openIds !== undefined)
      await this.libp2p.handle(
        OPEN_IDS_PROTOCOL,
        stream => {
          serveOpenIds(stream, openIds(MAX_OPEN_IDS))
        },
        { maxInboundStreams: 2, runOnLimitedConnection: true }
      )
    const summaryOf = this.init.summaryOf
    if (summaryOf !== undefined)
      await this.libp2p.handle(
        PLAN_SUMMARY_PROTOCOL,
        stream => {
          void servePlanSummary(stream, summaryOf, this.scheduler)
        },
        { maxInboundStreams: 4, runOnLimitedConnection: true }
      )
    if (this.init.syncOnConnect !== false || this.init.wantsOpenIds !== undefined || this.scoped)
      this.libp2p.addEventListener('peer:connect', this.onConnect)
    this.schedulePeriodic()
  }

  async stop(): Promise<void> {
    if (!this.running) return
    this.running = false
    this.libp2p.removeEventListener('peer:connect', this.onConnect)
    for (const cancel of this.timers) cancel()
    this.timers.clear()
    this.periodic?.()
    this.periodic = null
    this.controller.abort(new SyncAbortedError('sync service stopped'))
    const pending: Array<Promise<unknown>> = []
    for (const { session, done } of this.inbound.values()) {
      session.abort(new SyncAbortedError('sync service stopped'))
      pending.push(done)
    }
    for (const { session, done } of this.outbound.values()) {
      session?.abort(new SyncAbortedError('sync service stopped'))
      pending.push(done)
    }
    const protocols = [SYNC_PROTOCOL]
    if (this.init.openIds !== undefined) protocols.push(OPEN_IDS_PROTOCOL)
    if (this.init.summaryOf !== undefined) protocols.push(PLAN_SUMMARY_PROTOCOL)
    for (const protocol of protocols) {
      try {
        await this.libp2p.unhandle(protocol)
      } catch (err) {
        this.log.error('unhandle %s failed: %e', protocol, err)
      }
    }
    this.openIdsOf.clear()
    this.scopedAsked.clear()
    await Promise.allSettled(pending)
  }

  stats(): SyncTotals {
    return { ...this.totals, active: this.inbound.size + this.outbound.size, quotaLeft: this.quota.leftForLater }
  }

  async askSummary(plan: string): Promise<{ from: string; summary: PlanSummaryAnswer } | null> {
    const peers = [...new Map(this.libp2p.getConnections().map(c => [c.remotePeer.toString(), c.remotePeer]))]
    for (let i = 0; i < peers.length && i < 3; i++) {
      const j = i + Math.floor(this.scheduler.random() * (peers.length - i))
      ;[peers[i], peers[j]] = [peers[j] as [string, PeerId], peers[i] as [string, PeerId]]
      const [key, peer] = peers[i] as [string, PeerId]
      try {
        const signal = AbortSignal.any([this.controller.signal, AbortSignal.timeout(PLAN_SUMMARY_TIMEOUT_MS)])
        const summary = await askPlanSummary(this.libp2p, peer, plan, this.scheduler, signal)
        if (summary !== undefined) return { from: key, summary }
      } catch (err) {
        this.log('plan-summary from %s: %s', key, err instanceof Error ? err.message : String(err))
      }
    }
    return null
  }

  syncWith(peer: PeerId | string, options: SyncWithOptions = {}): Promise<SyncStats> {
    if (this.scoped && options.fresh === true) return this.syncScopedFresh(peer)
    const key = peer.toString()
    const running = this.outbound.get(key)
    // A session that started before the call may have reconciled before what
    // the caller just stored existed; any session that starts after it will do.
    if (running !== undefined)
      return options.fresh === true ? running.done.then(async () => await this.syncWith(peer)) : running.done
    const entry: { session: SyncSession | null; done: Promise<SyncStats> } = {
      session: null,
      done: Promise.resolve(failedStats(key, 'not started', 0))
    }
    entry.done = this.runOutbound(peer, key, entry)
      .catch((err: unknown) => failedStats(key, err instanceof Error ? err.message : String(err), 0))
      .then(stats => {
        this.outbound.delete(key)
        this.record(stats)
        return stats
      })
    this.outbound.set(key, entry)
    return entry.done
  }

  private async runOutbound(
    peer: PeerId | string,
    key: string,
    entry: { session: SyncSession | null }
  ): Promise<SyncStats> {
    const started = this.scheduler.monotonic()
    if (!this.running) return failedStats(key, 'sync service is not running', 0)
    // Scoped: what to pull is the peer's plans under way, so ask for them first (an older peer refuses: nothing).
    if (this.scoped) {
      const ids = await this.fetchOpenIds(asPeerId(peer), key)
      const missing = ids.filter(id => !this.init.has(id))
      if (missing.length > 0) this.openIdsOf.set(key, missing)
    }
    let stream: Stream
    const timeout = new AbortController()
    const cancelTimeout = this.scheduler.after(this.openTimeoutMs, () => {
      // what AbortSignal.timeout would abort with
      timeout.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
    })
    try {
      const peerId = asPeerId(peer)
      const signal = AbortSignal.any([this.controller.signal, timeout.signal])
      stream = await this.libp2p.dialProtocol(peerId, SYNC_PROTOCOL, { signal, runOnLimitedConnection: true })
    } catch (err) {
      const error = `open: ${err instanceof Error ? err.message : String(err)}`
      this.log('sync with %s failed to open: %s', key, error)
      return failedStats(key, error, Math.round(this.scheduler.monotonic() - started))
    } finally {
      cancelTimeout()
    }
    if (!this.running) {
      stream.abort(new SyncAbortedError('sync service stopped'))
      return failedStats(key, 'sync service stopped', Math.round(this.scheduler.monotonic() - started))
    }
    let session: SyncSession
    try {
      session = this.newSession(stream, key, 'outbound')
    } catch (err) {
      stream.abort(asError(err))
      throw err
    }
    entry.session = session
    return await session.run()
  }

  /**
   * `fresh` for a scoped node: its sessions push nothing (the peer pulls from
   * it once it sees it is scoped), so a session says nothing of what the peer
   * holds. What does: the peer's plans under way, asked after a session,
   * hold every event of this node's plans under way.
   */
  private async syncScopedFresh(peer: PeerId | string): Promise<SyncStats> {
    const stats = await this.syncWith(peer)
    if (!stats.ok) return stats
    const key = peer.toString()
    const theirs = new Set(await this.fetchOpenIds(asPeerId(peer), key))
    const lacking = (this.init.openIds?.(MAX_OPEN_IDS) ?? []).filter(id => !theirs.has(id)).length
    if (lacking === 0) return stats
    return { ...stats, ok: false, error: `the peer does not hold ${lacking} events of the plans under way here yet` }
  }

  private readonly onStream = (stream: Stream, connection: Connection): void => {
    const peer = connection.remotePeer.toString()
    if (!this.running) {
      stream.abort(new SyncAbortedError('sync service stopped'))
      return
    }
    if (this.inbound.has(peer) || this.inbound.size >= this.maxInbound) {
      this.totals.rejected++
      this.log(
        'refusing a sync stream from %s: %s',
        peer,
        this.inbound.has(peer) ? 'a session with it is running' : 'too many sessions'
      )
      stream.abort(new SyncAbortedError('sync busy'))
      return
    }
    let session: SyncSession
    try {
      session = this.newSession(stream, peer, 'inbound')
    } catch (err) {
      this.log.error('sync session from %s could not start: %e', peer, err)
      stream.abort(asError(err))
      return
    }
    const done = session
      .run()
      .then(stats => {
        this.record(stats)
      })
      .catch((err: unknown) => {
        this.log.error('sync session from %s: %e', peer, err)
      })
      .finally(() => {
        this.inbound.delete(peer)
      })
    this.inbound.set(peer, { session, done })
  }

  private readonly onConnect = (evt: CustomEvent<PeerId>): void => {
    const peer = evt.detail
    const key = peer.toString()
    // A scoped node asks before each of its own sessions; both ends open one, since the peer's pulls nothing.
    if (!this.scoped && this.init.wantsOpenIds?.() === true) void this.askOpenIds(peer, key)
    if (this.init.syncOnConnect === false || (!this.scoped && !(this.libp2p.peerId.toString() < key))) return
    const timer = this.scheduler.after(this.onConnectDelayMs, () => {
      this.timers.delete(timer)
      if (!this.running || this.libp2p.getConnections(peer).length === 0) return
      void this.syncWith(peer)
    })
    this.timers.add(timer)
  }

  /** A peer's plans under way (their event ids), or none when it cannot say (an older release refuses). */
  private async fetchOpenIds(peer: PeerId, key: string): Promise<string[]> {
    try {
      const signal = AbortSignal.any([this.controller.signal, AbortSignal.timeout(OPEN_IDS_TIMEOUT_MS)])
      return await askOpenIds(this.libp2p, peer, this.scheduler, signal)
    } catch (err) {
      this.log('open-ids from %s: %s', key, err instanceof Error ? err.message : String(err))
      return []
    }
  }

  /**
   * Asks a peer for its plans under way, for the sessions with it to pull
   * first. With `pull`, a session is started for what is missing if none
   * runs (a scoped peer's events reach this node no other way).
   */
  private async askOpenIds(peer: PeerId, key: string, pull = false): Promise<void> {
    const ids = await this.fetchOpenIds(peer, key)
    if (!this.running || ids.length === 0) return
    this.log('open-ids from %s: %d ids of plans under way, asked for first', key, ids.length)
    const running = this.inbound.get(key)?.session ?? this.outbound.get(key)?.session
    if (running !== undefined && running !== null) {
      running.prioritize(ids)
      return
    }
    if (this.libp2p.getConnections(peer).length === 0) return
    const missing = pull ? ids.filter(id => !this.init.has(id)) : ids
    if (missing.length === 0) return
    this.openIdsOf.set(key, missing)
    if (pull) void this.syncWith(peer)
  }

  /** A session showed the peer is scoped: ask for its plans under way (at most once per interval) and pull them. */
  private scopedPeerSeen(key: string): void {
    const now = this.scheduler.monotonic()
    const last = this.scopedAsked.get(key)
    if (last !== undefined && now - last < Math.max(1_000, this.intervalMs / 2)) return
    // One entry per scoped peer seen; a node that has met thousands forgets them all and asks afresh.
    if (this.scopedAsked.size >= 4_096) this.scopedAsked.clear()
    this.scopedAsked.set(key, now)
    let peer: PeerId
    try {
      peer = peerIdFromString(key)
    } catch {
      return
    }
    void this.askOpenIds(peer, key, true)
  }

  private schedulePeriodic(): void {
    if (!this.running || this.intervalMs <= 0) return
    const delay = this.intervalMs * (0.8 + 0.4 * this.scheduler.random())
    this.periodic = this.scheduler.after(delay, () => {
      this.periodic = null
      void this.periodicTick().finally(() => {
        this.schedulePeriodic()
      })
    })
  }

  private async periodicTick(): Promise<void> {
    if (!this.running) return
    const candidates: PeerId[] = []
    // From the connections, not libp2p.getPeers(), which parses every peer id back from its string.
    const peers = new Map(this.libp2p.getConnections().map(c => [c.remotePeer.toString(), c.remotePeer]))
    for (const [key, peer] of peers) {
      if (this.outbound.has(key)) continue
      try {
        const known = await this.libp2p.peerStore.get(peer)
        // Skip peers known not to speak sync; peers whose protocols are unknown are tried.
        if (known.protocols.length > 0 && !known.protocols.includes(SYNC_PROTOCOL)) continue
      } catch {
        // not in the peer store: try it
      }
      candidates.push(peer)
    }
    if (candidates.length === 0 || !this.running) return
    const peer = candidates[Math.floor(this.scheduler.random() * candidates.length)] as PeerId
    void this.syncWith(peer)
  }

  private newSession(stream: Stream, peer: string, direction: 'inbound' | 'outbound'): SyncSession {
    const session = new SyncSession(
      this.host(),
      syncStreamOfLibp2p(stream, this.limits.maxFrameBytes),
      peer,
      direction,
      this.scheduler
    )
    const open = this.openIdsOf.get(peer)
    if (open !== undefined) {
      this.openIdsOf.delete(peer)
      session.prioritize(open)
    }
    return session
  }

  private host(): SessionHost {
    const { ids, has, getBytes, ingest, ingestMany } = this.init
    const { inflight, limits, log, scoped, quota } = this
    return { ids, has, getBytes, ingest, ingestMany, inflight, limits, log, scoped, quota }
  }

  private record(stats: SyncStats): void {
    const t = this.totals
    t.sessions++
    if (stats.direction === 'inbound') t.inbound++
    else t.outbound++
    if (stats.ok) t.ok++
    else t.failures++
    t.bytesSent += stats.bytesSent
    t.bytesReceived += stats.bytesReceived
    t.eventsSent += stats.eventsSent
    t.eventsReceived += stats.eventsReceived
    if (stats.ok) {
      this.log(
        'sync %s %s: ok, %d rounds, %d/%d events in/out, %d/%d bytes in/out, %d ms',
        stats.direction,
        stats.peer,
        stats.rounds,
        stats.eventsReceived,
        stats.eventsSent,
        stats.bytesReceived,
        stats.bytesSent,
        stats.ms
      )
    } else {
      this.log('sync %s %s failed after %d ms: %s', stats.direction, stats.peer, stats.ms, stats.error)
    }
    if (stats.peerScoped === true && this.running) this.scopedPeerSeen(stats.peer)
    try {
      this.init.onSession?.(stats)
    } catch (err) {
      this.log.error('onSession threw: %e', err)
    }
  }
}
