/**
 * fast-check generators of valid plan events, and a few fixed test keys.
 *
 * Every envelope these produce passes `validateEnvelope`: they are valid by
 * construction (unique titles by index prefix, acyclic dependsOn from a random
 * topological order, quorums between a majority and the committee size), so
 * other suites can build on them without filtering. Keys are derived from
 * fixed seeds: generating keys is slow, and fixed keys keep ids reproducible.
 */
import fc from 'fast-check'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { bytesToHex } from '@noble/hashes/utils.js'
import type { PrivateKey } from '@libp2p/interface'
import {
  EVENT_TYPES,
  PROTOCOL_VERSION,
  majority,
  type Bodies,
  type Envelope,
  type EventId,
  type EventType,
  type Hlc,
  type NodeId,
  type PeerIdString,
  type PlanParams,
  type Subgoal,
  type TaskId,
  type Usage
} from '../../src/core/events.js'
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_CLAIM_MS_LIMIT,
  MAX_CLAIM_WINDOW_MS,
  MAX_DEPS,
  MAX_DEPTH_LIMIT,
  MAX_LEASE_MS,
  MAX_NODES_LIMIT,
  MAX_SCORE,
  MAX_SUBGOALS,
  MAX_TOKENS_LIMIT,
  MIN_LEASE_MS,
  MIN_SUBGOALS
} from '../../src/core/limits.js'

/** fc.record with plain-prototype objects, like the decoder's (so toStrictEqual compares them fairly). */
function rec<T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> {
  return fc.record(model, { noNullPrototype: true })
}

/** The swarm name generated envelopes use unless told otherwise. */
export const TEST_SWARM = 'test'

const keyCache = new Map<number, PrivateKey>()

/** The i-th fixed test key (Ed25519, seed = 32 bytes of i+1). Derived once and cached. */
export async function testKey(i: number): Promise<PrivateKey> {
  const hit = keyCache.get(i)
  if (hit !== undefined) return hit
  const key = await generateKeyPairFromSeed('Ed25519', new Uint8Array(32).fill((i + 1) & 0xff))
  keyCache.set(i, key)
  return key
}

/** The first n fixed test keys. */
export async function testKeys(n: number): Promise<PrivateKey[]> {
  const keys: PrivateKey[] = []
  for (let i = 0; i < n; i++) keys.push(await testKey(i))
  return keys
}

/** A key's peer id string, as an envelope's author. */
export function peerIdOf(key: PrivateKey): PeerIdString {
  return peerIdFromPrivateKey(key).toString() as PeerIdString
}

/** 64 lowercase hex characters: an event, node or task id. */
export const arbHexId: fc.Arbitrary<string> = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(b => bytesToHex(b))
export const arbEventId = arbHexId as fc.Arbitrary<EventId>
export const arbNodeId = arbHexId as fc.Arbitrary<NodeId>
export const arbTaskId = arbHexId as fc.Arbitrary<TaskId>

/** The first `cap` UTF-16 units of s, never splitting a surrogate pair. */
export function clip(s: string, cap: number): string {
  if (s.length <= cap) return s
  const last = s.charCodeAt(cap - 1)
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? cap - 1 : cap)
}

/** Text of at most `cap` UTF-16 units: printable ASCII or any Unicode (never lone surrogates). */
export function arbText(cap: number, opts: { nonEmpty?: boolean } = {}): fc.Arbitrary<string> {
  const s = fc.oneof(
    fc.string({ maxLength: Math.min(cap, 60) }),
    fc.string({ unit: 'binary', maxLength: Math.min(Math.floor(cap / 2), 30) })
  )
  return opts.nonEmpty === true ? s.map(t => clip(`x${t}`, cap)) : s
}

export const arbHlc: fc.Arbitrary<Hlc> = rec({
  ms: fc.oneof(fc.integer({ min: 0, max: 2 ** 48 }), fc.constantFrom(0, Number.MAX_SAFE_INTEGER)),
  c: fc.oneof(fc.nat({ max: 1000 }), fc.constant(Number.MAX_SAFE_INTEGER))
})

/** Sorted, distinct dependency ids (mostly few, sometimes the maximum). */
export const arbDeps: fc.Arbitrary<EventId[]> = fc
  .oneof(
    { weight: 9, arbitrary: fc.uniqueArray(arbEventId, { maxLength: 5 }) },
    { weight: 1, arbitrary: fc.uniqueArray(arbEventId, { minLength: MAX_DEPS, maxLength: MAX_DEPS }) }
  )
  .map(ds => [...ds].sort())

export const arbUsage: fc.Arbitrary<Usage> = rec({
  inputTokens: fc.nat({ max: 1_000_000 }),
  outputTokens: fc.nat({ max: 1_000_000 })
})

export const arbAttempt: fc.Arbitrary<number> = fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT })

/** A committee drawn from `peers` (distinct, non-empty) with a quorum between a majority and its size. */
export function arbCommittee(
  peers: readonly PeerIdString[]
): fc.Arbitrary<{ committee: PeerIdString[]; quorum: number }> {
  return fc
    .shuffledSubarray([...peers], { minLength: 1 })
    .chain(committee =>
      fc.integer({ min: majority(committee.length), max: committee.length }).map(quorum => ({ committee, quorum }))
    )
}

/** Valid plan parameters with a committee drawn from `peers`. */
export function arbParams(peers: readonly PeerIdString[]): fc.Arbitrary<PlanParams> {
  return fc
    .tuple(
      arbCommittee(peers),
      fc
        .integer({ min: MIN_SUBGOALS, max: MAX_SUBGOALS })
        .chain(min => fc.integer({ min, max: MAX_SUBGOALS }).map(max => [min, max] as const)),
      fc
        .integer({ min: MIN_LEASE_MS, max: MAX_LEASE_MS })
        .chain(lease => fc.integer({ min: lease, max: MAX_CLAIM_MS_LIMIT }).map(claim => [lease, claim] as const)),
      rec({
        maxDepth: fc.integer({ min: 0, max: MAX_DEPTH_LIMIT }),
        maxAttempts: fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT }),
        maxNodes: fc.integer({ min: 1, max: MAX_NODES_LIMIT }),
        budgetTokens: fc.integer({ min: 1, max: MAX_TOKENS_LIMIT }),
        maxTokensPerCall: fc.integer({ min: 1, max: MAX_TOKENS_LIMIT }),
        review: fc.boolean(),
        maxClaimsPerExecutor: fc.integer({ min: 1, max: 100 })
      })
    )
    .map(([{ committee, quorum }, [minChildren, maxChildren], [leaseMs, maxClaimMs], rest]) => ({
      committee,
      quorum,
      minChildren,
      maxChildren,
      leaseMs,
      maxClaimMs,
      ...rest
    }))
}

/** Protocol 5's parameters for a plan with this lease: a claim window from none to the lease (or its cap). */
export function arbTrust(leaseMs: number): fc.Arbitrary<{ claimWindowMs: number }> {
  const max = Math.min(MAX_CLAIM_WINDOW_MS, leaseMs)
  return rec({ claimWindowMs: fc.oneof(fc.integer({ min: 0, max }), fc.constantFrom(0, max)) })
}

/** Valid version-5 plan parameters: version 1's, `trust`, and sometimes `retainDays` (optional in version 5). */
export function arbParamsV5(peers: readonly PeerIdString[]): fc.Arbitrary<PlanParams> {
  return arbParams(peers).chain(p =>
    fc
      .tuple(arbTrust(p.leaseMs), fc.option(fc.integer({ min: 1, max: 3650 }), { nil: undefined }))
      .map(([trust, retainDays]) => ({ ...p, trust, ...(retainDays === undefined ? {} : { retainDays }) }))
  )
}

/**
 * MIN_SUBGOALS..MAX_SUBGOALS subgoals with distinct titles and an acyclic
 * dependsOn: each subgoal may depend on any sibling ranked before it in a
 * random order, so forward and backward indexes both occur.
 */
export const arbSubgoals: fc.Arbitrary<Subgoal[]> = fc.integer({ min: MIN_SUBGOALS, max: MAX_SUBGOALS }).chain(n =>
  fc
    .tuple(
      fc.array(fc.nat(), { minLength: n, maxLength: n }),
      fc.array(
        rec({
          title: arbText(60),
          detail: arbText(200),
          leaf: fc.boolean(),
          wants: fc.array(fc.boolean(), { minLength: n, maxLength: n })
        }),
        { minLength: n, maxLength: n }
      )
    )
    .map(([rankKeys, raw]) => {
      const rank = (i: number): [number, number] => [rankKeys[i] ?? 0, i]
      const before = (j: number, i: number): boolean => {
        const [a, x] = rank(j)
        const [b, y] = rank(i)
        return a < b || (a === b && x < y)
      }
      return raw.map((s, i) => ({
        title: clip(`${i + 1}. ${s.title}`, 60),
        detail: s.detail,
        leaf: s.leaf,
        dependsOn: s.wants.flatMap((w, j) => (w && j !== i && before(j, i) ? [j] : []))
      }))
    })
)

/** A ballot's scores over distinct proposals and a choice among them (or none). */
export const arbBallotScores: fc.Arbitrary<Pick<Bodies['ballot-cast'], 'scores' | 'choice'>> = fc
  .uniqueArray(rec({ proposal: arbEventId, score: fc.integer({ min: 0, max: MAX_SCORE }), notes: arbText(100) }), {
    selector: s => s.proposal,
    maxLength: 6
  })
  .chain(scores =>
    fc.option(fc.nat({ max: Math.max(0, scores.length - 1) }), { nil: null }).map(pick => ({
      scores,
      choice: pick === null || scores.length === 0 ? null : (scores[pick]?.proposal ?? null)
    }))
  )

/** A valid body of the given type; committees are drawn from `peers`. */
export function arbBody<T extends EventType>(type: T, peers: readonly PeerIdString[]): fc.Arbitrary<Bodies[T]> {
  const arb = ((): fc.Arbitrary<Bodies[EventType]> => {
    switch (type as EventType) {
      case 'goal-submitted':
        return rec({ text: arbText(300, { nonEmpty: true }), params: arbParams(peers) })
      case 'committee-amended':
        return arbCommittee(peers)
      case 'budget-raised':
        return rec({ budgetTokens: fc.integer({ min: 1, max: MAX_TOKENS_LIMIT }) })
      case 'task-retried':
        return rec({ task: arbTaskId })
      case 'goal-cancelled':
        return rec({ reason: arbText(100) })
      case 'split-proposed':
        return rec({
          node: arbNodeId,
          attempt: arbAttempt,
          subgoals: arbSubgoals,
          rationale: arbText(200),
          usage: arbUsage
        })
      case 'ballot-cast':
        return fc
          .tuple(
            rec({ node: arbNodeId, attempt: arbAttempt, committee: arbEventId, notes: arbText(100), usage: arbUsage }),
            arbBallotScores
          )
          .map(([a, b]) => ({
            node: a.node,
            attempt: a.attempt,
            committee: a.committee,
            scores: b.scores,
            choice: b.choice,
            notes: a.notes,
            usage: a.usage
          }))
      case 'task-claimed':
        return rec({ task: arbTaskId, prev: fc.option(arbEventId, { nil: null }) })
      case 'claim-renewed':
        return rec({ task: arbTaskId, claim: arbEventId, prev: arbEventId })
      case 'task-released':
        return rec({ task: arbTaskId, claim: arbEventId, reason: arbText(100) })
      case 'task-failed':
        return rec({ task: arbTaskId, claim: arbEventId, error: arbText(100), usage: arbUsage })
      case 'result-reported':
        return rec({
          task: arbTaskId,
          claim: arbEventId,
          output: arbText(1000),
          usage: arbUsage,
          model: arbText(40),
          source: fc.constantFrom('llm' as const, 'offline' as const)
        })
      case 'result-reviewed':
        return rec({
          task: arbTaskId,
          result: arbEventId,
          committee: arbEventId,
          verdict: fc.constantFrom('accept' as const, 'reject' as const),
          notes: arbText(100),
          usage: arbUsage
        })
    }
  })()
  return arb as fc.Arbitrary<Bodies[T]>
}

export interface ArbEnvelopeOptions {
  /** Defaults to TEST_SWARM. */
  readonly swarm?: string
  /** Peer ids committees are drawn from; defaults to [author]. */
  readonly peers?: readonly PeerIdString[]
  /** Event types to draw from; defaults to all. */
  readonly types?: readonly EventType[]
}

/** A valid envelope of this protocol version by `author` (sign it with that author's key). */
export function arbEnvelope(author: PeerIdString, opts: ArbEnvelopeOptions = {}): fc.Arbitrary<Envelope> {
  const peers = opts.peers ?? [author]
  const types = opts.types ?? EVENT_TYPES
  return fc.constantFrom(...types).chain(type =>
    rec({
      plan: type === 'goal-submitted' ? fc.constant('') : arbHexId,
      hlc: arbHlc,
      deps: arbDeps,
      body: arbBody(type, peers)
    }).map(({ plan, hlc, deps, body }): Envelope => ({
      v: PROTOCOL_VERSION,
      swarm: opts.swarm ?? TEST_SWARM,
      type,
      plan,
      author,
      hlc,
      deps,
      body
    }))
  )
}

/** An envelope with its author's key: pick among `keys` and generate for that author. */
export function arbSignable(
  keys: readonly PrivateKey[],
  opts: Omit<ArbEnvelopeOptions, 'peers'> = {}
): fc.Arbitrary<{ key: PrivateKey; env: Envelope }> {
  const peers = keys.map(peerIdOf)
  return fc.nat({ max: keys.length - 1 }).chain(i => {
    const key = keys[i]
    const author = peers[i]
    if (key === undefined || author === undefined) throw new Error('no keys')
    return arbEnvelope(author, { ...opts, peers }).map(env => ({ key, env }))
  })
}
