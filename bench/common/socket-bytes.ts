/**
 * Bytes on the wire between local processes, read from the kernel's TCP
 * counters (`ss -tin`: bytes_received per socket, after Noise and yamux
 * framing, before TCP/IP headers).
 *
 * Both ends of a loopback connection are listed; each byte is received by
 * exactly one of them, so the sum of bytes_received over the sockets that
 * touch the swarm's listening ports counts every byte once. Sockets closed
 * between two snapshots take their bytes with them: `closed` says how many.
 */
import { execFileSync } from 'node:child_process'

/** bytes_received of each established TCP socket on a swarm port, keyed "local>peer". */
export type SocketSnapshot = ReadonlyMap<string, number>

/** Parses `ss -tinH state established` output (one line of addresses, one of details, per socket). */
export function parseSs(text: string, ports: ReadonlySet<number>): Map<string, number> {
  const out = new Map<string, number>()
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const head = (lines[i] as string).trim().split(/\s+/)
    // Recv-Q Send-Q Local:Port Peer:Port [Process]
    if (head.length < 4 || !/^\d+$/.test(head[0] as string)) continue
    const local = head[2] as string
    const peer = head[3] as string
    const detail = lines[i + 1] ?? ''
    const port = (a: string): number => Number(a.slice(a.lastIndexOf(':') + 1))
    if (!ports.has(port(local)) && !ports.has(port(peer))) continue
    const m = /bytes_received:(\d+)/.exec(detail)
    out.set(`${local}>${peer}`, m === null ? 0 : Number(m[1]))
  }
  return out
}

export function socketSnapshot(ports: ReadonlySet<number>): SocketSnapshot {
  return parseSs(
    execFileSync('ss', ['-tinH', 'state', 'established'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }),
    ports
  )
}

/** Bytes received between two snapshots on the sockets open at the second (new ones from 0). */
export function bytesBetween(
  before: SocketSnapshot,
  after: SocketSnapshot
): { bytes: number; sockets: number; closed: number } {
  let bytes = 0
  for (const [k, v] of after) bytes += Math.max(0, v - (before.get(k) ?? 0))
  let closed = 0
  for (const k of before.keys()) if (!after.has(k)) closed++
  return { bytes, sockets: after.size, closed }
}

/** The TCP port of a multiaddr such as /ip4/127.0.0.1/tcp/4001/p2p/... */
export function tcpPortOf(addr: string): number | undefined {
  const m = /\/tcp\/(\d+)/.exec(addr)
  return m === null ? undefined : Number(m[1])
}
