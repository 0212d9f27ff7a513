/**
 * Protocol version 2 at the wire: which goals and results each version
 * allows, what stays another version, and how parameters are checked.
 * The fold's side (an event whose version is not its plan's) is in
 * test/unit/fold-versions.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import * as dagCbor from '@ipld/dag-cbor'
import type { PrivateKey } from '@libp2p/interface'
import {
  DEFAULT_PARAMS,
  PROTOCOL_VERSION,
  PROTOCOL_VERSION_2,
  paramsVersion,
  resolveParams,
  type Envelope,
  type EventId,
  type PeerIdString,
  type PlanParams
} from '../../src/core/events.js'
import {
  decodeEvent,
  signEventSync,
  signRawSync,
  validateEnvelope,
  validateParams,
  type DecodeResult
} from '../../src/wire/index.js'
import { TEST_SWARM, peerIdOf, testKeys } from '../helpers/arbitraries.js'

let key: PrivateKey
let ids: PeerIdString[] = []
let author: PeerIdString

beforeAll(async () => {
  const keys = await testKeys(4)
  key = keys[0] as PrivateKey
  ids = keys.map(peerIdOf).sort()
  author = peerIdOf(key)
})

const hex = (n: number): EventId => n.toString(16).padStart(64, '0') as EventId
const PLAN = hex(0xabc)

function params(over: Record<string, unknown> = {}): PlanParams {
  return { ...DEFAULT_PARAMS, committee: ids.slice(0, 3), quorum: 2, ...over } as PlanParams
}

function goal(v: number, p: object): Envelope {
  return {
    v,
    swarm: TEST_SWARM,
    type: 'goal-submitted',
    plan: '',
    author,
    hlc: { ms: 1_000, c: 0 },
    deps: [],
    body: { text: 'plan a picnic', params: p }
  } as unknown as Envelope
}

function result(v: number, source: string): Envelope {
  return {
    v,
    swarm: TEST_SWARM,
    type: 'result-reported',
    plan: PLAN,
    author,
    hlc: { ms: 2_000, c: 0 },
    deps: [hex(1), PLAN].sort(),
    body: {
      task: hex(7),
      claim: hex(1),
      output: 'a list of parks',
      usage: { inputTokens: 0, outputTokens: 0 },
      model: 'person',
      source
    }
  } as unknown as Envelope
}

function decode(env: unknown): DecodeResult {
  return decodeEvent(signRawSync(TEST_SWARM, dagCbor.encode(env), key), { swarm: TEST_SWARM })
}

function verdict(d: DecodeResult): string {
  return d.kind === 'rejected' ? `${d.reason}: ${d.detail}` : d.kind
}

describe('protocol 2 goals', () => {
  it('a v1 goal with an approvers or executors key is wrong-shape, as an old node sees it', () => {
    const approvers = { ids: [ids[0]], for: 'splits' }
    expect(verdict(decode(goal(1, params({ approvers }))))).toMatch(
      /^wrong-shape: goal-submitted.params: unexpected key "approvers"/
    )
    expect(verdict(decode(goal(1, params({ executors: 'outside' }))))).toMatch(
      /^wrong-shape: goal-submitted.params: unexpected key "executors"/
    )
  })

  it('a v2 goal may name approvers, executors or both', () => {
    const approvers = { ids: [ids[0]], for: 'splits' }
    for (const p of [
      { approvers },
      { executors: 'outside' },
      { executors: 'any' },
      { approvers, executors: 'model' },
      { approvers: { ids: ids.slice(0, 2), for: 'both' }, review: true, executors: 'any' }
    ]) {
      const d = decode(goal(2, params(p)))
      expect(verdict(d), JSON.stringify(p)).toBe('event')
      if (d.kind === 'event') expect(d.event.env.v).toBe(2)
    }
  })

  it('a v2 goal that uses no v2 feature is wrong-shape: it is a v1 goal', () => {
    expect(verdict(decode(goal(2, params())))).toMatch(/^wrong-shape: .*protocol 1 goal/)
    expect(verdict(decode(goal(2, params({ executors: 'model' }))))).toMatch(/^wrong-shape: .*protocol 1 goal/)
  })

  it('approvers are sorted committee members, 1 to 32 of them; results only with review', () => {
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'not in the committee',
        { approvers: { ids: [ids[3]], for: 'splits' } },
        /approvers.ids\[0\]: .* is not in the committee/
      ],
      ['unsorted', { approvers: { ids: [ids[1], ids[0]], for: 'splits' } }, /approvers.ids\[1\]: not after/],
      ['repeated', { approvers: { ids: [ids[0], ids[0]], for: 'splits' } }, /approvers.ids\[1\]: not after/],
      ['empty', { approvers: { ids: [], for: 'splits' } }, /approvers.ids: 0 items/],
      [
        'not a peer id',
        { approvers: { ids: ['bob'], for: 'splits' } },
        /approvers.ids\[0\]: expected an Ed25519 peer id/
      ],
      ['unknown kind', { approvers: { ids: [ids[0]], for: 'everything' } }, /approvers.for: expected one of/],
      [
        'results without review',
        { approvers: { ids: [ids[0]], for: 'results' } },
        /approvers.for: "results" needs review/
      ],
      ['both without review', { approvers: { ids: [ids[0]], for: 'both' } }, /approvers.for: "both" needs review/],
      [
        'an extra key',
        { approvers: { ids: [ids[0]], for: 'splits', deadline: 5 } },
        /approvers: unexpected key "deadline"/
      ],
      ['unknown executors', { executors: 'robots' }, /executors: expected one of "model", "outside", "any"/],
      ['another new key', { executors: 'any', deadline: 5 }, /unexpected key "deadline"/]
    ]
    for (const [name, p, re] of bad) expect(verdict(decode(goal(2, params(p)))), name).toMatch(re)
  })

  it('validateParams takes the version from the keys when it is not given (the CLI checks either)', () => {
    expect(validateParams(params())).toBeNull()
    expect(validateParams(params({ executors: 'outside' }))).toBeNull()
    expect(validateParams(params({ executors: 'outside' }), 'params', 1)).toMatch(/unexpected key "executors"/)
    expect(validateParams(params({ executors: 'model' }))).toMatch(/protocol 1 goal/)
  })

  it('paramsVersion is 2 exactly when a v2 feature is used; resolveParams fills the defaults', () => {
    expect(paramsVersion(params())).toBe(PROTOCOL_VERSION)
    expect(paramsVersion(params({ executors: 'model' }))).toBe(PROTOCOL_VERSION)
    expect(paramsVersion(params({ executors: 'outside' }))).toBe(PROTOCOL_VERSION_2)
    expect(paramsVersion(params({ approvers: { ids: [ids[0]], for: 'splits' } }))).toBe(PROTOCOL_VERSION_2)
    const r = resolveParams(params())
    expect([r.approvers, r.executors]).toStrictEqual([null, 'model'])
    expect(paramsVersion(r)).toBe(PROTOCOL_VERSION)
  })

  it('the signer signs a v2 goal and refuses a v1 envelope around v2 parameters', () => {
    expect(validateEnvelope(goal(2, params({ executors: 'any' })))).toBeNull()
    expect(() => signEventSync(goal(1, params({ executors: 'any' })), key)).toThrow(/unexpected key "executors"/)
    expect(signEventSync(goal(2, params({ executors: 'any' })), key).event.env.v).toBe(2)
  })
})

describe('protocol 2 results', () => {
  it('source "outside" is v2 only', () => {
    expect(verdict(decode(result(1, 'outside')))).toMatch(
      /^wrong-shape: result-reported.source: expected one of "llm", "offline", got "outside"/
    )
    expect(verdict(decode(result(2, 'outside')))).toBe('event')
    expect(verdict(decode(result(2, 'llm')))).toBe('event')
    expect(verdict(decode(result(2, 'someone')))).toMatch(/^wrong-shape/)
  })
})

describe('versions this code does not fold', () => {
  it('are stored and relayed as other-version, whatever their body', () => {
    for (const v of [0, 6, 99]) {
      const d = decode({ ...goal(v, params({ whatever: true })), type: 'something-new' })
      expect(d.kind, `v${v}`).toBe('other-version')
      if (d.kind === 'other-version') expect(d.v).toBe(v)
    }
  })

  it('v1 and v2 are folded: both decode as events', () => {
    expect(decode(goal(1, params())).kind).toBe('event')
    expect(decode(goal(2, params({ executors: 'outside' }))).kind).toBe('event')
  })
})
