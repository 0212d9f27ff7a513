/**
 * Resilience scenario 10, fuzzing: arbitrary bytes and structured mutations
 * of valid events go through the decoder, the dep validators and the fold
 * (a real Replica with its store), and through the sync protocol's frames (a
 * real SyncSession against a peer that lies). Nothing may throw, and no
 * invalid event may end up in the store or the fold:
 *
 *   - every stored row decodes, verifies, has a valid shape, and passes the
 *     dep rules against the folded events it cites;
 *   - an event signed by a key other than its author's is never held;
 *   - a ballot by a non-member, or a renewal/result by someone other than
 *     the claimant, is never held;
 *   - the replica's trees equal the fold of exactly what it stored.
 *
 * Complements test/property/codec.test.ts (single-field envelope mutations)
 * and test/integration/sync-abuse.test.ts (hand-written abusive streams).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import * as dagCbor from '@ipld/dag-cbor'
import { logger } from '@libp2p/logger'
import type { PrivateKey, Stream } from '@libp2p/interface'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { foldAll } from '../../src/core/fold.js'
import { checkDeps, committeeOf } from '../../src/core/dep-rules.js'
import { EVENT_TYPES, isType } from '../../src/core/events.js'
import { IdSet } from '../../src/core/id-set.js'
import { createReconcileSession, decodeReconcileMessage } from '../../src/sync/reconcile/index.js'
import type { SyncIds } from '../../src/sync/reconcile/index.js'
import type { EventId, PeerIdString, PlanEvent } from '../../src/core/events.js'
import { decodeEvent, WIRE_REJECT_REASONS } from '../../src/wire/decode.js'
import { encodeEnvelope, signedMessage } from '../../src/wire/codec.js'
import { signRawSync } from '../../src/wire/sign.js'
import { ed25519KeyOf } from '../../src/wire/peer-keys.js'
import { validateEnvelope } from '../../src/wire/shape.js'
import { openEventStore } from '../../src/store/event-store.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import {
  FRAME_DONE,
  FRAME_EVENTS,
  FRAME_RECONCILE,
  FRAME_WANT,
  decodeEvents,
  encodeEvents,
  encodeFrame,
  encodeWant
} from '../../src/sync/frames.js'
import { FrameReader } from '../../src/sync/frame-reader.js'
import { DEFAULT_SYNC_LIMITS, InflightIds, SyncSession } from '../../src/sync/index.js'
import { syncStreamOfLibp2p } from '../../src/sync/libp2p-stream.js'
import { nativeEventIdOfWire as wireEventId } from '../../src/sync/native-hash.js'
import { realScheduler } from '../../src/ports/scheduler.js'
import { makePeers } from '../helpers/plan-builder.js'

const SWARM = 'test'
/** A few seconds each on a quiet machine; generous for a loaded one. */
const FUZZ_MS = 240_000
const log = logger('plan-swarm:test:fuzz')

interface Keyed {
  id: PeerIdString
  key: PrivateKey
}

let honest: PlanEvent[] = []
let honestBytes: Uint8Array[] = []
let peers: Keyed[] = []
let keyOf = new Map<string, PrivateKey>()
/** Keys of nobody in the plan: a hostile node's, and a second one to forge with. */
let strangers: Keyed[] = []

beforeAll(async () => {
  const plan = await generatePlan({ fanout: 2, depth: 2, renewals: 1 })
  honest = plan.events
  peers = plan.peers
  strangers = await makePeers(2)
  keyOf = new Map([...peers, ...strangers].map(p => [p.id as string, p.key]))
  honestBytes = honest.map(e => signRawSync(SWARM, encodeEnvelope(e.env), keyOf.get(e.env.author) as PrivateKey))
})

// ------------------------------------------------------------------ oracles

type Store = ReturnType<typeof openEventStore>

/** A replica with a store in memory, as a node would have; its clock is past every generated stamp. */
function newReplica(): { r: Replica; store: Store } {
  const store = openEventStore({ memory: true })
  const r = new Replica({
    swarm: SWARM,
    key: strangers[0]?.key as PrivateKey,
    peerId: strangers[0]?.id as PeerIdString,
    store,
    metrics: new NodeMetrics(),
    now: () => 10_000_000
  })
  return { r, store }
}

/** The signature over the envelope verifies for the envelope's own author (checked apart from the decoder). */
function signedByAuthor(bytes: Uint8Array): boolean {
  let value: unknown
  try {
    value = dagCbor.decode(bytes.subarray(0, bytes.length - 64))
  } catch {
    return false
  }
  const author = (value as { author?: unknown } | null)?.author
  if (typeof author !== 'string') return false
  const key = ed25519KeyOf(author)
  if (key === null) return false
  return (
    key.verify(signedMessage(SWARM, bytes.subarray(0, bytes.length - 64)), bytes.subarray(bytes.length - 64)) === true
  )
}

/**
 * Every row in the replica's store is a valid event (or a well-signed event of
 * another version), every folded event passes the dep rules again, and the
 * replica's trees are the fold of exactly its stored events.
 */
function checkReplica(r: Replica, store: Store): { folded: number } {
  r.flush()
  const stored: PlanEvent[] = []
  store.load(
    row => {
      expect(signedByAuthor(row.bytes), `stored row ${row.id} is not signed by its author`).toBe(true)
      const d = decodeEvent(row.bytes, { swarm: SWARM })
      expect(d.kind, `stored row ${row.id}`).not.toBe('rejected')
      if (d.kind !== 'event') return
      expect(validateEnvelope(d.event.env)).toBeNull()
      stored.push(d.event)
    },
    damaged => {
      throw new Error(`damaged row ${damaged.rowid}`)
    }
  )
  for (const e of stored) {
    const deps = { get: (id: EventId) => r.fold.events.get(id) }
    expect(checkDeps(e, deps), `stored event ${e.id} (${e.env.type}) fails the dep rules`).toBeNull()
    if (isType(e, 'ballot-cast')) {
      const c = r.fold.events.get(e.env.body.committee)
      expect(c === undefined ? undefined : committeeOf(c)?.members.includes(e.env.author)).toBe(true)
    }
    if (
      isType(e, 'claim-renewed') ||
      isType(e, 'result-reported') ||
      isType(e, 'task-failed') ||
      isType(e, 'task-released')
    ) {
      expect(r.fold.events.get(e.env.body.claim)?.env.author).toBe(e.env.author)
    }
  }
  expect(r.fold.swarmHash()).toBe(foldAll(stored).swarmHash())
  return { folded: stored.length }
}

// ---------------------------------------------------------------- mutations

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

/** Every replaceable place in a JSON-like tree. */
function slots(root: unknown): Array<(v: unknown) => void> {
  const out: Array<(v: unknown) => void> = []
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        out.push(v => {
          node[i] = v
        })
        walk(child)
      })
    } else if (typeof node === 'object' && node !== null && !(node instanceof Uint8Array)) {
      const o = node as Record<string, unknown>
      for (const [k, child] of Object.entries(o)) {
        out.push(v => {
          o[k] = v
        })
        walk(child)
      }
    }
  }
  walk(root)
  return out
}

type Op =
  | { op: 'author'; pick: number }
  | { op: 'hlc'; ms: number; c: number; mode: 'shift' | 'set' }
  | { op: 'drop-dep'; pick: number }
  | { op: 'add-dep'; pick: number }
  | { op: 'body-from'; pick: number }
  | { op: 'slot'; pick: number; value: Json }
  | { op: 'type'; pick: number }
  | { op: 'plan'; pick: number }
  | { op: 'version' }

const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('author' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('hlc' as const),
      ms: fc.integer({ min: -200_000, max: 200_000 }),
      c: fc.nat({ max: 3 }),
      mode: fc.constantFrom('shift' as const, 'set' as const)
    })
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('drop-dep' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('add-dep' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('body-from' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('slot' as const),
      pick: fc.nat(),
      value: fc.oneof(
        fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>,
        fc.constantFrom<Json>(null, 0, -1, 1, 2, 99, 2 ** 40, '', 'x', true, [])
      )
    })
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('type' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('plan' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('version' as const) }) }
)

interface Mutant {
  bytes: Uint8Array
  forged: boolean
}

/** One honest event, mutated by `ops`, re-encoded (sometimes non-canonically) and signed (sometimes by the wrong key). */
const arbMutant: fc.Arbitrary<Mutant> = fc
  .record({
    base: fc.nat(),
    ops: fc.array(arbOp, { minLength: 1, maxLength: 3 }),
    sortDeps: fc.boolean(),
    signer: fc.constantFrom('author', 'author', 'author', 'stranger', 'other-peer'),
    encoding: fc.constantFrom('canonical', 'canonical', 'canonical', 'reversed-keys')
  })
  .map(({ base, ops, sortDeps, signer, encoding }) => {
    const e = honest[base % honest.length] as PlanEvent
    const env = structuredClone(e.env) as unknown as Record<string, unknown> & {
      deps: string[]
      hlc: { ms: number; c: number }
    }
    const everyone = [...peers, ...strangers]
    for (const o of ops) {
      switch (o.op) {
        case 'author':
          env.author = (everyone[o.pick % everyone.length] as Keyed).id
          break
        case 'hlc':
          env.hlc =
            o.mode === 'shift' ? { ms: Math.max(0, env.hlc.ms + o.ms), c: o.c } : { ms: Math.max(0, o.ms), c: o.c }
          break
        case 'drop-dep':
          if (env.deps.length > 0) env.deps.splice(o.pick % env.deps.length, 1)
          break
        case 'add-dep':
          env.deps.push((honest[o.pick % honest.length] as PlanEvent).id)
          break
        case 'body-from': {
          const same = honest.filter(x => x.env.type === env.type)
          if (same.length > 0) env.body = structuredClone((same[o.pick % same.length] as PlanEvent).env.body)
          break
        }
        case 'slot': {
          const s = slots(env.body)
          if (s.length > 0) (s[o.pick % s.length] as (v: unknown) => void)(o.value)
          break
        }
        case 'type':
          env.type = EVENT_TYPES[o.pick % EVENT_TYPES.length]
          break
        case 'plan':
          env.plan = (honest[o.pick % honest.length] as PlanEvent).id
          break
        case 'version':
          env.v = 2
          break
      }
    }
    if (sortDeps) env.deps = [...new Set(env.deps)].sort()
    let envelopeBytes: Uint8Array
    try {
      envelopeBytes = encoding === 'canonical' ? dagCbor.encode(env) : reversedKeys(env)
    } catch {
      envelopeBytes = new Uint8Array([0xa0])
    }
    const author = typeof env.author === 'string' ? env.author : ''
    let key = keyOf.get(author) ?? (strangers[1] as Keyed).key
    let forged = !keyOf.has(author)
    if (signer === 'stranger' && author !== strangers[1]?.id) {
      key = (strangers[1] as Keyed).key
      forged = true
    }
    if (signer === 'other-peer') {
      const other = peers.find(p => p.id !== author) as Keyed
      key = other.key
      forged = true
    }
    return { bytes: signRawSync(SWARM, envelopeBytes, key), forged }
  })

/** A CBOR map with its top-level keys in reverse canonical order (everything below canonical). */
function reversedKeys(env: Record<string, unknown>): Uint8Array {
  const keys = Object.keys(env)
    .sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))
    .reverse()
  const parts = [Uint8Array.of(0xa0 | keys.length), ...keys.flatMap(k => [dagCbor.encode(k), dagCbor.encode(env[k])])]
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** Byte-level damage to a valid event: flips, insertions, deletions, truncation, splices of two events. */
const arbDamaged: fc.Arbitrary<Uint8Array> = fc
  .record({
    base: fc.nat(),
    other: fc.nat(),
    edits: fc.array(
      fc.record({
        at: fc.nat(),
        x: fc.integer({ min: 0, max: 255 }),
        how: fc.constantFrom('flip', 'insert', 'delete', 'cut', 'splice')
      }),
      { minLength: 1, maxLength: 4 }
    )
  })
  .map(({ base, other, edits }) => {
    let b = (honestBytes[base % honestBytes.length] as Uint8Array).slice()
    for (const { at, x, how } of edits) {
      const i = b.length === 0 ? 0 : at % b.length
      if (how === 'flip') b[i] = (b[i] ?? 0) ^ (x === 0 ? 1 : x)
      else if (how === 'insert') b = new Uint8Array([...b.subarray(0, i), x, ...b.subarray(i)])
      else if (how === 'delete') b = new Uint8Array([...b.subarray(0, i), ...b.subarray(i + 1)])
      else if (how === 'cut') b = b.slice(0, i)
      else
        b = new Uint8Array([
          ...b.subarray(0, i),
          ...(honestBytes[other % honestBytes.length] as Uint8Array).subarray(i)
        ])
    }
    return b
  })

const arbAnyBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 600 }),
  fc.tuple(fc.jsonValue({ maxDepth: 3 }), fc.uint8Array({ minLength: 64, maxLength: 64 })).map(([v, sig]) => {
    const head = dagCbor.encode(v)
    return new Uint8Array([...head, ...sig])
  }),
  fc.constantFrom(new Uint8Array(0), new Uint8Array(64), new Uint8Array(65), new Uint8Array(64 * 1024 + 1))
)

// -------------------------------------------------------------------- tests

describe('fuzzing the decoder, the validators and the fold', () => {
  it(
    'arbitrary and damaged bytes: decodeEvent never throws, and anything it accepts is canonical and signed by its author',
    () => {
      const seen = new Map<string, number>()
      fc.assert(
        fc.property(fc.oneof(arbAnyBytes, arbDamaged), bytes => {
          const out = decodeEvent(bytes, { swarm: SWARM })
          const label = out.kind === 'rejected' ? out.reason : out.kind
          seen.set(label, (seen.get(label) ?? 0) + 1)
          if (out.kind === 'rejected') {
            expect(WIRE_REJECT_REASONS).toContain(out.reason)
            return
          }
          expect(signedByAuthor(bytes)).toBe(true)
          if (out.kind === 'event') {
            expect(Buffer.compare(encodeEnvelope(out.event.env), bytes.subarray(0, bytes.length - 64))).toBe(0)
            expect(validateEnvelope(out.event.env)).toBeNull()
          }
        }),
        { numRuns: 3000 }
      )
      console.log(`[fuzz] decoder outcomes over 3000 inputs: ${JSON.stringify(Object.fromEntries(seen))}`)
      for (const reason of ['undecodable', 'bad-signature', 'oversized'])
        expect(seen.get(reason) ?? 0).toBeGreaterThan(0)
    },
    FUZZ_MS
  )

  it(
    'structured mutations of a valid plan, mixed into it in any order: no throw, nothing invalid held, the tree is the fold of the store',
    () => {
      const outcomes = new Map<string, number>()
      let accepted = 0
      fc.assert(
        fc.property(
          fc.array(arbMutant, { minLength: 1, maxLength: 25 }),
          fc.array(fc.nat(), { minLength: 1, maxLength: 80 }),
          (mutants, order) => {
            const { r, store } = newReplica()
            // Honest events and mutants, interleaved by `order`; honest ones sometimes twice.
            const queue: Array<{ bytes: Uint8Array; forged: boolean }> = [
              ...honestBytes.map(b => ({ bytes: b, forged: false })),
              ...mutants
            ]
            for (let i = 0; i < order.length; i++) {
              const j = (order[i] as number) % queue.length
              const k = i % queue.length
              const t = queue[j] as Mutant
              queue[j] = queue[k] as Mutant
              queue[k] = t
            }
            queue.push(...honestBytes.slice(0, 5).map(b => ({ bytes: b, forged: false })))
            for (const m of queue) {
              const res = r.ingest(m.bytes, 'gossip')
              const label =
                res.verdict === 'reject'
                  ? `reject:${res.why ?? ''}`
                  : res.verdict === 'ignore'
                    ? `ignore:${res.why ?? ''}`
                    : `accept${res.why === undefined ? '' : `:${res.why}`}`
              outcomes.set(label, (outcomes.get(label) ?? 0) + 1)
              if (m.forged) expect(res.verdict, 'an event signed by another key than its author').toBe('reject')
              if (res.verdict === 'accept' && mutants.includes(m)) accepted++
            }
            r.tick()
            // A forged copy may share its envelope (and so its id) with a genuine event: only other ids must be absent.
            const genuine = new Set([
              ...honest.map(e => e.id as string),
              ...mutants.filter(m => !m.forged).map(m => wireEventId(m.bytes))
            ])
            for (const m of mutants) {
              const id = wireEventId(m.bytes)
              if (m.forged && id !== null && !genuine.has(id))
                expect(r.ids.has(id) || r.fold.events.get(id as EventId) !== undefined).toBe(false)
            }
            const { folded } = checkReplica(r, store)
            expect(folded).toBeGreaterThanOrEqual(honest.length)
            store.close()
          }
        ),
        { numRuns: 80 }
      )
      console.log(
        `[fuzz] replica outcomes: ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}; mutants accepted as valid: ${accepted}`
      )
      // The generator must reach the fold's own rejections, not only the wire's.
      for (const reason of ['reject:bad-signature', 'reject:not-canonical', 'reject:stamp-not-after-dep'])
        expect(outcomes.get(reason) ?? 0, reason).toBeGreaterThan(0)
      expect([...outcomes.keys()].filter(k => k.startsWith('reject:')).length).toBeGreaterThanOrEqual(8)
    },
    FUZZ_MS
  )
})

// --------------------------------------------------------------- sync frames

/** An in-memory duplex pair with the parts of libp2p's Stream that the sync session uses. */
class FakeStream extends EventTarget {
  status: 'open' | 'closing' | 'closed' | 'aborted' | 'reset' = 'open'
  readableEnded = false
  writableEnded = false
  maxReadBufferLength = 4 << 20
  readBufferLength = 0
  other: FakeStream | undefined
  sent: Uint8Array[] = []

  send(bytes: Uint8Array): boolean {
    if (this.status !== 'open' || this.writableEnded) throw new Error(`stream is ${this.status}`)
    const copy = bytes.slice()
    this.sent.push(copy)
    setImmediate(() => {
      this.other?.deliver(copy)
    })
    return true
  }

  async onDrain(): Promise<void> {}
  pause(): void {}
  resume(): void {}

  deliver(bytes: Uint8Array): void {
    if (this.status === 'aborted' || this.status === 'reset' || this.readableEnded) return
    const evt = Object.assign(new Event('message'), { data: bytes })
    this.dispatchEvent(evt)
  }

  async close(): Promise<void> {
    if (this.writableEnded) return
    this.writableEnded = true
    setImmediate(() => {
      this.other?.remoteEnd()
    })
    if (this.readableEnded) this.finish()
  }

  remoteEnd(): void {
    if (this.readableEnded || this.status === 'aborted' || this.status === 'reset') return
    this.readableEnded = true
    this.dispatchEvent(new Event('end'))
    if (this.writableEnded) this.finish()
  }

  private finish(): void {
    this.status = 'closed'
    this.dispatchEvent(Object.assign(new Event('close'), { error: undefined }))
  }

  abort(err: Error): void {
    if (this.status === 'aborted' || this.status === 'reset' || this.status === 'closed') return
    this.status = 'aborted'
    this.dispatchEvent(Object.assign(new Event('close'), { error: err }))
    setImmediate(() => {
      this.other?.reset()
    })
  }

  reset(): void {
    if (this.status === 'aborted' || this.status === 'reset' || this.status === 'closed') return
    this.status = 'reset'
    this.dispatchEvent(Object.assign(new Event('close'), { error: new Error('stream reset by the remote') }))
  }
}

function streamPair(): [FakeStream, FakeStream] {
  const a = new FakeStream()
  const b = new FakeStream()
  a.other = b
  b.other = a
  return [a, b]
}

const LIMITS = { ...DEFAULT_SYNC_LIMITS, idleTimeoutMs: 150, deferWaitMs: 50, maxSessionMs: 10_000 }

function hostOf(
  ids: SyncIds,
  bytesOf: (id: string) => Uint8Array | undefined,
  ingest: (b: Uint8Array) => Promise<unknown>
): ConstructorParameters<typeof SyncSession>[0] {
  return { ids, has: id => ids.has(id), getBytes: bytesOf, ingest, inflight: new InflightIds(), limits: LIMITS, log }
}

/** What a lying peer serves for an id: the event, a mutant or garbage under its own id, or another id's bytes. */
const arbServed = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.nat().map(i => ({ kind: 'honest', bytes: honestBytes[i % honestBytes.length] as Uint8Array }))
  },
  { weight: 4, arbitrary: arbMutant.map(m => ({ kind: 'mutant', bytes: m.bytes })) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(arbDamaged, fc.uint8Array({ minLength: 65, maxLength: 400 }))
      .map(b => ({ kind: 'garbage', bytes: b }))
  },
  {
    weight: 1,
    arbitrary: fc.nat().map(i => ({ kind: 'lie', bytes: honestBytes[i % honestBytes.length] as Uint8Array }))
  }
)

describe('fuzzing the sync protocol', () => {
  it('frame parsers never throw anything but a protocol error, and reconcile messages never throw', () => {
    const set = new IdSet()
    for (const e of honest) set.add(e.id)
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (payload, real) => {
        try {
          const { settled, events } = decodeEvents(payload)
          expect(settled).toBeGreaterThan(0)
          expect(events.length).toBeLessThanOrEqual(settled)
        } catch (err) {
          expect((err as Error).name).toBe('SyncProtocolError')
        }
        const msg = real
          ? createReconcileSession(set)
              .initiate()
              .map((b, i) => (i === payload.length % 40 ? b ^ (payload[0] ?? 1) : b))
          : payload
        expect(() => decodeReconcileMessage(msg)).not.toThrow()
        const step = createReconcileSession(set).receive(msg)
        expect(typeof step).toBe('object')
      }),
      { numRuns: 2000 }
    )
  })

  it('a frame reader over arbitrary chunks yields frames or a protocol error, never anything else', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 80 }), { maxLength: 8 }), async chunks => {
        const [a, b] = streamPair()
        const reader = new FrameReader(syncStreamOfLibp2p(b as unknown as Stream, 1024), 1024, 4096, () => {})
        for (const c of chunks) if (c.length > 0) a.send(c)
        void a.close()
        try {
          for (let i = 0; i < 100; i++) {
            const f = await reader.next()
            if (f === null) break
            expect(f.length).toBeGreaterThan(0)
          }
        } catch (err) {
          expect((err as Error).name).toBe('SyncProtocolError')
        } finally {
          reader.detach()
        }
      }),
      { numRuns: 500 }
    )
  })

  it(
    'a session against a peer that serves mutants, garbage and lies: it ends (ok or failed), ' +
      'never throws, and the replica holds only valid events',
    async () => {
      const outcomes = new Map<string, number>()
      await fc.assert(
        fc.asyncProperty(
          fc.array(arbServed, { minLength: 1, maxLength: 12 }),
          fc.nat({ max: 20 }),
          async (served, common) => {
            const { r, store } = newReplica()
            for (const b of honestBytes.slice(0, common)) r.ingest(b, 'local')
            // The liar claims to hold each served item under an id; 'lie' serves another event's bytes.
            const liarIds = new IdSet()
            const liarBytes = new Map<string, Uint8Array>()
            for (const s of served) {
              const id =
                s.kind === 'lie'
                  ? (honest[(honestBytes.indexOf(s.bytes) + 1) % honest.length] as PlanEvent).id
                  : wireEventId(s.bytes)
              if (id === null) continue
              liarIds.add(id)
              liarBytes.set(id, s.bytes)
            }
            const [mine, theirs] = streamPair()
            const honestSession = new SyncSession(
              hostOf(
                r.ids,
                id => r.getBytes(id),
                async b => r.ingest(b, 'sync')
              ),
              syncStreamOfLibp2p(mine as unknown as Stream, LIMITS.maxFrameBytes),
              'liar',
              'outbound',
              realScheduler()
            )
            const liarSession = new SyncSession(
              hostOf(
                liarIds,
                id => liarBytes.get(id),
                async () => undefined
              ),
              syncStreamOfLibp2p(theirs as unknown as Stream, LIMITS.maxFrameBytes),
              'honest',
              'inbound',
              realScheduler()
            )
            const [mineStats] = await Promise.all([honestSession.run(), liarSession.run()])
            const label = mineStats.ok
              ? 'ok'
              : (mineStats.error ?? '')
                  .replace(/[0-9a-f]{64}/g, 'ID')
                  .replace(/\d+/g, 'N')
                  .slice(0, 60)
            outcomes.set(label, (outcomes.get(label) ?? 0) + 1)
            checkReplica(r, store)
            store.close()
          }
        ),
        { numRuns: 100 }
      )
      console.log(`[fuzz] sync sessions against a liar: ${JSON.stringify(Object.fromEntries(outcomes))}`)
      expect(outcomes.get('ok') ?? 0).toBeGreaterThan(0)
      expect(outcomes.size).toBeGreaterThan(1)
    },
    FUZZ_MS
  )

  it(
    'a session fed arbitrary frame sequences, scoped (--history open) or not: it ends (ok or failed) and never throws',
    async () => {
      const set = new IdSet()
      for (const e of honest) set.add(e.id)
      const arbFrame = fc.oneof(
        fc.constant(encodeFrame(FRAME_RECONCILE, createReconcileSession(set).initiate())),
        fc.uint8Array({ maxLength: 60 }).map(p => encodeFrame(FRAME_RECONCILE, p)),
        fc
          .array(fc.nat(), { minLength: 1, maxLength: 5 })
          .map(is => encodeWant(is.map(i => (honest[i % honest.length] as PlanEvent).id))),
        fc.uint8Array({ maxLength: 70 }).map(p => encodeFrame(FRAME_WANT, p)),
        fc
          .tuple(
            fc.integer({ min: 1, max: 4 }),
            fc.array(
              fc.oneof(
                arbDamaged,
                fc.nat().map(i => honestBytes[i % honestBytes.length] as Uint8Array)
              ),
              { maxLength: 3 }
            )
          )
          .map(([n, evs]) => encodeEvents(Math.max(n, evs.length), evs)),
        fc.uint8Array({ maxLength: 70 }).map(p => encodeFrame(FRAME_EVENTS, p)),
        fc.constant(encodeFrame(FRAME_DONE)),
        fc.uint8Array({ maxLength: 40 })
      )
      const errors = new Map<string, number>()
      await fc.assert(
        fc.asyncProperty(
          fc.array(arbFrame, { maxLength: 8 }),
          fc.constantFrom('inbound' as const, 'outbound' as const),
          fc.constantFrom(true, true, false),
          fc.constantFrom(false, false, true),
          async (frames, direction, endCleanly, scoped) => {
            const { r, store } = newReplica()
            for (const b of honestBytes.slice(0, 10)) r.ingest(b, 'local')
            const [mine, theirs] = streamPair()
            theirs.addEventListener('message', () => {})
            const session = new SyncSession(
              {
                ...hostOf(
                  r.ids,
                  id => r.getBytes(id),
                  async b => r.ingest(b, 'sync')
                ),
                scoped
              },
              syncStreamOfLibp2p(mine as unknown as Stream, LIMITS.maxFrameBytes),
              'fuzzer',
              direction,
              realScheduler()
            )
            const running = session.run()
            for (const f of frames) {
              if (theirs.status !== 'open') break
              theirs.send(f)
            }
            if (endCleanly) await theirs.close()
            const stats = await running
            const label = stats.ok ? 'ok' : (stats.error ?? '').replace(/\d+/g, 'N').slice(0, 50)
            errors.set(label, (errors.get(label) ?? 0) + 1)
            checkReplica(r, store)
            store.close()
          }
        ),
        { numRuns: 150 }
      )
      console.log(`[fuzz] sessions fed arbitrary frames: ${JSON.stringify(Object.fromEntries(errors))}`)
      expect(errors.size).toBeGreaterThan(3)
    },
    FUZZ_MS
  )
})
