/**
 * decideExecutor after a restart on the same data dir (same peer id): a
 * lapsed claim of this peer that no work of this process holds is the claim
 * of a killed run. The executor takes it over like anyone else's (it may be
 * the only executor left), and such claims do not use up its claim limit.
 * While it works on a task, its own lapsed-looking chain is left alone.
 * Found by test/resilience/restart.test.ts: a lone executor killed while it
 * held a claim never finished the plan after its restart.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { SKEW_ALLOWANCE_MS, decideExecutor } from '../../roles/claim-rules.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { child, leafTask, makeCast, split, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString } from '../../src/core/events.js'

let cast: Cast
let e0: PeerIdString
beforeAll(async () => {
  cast = await makeCast()
  e0 = cast.executors[0] as PeerIdString
})

/** Two leaves, both claimed by e0 at 3000 with a 1000 ms lease (its limit is 2), never renewed. */
function killedRun(): { tree: ReturnType<typeof treeOf>; tasks: string[] } {
  const [s0, s1, s2] = cast.scorers
  const b = new PlanBuilder(cast.author, [s0, s1, s2], { leaseMs: 1000, maxClaimsPerExecutor: 2 })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0] as PeerIdString,
    titles: ['book flights', 'book hotels'],
    voters: [s0, s1],
    at: 2000
  })
  const t0 = leafTask(child(s, 0))
  const t1 = leafTask(child(s, 1))
  return { tree: treeOf(b, [...s.events, b.claim(e0, t0, 3000), b.claim(e0, t1, 3001)]), tasks: [t0, t1] }
}

const AFTER_LAPSE = 4001 + SKEW_ALLOWANCE_MS + 10

describe('decideExecutor: its own claims from before a restart', () => {
  it('takes over its own lapsed claims that this process is not working on', () => {
    const { tree, tasks } = killedRun()
    const intents = decideExecutor(tree, e0, AFTER_LAPSE, [e0], 0, () => 0, 250, {
      stableView: true,
      workingOn: () => false
    })
    expect(intents.map(i => i.task.id).sort()).toEqual([...tasks].sort())
    for (const i of intents) expect(i.prev).not.toBeNull()
  })

  it('leaves alone the tasks it is still working on', () => {
    const { tree, tasks } = killedRun()
    const intents = decideExecutor(tree, e0, AFTER_LAPSE, [e0], 1, () => 0, 250, {
      stableView: true,
      workingOn: t => t === tasks[0]
    })
    expect(intents.map(i => i.task.id)).toEqual([tasks[1]])
  })

  it('does nothing before the lapse plus the skew allowance', () => {
    const { tree } = killedRun()
    expect(
      decideExecutor(tree, e0, 4001 + SKEW_ALLOWANCE_MS - 10, [e0], 0, () => 0, 250, {
        stableView: true,
        workingOn: () => false
      })
    ).toEqual([])
  })
})

describe('decideExecutor: a clock that runs ahead sees no live lease as lapsed', () => {
  /** e1 claims at 3000 and renews at 3800 (1000 ms lease): alive. e0's clock runs 30 s ahead. */
  function renewing(): { tree: ReturnType<typeof treeOf>; renewal: string } {
    const [s0, s1, s2] = cast.scorers
    const e1 = cast.executors[1] as PeerIdString
    const b = new PlanBuilder(cast.author, [s0, s1, s2], { leaseMs: 1000 })
    const s = split(b, {
      node: b.root,
      by: cast.decomposers[0] as PeerIdString,
      titles: ['book flights', 'book hotels'],
      voters: [s0, s1],
      at: 2000
    })
    const c = b.claim(e1, leafTask(child(s, 0)), 3000)
    const r = b.renew(c, c, 3800)
    const other = b.claim(e1, leafTask(child(s, 1)), 3001)
    const r2 = b.renew(other, other, 3801)
    return { tree: treeOf(b, [...s.events, c, r, other, r2]), renewal: r.id }
  }
  const SKEWED_NOW = 3800 + 30_000

  it('without heardAt, the stamps alone make every lease look lapsed (the storm)', () => {
    const { tree } = renewing()
    expect(decideExecutor(tree, e0, SKEWED_NOW, [e0], 0, () => 0, 250, { stableView: true })).toHaveLength(2)
  })

  it('with heardAt, it waits a lease after it heard the last renewal, by its own clock', () => {
    const { tree } = renewing()
    const heard = new Map<string, number>()
    const heardAt = (id: string): number => {
      if (!heard.has(id)) heard.set(id, SKEWED_NOW - 100)
      return heard.get(id) as number
    }
    expect(decideExecutor(tree, e0, SKEWED_NOW, [e0], 0, () => 0, 250, { stableView: true, heardAt })).toEqual([])
    // Silent for a lease and the allowance by its own clock: the owner is gone, take over.
    expect(
      decideExecutor(tree, e0, SKEWED_NOW - 100 + 1000 + SKEW_ALLOWANCE_MS + 10, [e0], 0, () => 0, 250, {
        stableView: true,
        heardAt
      })
    ).toHaveLength(2)
  })
})
