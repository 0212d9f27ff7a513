/**
 * The scorer committee as real in-process peers: silent members leave a node
 * waiting, visibly, until the author amends the committee; a scorer started
 * later catches up through sync and votes; a scorer outside the committee
 * never votes.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js'
import { waitUntil } from '../helpers/wait.js'
import { RoleSwarm, modelOf } from '../helpers/roles-swarm.js'
import { renderTree } from '../../roles/render.js'
import { openEventStore } from '../../src/store/event-store.js'
import { decodeEvent } from '../../src/wire/decode.js'
import type { PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const GOAL = 'plan a two-week trip to Japan'

let swarm: RoleSwarm | undefined
let fake: FakeLlm | undefined

afterEach(async () => {
  await swarm?.stop()
  await fake?.close()
  swarm = undefined
  fake = undefined
})

describe('roles: the scorer committee', () => {
  it(
    'silent members leave the root waiting and named; an amendment to a live scorer and a late ' +
      'one lets the plan complete; an outsider never votes',
    async () => {
      const t0 = Date.now()
      fake = await startFakeLlm({ latencyMs: 50, auto: { children: 3 } })
      swarm = await RoleSwarm.start({ llm: { fake }, decomposers: 1, scorers: 4, executors: 1 })
      const [live, silent1, silent2, outsider] = swarm.live('scorer')
      if (live === undefined || silent1 === undefined || silent2 === undefined || outsider === undefined)
        throw new Error('four scorers expected')
      // Two committee members go away before the goal is published.
      await swarm.stopMember(silent1)
      await swarm.stopMember(silent2)
      const committee = [live.id, silent1.id, silent2.id].sort() as PeerIdString[]
      const plan = await swarm.submit(GOAL, { maxDepth: 1, committee, quorum: 2 })

      await waitUntil(
        'the live member to vote on the root',
        () => {
          const root = swarm?.tree(plan)?.nodes[0]
          return root?.attempts[0]?.ballots.some(b => b.author === live.id) === true
        },
        60_000
      )
      // Nothing can be decided: the root waits, and says for whom.
      await sleep(2_000)
      let tree = swarm.tree(plan) as PlanTree
      const root = tree.nodes[0]!
      expect(root.kind).toBe('decomposing')
      expect(root.status).toBe('decomposing')
      expect(tree.status).toBe('planning')
      expect(root.waiting).toContain('waiting for ballots from 2 of 3 committee members (quorum 2)')
      expect(root.waiting).toContain(silent1.id)
      expect(root.waiting).toContain(silent2.id)
      expect(root.waiting).not.toContain(live.id)
      expect(root.attempts[0]?.waitingFor).toEqual([silent1.id, silent2.id].sort())
      // The observer's printout shows it too.
      const screen = renderTree(tree, Date.now())
      expect(screen).toContain(silent1.id)
      expect(screen).toContain(silent2.id)
      expect(fake.calls('report_result')).toHaveLength(0)

      // A new scorer joins after the goal and the proposals were published; the author amends the committee to it and the live member.
      // First let gossipsub's history window (3 heartbeats of 1 s) pass, so that only sync can bring it what came before.
      await sleep(3_500)
      const late = await swarm.add('scorer', 'scorer-late')
      await swarm.waitMeshed()
      const amended = [live.id, late.id].sort() as PeerIdString[]
      const { event: amendment } = await swarm.client.publish('committee-amended', plan, [], {
        committee: amended,
        quorum: 2
      })
      await swarm.waitStatus(plan, 'completed', 90_000)
      const hash = await swarm.waitConverged(plan)

      tree = swarm.tree(plan) as PlanTree
      expect(tree.committees.map(c => c.event)).toEqual([plan, amendment.id])
      const attempt = tree.nodes[0]!.attempts[0]!
      expect(attempt.outcome).toBe('won')
      const underAmendment = attempt.ballots.filter(b => b.committee === amendment.id)
      expect(underAmendment.map(b => b.author).sort()).toEqual(amended)
      expect(underAmendment.map(b => b.id)).toContain(attempt.decidedBy)
      // The late scorer caught up through sync: the goal and the proposals it voted on were published before it started.
      const late0 = late.peer.replica.tree(plan)
      expect(late0?.status).toBe('completed')
      const synced = (await late.peer.metrics.accepted.get()).values.find(v => v.labels.source === 'sync')?.value ?? 0
      expect(synced).toBeGreaterThan(0)
      expect(fake.calls('score_proposals').some(r => modelOf(r) === late.model)).toBe(true)

      // The silent members never voted; the outsider never voted, never asked the model, and holds no ballot of its own.
      for (const node of tree.nodes) {
        for (const a of node.attempts) {
          for (const b of a.ballots) expect([live.id, late.id]).toContain(b.author)
        }
      }
      for (const p of swarm.peers()) {
        expect(p.replica.fold.treeHash(plan)).toBe(hash)
        expect(swarm.eventsBy(plan, outsider.id, p)).toEqual([])
      }
      expect(swarm.eventsBy(plan, outsider.id, outsider.peer).filter(e => e.env.type === 'ballot-cast')).toEqual([])
      expect(fake.calls().filter(r => modelOf(r) === outsider.model)).toEqual([])
      expect(outsider.peer.replica.tree(plan)?.status).toBe('completed')
      // ...and its store, read back once it stopped, holds the plan and no event of its own.
      await swarm.stopMember(outsider)
      const stored: PlanEvent[] = []
      const store = openEventStore({ dir: outsider.peer.dataDir })
      try {
        store.loadPlan(plan, row => {
          const d = decodeEvent(row.bytes, { swarm: 'test' })
          if (d.kind === 'event') stored.push(d.event)
        })
      } finally {
        store.close()
      }
      expect(stored.length).toBe(tree.events)
      expect(stored.filter(e => e.env.type === 'ballot-cast').length).toBeGreaterThan(0)
      expect(stored.filter(e => e.env.author === outsider.id)).toEqual([])
      console.log(`committee: ${Date.now() - t0} ms`)
    },
    150_000
  )
})
