import { readFileSync } from 'node:fs'
import { logger } from '@libp2p/logger'
import { openEventStore } from '../store/event-store.js'
import { loadOrCreateIdentity } from '../store/identity.js'
import { acquireDefaultDataDir, lockDataDir } from '../store/data-dir.js'
import { createLibp2pTransport } from '../net/libp2p-transport.js'
import { parseSwarmKey } from '../net/swarm-key.js'
import { parseAllowList } from '../net/allow-list.js'
import { NodeMetrics } from '../runtime/metrics.js'
import { startNodeRuntime, VERSION } from '../runtime/node-runtime.js'
import { ConfigError } from '../runtime/config.js'
import { realScheduler } from '../ports/scheduler.js'
import { LoopSlices, SLICE_MS } from '../ports/loop-slices.js'
import type { NodeConfig, Role } from '../runtime/config.js'
import type { Replica } from '../runtime/replica.js'
import type { SwarmNode } from '../net/node.js'
import type { SyncService } from '../sync/libp2p-service.js'
import type { Roster } from '../net/roster.js'
import type { HttpServer } from '../http/server.js'
import type { DataDirLock } from '../store/data-dir.js'
import type { EventStore } from '../ports/event-store.js'
import type { NodeView, Publish, StatusBody } from '../ports/node-view.js'
import type { PeerIdString } from '../core/events.js'

const log = logger('plan-swarm:peer')

export { VERSION }
export type { StatusBody }

/**
 * A running peer: the node's view (all the roles, HTTP and the commands
 * use), and, for this composition root and the tests, what it is made of:
 * the replica, its libp2p node, sync, roster and status endpoint.
 */
export interface Peer {
  readonly role: Role
  readonly swarm: string
  readonly dataDir: string
  readonly view: NodeView
  readonly replica: Replica
  readonly node: SwarmNode
  readonly sync: SyncService
  readonly roster: Roster
  readonly metrics: NodeMetrics
  readonly http: HttpServer | undefined
  readonly now: () => number
  /** What GET /status serves. */
  status: () => StatusBody
  /** Sign, fold, store and gossip an event of this node. */
  publish: Publish
  stop: () => Promise<void>
}

function readConfigFile(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(
      `${flag} ${path}: cannot read it ` +
        `(${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); check the path and its permissions`
    )
  }
}

/**
 * Start a peer from a validated config: the only place that puts libp2p,
 * SQLite and HTTP together around the node runtime. Everything it starts,
 * `stop` stops, in reverse order; a failure half-way stops what was started
 * and rethrows.
 */
export async function startPeer(
  config: NodeConfig,
  opts: { syncIntervalMs?: number; presenceIntervalMs?: number; identityDir?: string; dirName?: string } = {}
): Promise<Peer> {
  const scheduler = realScheduler({ clockOffsetMs: config.clockOffsetMs })
  const cleanup: Array<() => Promise<void> | void> = []
  const stopAll = async (): Promise<void> => {
    for (const fn of cleanup.reverse()) {
      try {
        await fn()
      } catch (err) {
        log.error('stopping: %s', (err as Error).message)
      }
    }
    cleanup.length = 0
  }
  try {
    const swarmKey =
      config.swarmKeyFile === undefined ? undefined : parseSwarmKey(readConfigFile(config.swarmKeyFile, '--swarm-key'))
    const allowPeers =
      config.allowPeersFile === undefined
        ? undefined
        : parseAllowList(readConfigFile(config.allowPeersFile, '--allow-peers'))
    const { dir, lock }: { dir: string; lock: DataDirLock } =
      config.dataDir !== undefined
        ? { dir: config.dataDir, lock: lockDataDir(config.dataDir) }
        : acquireDefaultDataDir(config.dataRoot, opts.dirName ?? config.role)
    cleanup.push(() => lock.release())
    const identity = await loadOrCreateIdentity(opts.identityDir ?? dir)
    const peerId = identity.peerId as PeerIdString
    const store: EventStore = openEventStore({ dir })
    cleanup.push(() => store.close())
    const metrics = new NodeMetrics()
    // The process metrics (and the HTTP server, below) only where /metrics can be read: loaded and watching the
    // event loop in every node, they cost one without --http memory and CPU for figures nobody can ask for.
    if (config.http !== undefined) await metrics.addProcessMetrics()
    // Sync's batches take turns with the rest of the event loop (/status, the dashboard, gossip's frames), a slice
    // at a time. PLAN_SWARM_LOOP_SLICE_MS sets the slice's budget, `off` ingests each batch in one go.
    const sliceMs = process.env.PLAN_SWARM_LOOP_SLICE_MS
    const slices =
      sliceMs === 'off' ? undefined : new LoopSlices(scheduler, sliceMs === undefined ? SLICE_MS : Number(sliceMs))
    if (slices !== undefined) metrics.watchSlices(slices)
    const transport = createLibp2pTransport({
      privateKey: identity.privateKey,
      peerId,
      swarm: config.swarm,
      listen: config.listen,
      bootstrap: config.bootstrap,
      mdns: config.mdns,
      swarmKey,
      allowPeers,
      presence: { role: config.role, capabilities: [], load: 0, version: VERSION },
      presenceIntervalMs: opts.presenceIntervalMs,
      syncIntervalMs: opts.syncIntervalMs,
      history: config.history,
      maxPeers: config.maxPeers,
      network: config.network
    })
    const runtime = await startNodeRuntime({
      swarm: config.swarm,
      role: config.role,
      key: identity.privateKey,
      peerId,
      dataDir: dir,
      store,
      transport,
      scheduler,
      metrics,
      slices,
      openPlansPerAuthor: config.openPlansPerAuthor,
      allowAuthors: allowPeers,
      history: config.history,
      retention: {
        dataDir: dir,
        keepArchivesDays: config.keepArchivesDays,
        // Test hook (test/resilience/expiry.test.ts): a real kill between the archive and the store's transaction.
        afterArchive:
          process.env.PLAN_SWARM_FAULT === 'kill-after-archive' ? () => process.kill(process.pid, 'SIGKILL') : undefined
      }
    })
    cleanup.push(() => runtime.stop())
    cleanup.push(() => runtime.replica.verifyPool.close())
    const view = runtime.view
    let http: HttpServer | undefined
    if (config.http !== undefined) {
      const { startHttpServer } = await import('../http/server.js')
      http = await startHttpServer(config.http.host, config.http.port, view)
      const h = http
      cleanup.push(() => h.close())
    }
    return {
      role: config.role,
      swarm: config.swarm,
      dataDir: dir,
      view,
      replica: runtime.replica,
      node: transport.node,
      sync: transport.sync,
      roster: runtime.roster,
      metrics,
      http,
      now: scheduler.now,
      status: view.status,
      publish: view.publish,
      stop: stopAll
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}
