/**
 * `--upnp`: gets a port mapping confirmed by AutoNAT as soon as the router
 * gives it (a libp2p service, next to @libp2p/upnp-nat; see nat.ts).
 */
import { serviceDependencies } from '@libp2p/interface'
import type { Connection, PeerId, PeerStore, Startable } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import { isPrivate } from '@libp2p/utils'
import type { Multiaddr } from '@multiformats/multiaddr'

/** AutoNAT v2's dial-request protocol: a peer that speaks it dials back addresses it is asked to. */
const AUTONAT_V2_DIAL_REQUEST = '/libp2p/autonat/2/dial-request'
/** How often a node looks for a port mapping AutoNAT has not confirmed yet (ms): the address manager says nothing when one is added. */
export const MAPPING_CHECK_MS = 2_000
/** How long before the same unconfirmed mapping is put to the connected peers again (ms). */
export const MAPPING_RECHECK_MS = 30_000
/** Peers asked at once; AutoNAT v2 runs three checks at a time. */
const MAPPING_VERIFIERS = 3

/** What `confirmMappedAddresses` uses of libp2p's components (structural: @libp2p/interface-internal is not a dependency here). */
export interface ConfirmComponents {
  readonly addressManager: {
    getAddressesWithMetadata: () => ReadonlyArray<{ multiaddr: Multiaddr; verified: boolean; type: string }>
  }
  readonly connectionManager: { getConnections: () => Connection[] }
  readonly peerStore: PeerStore
  /** The identify service (node.ts names it `identify`); without it this does nothing. */
  readonly identify?: { identify: (connection: Connection) => Promise<unknown> }
}

const upnpLog = logger('plan-swarm:net:upnp')

/**
 * Gets a UPnP port mapping confirmed by AutoNAT as soon as it exists.
 *
 * AutoNAT v2 checks a node's unconfirmed public addresses only when identify
 * completes with a peer that serves it, i.e. on a new connection (and on a
 * random walk, which needs a DHT this swarm does not run). @libp2p/upnp-nat
 * adds its mapping a few seconds after start (SSDP search, then a 5 s
 * debounce), when the bootstrap connections are already up, and the address
 * manager fires no event for a new mapping: so the mapped address stayed
 * unannounced until some new connection happened to open, which in a settled
 * swarm of bounded degree can be never. (`autoConfirmAddress: true` would
 * announce it at once, confirmed by nobody, also when the router's outside
 * address is not reachable.)
 *
 * This service watches the address manager for an unconfirmed public
 * `ip-mapping` address and re-runs identify on a few open, unlimited
 * connections to peers that serve AutoNAT v2: identify completing is what
 * makes AutoNAT ask them to dial the address back. The address is announced
 * only once one of them did, as before.
 */
export function confirmMappedAddresses(components: ConfirmComponents): Startable {
  const asked = new Map<string, number>()
  let timer: ReturnType<typeof setInterval> | undefined
  let checking = false
  const servesAutoNAT = async (peer: PeerId): Promise<boolean> => {
    try {
      return (await components.peerStore.get(peer)).protocols.includes(AUTONAT_V2_DIAL_REQUEST)
    } catch {
      return false
    }
  }
  const check = async (): Promise<void> => {
    const identify = components.identify
    if (identify === undefined) return
    const now = Date.now()
    const pending = components.addressManager
      .getAddressesWithMetadata()
      .filter(a => a.type === 'ip-mapping' && !a.verified && !isPrivate(a.multiaddr))
      .map(a => a.multiaddr.toString())
    for (const key of asked.keys()) if (!pending.includes(key)) asked.delete(key)
    const due = pending.filter(a => now - (asked.get(a) ?? -Infinity) >= MAPPING_RECHECK_MS)
    if (due.length === 0) return
    const verifiers: Connection[] = []
    for (const c of components.connectionManager.getConnections()) {
      if (verifiers.length >= MAPPING_VERIFIERS) break
      if (c.status !== 'open' || c.limits != null || verifiers.some(v => v.remotePeer.equals(c.remotePeer))) continue
      if (await servesAutoNAT(c.remotePeer)) verifiers.push(c)
    }
    if (verifiers.length === 0) return
    for (const a of due) asked.set(a, now)
    upnpLog('asking %d peers to dial back %s', verifiers.length, due.join(' '))
    await Promise.all(
      verifiers.map(async c => {
        try {
          await identify.identify(c)
        } catch (err) {
          upnpLog('identify with %p failed: %s', c.remotePeer, (err as Error).message)
        }
      })
    )
  }
  return {
    [Symbol.toStringTag]: 'plan-swarm:upnp-confirm',
    [serviceDependencies]: ['@libp2p/identify', '@libp2p/autonat'],
    start() {
      timer = setInterval(() => {
        if (checking) return
        checking = true
        void check().finally(() => {
          checking = false
        })
      }, MAPPING_CHECK_MS)
      timer.unref()
    },
    stop() {
      clearInterval(timer)
      asked.clear()
    }
  } as Startable
}
