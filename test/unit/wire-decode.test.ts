/**
 * The wire gate, case by case: one or more cases per reject reason (with the
 * exact reason asserted), other versions, signing, parameters and topics.
 * Non-canonical inputs are built byte by byte, since the encoder never makes them.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import * as dagCbor from '@ipld/dag-cbor'
import { peerIdFromString } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import {
  DEFAULT_PARAMS,
  PROTOCOL_VERSION,
  type Envelope,
  type EventId,
  type PeerIdString,
  type PlanParams,
  type Subgoal
} from '../../src/core/events.js'
import { MAX_EVENT_BYTES, MAX_SWARM_NAME_CHARS } from '../../src/core/limits.js'
import {
  SYNC_PROTOCOL,
  WIRE_REJECT_REASONS,
  decodeEvent,
  encodeEnvelope,
  eventIdOf,
  eventIdOfWire,
  eventsTopic,
  joinWire,
  presenceTopic,
  signEvent,
  signEventSync,
  signRawSync,
  signatureDomain,
  signedMessage,
  validateEnvelope,
  validateParams,
  validateSwarmName,
  type DecodeOptions,
  type DecodeResult,
  type WireRejectReason
} from '../../src/wire/index.js'
import { TEST_SWARM, peerIdOf, testKeys } from '../helpers/arbitraries.js'

const SWARM = TEST_SWARM
const OPTS: DecodeOptions = { swarm: SWARM }

let keys: PrivateKey[] = []
let ids: PeerIdString[] = []
let key: PrivateKey
let author: PeerIdString

beforeAll(async () => {
  keys = await testKeys(3)
  ids = keys.map(peerIdOf)
  key = keys[0] as PrivateKey
  author = ids[0] as PeerIdString
})

// ------------------------------------------------------------------ builders

const hex = (n: number): EventId => n.toString(16).padStart(64, '0') as EventId
const PLAN = hex(0xabc)

function params(over: Partial<PlanParams> = {}): PlanParams {
  return { ...DEFAULT_PARAMS, committee: ids, quorum: 2, ...over }
}

function goal(over: Record<string, unknown> = {}): Envelope {
  return {
    v: PROTOCOL_VERSION,
    swarm: SWARM,
    type: 'goal-submitted',
    plan: '',
    author,
    hlc: { ms: 1_700_000_000_000, c: 0 },
    deps: [],
    body: { text: 'plan a two-week trip to Japan', params: params() },
    ...over
  } as unknown as Envelope
}

function subgoals(deps: number[][], titles?: string[]): Subgoal[] {
  return deps.map((dependsOn, i) => ({ title: titles?.[i] ?? `step ${i}`, detail: '', leaf: true, dependsOn }))
}

function split(subs: Subgoal[], over: Record<string, unknown> = {}): Envelope {
  return {
    v: PROTOCOL_VERSION,
    swarm: SWARM,
    type: 'split-proposed',
    plan: PLAN,
    author,
    hlc: { ms: 1_700_000_000_001, c: 0 },
    deps: [PLAN],
    body: {
      node: PLAN,
      attempt: 1,
      subgoals: subs,
      rationale: 'by city',
      usage: { inputTokens: 10, outputTokens: 20 }
    },
    ...over
  } as unknown as Envelope
}

function ballot(body: Record<string, unknown>): Envelope {
  return {
    v: PROTOCOL_VERSION,
    swarm: SWARM,
    type: 'ballot-cast',
    plan: PLAN,
    author,
    hlc: { ms: 1_700_000_000_002, c: 0 },
    deps: [hex(1), hex(2)],
    body: {
      node: PLAN,
      attempt: 1,
      committee: PLAN,
      scores: [
        { proposal: hex(1), score: 80, notes: '' },
        { proposal: hex(2), score: 40, notes: '' }
      ],
      choice: hex(1),
      notes: '',
      usage: { inputTokens: 0, outputTokens: 0 },
      ...body
    }
  } as unknown as Envelope
}

/** Sign any value, valid or not, as an envelope of `swarm`, with `k` (default: the author's key). */
function wire(value: unknown, k: PrivateKey = key, swarm = SWARM): Uint8Array {
  return signRawSync(swarm, dagCbor.encode(value), k)
}

function cat(...parts: (Uint8Array | number[])[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0)
  const out = new Uint8Array(total)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** A CBOR map (fewer than 24 entries) written in the given order, each key and value pre-encoded. */
function rawMap(entries: [string, Uint8Array][]): Uint8Array {
  return cat([0xa0 | entries.length], ...entries.flatMap(([k, v]) => [dagCbor.encode(k), v]))
}

/** DAG-CBOR's key order: shorter keys first, then bytewise. */
function canonicalOrder(keys: string[]): string[] {
  return [...keys].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))
}

/** An envelope written by hand: values encoded canonically except those given as raw bytes. */
function handWritten(env: Envelope, raw: Record<string, Uint8Array>, order?: string[]): Uint8Array {
  const rec = env as unknown as Record<string, unknown>
  const keys = order ?? canonicalOrder(Object.keys(rec))
  return rawMap(keys.map(k => [k, raw[k] ?? dagCbor.encode(rec[k])]))
}

function flipLast(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice()
  out[out.length - 1] = (out[out.length - 1] ?? 0) ^ 1
  return out
}

// ------------------------------------------------------------------ reject table

interface RejectCase {
  readonly name: string
  readonly bytes: () => Uint8Array
  readonly reason: WireRejectReason
  /** A substring (or the exact text, when `exact`) of the rejection detail. */
  readonly detail?: string
  readonly exact?: boolean
  readonly opts?: DecodeOptions
}

const rejectCases: RejectCase[] = [
  // oversized
  { name: 'one byte over the cap', bytes: () => new Uint8Array(MAX_EVENT_BYTES + 1), reason: 'oversized' },
  {
    name: 'a validly signed result too big for the cap',
    bytes: () =>
      wire({
        ...goal(),
        type: 'result-reported',
        plan: PLAN,
        body: {
          task: PLAN,
          claim: PLAN,
          output: 'é'.repeat(40_000),
          usage: { inputTokens: 1, outputTokens: 1 },
          model: 'm',
          source: 'llm'
        }
      }),
    reason: 'oversized'
  },
  // undecodable
  { name: 'empty', bytes: () => new Uint8Array(0), reason: 'undecodable' },
  { name: 'only a signature', bytes: () => new Uint8Array(64), reason: 'undecodable' },
  {
    name: 'exactly the cap but not CBOR',
    bytes: () => new Uint8Array(MAX_EVENT_BYTES).fill(0xff),
    reason: 'undecodable'
  },
  {
    name: 'a truncated envelope',
    bytes: () => cat(encodeEnvelope(goal()).subarray(0, 40), new Uint8Array(64)),
    reason: 'undecodable'
  },
  {
    name: 'a trailing byte after the envelope',
    bytes: () => signRawSync(SWARM, cat(encodeEnvelope(goal()), [0x00]), key),
    reason: 'undecodable'
  },
  {
    name: 'a repeated map key',
    bytes: () =>
      signRawSync(
        SWARM,
        rawMap([
          ['v', dagCbor.encode(1)],
          ['v', dagCbor.encode(1)]
        ]),
        key
      ),
    reason: 'undecodable'
  },
  {
    name: 'an indefinite-length array',
    bytes: () => signRawSync(SWARM, handWritten(goal(), { deps: new Uint8Array([0x9f, 0xff]) }), key),
    reason: 'undecodable'
  },
  // not-canonical
  {
    name: 'map keys out of canonical order',
    bytes: () =>
      signRawSync(SWARM, handWritten(goal(), {}, ['v', 'swarm', 'type', 'plan', 'author', 'hlc', 'deps', 'body']), key),
    reason: 'not-canonical'
  },
  {
    name: 'an integer in a longer encoding than needed (hlc.c = 5 as 0x18 0x05)',
    bytes: () =>
      signRawSync(
        SWARM,
        handWritten(goal(), {
          hlc: cat([0xa2, 0x61, 0x63, 0x18, 0x05, 0x62, 0x6d, 0x73], dagCbor.encode(1_700_000_000_000))
        }),
        key
      ),
    reason: 'not-canonical'
  },
  {
    name: 'an integral float where the encoder writes an integer (v = 1.0)',
    bytes: () =>
      signRawSync(SWARM, handWritten(goal(), { v: new Uint8Array([0xfb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]) }), key),
    reason: 'not-canonical'
  },
  {
    name: 'undefined, which decodes as null',
    bytes: () => signRawSync(SWARM, handWritten(ballot({}), { plan: new Uint8Array([0xf7]) }), key),
    reason: 'not-canonical'
  },
  {
    name: 'a float16 where the encoder writes float64',
    bytes: () => signRawSync(SWARM, handWritten(goal(), { v: new Uint8Array([0xf9, 0x3e, 0x00]) }), key),
    reason: 'not-canonical'
  },
  {
    name: 'a string with a leading byte-order mark (decoders drop it)',
    bytes: () => wire(goal({ body: { text: '\ufeffplan a trip', params: params() } })),
    reason: 'not-canonical'
  },
  // wrong-shape (frame)
  {
    name: 'not a map',
    bytes: () => wire([1, 2, 3]),
    reason: 'wrong-shape',
    detail: 'envelope: expected a map, got an array',
    exact: true
  },
  {
    name: 'a missing envelope key',
    bytes: () => {
      const { deps: _deps, ...rest } = goal()
      return wire(rest)
    },
    reason: 'wrong-shape',
    detail: 'envelope: missing key "deps"',
    exact: true
  },
  {
    name: 'an extra envelope key',
    bytes: () => wire({ ...goal(), sig: 'x' }),
    reason: 'wrong-shape',
    detail: 'envelope: unexpected key "sig"',
    exact: true
  },
  { name: 'a negative version', bytes: () => wire(goal({ v: -1 })), reason: 'wrong-shape', detail: 'v: ' },
  // wrong-swarm
  {
    name: 'signed for another swarm',
    bytes: () => wire(goal({ swarm: 'other' }), key, 'other'),
    reason: 'wrong-swarm'
  },
  {
    name: 'a swarm that is not a string',
    bytes: () => wire(goal({ swarm: 7 })),
    reason: 'wrong-shape',
    detail: 'swarm: '
  },
  // wrong-shape (author)
  {
    name: 'an author that is no peer id',
    bytes: () => wire(goal({ author: 'alice' })),
    reason: 'wrong-shape',
    detail: 'author: '
  },
  {
    name: 'an author in CID form (a valid peer id, but not its canonical string)',
    bytes: () => wire(goal({ author: peerIdFromString(author).toCID().toString() })),
    reason: 'wrong-shape',
    detail: 'author: '
  },
  // bad-signature
  { name: 'a flipped signature bit', bytes: () => flipLast(wire(goal())), reason: 'bad-signature' },
  { name: 'signed by a key that is not the author', bytes: () => wire(goal(), keys[1]), reason: 'bad-signature' },
  {
    name: "a signature over another swarm's domain (no cross-swarm replay)",
    bytes: () => joinWire(encodeEnvelope(goal()), wire(goal(), key, 'other').subarray(-64)),
    reason: 'bad-signature'
  },
  {
    name: 'another version with a bad signature',
    bytes: () => flipLast(wire(goal({ v: 99 }))),
    reason: 'bad-signature'
  },
  // unknown-type
  { name: 'an unknown type', bytes: () => wire(goal({ type: 'task-exploded' })), reason: 'unknown-type' },
  {
    name: 'a type that is not a string',
    bytes: () => wire(goal({ type: 3 })),
    reason: 'wrong-shape',
    detail: 'type: '
  },
  // wrong-shape (envelope fields)
  {
    name: 'a float clock',
    bytes: () => wire(goal({ hlc: { ms: 1.5, c: 0 } })),
    reason: 'wrong-shape',
    detail: 'hlc.ms: expected a safe integer, got the non-integer 1.5',
    exact: true
  },
  {
    name: 'a negative clock counter',
    bytes: () => wire(goal({ hlc: { ms: 1, c: -1 } })),
    reason: 'wrong-shape',
    detail: 'hlc.c: '
  },
  {
    name: 'an unsafe integer clock',
    bytes: () => wire(goal({ hlc: { ms: 2 ** 53, c: 0 } })),
    reason: 'wrong-shape',
    detail: 'hlc.ms: '
  },
  {
    name: 'an extra clock key',
    bytes: () => wire(goal({ hlc: { ms: 1, c: 0, x: 0 } })),
    reason: 'wrong-shape',
    detail: 'hlc: unexpected key "x"',
    exact: true
  },
  {
    name: 'deps not sorted',
    bytes: () => wire(split(subgoals([[], []]), { deps: [hex(2), hex(1)] })),
    reason: 'wrong-shape',
    detail: 'deps[1]: not after deps[0] (deps must be sorted ascending, no repeats)',
    exact: true
  },
  {
    name: 'repeated deps',
    bytes: () => wire(split(subgoals([[], []]), { deps: [hex(1), hex(1)] })),
    reason: 'wrong-shape',
    detail: 'deps[1]: '
  },
  {
    name: 'an uppercase dep id',
    bytes: () => wire(split(subgoals([[], []]), { deps: [hex(0xabc).toUpperCase()] })),
    reason: 'wrong-shape',
    detail: 'deps[0]: '
  },
  {
    name: 'too many deps',
    bytes: () => wire(split(subgoals([[], []]), { deps: Array.from({ length: 65 }, (_, i) => hex(i)) })),
    reason: 'wrong-shape',
    detail: 'deps: 65 items'
  },
  {
    name: 'a goal with a plan id',
    bytes: () => wire(goal({ plan: PLAN })),
    reason: 'wrong-shape',
    detail: 'plan: must be "" for goal-submitted'
  },
  {
    name: 'a split with an empty plan',
    bytes: () => wire(split(subgoals([[], []]), { plan: '' })),
    reason: 'wrong-shape',
    detail: 'plan: '
  },
  // wrong-shape (bodies)
  {
    name: 'a goal whose quorum is not a majority',
    bytes: () => wire(goal({ body: { text: 'g', params: params({ quorum: 1 }) } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted.params.quorum: 1 is not a majority of 3 (needs at least 2)',
    exact: true
  },
  {
    name: 'a goal whose quorum exceeds the committee',
    bytes: () => wire(goal({ body: { text: 'g', params: params({ quorum: 4 }) } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted.params.quorum: 4 is more than the 3 committee members'
  },
  {
    name: 'a goal with a repeated committee member',
    bytes: () => wire(goal({ body: { text: 'g', params: params({ committee: [author, author], quorum: 2 }) } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted.params.committee[1]: repeats a member'
  },
  {
    name: 'a goal with blank text',
    bytes: () => wire(goal({ body: { text: ' \n ', params: params() } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted.text: empty'
  },
  {
    name: 'a goal with an extra body key',
    bytes: () => wire(goal({ body: { text: 'g', params: params(), x: 1 } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted: unexpected key "x"'
  },
  {
    name: 'a goal with an extra params key',
    bytes: () => wire(goal({ body: { text: 'g', params: { ...params(), v: 1 } } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted.params: unexpected key "v"'
  },
  {
    name: 'a goal with maxDepth too deep',
    bytes: () => wire(goal({ body: { text: 'g', params: params({ maxDepth: 7 }) } })),
    reason: 'wrong-shape',
    detail: 'goal-submitted.params.maxDepth: 7 is outside 0..6'
  },
  {
    name: 'a split with a dependsOn cycle',
    bytes: () => wire(split(subgoals([[2], [0], [1]]))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals: dependsOn cycle through subgoal'
  },
  {
    name: 'a split whose dependsOn points past its subgoals',
    bytes: () => wire(split(subgoals([[], [], [5]]))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals[2].dependsOn: index 5 out of range',
    exact: true
  },
  {
    name: 'a split whose subgoal depends on itself',
    bytes: () => wire(split(subgoals([[], [1]]))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals[1].dependsOn: depends on itself',
    exact: true
  },
  {
    name: 'a split with unsorted dependsOn',
    bytes: () => wire(split(subgoals([[], [], [1, 0]]))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals[2].dependsOn: indexes not sorted'
  },
  {
    name: 'a split with one subgoal',
    bytes: () => wire(split(subgoals([[]]))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals: 1 items, expected 2..7',
    exact: true
  },
  {
    name: 'a split with eight subgoals',
    bytes: () => wire(split(subgoals([[], [], [], [], [], [], [], []]))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals: 8 items'
  },
  {
    name: 'a split with titles equal up to case and spaces',
    bytes: () => wire(split(subgoals([[], []], ['Tokyo', '  tOKYO ']))),
    reason: 'wrong-shape',
    detail: "split-proposed.subgoals[1].title: same as subgoal 0's title",
    exact: true
  },
  {
    name: 'a split with a blank title',
    bytes: () => wire(split(subgoals([[], []], ['a', '\t']))),
    reason: 'wrong-shape',
    detail: 'split-proposed.subgoals[1].title: empty'
  },
  {
    name: 'a split at attempt 0',
    bytes: () =>
      wire(
        split(subgoals([[], []]), { body: { ...(split([]).body as object), subgoals: subgoals([[], []]), attempt: 0 } })
      ),
    reason: 'wrong-shape',
    detail: 'split-proposed.attempt: '
  },
  {
    name: 'a ballot choosing an unscored proposal',
    bytes: () => wire(ballot({ choice: hex(3) })),
    reason: 'wrong-shape',
    detail: 'ballot-cast.choice: not one of the scored proposals',
    exact: true
  },
  {
    name: 'a ballot scoring one proposal twice',
    bytes: () =>
      wire(
        ballot({
          scores: [
            { proposal: hex(1), score: 1, notes: '' },
            { proposal: hex(1), score: 2, notes: '' }
          ]
        })
      ),
    reason: 'wrong-shape',
    detail: 'ballot-cast.scores[1].proposal: scored twice'
  },
  {
    name: 'a ballot with a score over 100',
    bytes: () => wire(ballot({ scores: [{ proposal: hex(1), score: 101, notes: '' }] })),
    reason: 'wrong-shape',
    detail: 'ballot-cast.scores[0].score: 101 is outside 0..100'
  },
  {
    name: 'a result from an unknown source',
    bytes: () =>
      wire({
        ...ballot({}),
        type: 'result-reported',
        body: {
          task: PLAN,
          claim: PLAN,
          output: '',
          usage: { inputTokens: 0, outputTokens: 0 },
          model: '',
          source: 'oracle'
        }
      }),
    reason: 'wrong-shape',
    detail: 'result-reported.source: expected one of "llm", "offline", got "oracle"',
    exact: true
  },
  {
    name: 'a review with an unknown verdict',
    bytes: () =>
      wire({
        ...ballot({}),
        type: 'result-reviewed',
        body: {
          task: PLAN,
          result: PLAN,
          committee: PLAN,
          verdict: 'maybe',
          notes: '',
          usage: { inputTokens: 0, outputTokens: 0 }
        }
      }),
    reason: 'wrong-shape',
    detail: 'result-reviewed.verdict: '
  },
  {
    name: 'a claim whose prev is not an id',
    bytes: () => wire({ ...ballot({}), type: 'task-claimed', body: { task: PLAN, prev: '' } }),
    reason: 'wrong-shape',
    detail: 'task-claimed.prev: '
  },
  {
    name: 'a usage with a negative count',
    bytes: () =>
      wire({
        ...ballot({}),
        type: 'task-failed',
        body: { task: PLAN, claim: PLAN, error: 'x', usage: { inputTokens: -1, outputTokens: 0 } }
      }),
    reason: 'wrong-shape',
    detail: 'task-failed.usage.inputTokens: '
  },
  {
    name: 'a budget raise to zero',
    bytes: () => wire({ ...ballot({}), type: 'budget-raised', body: { budgetTokens: 0 } }),
    reason: 'wrong-shape',
    detail: 'budget-raised.budgetTokens: '
  },
  {
    name: 'a committee amendment with a non-majority quorum',
    bytes: () => wire({ ...ballot({}), type: 'committee-amended', body: { committee: ids, quorum: 1 } }),
    reason: 'wrong-shape',
    detail: 'committee-amended.quorum: 1 is not a majority of 3'
  },
  {
    name: 'bytes where a string belongs',
    bytes: () => wire({ ...ballot({}), type: 'goal-cancelled', body: { reason: new Uint8Array([1]) } }),
    reason: 'wrong-shape',
    detail: 'goal-cancelled.reason: expected a string, got bytes',
    exact: true
  },
  {
    name: 'a reason over its cap',
    bytes: () => wire({ ...ballot({}), type: 'goal-cancelled', body: { reason: 'x'.repeat(1001) } }),
    reason: 'wrong-shape',
    detail: 'goal-cancelled.reason: 1001 characters, more than 1000',
    exact: true
  }
]

function detailOf(out: DecodeResult): string {
  return out.kind === 'rejected' ? `${out.reason}: ${out.detail}` : out.kind
}

describe('decodeEvent rejects', () => {
  it.each(rejectCases)('$name -> $reason', c => {
    const out = decodeEvent(c.bytes(), c.opts ?? OPTS)
    expect(out.kind, detailOf(out)).toBe('rejected')
    if (out.kind !== 'rejected') return
    expect(out.reason, out.detail).toBe(c.reason)
    if (c.detail !== undefined) {
      if (c.exact === true) expect(out.detail).toBe(c.detail)
      else expect(out.detail).toContain(c.detail)
    }
  })

  it('has at least one case for every reason', () => {
    const covered = new Set(rejectCases.map(c => c.reason))
    expect([...covered].sort()).toEqual([...WIRE_REJECT_REASONS].sort())
  })

  it('never throws on a non-byte input', () => {
    const out = decodeEvent('nope' as unknown as Uint8Array, OPTS)
    expect(out.kind === 'rejected' && out.reason).toBe('undecodable')
  })
})

describe('decodeEvent accepts', () => {
  it('a valid goal, with the id of its envelope bytes', () => {
    const env = goal()
    const bytes = wire(env)
    const out = decodeEvent(bytes, OPTS)
    expect(out.kind, detailOf(out)).toBe('event')
    if (out.kind !== 'event') return
    expect(out.event.id).toBe(eventIdOf(encodeEnvelope(env)))
    expect(out.event.env).toStrictEqual(env)
    expect(eventIdOfWire(bytes)).toBe(out.event.id)
  })

  it('a split with forward and backward dependencies', () => {
    const out = decodeEvent(wire(split(subgoals([[2], [], [1]]))), OPTS)
    expect(detailOf(out)).toBe('event')
  })

  it('a bad signature when verify is false (our own store)', () => {
    const out = decodeEvent(flipLast(wire(goal())), { swarm: SWARM, verify: false })
    expect(detailOf(out)).toBe('event')
  })

  it('a view into a larger buffer, returning bytes of its own', () => {
    const bytes = wire(goal())
    const big = new Uint8Array(bytes.length + 20)
    big.set(bytes, 10)
    const out = decodeEvent(big.subarray(10, 10 + bytes.length), OPTS)
    expect(out.kind).toBe('event')
    if (out.kind !== 'event') return
    expect(out.bytes.byteOffset).toBe(0)
    expect(out.bytes.buffer.byteLength).toBe(bytes.length)
    expect(Buffer.compare(out.bytes, bytes)).toBe(0)
  })

  it('the same content signed twice as the same id (the signature is not part of it)', async () => {
    const a = signEventSync(goal(), key)
    const b = await signEvent(goal(), key)
    expect(a.event.id).toBe(b.event.id)
    expect(Buffer.compare(a.bytes, b.bytes)).toBe(0) // Ed25519 signatures are deterministic
  })
})

describe('other protocol versions', () => {
  it('are returned for storing and relaying, not as plan events', () => {
    const env = {
      ...goal(),
      v: 99,
      type: 'goal-submitted-v3',
      plan: PLAN,
      deps: [hex(1), hex(9)],
      body: { anything: [1, 'two'] }
    }
    const bytes = wire(env)
    const out = decodeEvent(bytes, OPTS)
    expect(out).toStrictEqual({
      kind: 'other-version',
      id: eventIdOf(dagCbor.encode(env)),
      v: 99,
      author,
      plan: PLAN,
      deps: [hex(1), hex(9)],
      bytes
    })
  })

  it('keep what they can of plan and deps', () => {
    const out = decodeEvent(wire({ ...goal(), v: 0, plan: { x: 1 }, deps: 'none', hlc: null }), OPTS)
    expect(out.kind).toBe('other-version')
    if (out.kind !== 'other-version') return
    expect(out.plan).toBe('')
    expect(out.deps).toEqual([])
  })

  it('are still checked for swarm and author', () => {
    expect(detailOf(decodeEvent(wire({ ...goal(), v: 99, swarm: 'x' }, key, 'x'), OPTS))).toMatch(/^wrong-swarm/)
    expect(detailOf(decodeEvent(wire({ ...goal(), v: 99, author: 'bob' }), OPTS))).toMatch(/^wrong-shape: author/)
  })
})

describe('signing', () => {
  it('signs the domain-prefixed canonical bytes', () => {
    const env = goal()
    const { bytes } = signEventSync(env, key)
    const envelopeBytes = encodeEnvelope(env)
    expect(Buffer.from(signatureDomain(SWARM)).toString()).toBe(`plan-swarm/1/${SWARM}\n`)
    expect(key.publicKey.verify(signedMessage(SWARM, envelopeBytes), bytes.subarray(-64))).toBe(true)
    expect(Buffer.compare(bytes.subarray(0, -64), envelopeBytes)).toBe(0)
  })

  it('refuses an envelope whose author is not the key', () => {
    expect(() => signEventSync(goal(), keys[1] as PrivateKey)).toThrow(/not the signing key/)
  })

  it('refuses an envelope the wire would reject', async () => {
    expect(() => signEventSync(split(subgoals([[1], [0]])), key)).toThrow(/dependsOn cycle/)
    await expect(signEvent(goal({ plan: PLAN }), key)).rejects.toThrow(/plan/)
  })

  it('refuses an oversized event', () => {
    // Every text field fits its own cap, but ten long score notes together pass the byte cap.
    const scores = Array.from({ length: 10 }, (_, i) => ({
      proposal: hex(10 + i),
      score: 50,
      notes: '語'.repeat(4_000)
    }))
    const env = ballot({ scores, choice: null })
    expect(validateEnvelope(env)).toBeNull()
    expect(() => signEventSync(env, key)).toThrow(/bytes \(max/)
  })

  it('refuses a string with a leading byte-order mark (it would not survive decoding)', () => {
    expect(() => signEventSync(goal({ body: { text: '\ufeffa', params: params() } }), key)).toThrow(/byte-order mark/)
    expect(validateEnvelope(goal({ body: { text: 'a\ufeff', params: params() } }))).toBeNull()
  })

  it('refuses a string with a lone surrogate (it would not survive UTF-8)', () => {
    expect(() => signEventSync(goal({ body: { text: 'a\ud800b', params: params() } }), key)).toThrow(/surrogate/)
  })
})

describe('validateParams', () => {
  it('accepts the defaults with a majority quorum', () => {
    expect(validateParams(params())).toBeNull()
    expect(validateParams(params({ committee: [author], quorum: 1 }))).toBeNull()
  })

  it.each([
    ['an empty committee', { committee: [], quorum: 1 }, 'params.committee: 0 items, expected 1..32'],
    ['a minority quorum', { quorum: 1 }, 'params.quorum: 1 is not a majority of 3 (needs at least 2)'],
    ['a fractional quorum', { quorum: 2.5 }, 'params.quorum: expected a safe integer, got the non-integer 2.5'],
    ['maxChildren below minChildren', { minChildren: 4, maxChildren: 3 }, 'params.maxChildren: 3 is outside 4..7'],
    [
      'maxClaimMs below leaseMs',
      { leaseMs: 20_000, maxClaimMs: 10_000 },
      'params.maxClaimMs: 10000 is outside 20000..86400000'
    ],
    ['a short lease', { leaseMs: 999 }, 'params.leaseMs: 999 is outside 1000..3600000'],
    ['zero nodes', { maxNodes: 0 }, 'params.maxNodes: 0 is outside 1..5000'],
    ['nodes beyond the cap', { maxNodes: 5_001 }, 'params.maxNodes: 5001 is outside 1..5000'],
    ['review as a string', { review: 'yes' }, 'params.review: expected a boolean, got a string'],
    [
      'too many claims per executor',
      { maxClaimsPerExecutor: 101 },
      'params.maxClaimsPerExecutor: 101 is outside 1..100'
    ]
  ])('explains %s', (_name, over, problem) => {
    expect(validateParams({ ...params(), ...over })).toBe(problem)
  })

  it('explains a missing key', () => {
    const { review: _review, ...rest } = params()
    expect(validateParams(rest)).toBe('params: missing key "review"')
  })
})

describe('topics', () => {
  it('names the topics and the sync protocol', () => {
    expect(eventsTopic('default')).toBe('/plan-swarm/1/default/events')
    expect(presenceTopic('default')).toBe('/plan-swarm/1/default/presence')
    expect(SYNC_PROTOCOL).toBe('/plan-swarm/sync/1.0.0')
  })

  it('validates swarm names', () => {
    expect(validateSwarmName('default')).toBeNull()
    expect(validateSwarmName('a.b_c-9')).toBeNull()
    expect(validateSwarmName('x'.repeat(MAX_SWARM_NAME_CHARS))).toBeNull()
    expect(validateSwarmName('')).not.toBeNull()
    expect(validateSwarmName('x'.repeat(MAX_SWARM_NAME_CHARS + 1))).not.toBeNull()
    expect(validateSwarmName('Default')).not.toBeNull()
    expect(validateSwarmName('a/b')).not.toBeNull()
    expect(validateSwarmName('a b')).not.toBeNull()
  })
})
