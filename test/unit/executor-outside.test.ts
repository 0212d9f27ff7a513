/**
 * Who executes a plan's tasks (protocol 2's `executors`): model executors
 * leave a plan reserved for outside workers alone, and share a mixed plan
 * ('any') with them as with any executor; outside workers (MCP task_next,
 * `task next`) take only plans that welcome them.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { createExecutor } from '../../roles/executor.js'
import { decideExecutor, rankFor, stableViewMs, VIEW_UNCHANGED_MS } from '../../roles/claim-rules.js'
import type { RoleContext } from '../../roles/driver.js'
import { welcomesModels, welcomesOutside } from '../../roles/plan-context.js'
import { PlanBuilder } from '../helpers/plan-builder.js'
import { makeCast, split, treeOf } from '../helpers/fold-fixtures.js'
import type { Cast } from '../helpers/fold-fixtures.js'
import type { PeerIdString } from '../../src/core/events.js'

let cast: Cast
beforeAll(async () => {
  cast = await makeCast()
})

function twoLeaves(executors: 'model' | 'outside' | 'any' | undefined): ReturnType<typeof treeOf> {
  const [s0, s1, s2] = cast.scorers
  const b = new PlanBuilder(cast.author, [s0, s1, s2], executors === undefined ? {} : { executors })
  const s = split(b, {
    node: b.root,
    by: cast.decomposers[0] as PeerIdString,
    titles: ['book flights', 'book hotels'],
    voters: [s0, s1],
    at: 2000
  })
  return treeOf(b, s.events)
}

describe('executors: model, outside or any', () => {
  it('model executors claim in plans of protocol 1 and in mixed plans, never in plans reserved for outside workers', () => {
    const e0 = cast.executors[0] as PeerIdString
    const claims = (t: ReturnType<typeof treeOf>): number =>
      decideExecutor(t, e0, 10_000, [e0], 0, () => 0, 250, { stableView: true }).length
    expect(claims(twoLeaves(undefined))).toBe(2)
    expect(claims(twoLeaves('any'))).toBe(2)
    expect(claims(twoLeaves('outside'))).toBe(0)
  })

  it('outside workers are welcome only where the plan says so', () => {
    expect([undefined, 'model', 'any', 'outside'].map(e => welcomesOutside(twoLeavesOr(e)))).toEqual([
      false,
      false,
      true,
      true
    ])
    expect([undefined, 'model', 'any', 'outside'].map(e => welcomesModels(twoLeavesOr(e)))).toEqual([
      true,
      true,
      true,
      false
    ])
  })
})

function twoLeavesOr(e: string | undefined): ReturnType<typeof treeOf> {
  return twoLeaves(e === 'model' ? undefined : (e as 'outside' | 'any' | undefined))
}

describe('executors: a stable view of the executors', () => {
  it('is watched from the start, so the first plan into a settled swarm skips the confirmation wait', () => {
    const tree = twoLeaves(undefined)
    // Keys are fresh each run: this executor is the one that ranks first for the first leaf.
    const [a, b] = [cast.executors[0] as PeerIdString, cast.executors[1] as PeerIdString]
    const leaf = tree.tasks.find(t => t.status === 'ready')?.id as string
    const [e0, e1] = rankFor(leaf, a, [a, b]) === 0 ? [a, b] : [b, a]
    // The tree's split is stamped at 2000 ms; the executors have been listed since well before.
    let now = 2_000 - VIEW_UNCHANGED_MS - 1_000
    const view = {
      me: e0,
      now: () => now,
      roster: () => [{ peerId: e1, role: 'executor' }],
      presenceIntervalMs: () => 500,
      lagMs: () => 0
    }
    const handler = createExecutor({ view } as unknown as RoleContext)
    // The driver ticks every pass, plans or none; the roster has not changed for longer than stableViewMs.
    for (; now < 2_000; now += 250) handler.tick?.(now)
    expect(now - (2_000 - VIEW_UNCHANGED_MS - 1_000)).toBeGreaterThan(Math.max(stableViewMs(500), VIEW_UNCHANGED_MS))
    const intents = handler.decide(tree, now) as unknown as Array<{ kind: string; confirm?: boolean }>
    const mine = intents.filter(i => i.kind === 'claim')
    expect(mine.length).toBeGreaterThan(0)
    // Ranked first and claiming at once: nobody can have claimed first, so no wait.
    expect(mine.some(i => i.confirm === false)).toBe(true)
  })
})
