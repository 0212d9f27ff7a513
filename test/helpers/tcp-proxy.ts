/**
 * A userspace TCP proxy for the resilience scenarios: this kernel has no
 * netem, so delay, jitter and connection resets are made here, between
 * the nodes. Each listener forwards to one target; every chunk, in each
 * direction, is held for `delayMs` +- `jitterMs` (uniform) before it is
 * written on, without reordering the stream (a chunk never leaves before the
 * one ahead of it). Now and then (`resetEveryMs`, randomised) one live
 * connection is reset on both sides (RST, not FIN), as a flaky middlebox or
 * a NAT timeout would.
 *
 * A `delayMs: 0, jitterMs: 0` proxy with no resets is a plain forwarder
 * (used to reach the fake LLM server from inside a network namespace).
 */
import { createConnection, createServer } from 'node:net'
import type { Server, Socket } from 'node:net'

export interface ProxyRoute {
  readonly listenHost: string
  /** 0 for any free port. */
  readonly listenPort: number
  readonly targetHost: string
  readonly targetPort: number
}

export interface TcpProxyOptions {
  readonly delayMs?: number
  readonly jitterMs?: number
  /** Mean interval between resets of one random live connection; 0 or absent: never. */
  readonly resetEveryMs?: number
  /** Random source in [0, 1) (default Math.random), for reproducible runs. */
  readonly random?: () => number
}

export interface ProxyStats {
  connections: number
  resets: number
  bytes: number
  chunks: number
  /** Sum of the delay each chunk was held (ms), for the mean. */
  heldMs: number
  maxHeldMs: number
}

export interface TcpProxy {
  /** `host:port` each route listens on, in the order of the routes. */
  readonly listening: ReadonlyArray<{ host: string; port: number }>
  readonly stats: ProxyStats
  /** Reset one live connection now (if any); true if one was reset. */
  resetOne: () => boolean
  close: () => Promise<void>
}

interface Pair {
  client: Socket
  upstream: Socket
}

/** Start listening on every route; resolves once all listen. */
export async function startTcpProxy(routes: readonly ProxyRoute[], opts: TcpProxyOptions = {}): Promise<TcpProxy> {
  const delay = opts.delayMs ?? 0
  const jitter = opts.jitterMs ?? 0
  const random = opts.random ?? Math.random
  const stats: ProxyStats = { connections: 0, resets: 0, bytes: 0, chunks: 0, heldMs: 0, maxHeldMs: 0 }
  const pairs = new Set<Pair>()
  const servers: Server[] = []
  const listening: Array<{ host: string; port: number }> = []

  /**
   * Forward `from` to `to`, each chunk held for the delay, in order. One timer
   * per direction drains a FIFO: a timer per chunk does not keep the order,
   * since Node starts a timer from the event loop's cached time, so a chunk
   * scheduled later in the same loop turn, with the same due time, can fire
   * first (seen: reordered bytes broke Noise handshakes and stalled streams).
   */
  const pipeDelayed = (from: Socket, to: Socket): void => {
    let lastDue = 0
    let ended = false
    const queue: Array<{ chunk: Buffer; due: number }> = []
    let timer: ReturnType<typeof setTimeout> | undefined
    const drain = (): void => {
      timer = undefined
      const now = Date.now()
      while (queue.length > 0 && (queue[0]?.due ?? 0) <= now) {
        const { chunk } = queue.shift() as { chunk: Buffer }
        if (!to.destroyed) to.write(chunk)
      }
      if (queue.length > 0) timer = setTimeout(drain, (queue[0]?.due ?? now) - now)
      else if (ended && !to.destroyed) to.end()
    }
    from.on('data', (chunk: Buffer) => {
      const hold = Math.max(0, delay + (2 * random() - 1) * jitter)
      const due = Math.max(Date.now() + hold, lastDue)
      lastDue = due
      stats.chunks++
      stats.bytes += chunk.length
      stats.heldMs += due - Date.now()
      stats.maxHeldMs = Math.max(stats.maxHeldMs, due - Date.now())
      if (delay === 0 && jitter === 0) {
        if (!to.destroyed) to.write(chunk)
        return
      }
      queue.push({ chunk, due })
      timer ??= setTimeout(drain, due - Date.now())
    })
    from.on('end', () => {
      ended = true
      if (queue.length === 0 && !to.destroyed) to.end()
    })
    to.on('close', () => {
      if (timer !== undefined) clearTimeout(timer)
      queue.length = 0
    })
  }

  const kill = (p: Pair): void => {
    pairs.delete(p)
    for (const s of [p.client, p.upstream]) {
      if (!s.destroyed) s.resetAndDestroy()
    }
  }

  for (const route of routes) {
    const server = createServer({ pauseOnConnect: false }, client => {
      stats.connections++
      const upstream = createConnection({ host: route.targetHost, port: route.targetPort })
      const pair: Pair = { client, upstream }
      pairs.add(pair)
      client.setNoDelay(true)
      upstream.setNoDelay(true)
      pipeDelayed(client, upstream)
      pipeDelayed(upstream, client)
      // One side failing or closing takes the other down the same way (a reset stays a reset).
      const onError = (): void => {
        kill(pair)
      }
      client.on('error', onError)
      upstream.on('error', onError)
      const onClose = (): void => {
        pairs.delete(pair)
        if (!client.destroyed) client.destroy()
        if (!upstream.destroyed) upstream.destroy()
      }
      client.on('close', onClose)
      upstream.on('close', onClose)
    })
    servers.push(server)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(route.listenPort, route.listenHost, () => {
        server.off('error', reject)
        const a = server.address()
        listening.push({
          host: route.listenHost,
          port: typeof a === 'object' && a !== null ? a.port : route.listenPort
        })
        resolve()
      })
    })
  }

  const resetOne = (): boolean => {
    const live = [...pairs]
    if (live.length === 0) return false
    const p = live[Math.floor(random() * live.length)] as Pair
    stats.resets++
    kill(p)
    return true
  }

  let resetTimer: ReturnType<typeof setTimeout> | undefined
  const every = opts.resetEveryMs ?? 0
  const scheduleReset = (): void => {
    resetTimer = setTimeout(
      () => {
        resetOne()
        scheduleReset()
      },
      every * (0.5 + random())
    )
    resetTimer.unref()
  }
  if (every > 0) scheduleReset()

  return {
    listening,
    stats,
    resetOne,
    async close() {
      if (resetTimer !== undefined) clearTimeout(resetTimer)
      for (const p of [...pairs]) {
        p.client.destroy()
        p.upstream.destroy()
      }
      pairs.clear()
      await Promise.all(
        servers.map(async s => {
          await new Promise<void>(resolve => {
            s.close(() => {
              resolve()
            })
          })
        })
      )
    }
  }
}
