/**
 * Range-based set reconciliation of event ids (catch-up between two peers).
 *
 * Two peers each hold a set of ids ({@link SyncIds}: in memory, or on disk). They trade messages about ranges of
 * the sorted id space: a range whose fingerprints agree is done; one that
 * differs is split (by the count of the side that splits) into `branching`
 * sub-ranges with their fingerprints; a side with few ids in a range lists
 * them, and the other answers with exactly what each side lacks there. So
 * the bytes and rounds grow with the difference and only logarithmically with
 * the set: identical sets of 100k ids settle in one message of a few hundred
 * bytes, and a late joiner receives about 32 bytes per id it lacks.
 *
 * Both sides learn both directions: `need` (ids the peer has and we lack:
 * pull them) and `offer` (ids we have and the peer lacks: push them). Every
 * difference therefore shows up twice, as one side's need and the other's
 * offer; the transport should act on one of them (or drop duplicates).
 *
 * Pure: no I/O, clock or randomness. The network stream and the simulator
 * drive the same session objects.
 */
import type { EventId } from '../../core/events.js'
import { ID_BYTES } from '../../wire/id-bytes.js'
import { varintSize } from '../../wire/varint.js'
import type { Bound, IdRanges, SyncIds } from '../../core/id-set.js'
import { END_BOUND, separatingBound } from '../../core/id-set.js'
import type { WireRange } from './codec.js'
import { boundSize, decodeMessage, diffRangeSize, encodeMessage, missingSize, rangeSize } from './codec.js'

/** Tuning of one side of a reconciliation. Out-of-range values are clamped (see each field), never refused. */
export interface ReconcileOptions {
  /**
   * A side with at most this many ids in a differing range lists them
   * instead of splitting it. Default 16, within [1, 256] and at most
   * (maxMessageBytes - 128) / 40.
   */
  readonly maxIdsPerLeaf?: number
  /**
   * A differing range with more ids is split into this many sub-ranges of
   * equal count. Default 16, within [2, 64] and at most
   * (maxMessageBytes - 128) / 52. The sides may differ in this and in
   * maxIdsPerLeaf.
   */
  readonly branching?: number
  /**
   * No message sent is larger, and a larger received message is an error, so
   * both sides must use the same value. A reply that would be larger says
   * "pending" for what it did not get to, and the peer states those ranges
   * again next round. Default 1 MiB, within [512 B, 64 MiB].
   */
  readonly maxMessageBytes?: number
  /** Messages this side accepts before it gives up with an error. Default 256, at least 1. */
  readonly maxRounds?: number
}

/** What one received message taught us, and what to send back. */
export interface ReconcileStep {
  /** The next message for the peer, or null: the exchange is complete and nothing more needs saying. */
  readonly reply: Uint8Array | null
  /** Ids the peer has and we lack (first reported this step, and still absent from the live set): pull them. */
  readonly need: EventId[]
  /** Ids we have and the peer lacks (first reported this step): push them. */
  readonly offer: EventId[]
}

export type ReconcileResult = ReconcileStep | { readonly error: string }

/** Traffic of one session so far, as this side saw it. */
export interface ReconcileStats {
  readonly messagesSent: number
  readonly bytesSent: number
  readonly messagesReceived: number
  readonly bytesReceived: number
}

/**
 * One side of one reconciliation.
 *
 * Usage: the initiator sends `initiate()`; then each side passes every
 * message it receives to `receive` and sends back `reply` until a reply is
 * null (that side stops; the transport tells the other side by ending the
 * stream). Over the whole exchange, the union of each side's `need` is
 * exactly what the peer's snapshot holds and this side's lacks (less what
 * arrived here meanwhile), and the union of `offer` is exactly what this
 * side's snapshot holds and the peer's lacks.
 *
 * Snapshot: the session reconciles the set as it was when the session was
 * created; ids added later are left to a later session. Ids removed meanwhile
 * (an expired plan's) are still in the snapshot, so the session may still
 * offer them and the peer may still ask for them: whoever serves the peer's
 * requests must answer an id it no longer holds as missing (serve.ts does).
 *
 * Rounds: a side with n ids splits a differing range at most
 * splits(n) = ceil(log_branching(n / maxIdsPerLeaf)) times (0 if n fits a
 * leaf) before it lists it, since each split divides its count there by
 * `branching`, and every message takes each open range one step further.
 * So an exchange takes at most splits(nA) + splits(nB) + 2 messages (10 for
 * two sets of 100k with the defaults; 6 in practice), plus about one round trip per
 * maxMessageBytes of listed ids when a reply has to leave ranges pending
 * (a late joiner, or sets that differ a lot). After maxRounds received
 * messages, or on any malformed or oversized message, the session fails with
 * `{ error }` and stays failed: a peer cannot keep it going forever.
 * Progress so far (ids pulled and pushed) is kept by the sets, so a fresh
 * session resumes where the failed one stopped.
 */
export interface ReconcileSession {
  /** The opening message (the initiator's whole id space, already split). */
  initiate(): Uint8Array
  /** Processes one message from the peer. Never throws. */
  receive(message: Uint8Array): ReconcileResult
  /** True once this side returned a null reply. */
  readonly done: boolean
  /** The error that ended the session, if one did. */
  readonly error: string | null
  readonly stats: ReconcileStats
  /** The options in force, after defaults and clamping (a transport frames messages up to `maxMessageBytes`). */
  readonly limits: Required<ReconcileOptions>
}

/** Starts one side of a reconciliation over the ids `set` holds now. */
export function createReconcileSession(set: SyncIds, options: ReconcileOptions = {}): ReconcileSession {
  return new Session(set, options)
}

/**
 * Runs a whole exchange in memory between two sessions, `a` initiating, and
 * gathers what each side learnt. Meant for the simulator and tests; the
 * network drives the same steps over a stream.
 */
export function reconcileInMemory(
  a: ReconcileSession,
  b: ReconcileSession
):
  | {
      readonly a: { readonly need: EventId[]; readonly offer: EventId[] }
      readonly b: { readonly need: EventId[]; readonly offer: EventId[] }
      readonly messages: number
      readonly bytes: number
    }
  | { readonly error: string } {
  const learnt = {
    a: { need: [] as EventId[], offer: [] as EventId[] },
    b: { need: [] as EventId[], offer: [] as EventId[] }
  }
  let message: Uint8Array | null = a.initiate()
  let messages = 1
  let bytes = message.length
  let turn: 'a' | 'b' = 'b'
  while (message !== null) {
    const side = turn === 'a' ? a : b
    const step = side.receive(message)
    if ('error' in step) return { error: `${turn}: ${step.error}` }
    for (const id of step.need) learnt[turn].need.push(id)
    for (const id of step.offer) learnt[turn].offer.push(id)
    message = step.reply
    if (message !== null) {
      messages++
      bytes += message.length
    }
    turn = turn === 'a' ? 'b' : 'a'
  }
  return { ...learnt, messages, bytes }
}

const DEFAULT_LEAF = 16
const DEFAULT_BRANCHING = 16
const DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
const DEFAULT_MAX_ROUNDS = 256
const MAX_MESSAGE_BYTES_LIMIT = 64 << 20
const MIN_MESSAGE_BYTES = 512
/** Room always kept for a final "pending to the end" range (a 1-byte end bound and the mode). */
const RESERVE = 2

function clamp(value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback
  return Math.min(max, Math.max(min, Math.floor(value)))
}

/** What to say about one received range. */
type Work =
  | { readonly kind: 'none' }
  /** State our own view of ids[i0..i1): list them or split them. */
  | { readonly kind: 'state'; readonly i0: number; readonly i1: number }
  /**
   * Answer the peer's list with what each side lacks there. Our extras are
   * snapshot positions, turned into ids only for what goes into the reply (a
   * newcomer's empty list against a long history would otherwise make every
   * id a string, every round).
   */
  | { readonly kind: 'diff'; readonly listed: readonly string[]; readonly extras: number[]; readonly missing: number[] }

const NONE: Work = { kind: 'none' }

/** Builds a reply within a byte budget, merging neighbouring ranges that need no payload. */
class Reply {
  readonly ranges: WireRange[] = []
  size = 1
  closed = false

  constructor(private readonly budget: number) {}

  /** Whether a range of this many bytes fits (keeping room to close). */
  fits(bytes: number): boolean {
    return this.size + bytes + RESERVE <= this.budget
  }

  /** Appends all the ranges if they fit (keeping room to close), else none. */
  tryPush(ranges: readonly WireRange[]): boolean {
    let total = 0
    for (const range of ranges) total += rangeSize(range)
    if (this.size + total + RESERVE > this.budget) return false
    for (const range of ranges) this.push(range)
    return true
  }

  /** Ends the reply: everything from here to the end of the id space is pending. */
  close(): void {
    this.push({ mode: 'pending', hi: END_BOUND })
    this.closed = true
  }

  private push(range: WireRange): void {
    const last = this.ranges[this.ranges.length - 1]
    const mergeable =
      last !== undefined &&
      last.mode === range.mode &&
      (last.mode === 'skip' ||
        last.mode === 'pending' ||
        (last.mode === 'ids' && range.mode === 'ids' && last.ids.length === 0 && range.ids.length === 0))
    if (mergeable) {
      this.size -= rangeSize(last)
      this.ranges.pop()
    }
    this.ranges.push(range)
    this.size += rangeSize(range)
  }

  /** The message, or null if it would say nothing but "skip". */
  finish(): Uint8Array | null {
    while (this.ranges.length > 0 && this.ranges[this.ranges.length - 1]?.mode === 'skip') this.ranges.pop()
    return this.ranges.length === 0 ? null : encodeMessage(this.ranges)
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

class Session implements ReconcileSession {
  private readonly set: SyncIds
  private readonly snap: IdRanges
  /** The set's version when the snapshot was taken (see freshNeeds). */
  private readonly version: number
  private readonly leaf: number
  private readonly branching: number
  private readonly maxMessageBytes: number
  private readonly maxRounds: number
  /** Needs reported so far (peer ids: a hash set). */
  private readonly needSeen = new Set<string>()
  /** Offers reported so far, by snapshot position (1 = reported). */
  private readonly offerSeen: Uint8Array
  private finished = false
  private failure: string | null = null
  private counters = { messagesSent: 0, bytesSent: 0, messagesReceived: 0, bytesReceived: 0 }

  constructor(set: SyncIds, options: ReconcileOptions) {
    this.set = set
    this.snap = set.snapshot()
    this.version = set.version
    this.offerSeen = new Uint8Array(this.snap.size)
    this.maxMessageBytes = clamp(
      options.maxMessageBytes,
      DEFAULT_MAX_MESSAGE_BYTES,
      MIN_MESSAGE_BYTES,
      MAX_MESSAGE_BYTES_LIMIT
    )
    // The first thing a reply says must always fit, so that every round makes progress: one whole split
    // (bounds of up to 33 bytes), one whole leaf list, or a diff answering the peer's whole leaf list.
    const room = this.maxMessageBytes - 128
    this.branching = clamp(options.branching, DEFAULT_BRANCHING, 2, Math.min(64, Math.floor(room / 52)))
    this.leaf = clamp(options.maxIdsPerLeaf, DEFAULT_LEAF, 1, Math.min(256, Math.floor(room / 40)))
    this.maxRounds = clamp(options.maxRounds, DEFAULT_MAX_ROUNDS, 1, 1_000_000)
  }

  get done(): boolean {
    return this.finished
  }

  get error(): string | null {
    return this.failure
  }

  get stats(): ReconcileStats {
    return { ...this.counters }
  }

  get limits(): Required<ReconcileOptions> {
    return {
      maxIdsPerLeaf: this.leaf,
      branching: this.branching,
      maxMessageBytes: this.maxMessageBytes,
      maxRounds: this.maxRounds
    }
  }

  initiate(): Uint8Array {
    const reply = new Reply(this.maxMessageBytes)
    reply.tryPush(this.stateRanges(END_BOUND, 0, this.snap.size))
    const message = reply.finish() ?? encodeMessage([])
    this.counters.messagesSent++
    this.counters.bytesSent += message.length
    return message
  }

  receive(message: Uint8Array): ReconcileResult {
    if (this.failure !== null) return { error: this.failure }
    if (this.finished) return this.fail('message after the exchange finished')
    this.counters.messagesReceived++
    this.counters.bytesReceived += message.length
    if (this.counters.messagesReceived > this.maxRounds) return this.fail(`more than ${this.maxRounds} messages`)
    if (message.length > this.maxMessageBytes)
      return this.fail(`message of ${message.length} bytes exceeds ${this.maxMessageBytes}`)
    const ranges = decodeMessage(message)
    if ('error' in ranges) return this.fail(ranges.error)

    // Pass 1: learn from every range (and check it against our snapshot) before saying anything.
    const need: EventId[] = []
    const offer: number[] = []
    const works: Work[] = []
    const snap = this.snap
    let i0 = 0
    for (const range of ranges) {
      const i1 = snap.lowerBound(range.hi)
      switch (range.mode) {
        case 'skip':
          works.push(NONE)
          break
        case 'pending':
          works.push({ kind: 'state', i0, i1 })
          break
        case 'fingerprint':
          works.push(sameBytes(snap.fingerprintAt(i0, i1), range.fingerprint) ? NONE : { kind: 'state', i0, i1 })
          break
        case 'ids': {
          // Each listed id is placed among ours by a binary search; ours before it are extras.
          const listed = range.ids
          const extras: number[] = []
          const missing: number[] = []
          let b = i0
          for (let a = 0; a < listed.length; a++) {
            const theirs = listed[a] as string
            const found = snap.search(theirs, b, i1)
            const at = found >= 0 ? found : -found - 1
            for (; b < at; b++) {
              extras.push(b)
              offer.push(b)
            }
            if (found >= 0) {
              b++
            } else {
              missing.push(a)
              need.push(theirs as EventId)
            }
          }
          for (; b < i1; b++) {
            extras.push(b)
            offer.push(b)
          }
          works.push(extras.length > 0 || missing.length > 0 ? { kind: 'diff', listed, extras, missing } : NONE)
          break
        }
        case 'diff': {
          for (const id of range.extras) need.push(id as EventId)
          for (const index of range.missing) {
            if (i0 + index >= i1) return this.fail('diff names a position beyond our ids in its range')
            offer.push(i0 + index)
          }
          works.push(NONE)
          break
        }
      }
      i0 = i1
    }

    // Pass 2: answer within the byte budget.
    const reply = new Reply(this.maxMessageBytes)
    for (let k = 0; k < ranges.length && !reply.closed; k++) {
      const range = ranges[k] as WireRange
      const work = works[k] as Work
      const hi = range.hi
      if (work.kind === 'none') {
        if (!reply.tryPush([{ mode: 'skip', hi }])) reply.close()
      } else {
        const said =
          work.kind === 'state'
            ? reply.tryPush(this.stateRanges(hi, work.i0, work.i1))
            : this.wholeDiff(reply, hi, work) || this.partialDiff(reply, hi, work)
        if (!said && !reply.tryPush([{ mode: 'pending', hi }])) reply.close()
      }
    }

    const out = reply.finish()
    if (out === null) {
      this.finished = true
    } else {
      this.counters.messagesSent++
      this.counters.bytesSent += out.length
    }
    return { reply: out, need: this.freshNeeds(need), offer: this.freshOffers(offer) }
  }

  /** Our own view of ids[i0..i1) (the range ending at hi): the ids themselves if few, else `branching` fingerprinted sub-ranges. */
  private stateRanges(hi: Bound, i0: number, i1: number): WireRange[] {
    const snap = this.snap
    const count = i1 - i0
    if (count <= this.leaf) return [{ mode: 'ids', hi, ids: snap.slice(i0, i1) }]
    const parts = Math.min(this.branching, count)
    const out: WireRange[] = []
    let start = i0
    for (let j = 1; j <= parts; j++) {
      const end = i0 + Math.floor((j * count) / parts)
      const bound = j === parts ? hi : separatingBound(snap.idAt(end - 1), snap.idAt(end))
      out.push({ mode: 'fingerprint', hi: bound, fingerprint: snap.fingerprintAt(start, end) })
      start = end
    }
    return out
  }

  /** The whole diff, if it fits what is left of the reply (its ids are made only then). */
  private wholeDiff(reply: Reply, hi: Bound, work: Extract<Work, { kind: 'diff' }>): boolean {
    if (!reply.fits(diffRangeSize(hi, work.extras.length, work.missing))) return false
    const extras = work.extras.map(at => this.snap.idAt(at))
    return reply.tryPush([{ mode: 'diff', hi, extras, missing: work.missing }])
  }

  /**
   * A diff too big for what is left of the reply: send the first extras that
   * fit, as a diff up to `cut`, and mark [cut, hi) pending, so the peer lists
   * its ids there again. False if not even one extra fits.
   */
  private partialDiff(reply: Reply, hi: Bound, work: Extract<Work, { kind: 'diff' }>): boolean {
    const { extras, missing, listed } = work
    if (extras.length < 2) return false
    const fixed = 34 + 1 + 5 + varintSize(missing.length) + missingSize(missing) + boundSize(hi) + 1
    const room = this.maxMessageBytes - RESERVE - reply.size - fixed
    const k = Math.min(extras.length - 1, Math.floor(room / ID_BYTES))
    if (k < 1) return false
    const sent = extras.slice(0, k).map(at => this.snap.idAt(at))
    const cut = separatingBound(sent[k - 1] as string, this.snap.idAt(extras[k] as number))
    const head = missing.filter(index => (listed[index] as string) < cut)
    return reply.tryPush([
      { mode: 'diff', hi: cut, extras: sent, missing: head },
      { mode: 'pending', hi }
    ])
  }

  /** Needs not reported before and still absent from the live set (checked only if it changed since the snapshot). */
  private freshNeeds(ids: readonly EventId[]): EventId[] {
    const changed = this.set.version !== this.version
    const out: EventId[] = []
    for (const id of ids) {
      if (this.needSeen.has(id) || (changed && this.set.has(id))) continue
      this.needSeen.add(id)
      out.push(id)
    }
    return out
  }

  /** Offers (snapshot positions) not reported before, as ids. */
  private freshOffers(positions: readonly number[]): EventId[] {
    const out: EventId[] = []
    for (const at of positions) {
      if (this.offerSeen[at] === 1) continue
      this.offerSeen[at] = 1
      out.push(this.snap.idAt(at) as EventId)
    }
    return out
  }

  private fail(error: string): { error: string } {
    this.failure = error
    return { error }
  }
}
