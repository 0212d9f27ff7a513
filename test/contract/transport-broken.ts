/**
 * Transports broken on purpose, each in one rule of the port, to show that
 * the contract's check of that rule fails: a check no transport can fail
 * would prove nothing. Each wraps a working transport and changes only what
 * it tells the transport about the host, so the fault is the transport's
 * own behaviour as the other nodes and the host see it.
 */
import type { Transport, TransportHost } from '../../src/ports/transport.js'

/** `t` with the host it is started with replaced by `edit(host)`; everything else passed through. */
function withHost(t: Transport, edit: (host: TransportHost) => TransportHost): Transport {
  return {
    peerId: t.peerId,
    start: async host => {
      await t.start(edit(host))
    },
    publish: async (id, bytes) => {
      await t.publish(id, bytes)
    },
    syncWith: async (peer, options) => await t.syncWith(peer, options),
    connectedPeers: () => t.connectedPeers(),
    topicPeers: () => t.topicPeers(),
    addresses: () => t.addresses(),
    presenceIntervalMs: () => t.presenceIntervalMs(),
    stop: async () => {
      await t.stop()
    }
  }
}

/** A broken transport and the check its fault must fail. */
export interface BrokenTransport {
  readonly name: string
  readonly wrap: (t: Transport) => Transport
  /** The named check (TRANSPORT_CHECKS) that must fail against it. */
  readonly fails: string
  /** What the failure says, so that a timeout or a crash does not pass for the violation. */
  readonly says: RegExp
  /** Other checks the same fault rightly breaks; every check not named here must pass. */
  readonly alsoFails?: readonly string[]
}

export const BROKEN_TRANSPORTS: readonly BrokenTransport[] = [
  {
    name: 'forwards what its host rejected',
    // The host still judges (and records) every event; gossip is told to forward each one.
    wrap: t =>
      withHost(t, host => ({
        ...host,
        receive: (bytes, from) => {
          host.receive(bytes, from)
          return 'accept'
        }
      })),
    fails: 'only accepted events are forwarded',
    says: /node 2 received events node 1 did not accept/
  },
  {
    name: 'drops what sync brings',
    // Sessions run and end well, but nothing they pull reaches the host.
    wrap: t => withHost(t, host => ({ ...host, ingestMany: async () => await Promise.resolve(0) })),
    fails: 'a fresh sync brings both sides up to date',
    says: /after a fresh sync, node 1 lacks node 0's events/,
    // That check's session must bring the one event missing, and here it does not.
    alsoFails: ['sync never fetches what the host has']
  },
  {
    name: 'forgets what its host has',
    // Only the held set is offered; what the host has parked is asked for again.
    wrap: t => withHost(t, host => ({ ...host, has: id => host.ids.has(id) })),
    fails: 'sync never fetches what the host has',
    says: /node 1 was given events its host has/
  },
  {
    name: 'forgives rejects',
    // A provably bad event is dropped as if it were merely parked: its sender pays nothing.
    wrap: t =>
      withHost(t, host => ({
        ...host,
        receive: (bytes, from) => {
          const verdict = host.receive(bytes, from)
          return verdict === 'reject' ? 'ignore' : verdict
        }
      })),
    fails: 'a reject costs the sender and an ignore does not',
    says: /a rejected event left its sender's standing/
  }
]
