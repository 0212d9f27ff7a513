/**
 * What the network benchmark's parent (bench/net/index.ts) and its child processes
 * (bench/net/child.ts) share: the child's config, the interface each kind of
 * child (full peer, bare gossipsub node) implements, and the events file.
 *
 * Events travel to children as a file of frames: `u32 length (BE) || wire
 * bytes`, in publishing order.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'

/** Ed25519 signature length at the end of every event's wire bytes. */
const SIG_BYTES = 64

export interface ChildCfg {
  /** Swarm name (the events are signed for it; it names the gossip topics). */
  readonly swarm: string
  /** Multiaddr to listen on. */
  readonly listen: string
  /** Full peer only: its data dir. */
  readonly dataDir?: string
  /** Full peer only: --bootstrap addresses. */
  readonly bootstrap?: readonly string[]
  /** Bare node only: gossipsub signature policy (full peers use the default, StrictNoSign). */
  readonly policy?: 'StrictSign' | 'StrictNoSign'
  /** Report `caught` once this many events are held (late-joiner catch-up). */
  readonly expect?: number
}

/** What a child process drives, whichever kind it is. */
export interface NetImpl {
  readonly peerId: string
  addrs(): string[]
  /** Connection and gossip figures for the parent's readiness checks. */
  state(): Record<string, unknown>
  dial(addr: string): Promise<void>
  /** Publish one event as its first holder: the full peer folds and stores it first, the bare node only publishes. */
  publish(id: string, bytes: Uint8Array): Promise<void>
  /** Full peer only: ingest events as if authored here (verified, folded, stored). */
  load?(frames: readonly Uint8Array[]): { n: number; accepted: number }
  /** Called with ids as they become available here: folded (full peer) or delivered by gossipsub (bare). */
  onDeliver(cb: (ids: readonly string[]) => void): void
  held(): number
  /** Full peer: the swarm hash (hash over every plan's treeHash); bare: ''. */
  hash(): string
  /** Wall-clock ms at which the earliest connection still open (or seen opening) opened. */
  firstConnOpen(): number | undefined
  stop(): Promise<void>
}

export function writeFrames(path: string, frames: readonly Uint8Array[]): void {
  let size = 0
  for (const f of frames) size += 4 + f.length
  const buf = Buffer.alloc(size)
  let o = 0
  for (const f of frames) {
    buf.writeUInt32BE(f.length, o)
    buf.set(f, o + 4)
    o += 4 + f.length
  }
  writeFileSync(path, buf)
}

export function readFrames(path: string): Uint8Array[] {
  const buf = readFileSync(path)
  const out: Uint8Array[] = []
  let o = 0
  while (o < buf.length) {
    const n = buf.readUInt32BE(o)
    // A copy that owns its buffer, as bytes off the network would be.
    out.push(Uint8Array.prototype.slice.call(buf, o + 4, o + 4 + n))
    o += 4 + n
  }
  return out
}

/** An event's id (and its gossip message id): SHA-256 of the wire bytes without the trailing signature. */
export function eventIdHex(bytes: Uint8Array): string {
  return bytesToHex(sha256(bytes.subarray(0, bytes.length - SIG_BYTES)))
}

/**
 * Wall-clock ms with sub-ms resolution: performance.timeOrigin is read from
 * the wall clock at process start (to a few µs), so stamps from different
 * processes on one machine compare directly; Date.now() alone would quantise
 * millisecond latencies.
 */
export function hiNow(): number {
  return performance.timeOrigin + performance.now()
}
