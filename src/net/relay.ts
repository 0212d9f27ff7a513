/**
 * Circuit relay v2: a public node (`--relay`) forwards connections for swarm
 * members that cannot be dialed (behind NAT), and every node can reserve a
 * slot on a relay it is connected to and be dialed through it at
 * `/p2p/<relay>/p2p-circuit/p2p/<me>`.
 *
 * Admission is unchanged: the relay's own connections go through pnet and
 * the allowlist like any other, so a stranger never gets far enough to ask
 * for a reservation; and a relayed connection is itself upgraded with pnet
 * and noise end to end, so the relay carries only ciphertext between two
 * members. The gater hooks below say the same once more at the relay's
 * decisions (reserve, connect), for an allowlist.
 */
import { circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import type { CircuitRelayService } from '@libp2p/circuit-relay-v2'
import type { ConnectionGater, PeerId } from '@libp2p/interface'

/**
 * How long one relayed connection may stay open (ms). The library's default
 * (2 minutes) is sized for a hole-punch handshake; here a relayed connection
 * is also how two NATed peers gossip and sync when DCUtR cannot give them a
 * direct path, for the whole of a plan. 30 minutes covers the longest claim a
 * plan allows by default (maxClaimMs, 10 minutes) three times over; when it
 * runs out the relay closes the connection, the peers dial again and get a
 * fresh one, and gossip repair and sync fill in what the gap missed.
 */
export const RELAYED_CONNECTION_MAX_MS = 30 * 60_000

/**
 * How many bytes one relayed connection may carry (each way). The library's
 * default, 128 KiB, is less than one plan's sync. A plan of 87 events is
 * 46 KB of signed events and about 250 KB on the wire per peer at 10
 * processes (ADR-0013: 2.5 MB for the swarm); a catch-up of a
 * 10k-event store is about 6 MB. 64 MiB covers a late joiner's whole
 * catch-up of ~100k events, or hours of planning, and still bounds what one
 * pair of peers can cost the relay's operator before reconnecting.
 */
export const RELAYED_CONNECTION_MAX_BYTES = 64n * 1024n * 1024n

/**
 * Reservations one relay holds at once (the library's default is 15). Each
 * costs the relay a few hundred bytes and a kept-alive connection: 128 NATed
 * members per relay, well within a small VM; run a second `--relay` beyond.
 */
export const RELAY_MAX_RESERVATIONS = 128

/** The relay server service for `--relay`, with the swarm's limits. */
export function relayServerService(): ReturnType<typeof circuitRelayServer> {
  return circuitRelayServer({
    reservations: {
      maxReservations: RELAY_MAX_RESERVATIONS,
      defaultDurationLimit: RELAYED_CONNECTION_MAX_MS,
      defaultDataLimit: RELAYED_CONNECTION_MAX_BYTES
    }
  })
}

/** The relay transport every TCP node runs: dial through relays, and listen on `/p2p-circuit` to reserve a slot. */
export function relayClientTransport(): ReturnType<typeof circuitRelayTransport> {
  return circuitRelayTransport({ reservationCompletionTimeout: 10_000 })
}

/** The listen address that makes the relay transport reserve a slot on a relay it connects to. */
export const RESERVE_ON_A_RELAY = '/p2p-circuit'

/**
 * The allowlist at the relay's own decisions: only members reserve, and a
 * relayed connection is forwarded, or accepted, only between members. With
 * no allowlist, nothing is added (pnet has already kept strangers out).
 */
export function relayGaterHooks(
  allowPeers: ReadonlySet<string> | undefined,
  selfPeerId: string
): Pick<
  ConnectionGater,
  'denyInboundRelayReservation' | 'denyOutboundRelayedConnection' | 'denyInboundRelayedConnection'
> {
  if (allowPeers === undefined) return {}
  const stranger = (p: PeerId): boolean => {
    const id = p.toString()
    return id !== selfPeerId && !allowPeers.has(id)
  }
  return {
    denyInboundRelayReservation: source => stranger(source),
    denyOutboundRelayedConnection: (source, destination) => stranger(source) || stranger(destination),
    denyInboundRelayedConnection: (relay, remote) => stranger(relay) || stranger(remote)
  }
}

export type { CircuitRelayService }
