/**
 * Protocol versions in the fold and on publish: every event of a plan has
 * its goal's version (an event of another version is refused, with its
 * reason, and changes nothing), a goal's version is the one its parameters
 * call for, the tree shows protocol 2's parameters with their defaults for
 * a v1 plan without changing its hash, and the replica publishes each
 * event with its plan's version. The upgrade (a v1 data dir folds to the
 * hashes it had) is in test/unit/fold-upgrade.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { Fold, NO_CLOCK, foldAll } from '../../src/core/fold.js'
import { NOT_HASHED, canonicalJson, treeHash } from '../../src/core/tree-hash.js'
import { sha256HexOfText } from '../../src/core/hash.js'
import { DEFAULT_PARAMS } from '../../src/core/events.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { openEventStore } from '../../src/store/event-store.js'
import { PlanBuilder, makeEvent, subgoals } from '../helpers/plan-builder.js'
import { hashOf, makeCast, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

/** The same event with another version (and so another id), as a node that got the version wrong would sign it. */
function withVersion<T extends PlanEvent>(e: T, v: number): T {
  return makeEvent({ ...e.env, v }) as T
}

describe("every event of a plan has its goal's version", () => {
  it('a v2 event in a v1 plan is refused as wrong-version and changes nothing', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    expect(b.goal.env.v).toBe(1)
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2_000)
    const ballots = [b.ballot(cast.scorers[0], { node: b.root, attempt: 1 }, p, 2_100)]
    const v2 = withVersion(b.ballot(cast.scorers[1], { node: b.root, attempt: 1 }, p, 2_200), 2)
    const f = foldAll([b.goal, p, ...ballots])
    const before = f.treeHash(b.plan)
    const out = f.add(v2, NO_CLOCK)
    expect(out).toMatchObject({ status: 'rejected', reason: 'wrong-version' })
    expect(out.status === 'rejected' ? out.detail : '').toMatch(/protocol version 2 in a plan of version 1/)
    expect(f.treeHash(b.plan)).toBe(before)
    // Had it been v1, it would have decided the split.
    expect(treeOf(b, [p, ...ballots, withVersion(v2, 1)]).nodes[0]?.accepted).toBe(p.id)
  })

  it('a v1 event in a v2 plan is refused as wrong-version', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { executors: 'outside' })
    expect(b.goal.env.v).toBe(2)
    const p = b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2_000)
    expect(foldAll([b.goal, p]).events.size).toBe(2)
    expect(foldAll([b.goal]).add(withVersion(p, 1), NO_CLOCK)).toMatchObject({
      status: 'rejected',
      reason: 'wrong-version'
    })
  })

  it('what builds on a refused event is refused too, whichever arrives first', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const bad = withVersion(b.propose(cast.decomposers[0], b.root, 1, subgoals(['a', 'b']), 2_000), 2)
    const ballot = makeEvent({
      type: 'ballot-cast',
      plan: b.plan,
      author: cast.scorers[0],
      hlc: { ms: 2_100, c: 0 },
      deps: [b.goal.id, bad.id],
      body: {
        node: b.root,
        attempt: 1,
        committee: b.goal.id,
        scores: [{ proposal: bad.id, score: 90, notes: '' }],
        choice: bad.id,
        notes: '',
        usage: { inputTokens: 0, outputTokens: 0 }
      }
    })
    const f = new Fold()
    f.add(b.goal, NO_CLOCK)
    expect(f.add(ballot, NO_CLOCK).status).toBe('parked')
    expect(f.add(bad, NO_CLOCK)).toMatchObject({ status: 'rejected', reason: 'wrong-version' })
    expect(f.events.parkedCount).toBe(0)
    expect(f.treeHash(b.plan)).toBe(hashOf(b, []))
  })

  it("a goal whose version is not its parameters' is refused", () => {
    const v1Params = { ...DEFAULT_PARAMS, committee: [cast.scorers[0]], quorum: 1 }
    const v2Params = { ...v1Params, executors: 'any' as const }
    const mk = (v: number, params: typeof v1Params | typeof v2Params): PlanEvent =>
      makeEvent({
        v,
        type: 'goal-submitted',
        plan: '',
        author: cast.author,
        hlc: { ms: 1_000, c: 0 },
        deps: [],
        body: { text: 'a picnic', params }
      })
    expect(new Fold().add(mk(2, v1Params), NO_CLOCK)).toMatchObject({ status: 'rejected', reason: 'wrong-version' })
    expect(new Fold().add(mk(1, v2Params), NO_CLOCK)).toMatchObject({ status: 'rejected', reason: 'wrong-version' })
    expect(new Fold().add(mk(1, v1Params), NO_CLOCK).status).toBe('folded')
    expect(new Fold().add(mk(2, v2Params), NO_CLOCK).status).toBe('folded')
  })
})

describe("the tree's parameters", () => {
  it('a v1 plan shows no approvers and executors "model", and hashes as its goal\'s parameters alone', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3))
    const tree = treeOf(b, [])
    expect(tree.params.approvers).toBeNull()
    expect(tree.params.executors).toBe('model')
    // The hash protocol 1 gave: the tree with the goal's parameters exactly as they came.
    expect(treeHash(tree)).toBe(sha256HexOfText(canonicalJson({ ...tree, params: b.goal.env.body.params }, NOT_HASHED)))
  })

  it('a v2 plan shows what its goal names, and the hash covers it', () => {
    const approvers = { ids: [cast.scorers[0]], for: 'splits' as const }
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { approvers, executors: 'any' })
    const tree = treeOf(b, [])
    expect(tree.params.approvers).toStrictEqual(approvers)
    expect(tree.params.executors).toBe('any')
    // tools (protocol 3) is left out while false, and retainDays (protocol 4) while null.
    const { tools: _notUsed, retainDays: _notSet, ...v2params } = tree.params
    expect(treeHash(tree)).toBe(sha256HexOfText(canonicalJson({ ...tree, params: v2params }, NOT_HASHED)))
    const outside = treeOf(new PlanBuilder(cast.author, cast.scorers.slice(0, 3), { executors: 'outside' }), [])
    expect(outside.params).toMatchObject({ approvers: null, executors: 'outside' })
  })

  it('a result written by an outside agent is shown with its source in a v2 plan', () => {
    const b = new PlanBuilder(cast.author, cast.scorers.slice(0, 1), { executors: 'outside', maxDepth: 0 })
    const claim = b.claim(cast.outsiders[0], b.root as string as Parameters<PlanBuilder['claim']>[1], 1_500)
    const r = b.result(claim, 1_600, 'did it by hand', undefined, [], 'outside')
    const tree = treeOf(b, [claim, r])
    expect(tree.status).toBe('completed')
    expect(tree.tasks[0]?.results[0]?.source).toBe('outside')
  })
})

describe("the replica publishes with the plan's version", () => {
  async function replica(): Promise<{ r: Replica; me: PeerIdString }> {
    const key = await generateKeyPair('Ed25519')
    const me = peerIdFromPrivateKey(key).toString() as PeerIdString
    return {
      r: new Replica({
        swarm: 'test',
        key,
        peerId: me,
        store: openEventStore({ memory: true }),
        metrics: new NodeMetrics(),
        now: () => 10_000
      }),
      me
    }
  }

  it('v1 for a plain goal and its events; v2 for a goal with a v2 feature and its events', async () => {
    const { r, me } = await replica()
    const plain = { ...DEFAULT_PARAMS, committee: [me], quorum: 1 }
    const g1 = await r.author('goal-submitted', '', [], { text: 'a picnic', params: plain })
    const c1 = await r.author('goal-cancelled', g1.event.id as string as PlanId, [], { reason: 'rain' })
    const g2 = await r.author('goal-submitted', '', [], {
      text: 'a barbecue',
      params: { ...plain, approvers: { ids: [me], for: 'splits' } }
    })
    const c2 = await r.author('goal-cancelled', g2.event.id as string as PlanId, [], { reason: 'rain' })
    const g3 = await r.author('goal-submitted', '', [], { text: 'a hike', params: { ...plain, executors: 'outside' } })
    expect([g1, c1, g2, c2, g3].map(x => x.event.env.v)).toStrictEqual([1, 1, 2, 2, 2])
    expect(r.tree(g2.event.id as string as PlanId)?.status).toBe('cancelled')
    expect(r.tree(g3.event.id as string as PlanId)?.params.executors).toBe('outside')
    r.flush()
  })
})
