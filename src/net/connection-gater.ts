/**
 * The allowlist as a libp2p connection gater.
 *
 * A stranger is refused at the earliest point where its peer id is known:
 * before dialling (outbound, when we already know who we are dialling), and
 * right after the encryption handshake (inbound and outbound alike), before
 * any muxer, protocol or gossip state is spent on it. Its addresses are not
 * kept in the peer store either, so discovery never turns it into a dial.
 */
import type { ConnectionGater, PeerId } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import type { Multiaddr } from '@multiformats/multiaddr'

const log = logger('plan-swarm:net:gater')

/** A gater that lets only `allowPeers` (and ourselves) through; with no allowlist, one that denies nothing. */
export function createAllowListGater(allowPeers: ReadonlySet<string> | undefined, selfPeerId: string): ConnectionGater {
  if (allowPeers === undefined) return {}
  const denied = (peer: PeerId | string, where: string): boolean => {
    const id = peer.toString()
    if (id === selfPeerId || allowPeers.has(id)) return false
    log('refusing %s %s: not on the allowlist', where, id)
    return true
  }
  return {
    denyDialPeer: peerId => denied(peerId, 'dial to'),
    denyDialMultiaddr: (ma: Multiaddr) => {
      const id = peerIdOf(ma)
      return id !== undefined && denied(id, 'dial to')
    },
    denyInboundEncryptedConnection: peerId => denied(peerId, 'inbound connection from'),
    denyOutboundEncryptedConnection: peerId => denied(peerId, 'outbound connection to'),
    filterMultiaddrForPeer: peerId => {
      const id = peerId.toString()
      return id === selfPeerId || allowPeers.has(id)
    }
  }
}

/** The peer id a multiaddr ends with (`/p2p/<id>`), if any. */
export function peerIdOf(ma: Multiaddr): string | undefined {
  const components = ma.getComponents()
  for (let i = components.length - 1; i >= 0; i--) {
    const c = components[i]
    if (c?.name === 'p2p') return c.value
  }
  return undefined
}
