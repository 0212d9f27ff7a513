/**
 * Frames of the catch-up protocol (`/plan-swarm/sync/1.0.0`).
 *
 * A frame is
 *
 *     varint L (unsigned LEB128, at most 5 bytes, minimal)  L = 1 + payload bytes, 1 <= L <= maxFrameBytes
 *     type     one byte
 *     payload  L - 1 bytes
 *
 * Types:
 *
 *     1 RECONCILE  a message of the range-reconciliation core (src/sync/reconcile/);
 *                  an EMPTY payload means "my side of the reconciliation is over"
 *                  (the core returned a null reply)
 *     2 WANT       k >= 1 ids, 32 raw bytes each (k <= MAX_WANT_IDS_PER_FRAME)
 *     3 EVENTS     varint n (how many of the oldest outstanding wanted ids this frame
 *                  settles, n >= 1), then events, each as varint length + wire bytes
 *                  (envelope || 64-byte signature), in the order they were wanted;
 *                  an id the sender lacks is settled without an event
 *     4 DONE       empty: "my reconciliation is over, every WANT of mine is settled,
 *                  and I will send nothing but EVENTS for your WANTs"
 *
 * The frame reader that cuts these out of a stream is frame-reader.ts.
 */
import { ID_BYTES, idToBytes } from '../wire/id-bytes.js'
import {
  VARINT_NON_MINIMAL,
  VARINT_OUT_OF_RANGE,
  VARINT_TRUNCATED,
  readVarint,
  varintSize,
  writeVarint
} from '../wire/varint.js'
import { SyncProtocolError } from './errors.js'

export const FRAME_RECONCILE = 1
export const FRAME_WANT = 2
export const FRAME_EVENTS = 3
export const FRAME_DONE = 4

/** One whole frame: length prefix, type, payload. */
export function encodeFrame(type: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  const len = 1 + payload.length
  const out = new Uint8Array(varintSize(len) + len)
  let pos = writeVarint(out, 0, len)
  out[pos++] = type
  out.set(payload, pos)
  return out
}

/** A WANT frame for these ids. */
export function encodeWant(ids: readonly string[]): Uint8Array {
  const payload = new Uint8Array(ids.length * ID_BYTES)
  for (let i = 0; i < ids.length; i++) idToBytes(ids[i] as string, payload, i * ID_BYTES)
  return encodeFrame(FRAME_WANT, payload)
}

/** An EVENTS frame settling `settled` wanted ids with these events (in wanted order). */
export function encodeEvents(settled: number, events: readonly Uint8Array[]): Uint8Array {
  let size = varintSize(settled)
  for (const e of events) size += varintSize(e.length) + e.length
  const payload = new Uint8Array(size)
  let pos = writeVarint(payload, 0, settled)
  for (const e of events) {
    pos = writeVarint(payload, pos, e.length)
    payload.set(e, pos)
    pos += e.length
  }
  return encodeFrame(FRAME_EVENTS, payload)
}

/**
 * The varint at `pos` of a frame payload and the position after it; null if the payload ends first; throws
 * SyncProtocolError when malformed.
 */
function readPayloadVarint(bytes: Uint8Array, pos: number): [number, number] | null {
  const value = readVarint(bytes, pos)
  if (value >= 0) return [value, pos + varintSize(value)]
  switch (value) {
    case VARINT_TRUNCATED:
      return null
    case VARINT_NON_MINIMAL:
      throw new SyncProtocolError('non-minimal varint')
    case VARINT_OUT_OF_RANGE:
      throw new SyncProtocolError('varint out of range')
    default:
      throw new SyncProtocolError('varint longer than 5 bytes')
  }
}

/** Parses an EVENTS payload; throws SyncProtocolError when malformed. Events are copies. */
export function decodeEvents(payload: Uint8Array): { settled: number; events: Uint8Array[] } {
  const head = readPayloadVarint(payload, 0)
  if (head === null) throw new SyncProtocolError('EVENTS frame without a settled count')
  const [settled, start] = head
  if (settled === 0) throw new SyncProtocolError('EVENTS frame settles no wanted id')
  const events: Uint8Array[] = []
  let pos = start
  while (pos < payload.length) {
    const lenAt = readPayloadVarint(payload, pos)
    if (lenAt === null) throw new SyncProtocolError('truncated event length')
    const [len, at] = lenAt
    if (len > payload.length - at) throw new SyncProtocolError('event length exceeds the frame')
    events.push(payload.slice(at, at + len))
    pos = at + len
  }
  if (events.length > settled) throw new SyncProtocolError('EVENTS frame carries more events than it settles')
  return { settled, events }
}
