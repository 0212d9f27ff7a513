/**
 * Reaching peers across NATs: what a node adds to plain TCP so that peers
 * behind different routers can find each other and, where the routers allow
 * it, talk directly.
 *
 * - AutoNAT v2 (every TCP node, client and server): peers dial back, on a
 *   fresh connection, the addresses a node thinks are public; libp2p
 *   announces a public address only once one did. A node behind NAT thus
 *   never announces its router's outside address, which nobody can dial.
 *   (AutoNAT v1, @libp2p/autonat 3.0.x, answers from an existing connection
 *   when there is one and then closes it: every check dropped a live
 *   connection of the node being checked. v2 dials with `force`.)
 * - Circuit relay v2: every TCP node runs the relay transport (it can dial
 *   `/p2p-circuit` addresses); a node that bootstraps to known peers reserves a
 *   slot on a relay among the peers it connects to, unless it says it is
 *   public (`--relay`, `--announce`) or listens on loopback only. A node found
 *   by mDNS alone shares a LAN with its peers and reserves nothing: until it
 *   holds a reservation, libp2p's relay search dials every peer discovery
 *   reports, which on a LAN would undo the bounded degree. `--relay` serves
 *   reservations (relay.ts).
 * - DCUtR (every TCP node): over a relayed connection, both ends try a
 *   simultaneous direct dial and drop the relay when it works.
 * - Identify push (every TCP node): what a node announces changes while it
 *   runs (a relay slot, an address AutoNAT confirmed, a UPnP mapping), and
 *   push tells its connected peers at once. Without it they keep the
 *   addresses of the first identify; a relayed connection opened before a
 *   mapping existed then stays relayed for good. With it, the peer at the
 *   inbound end of such a connection hears of the now-public address, and
 *   DCUtR there dials it and drops the relay (its "unilateral upgrade").
 * - UPnP (`--upnp`, off by default): asks the router for a port forward by
 *   UPnP IGD v2 (@libp2p/upnp-nat finds the router by SSDP and speaks only
 *   IGD v2; it has no NAT-PMP or PCP), which AutoNAT then confirms
 *   (`confirmMappedAddresses`).
 * - WebSockets (`--websockets`, or any `/ws` listen address): a second
 *   transport for networks that let only HTTP-like traffic out.
 *
 * The memory transport (in-process tests) gets none of this.
 */
import { autoNATv2 } from '@libp2p/autonat-v2'
import { dcutr } from '@libp2p/dcutr'
import { identifyPush } from '@libp2p/identify'
import type { Connection, Libp2p } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import { multiaddr } from '@multiformats/multiaddr'
import type { Libp2pOptions, ServiceFactoryMap } from 'libp2p'
import { isRelayed } from './addresses.js'
import { RESERVE_ON_A_RELAY, relayClientTransport, relayServerService } from './relay.js'
import { confirmMappedAddresses } from './upnp-confirm.js'
import type { ConfirmComponents } from './upnp-confirm.js'

const connLog = logger('plan-swarm:net:connections')

/** How a node reaches and is reached across NATs (the `--announce`, `--relay`, `--upnp` and `--websockets` flags). */
export interface NetworkOptions {
  /**
   * Addresses to announce instead of the ones libp2p finds (a public IP, a
   * port forward, a DNS name), e.g. `/ip4/203.0.113.7/tcp/4001`. With any,
   * only these are announced, and the node reserves no relay slot.
   */
  readonly announce?: readonly string[]
  /** Serve circuit relay v2 to swarm members (run it on a node others can dial). */
  readonly relay?: boolean
  /** Ask the router for a port mapping by UPnP (IGD). */
  readonly upnp?: boolean
  /** Load the WebSockets transport: dial `/ws` and `/wss` peers (a `/ws` listen address turns it on too). */
  readonly websockets?: boolean
  /**
   * Reserve a slot on a relay this node connects to; default: with bootstrap addresses, unless relay, announce, or
   * loopback-only listening.
   */
  readonly reserveRelay?: boolean
}

/** A listen address is a WebSockets one. */
export function isWebSocketsAddress(addr: string): boolean {
  return /\/wss?(\/|$)/.test(addr) || /\/tls\/ws(\/|$)/.test(addr)
}

function listensBeyondLoopback(listen: readonly string[]): boolean {
  return listen.some(a => !/^\/ip4\/127\.|^\/ip6\/::1\//.test(a))
}

/** What the NAT options add to a TCP node's libp2p configuration. */
export interface NatAssembly {
  readonly listen: string[]
  readonly announce: string[]
  readonly transports: NonNullable<Libp2pOptions['transports']>
  readonly services: ServiceFactoryMap
  readonly reserving: boolean
}

/**
 * @libp2p/websockets dials with the global `WebSocket`, which Node has only
 * from 22 (20 hides it behind --experimental-websocket); its listener already
 * uses `ws`. Where the global is missing, `ws`'s client stands in: the same
 * class the listener hands the transport for inbound connections.
 */
async function ensureWebSocketGlobal(): Promise<void> {
  if (typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'function') return
  const { WebSocket } = await import('ws')
  Object.defineProperty(globalThis, 'WebSocket', { value: WebSocket, configurable: true, writable: true })
}

/** The transports, services and addresses the NAT options add, for listen addresses `listen` and `bootstraps` bootstrap addresses. */
export async function natAssembly(
  listen: readonly string[],
  bootstraps: number,
  opts: NetworkOptions = {}
): Promise<NatAssembly> {
  const announce = [...(opts.announce ?? [])]
  const reserving =
    opts.reserveRelay ??
    (opts.relay !== true && announce.length === 0 && bootstraps > 0 && listensBeyondLoopback(listen))
  const ws = opts.websockets === true || listen.some(isWebSocketsAddress)
  if (ws) await ensureWebSocketGlobal()
  const services: ServiceFactoryMap = {
    autoNAT: autoNATv2(),
    dcutr: dcutr(),
    identifyPush: identifyPush()
  }
  if (opts.relay === true) services.relay = relayServerService()
  // UPnP (an SSDP client and an XML parser) and WebSockets (ws) load only when asked for: most nodes use neither.
  if (opts.upnp === true) {
    const { uPnPNAT } = await import('@libp2p/upnp-nat')
    services.upnp = uPnPNAT({ portMappingDescription: 'plan-swarm', autoConfirmAddress: false })
    services.upnpConfirm = (components: ConfirmComponents) => confirmMappedAddresses(components)
  }
  const webSockets = ws ? (await import('@libp2p/websockets')).webSockets : undefined
  return {
    listen: [...listen, ...(reserving ? [RESERVE_ON_A_RELAY] : [])],
    announce,
    transports: [...(webSockets !== undefined ? [webSockets()] : []), relayClientTransport()],
    services,
    reserving
  }
}

/** One open connection, as /status or a log line shows it. */
export interface SwarmConnection {
  readonly peer: string
  /** Where the other end is: for a relayed connection, `.../p2p/<relay>/p2p-circuit`. */
  readonly address: string
  /** `direct`: a socket to the peer (TCP, WebSockets); `relayed`: through a circuit relay. */
  readonly path: 'direct' | 'relayed'
  /** The relay caps it (duration, bytes): only protocols that allow it run on it. */
  readonly limited: boolean
  readonly direction: 'inbound' | 'outbound'
}

export function describeConnection(c: Connection): SwarmConnection {
  return {
    peer: c.remotePeer.toString(),
    address: c.remoteAddr.toString(),
    path: isRelayed(c.remoteAddr) ? 'relayed' : 'direct',
    limited: c.limits != null,
    direction: c.direction
  }
}

/**
 * Logs each connection that opens or closes (`plan-swarm:net:connections`):
 * `open direct <peer> <address>`, `open relayed ...`, `close ...`. A
 * connection that replaces a relayed one with a direct one is DCUtR at work.
 * Returns a function that stops it.
 */
export function logConnections(libp2p: Libp2p): () => void {
  const line = (what: string, c: Connection): void => {
    const d = describeConnection(c)
    connLog('%s %s %s %s %s%s', what, d.path, d.peer, d.direction, d.address, d.limited ? ' limited' : '')
  }
  const open = (evt: CustomEvent<Connection>): void => {
    line('open', evt.detail)
  }
  const close = (evt: CustomEvent<Connection>): void => {
    line('close', evt.detail)
  }
  libp2p.addEventListener('connection:open', open)
  libp2p.addEventListener('connection:close', close)
  return () => {
    libp2p.removeEventListener('connection:open', open)
    libp2p.removeEventListener('connection:close', close)
  }
}

/** The problem with an `--announce` address, or null. */
export function checkAnnounceAddress(addr: string): string | null {
  try {
    multiaddr(addr)
  } catch (err) {
    return (
      `announce address ${JSON.stringify(addr)} is not a multiaddr (${(err as Error).message}); ` +
      `write it like /ip4/203.0.113.7/tcp/4001`
    )
  }
  if (isRelayed(multiaddr(addr)))
    return (
      `announce address ${addr} is a relay address: announce your own public address (a relayed ` +
      `one is added by itself when a relay holds a slot for you)`
    )
  return null
}

const addrLog = logger('plan-swarm:net:addresses')

/**
 * Calls `changed` whenever what this node announces (`announced()`) changes:
 * a relay granted or dropped a slot, AutoNAT confirmed or withdrew a public
 * address, a UPnP mapping came or went. Logs the new list
 * (`plan-swarm:net:addresses announcing ...`). Returns a function that stops it.
 */
export function watchAnnouncedAddresses(
  libp2p: Libp2p,
  announced: () => string[],
  changed: (addrs: string[]) => void
): () => void {
  let last = announced().join(' ')
  addrLog('announcing %s', last)
  const check = (): void => {
    const now = announced()
    const key = now.join(' ')
    if (key === last) return
    last = key
    addrLog('announcing %s', key)
    changed(now)
  }
  libp2p.addEventListener('self:peer:update', check)
  return () => {
    libp2p.removeEventListener('self:peer:update', check)
  }
}
