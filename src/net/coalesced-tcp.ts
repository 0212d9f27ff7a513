/**
 * libp2p's TCP transport with each connection's small writes coalesced.
 *
 * Below gossipsub, a message goes through yamux (a frame), noise (a length
 * prefix and the ciphertext) and reaches @libp2p/tcp as a list of buffers,
 * which it hands to `socket.write` one by one: with Nagle off (libp2p's
 * default), each is a `write` system call. The load profile (docs/performance.md)
 * had the native `writeBuffer` under that loop at 11-14 % of a busy process.
 *
 * Here the socket is corked at a connection's first write of a synchronous
 * run and uncorked in a microtask after it: Node then hands everything
 * written meanwhile (every buffer of every frame for that connection) to the
 * kernel in one `writev`. The bytes and their order are exactly what they
 * were; only the number of system calls changes, and nothing waits past the
 * end of the current callback. A connection this cannot reach into (another
 * transport, a changed @libp2p/tcp) is left as it is.
 *
 * The cork cannot outlive its run: it is taken at the run's first write with
 * the uncork already queued, so a write that throws, a socket destroyed or
 * ended during the run, or a run past the high-water mark (the write says
 * so; 'drain' follows the flush) all leave the socket uncorked
 * (test/unit/coalesced-tcp.test.ts).
 *
 * createSwarmNode's TCP transport (src/net/node.ts). bench/net/writes.ts
 * measures what it saves; docs/performance.md ("Writes") has the figures.
 */
import { Socket } from 'node:net'
import { tcp } from '@libp2p/tcp'
import type { TCPComponents, TCPOptions } from '@libp2p/tcp'
import type { MultiaddrConnection, Transport, Upgrader } from '@libp2p/interface'

/** What the TCP connection class of @libp2p/tcp holds, as far as this needs it. */
interface TcpConnectionInside {
  socket?: unknown
  sendData?: (data: unknown) => unknown
}

/** `tcp(init)`, with every connection it makes or accepts writing through `coalesceWrites`. */
export function coalescedTcp(init: TCPOptions = {}): (components: TCPComponents) => Transport {
  const make = tcp(init)
  return components => {
    const transport = make(components)
    const dial = transport.dial.bind(transport)
    const createListener = transport.createListener.bind(transport)
    transport.dial = async (ma, options) => await dial(ma, { ...options, upgrader: coalescing(options.upgrader) })
    transport.createListener = options => createListener({ ...options, upgrader: coalescing(options.upgrader) })
    return transport
  }
}

/** The upgrader, coalescing the writes of each connection it upgrades. */
function coalescing(upgrader: Upgrader): Upgrader {
  return new Proxy(upgrader, {
    get(target, prop) {
      if (prop === 'upgradeOutbound' || prop === 'upgradeInbound') {
        const upgrade = target[prop].bind(target) as (c: MultiaddrConnection, o: unknown) => Promise<unknown>
        return async (maConn: MultiaddrConnection, opts: unknown) => await upgrade(coalesceWrites(maConn), opts)
      }
      const v: unknown = Reflect.get(target, prop, target)
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v
    }
  })
}

/** Cork the connection's socket at its first write of a synchronous run; uncork when the run is over. */
export function coalesceWrites(maConn: MultiaddrConnection): MultiaddrConnection {
  const inside = maConn as unknown as TcpConnectionInside
  const socket = inside.socket
  const sendData = inside.sendData
  if (!(socket instanceof Socket) || typeof sendData !== 'function') return maConn
  let corked = false
  const uncork = (): void => {
    corked = false
    socket.uncork()
  }
  inside.sendData = (data: unknown) => {
    if (!corked && !socket.destroyed) {
      corked = true
      socket.cork()
      queueMicrotask(uncork)
    }
    return sendData.call(maConn, data)
  }
  return maConn
}
