import { readFileSync } from 'node:fs'
import { logger } from '@libp2p/logger'
import { multiaddr } from '@multiformats/multiaddr'
import { openEventStore } from '../store/event-store.js'
import { loadOrCreateIdentity } from '../store/identity.js'
import { acquireDefaultDataDir, lockDataDir } from '../store/data-dir.js'
import { createSwarmNode } from '../net/node.js'
import { createSyncService } from '../net/sync.js'
import { createRoster } from '../net/roster.js'
import { parseSwarmKey } from '../net/swarm-key.js'
import { parseAllowList } from '../net/allow-list.js'
import { startHttpServer } from '../http/server.js'
import { NodeMetrics } from './metrics.js'
import { Replica } from './replica.js'
import { ConfigError } from './config.js'
import type { NodeConfig, Role } from './config.js'
import type { SwarmNode } from '../net/node.js'
import type { SyncService } from '../net/sync.js'
import type { Roster, RosterEntry } from '../net/roster.js'
import type { HttpServer } from '../http/server.js'
import type { DataDirLock } from '../store/data-dir.js'
import type { EventStore } from '../store/event-store.js'
import type { PeerIdString } from '../core/events.js'

const log = logger('plan-swarm:peer')

export const VERSION = 'plan-swarm/0.1.0'

/** A running peer: the replica, its libp2p node, sync, roster and status endpoint. */
export interface Peer {
  readonly role: Role
  readonly swarm: string
  readonly dataDir: string
  readonly replica: Replica
  readonly node: SwarmNode
  readonly sync: SyncService
  readonly roster: Roster
  readonly metrics: NodeMetrics
  readonly http: HttpServer | undefined
  readonly now: () => number
  /** What GET /status serves. */
  status: () => StatusBody
  /** Sign, fold, store and gossip an event of this node (roles call this). */
  publish: Replica['author']
  stop: () => Promise<void>
}

export interface StatusBody {
  peerId: string
  role: Role
  swarm: string
  version: string
  dataDir: string
  addresses: string[]
  peers: number
  roster: RosterEntry[]
  plans: ReturnType<Replica['planSummaries']>
  events: { held: number, parked: number }
}

function readConfigFile (path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`${flag} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); check the path and its permissions`)
  }
}

/**
 * Start a peer from a validated config. Everything it starts, `stop` stops,
 * in reverse order; a failure half-way stops what was started and rethrows.
 */
export async function startPeer (config: NodeConfig, opts: { syncIntervalMs?: number, presenceIntervalMs?: number, identityDir?: string } = {}): Promise<Peer> {
  const now = (): number => Date.now() + config.clockOffsetMs
  const cleanup: Array<() => Promise<void> | void> = []
  const stopAll = async (): Promise<void> => {
    for (const fn of cleanup.reverse()) {
      try { await fn() } catch (err) { log.error('stopping: %s', (err as Error).message) }
    }
    cleanup.length = 0
  }
  try {
    const swarmKey = config.swarmKeyFile === undefined ? undefined : parseSwarmKey(readConfigFile(config.swarmKeyFile, '--swarm-key'))
    const allowPeers = config.allowPeersFile === undefined ? undefined : parseAllowList(readConfigFile(config.allowPeersFile, '--allow-peers'))
    const { dir, lock }: { dir: string, lock: DataDirLock } = config.dataDir !== undefined
      ? { dir: config.dataDir, lock: lockDataDir(config.dataDir) }
      : acquireDefaultDataDir(config.dataRoot, config.role)
    cleanup.push(() => lock.release())
    const identity = await loadOrCreateIdentity(opts.identityDir ?? dir)
    const store: EventStore = openEventStore({ dir })
    cleanup.push(() => store.close())
    const metrics = new NodeMetrics({ processMetrics: true })
    const replica = new Replica({ swarm: config.swarm, key: identity.privateKey, peerId: identity.peerId as PeerIdString, store, metrics, now })
    cleanup.push(() => replica.flush())
    const loaded = replica.load()
    log('loaded %d events from %s (%d damaged rows skipped)', loaded.loaded, dir, loaded.damaged)
    const roster = createRoster()
    // Bootstrap gives a star around the first peer; presence announcements name everyone else. Dial
    // them, so events travel one hop (gossipsub floods its own messages to every connected
    // subscriber) instead of waiting for the mesh to form around the bootstrap peer.
    const lastDial = new Map<string, number>()
    const self: { node?: SwarmNode } = {}
    const meet = (peerId: string, addresses: readonly string[]): void => {
      const n = self.node
      if (n === undefined || peerId === n.peerId || n.connectedPeers().includes(peerId) || addresses.length === 0) return
      if (allowPeers !== undefined && !allowPeers.has(peerId)) return
      const t = Date.now()
      if (t - (lastDial.get(peerId) ?? 0) < 10_000) return
      lastDial.set(peerId, t)
      if (lastDial.size > 1_000) lastDial.delete(lastDial.keys().next().value as string)
      n.libp2p.dial(multiaddr(addresses[0] as string)).catch((err: Error) => { log('could not dial %s: %s', peerId, err.message) })
    }

    const node = await createSwarmNode({
      privateKey: identity.privateKey,
      swarm: config.swarm,
      listen: config.listen,
      bootstrap: config.bootstrap,
      mdns: config.mdns,
      swarmKey,
      allowPeers,
      eventValidator: bytes => replica.ingest(bytes, 'gossip').verdict,
      onPresence: p => {
        roster.update(p, now())
        meet(p.peerId, p.addresses)
      },
      presence: { role: config.role, capabilities: [], load: 0, version: VERSION },
      presenceIntervalMs: opts.presenceIntervalMs
    })
    cleanup.push(() => node.stop())
    self.node = node

    cleanup.push(() => replica.verifyPool.close())
    const sync = createSyncService({
      libp2p: node.libp2p,
      ids: replica.ids,
      has: id => replica.has(id),
      getBytes: id => replica.getBytes(id),
      ingest: async bytes => replica.ingest(bytes, 'sync'),
      ingestMany: async batch => await replica.ingestMany(batch, 'sync'),
      intervalMs: opts.syncIntervalMs,
      onSession: s => {
        metrics.syncRounds.inc({ outcome: s.ok ? 'ok' : 'failed' })
        metrics.syncEvents.inc(s.eventsReceived)
      }
    })
    await sync.start()
    cleanup.push(() => sync.stop())

    const tick = setInterval(() => {
      replica.tick()
      metrics.peers.set(node.connectedPeers().length)
    }, 1_000)
    tick.unref()
    cleanup.push(() => clearInterval(tick))

    const status = (): StatusBody => ({
      peerId: node.peerId,
      role: config.role,
      swarm: config.swarm,
      version: VERSION,
      dataDir: dir,
      addresses: node.addresses(),
      peers: node.connectedPeers().length,
      roster: roster.list(now()),
      plans: replica.planSummaries(),
      events: { held: replica.ids.size, parked: replica.fold.events.parkedCount }
    })
    let http: HttpServer | undefined
    if (config.http !== undefined) {
      http = await startHttpServer(config.http.host, config.http.port, { status, replica, metrics })
      const h = http
      cleanup.push(() => h.close())
    }
    const publish: Replica['author'] = async (type, plan, cites, body) => {
      const signed = await replica.author(type, plan, cites, body)
      await node.publishEvent(signed.event.id, signed.bytes)
      return signed
    }
    return { role: config.role, swarm: config.swarm, dataDir: dir, replica, node, sync, roster, metrics, http, now, status, publish, stop: stopAll }
  } catch (err) {
    await stopAll()
    throw err
  }
}
