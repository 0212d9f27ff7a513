/**
 * Plans under way first: the `/plan-swarm/open-ids/1.0.0` stream protocol.
 *
 * Range reconciliation pulls what a node lacks in id order, and ids are
 * hashes: a newcomer to a swarm with a long history would hold the plans
 * under way only once nearly all of the history had arrived. So a node that
 * has just started, or is catching up, asks each peer it connects to for
 * the ids of the events of that peer's plans under way, and its sessions
 * with that peer ask for those ids before everything reconciled
 * (Puller.first). The history follows as before.
 *
 * The question is the stream itself (the asker sends nothing and closes its
 * end); the answer is the ids, 32 raw bytes each, at most MAX_OPEN_IDS, the
 * events of each plan in stamp order (so deps come before what cites them),
 * then the stream closes. A peer that does not speak the protocol (an older
 * release) refuses it at negotiation, and nothing changes: the sessions pull
 * in reconciled order. An answer that breaks the format is dropped whole; a
 * lying peer can only name ids, which are then asked of it alone and checked
 * as any event is.
 */
import type { Libp2p, PeerId, Stream } from '@libp2p/interface'
import type { Scheduler } from '../ports/scheduler.js'
import { OPEN_IDS_PROTOCOL } from '../wire/topics.js'
import { ID_BYTES, idFromBytes, idToBytes } from '../wire/id-bytes.js'
import { readToEnd } from './read-answer.js'

export { OPEN_IDS_PROTOCOL }

/** Ids in one answer at most (1 MiB). */
export const MAX_OPEN_IDS = 32_768
/** An answer not complete within this long is dropped. */
export const OPEN_IDS_TIMEOUT_MS = 5_000

/** The ids as the answer's bytes (the first MAX_OPEN_IDS of them). */
export function encodeOpenIds(ids: readonly string[]): Uint8Array {
  const n = Math.min(ids.length, MAX_OPEN_IDS)
  const out = new Uint8Array(n * ID_BYTES)
  for (let i = 0; i < n; i++) idToBytes(ids[i] as string, out, i * ID_BYTES)
  return out
}

/** The ids of an answer; throws when it is not a whole number of ids or too long. */
export function decodeOpenIds(bytes: Uint8Array): string[] {
  if (bytes.length % ID_BYTES !== 0) throw new Error(`an open-ids answer of ${bytes.length} bytes is not a list of ids`)
  const n = bytes.length / ID_BYTES
  if (n > MAX_OPEN_IDS) throw new Error(`an open-ids answer of ${n} ids (at most ${MAX_OPEN_IDS})`)
  const out = new Array<string>(n)
  for (let i = 0; i < n; i++) out[i] = idFromBytes(bytes, i * ID_BYTES)
  return out
}

/** Answers an asker on `stream` with these ids, then closes it. */
export function serveOpenIds(stream: Stream, ids: readonly string[]): void {
  try {
    stream.send(encodeOpenIds(ids))
    stream.close().catch(() => {})
  } catch (err) {
    stream.abort(err as Error)
  }
}

/** Asks `peer` for the ids of its plans under way; rejects when it does not speak the protocol, times out or lies. */
export async function askOpenIds(
  libp2p: Libp2p,
  peer: PeerId,
  scheduler: Scheduler,
  signal?: AbortSignal
): Promise<string[]> {
  const opts = { runOnLimitedConnection: true, signal: signal ?? AbortSignal.timeout(OPEN_IDS_TIMEOUT_MS) }
  const stream = await libp2p.dialProtocol(peer, OPEN_IDS_PROTOCOL, opts)
  const answer = readToEnd(stream, MAX_OPEN_IDS * ID_BYTES, OPEN_IDS_TIMEOUT_MS, scheduler, 'open-ids answer')
  stream.close().catch(() => {})
  return decodeOpenIds(await answer)
}
