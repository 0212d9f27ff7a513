import * as dagCbor from '@ipld/dag-cbor'
import { logger } from '@libp2p/logger'
import { ROSTER_PROTOCOL } from '../wire/topics.js'
import { decodePresence, MAX_PRESENCE_BYTES } from './presence.js'
import { announcedTtl } from './presence-interval.js'
import { SIGNATURE_BYTES } from '../wire/codec.js'
import type { Connection, Libp2p, PeerId, Stream, StreamMessageEvent } from '@libp2p/interface'
import type { Presence } from './presence.js'
import type { Scheduler } from '../ports/scheduler.js'

const log = logger('plan-swarm:net:roster-exchange')

/** Announcements one exchange hands over at most (a random sample of the fresh ones held). */
export const ROSTER_EXCHANGE_MAX = 64
/** Latest announcements kept for exchange, one per peer. */
export const ROSTER_EXCHANGE_KEPT = 2_048
/** A new connection asks for the peer's roster this soon (after identify has run). */
const ASK_AFTER_MS = 300
const REPLY_TIMEOUT_MS = 10_000

/**
 * What one exchange hands over: this node's own announcement first (a node
 * announces swarm-wide only on its first peer, see presence-announcer.ts and
 * ADR-0027), then a uniform random sample of the fresh others,
 * ROSTER_EXCHANGE_MAX in all. Shuffles only the slots handed over, in place
 * (`fresh` is reordered). Shared with the simulator's exchange.
 */
export function handOver<T>(own: T | undefined, fresh: T[], random: () => number): T[] {
  const take = Math.min(fresh.length, ROSTER_EXCHANGE_MAX - (own === undefined ? 0 : 1))
  for (let i = 0; i < take; i++) {
    const j = i + Math.floor(random() * (fresh.length - i))
    ;[fresh[i], fresh[j]] = [fresh[j] as T, fresh[i] as T]
  }
  fresh.length = take
  return own === undefined ? fresh : [own, ...fresh]
}

export interface RosterExchangeInit {
  readonly libp2p: Libp2p
  readonly swarm: string
  readonly scheduler: Scheduler
  /** A verified announcement learned from a peer's roster (as if gossiped). */
  readonly onPresence: (p: Presence) => void
  /** With an allow-list: whether a signer may be learned of (the others in a roster are skipped and counted). */
  readonly presenceAllowed?: (peerId: string) => boolean
  /** This node handed a peer that asked its roster. */
  readonly onServed?: (peerId: string) => void
}

export interface RosterExchange {
  /** An announcement this node accepted (gossiped to it) or published: kept, signed as it came, to hand on (its own first). */
  remember: (p: Presence, bytes: Uint8Array) => void
  start: () => Promise<void>
  stop: () => Promise<void>
}

/** An announcement's signature (its last bytes) as a string key; shorter input gives a key no signature has. */
function signatureOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString(
    'latin1',
    Math.max(0, bytes.length - SIGNATURE_BYTES)
  )
}

/**
 * Peer exchange of our own: on every new connection a node asks the peer
 * for the signed presence announcements it holds (a random sample), checks
 * each signature as if it had been gossiped, and feeds them to the roster
 * and the neighbourhood. So a node whose only neighbour is its bootstrap
 * peer (which may soon close the connection when it is over its bound)
 * learns enough peers to find neighbours of its own, without waiting a
 * presence interval (500 s at a thousand nodes). Announcements are signed by
 * the peer they describe, so a relaying node cannot forge one; an old one
 * is accepted only within the TTL its own interval gives it.
 */
export function createRosterExchange(init: RosterExchangeInit): RosterExchange {
  const kept = new Map<string, { bytes: Uint8Array; sentMs: number; ttlMs: number }>()
  /**
   * The signatures of the announcements kept: a reply mostly repeats what this
   * node holds already (during a mass start, nearly all of it), and those need
   * neither a decode nor a signature check. Skipping one only ever refuses it.
   */
  const keptSignatures = new Set<string>()
  let running = false
  const forget = (id: string): void => {
    const k = kept.get(id)
    if (k === undefined) return
    kept.delete(id)
    keptSignatures.delete(signatureOf(k.bytes))
  }
  const remember = (p: Presence, bytes: Uint8Array): void => {
    const prev = kept.get(p.peerId)
    if (prev !== undefined && prev.sentMs >= p.sentMs) return
    forget(p.peerId)
    kept.set(p.peerId, { bytes, sentMs: p.sentMs, ttlMs: announcedTtl(p.capabilities) })
    keptSignatures.add(signatureOf(bytes))
    if (kept.size > ROSTER_EXCHANGE_KEPT) forget(kept.keys().next().value as string)
  }

  const self = init.libp2p.peerId.toString()
  const sample = (): Uint8Array[] => {
    const now = init.scheduler.now()
    const fresh = [...kept.entries()]
      .filter(([id, k]) => id !== self && now - k.sentMs < k.ttlMs)
      .map(([, k]) => k.bytes)
    return handOver(kept.get(self)?.bytes, fresh, init.scheduler.random)
  }

  const onStream = (stream: Stream, peer: string): void => {
    try {
      stream.send(dagCbor.encode(sample()))
      stream.close().then(
        () => {
          init.onServed?.(peer)
        },
        () => {}
      )
    } catch (err) {
      stream.abort(err as Error)
    }
  }

  const ask = async (peer: PeerId): Promise<void> => {
    const stream = await init.libp2p.dialProtocol(peer, ROSTER_PROTOCOL, {
      signal: AbortSignal.timeout(REPLY_TIMEOUT_MS),
      runOnLimitedConnection: true
    })
    const chunks: Uint8Array[] = []
    let size = 0
    const cap = ROSTER_EXCHANGE_MAX * MAX_PRESENCE_BYTES + 1024
    await new Promise<void>((resolve, reject) => {
      const timer = init.scheduler.after(REPLY_TIMEOUT_MS, () => {
        stream.abort(new Error('roster exchange timed out'))
        reject(new Error('timed out'))
      })
      stream.addEventListener('message', (evt: StreamMessageEvent) => {
        const data = evt.data instanceof Uint8Array ? evt.data : evt.data.subarray()
        size += data.length
        if (size > cap) {
          timer()
          stream.abort(new Error('roster reply too large'))
          reject(new Error(`a roster reply over ${cap} bytes`))
          return
        }
        chunks.push(data)
      })
      stream.addEventListener('close', evt => {
        timer()
        if (evt.error !== undefined) reject(evt.error)
        else resolve()
      })
      stream.addEventListener('end', () => {
        timer()
        resolve()
      })
      if (stream.readableEnded) {
        timer()
        resolve()
      }
      // The question is the stream itself: close our writable end, so the peer's side closes once it has replied.
      stream.close().catch(() => {})
    })
    const all = new Uint8Array(size)
    let at = 0
    for (const c of chunks) {
      all.set(c, at)
      at += c.length
    }
    const list = dagCbor.decode(all)
    if (!Array.isArray(list)) throw new Error('a roster reply is not a list')
    let learned = 0
    let known = 0
    let refused = 0
    const now = init.scheduler.now()
    for (const bytes of list.slice(0, ROSTER_EXCHANGE_MAX)) {
      if (!(bytes instanceof Uint8Array)) continue
      if (keptSignatures.has(signatureOf(bytes))) {
        known++
        continue
      }
      // Accept it up to its own TTL old: the decoder checks the signature, the shape and the clock.
      const r = await decodePresence(init.swarm, bytes, now, Infinity)
      if (!r.ok) continue
      if (init.presenceAllowed !== undefined && !init.presenceAllowed(r.presence.peerId)) {
        refused++
        continue
      }
      if (
        now - r.presence.sentMs > announcedTtl(r.presence.capabilities) ||
        r.presence.peerId === init.libp2p.peerId.toString()
      )
        continue
      remember(r.presence, bytes)
      init.onPresence(r.presence)
      learned++
    }
    log('learned %d peers from %p (%d known already)', learned, peer, known)
    if (refused > 0) log.error('%p handed over %d announcements of keys not on the allow-list: skipped', peer, refused)
  }

  const onConnect = (evt: CustomEvent<PeerId>): void => {
    const peer = evt.detail
    init.scheduler.after(ASK_AFTER_MS, () => {
      if (!running || init.libp2p.getConnections(peer).length === 0) return
      ask(peer).catch((err: Error) => {
        log('roster exchange with %p failed: %s', peer, err.message)
      })
    })
  }

  return {
    remember,
    start: async () => {
      running = true
      await init.libp2p.handle(
        ROSTER_PROTOCOL,
        (stream: Stream, c: Connection) => {
          onStream(stream, c.remotePeer.toString())
        },
        { maxInboundStreams: 2, maxOutboundStreams: 2, runOnLimitedConnection: true }
      )
      init.libp2p.addEventListener('peer:connect', onConnect)
    },
    stop: async () => {
      running = false
      init.libp2p.removeEventListener('peer:connect', onConnect)
      try {
        await init.libp2p.unhandle(ROSTER_PROTOCOL)
      } catch {
        /* stopping anyway */
      }
    }
  }
}
