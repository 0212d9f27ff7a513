/**
 * A scorer considers at most MAX_BALLOT_PROPOSALS proposals of one attempt
 * (roles/scorer.ts), chosen by a rank nobody picks: an attempt stuffed with 64
 * or more proposals (one member with many keys) still gets an honest ballot,
 * signed within MAX_DEPS and folded, and the prompt stays bounded.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { consideredProposals, createScorer, decideScorer, MAX_BALLOT_PROPOSALS } from '../../roles/scorer.js'
import { foldAll } from '../../src/core/fold.js'
import { MAX_DEPS } from '../../src/core/limits.js'
import { createOfflineProvider } from '../../src/offline/index.js'
import { validateEnvelope } from '../../src/wire/shape.js'
import { signEventSync } from '../../src/wire/sign.js'
import { PlanBuilder, makePeers, subgoals } from '../helpers/plan-builder.js'
import type { RoleContext } from '../../roles/driver.js'
import type { BallotIntent } from '../../roles/scorer.js'
import type { Envelope, EventId, PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'
import type { PrivateKey } from '@libp2p/interface'

const STUFFED = 70

let scorer: { id: PeerIdString; key: PrivateKey }
let author: PeerIdString
let decomposers: PeerIdString[]

beforeAll(async () => {
  const peers = await makePeers(STUFFED + 2)
  scorer = peers[0] as { id: PeerIdString; key: PrivateKey }
  author = (peers[1] as { id: PeerIdString }).id
  decomposers = peers.slice(2).map(p => p.id)
})

function stuffedPlan(): { b: PlanBuilder; events: PlanEvent[] } {
  const b = new PlanBuilder(author, [scorer.id], { maxDepth: 1 }, 1_000)
  const events: PlanEvent[] = [b.goal]
  decomposers.forEach((d, i) => events.push(b.propose(d, b.root, 1, subgoals([`a${i}`, `b${i}`]), 2_000 + i)))
  return { b, events }
}

describe('a stuffed attempt', () => {
  it('is considered by at most MAX_BALLOT_PROPOSALS proposals, the same ones whatever their order', () => {
    const { b, events } = stuffedPlan()
    const proposals = events.slice(1)
    const picked = consideredProposals(b.root, 1, proposals).map(p => p.id)
    expect(picked).toHaveLength(MAX_BALLOT_PROPOSALS)
    expect(MAX_BALLOT_PROPOSALS + 1).toBeLessThanOrEqual(MAX_DEPS)
    const reversed = consideredProposals(b.root, 1, [...proposals].reverse()).map(p => p.id)
    expect(new Set(reversed)).toEqual(new Set(picked))
    // Another attempt ranks afresh: nobody's proposal is first every time.
    expect(new Set(consideredProposals(b.root, 2, proposals).map(p => p.id))).not.toEqual(new Set(picked))
  })

  it(`gets an honest ballot signed, within MAX_DEPS, and folded (${STUFFED} proposals)`, async () => {
    const { b, events } = stuffedPlan()
    const byId = new Map<string, PlanEvent>(events.map(e => [e.id, e]))
    let folded = events
    const tree = (): PlanTree => foldAll(folded).tree(b.plan) as PlanTree
    const now = 10_000
    const intents = decideScorer(
      tree(),
      scorer.id,
      now,
      [],
      { get: id => byId.get(id) as never },
      () => []
    ) as BallotIntent[]
    expect(intents).toHaveLength(1)
    expect(intents[0]?.proposals).toHaveLength(MAX_BALLOT_PROPOSALS)

    let prompted = 0
    const offline = createOfflineProvider()
    const provider = {
      ...offline,
      score: async (input: Parameters<typeof offline.score>[0], opts?: Parameters<typeof offline.score>[1]) => {
        prompted = input.proposals.length
        return await offline.score(input, opts)
      },
      downgrade() {
        return this
      }
    }
    const view = {
      me: scorer.id,
      roster: () => [],
      event: (id: EventId) => byId.get(id),
      publish: async (type: string, plan: string, deps: EventId[], body: unknown) => {
        const env = {
          v: b.goal.env.v,
          swarm: 'test',
          type,
          plan,
          author: scorer.id,
          hlc: { ms: now, c: 0 },
          deps: [...new Set(deps)].sort(),
          body
        } as unknown as Envelope
        expect(validateEnvelope(env)).toBeNull()
        const signed = signEventSync(env, scorer.key)
        expect(signed.bytes.length).toBeGreaterThan(0)
        folded = [...folded, signed.event]
        return { event: signed.event }
      }
    }
    const handler = createScorer({ view, provider, say: () => {} } as unknown as RoleContext)
    await handler.act(intents[0] as never, tree())
    expect(prompted).toBe(MAX_BALLOT_PROPOSALS)
    const ballot = folded.at(-1) as PlanEvent<'ballot-cast'>
    expect(ballot.env.type).toBe('ballot-cast')
    expect(ballot.env.deps.length).toBeLessThanOrEqual(MAX_DEPS)
    const attempt = tree().nodes[0]?.attempts.find(a => a.attempt === 1)
    expect(attempt?.ballots.map(x => x.author)).toEqual([scorer.id])
    // Cast once: the next decision asks for nothing more.
    expect(decideScorer(tree(), scorer.id, now + 1, [], { get: id => byId.get(id) as never }, () => [])).toEqual([])
  })
})
