/**
 * The role driver (roles/driver.ts) on virtual time, with a handler that
 * counts what it is asked: a pass decides only the plans that changed or
 * whose timer came due, free slots go to authors in turn (oldest plan first
 * within an author), and a plan held by the author limit is left alone
 * until an earlier plan of its author finishes, one held as history until
 * the node has caught up.
 */
import { describe, expect, it } from 'vitest'
import { startRole } from '../../roles/driver.js'
import { NodeClock, VirtualTime } from '../../src/sim/virtual-time.js'
import type { Intent, RoleHandler } from '../../roles/driver.js'
import type { PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanStatus, PlanTree } from '../../src/core/tree.js'
import type { NodeView } from '../../src/ports/node-view.js'
import type { LlmProvider } from '../../src/llm/types.js'

interface FakePlan {
  tree: PlanTree
  held: string | null
}

/** A node view of hand-made trees: `change` replaces a plan's tree and tells the driver, as a fold would. */
class FakeView {
  readonly time = new VirtualTime()
  readonly clock = new NodeClock(this.time, 0, 1)
  readonly plans = new Map<PlanId, FakePlan>()
  catchingUp = false
  private listener: ((events: readonly PlanEvent[]) => void) | undefined
  private seq = 0

  add(plan: string, author: string, at: number, status: PlanStatus = 'planning', held: string | null = null): void {
    this.plans.set(plan as PlanId, { tree: this.treeOf(plan, author, at, status), held })
    this.listener?.([{ id: plan, env: { plan: '', type: 'goal-submitted' } } as unknown as PlanEvent])
  }

  change(plan: string, status?: PlanStatus): void {
    const p = this.plans.get(plan as PlanId) as FakePlan
    p.tree = this.treeOf(plan, p.tree.author, p.tree.submittedAt.ms, status ?? p.tree.status)
    this.listener?.([{ id: `e${this.seq++}`, env: { plan, type: 'task-claimed' } } as unknown as PlanEvent])
  }

  private treeOf(plan: string, author: string, at: number, status: PlanStatus): PlanTree {
    return { plan, author, submittedAt: { ms: at, c: 0 }, status } as unknown as PlanTree
  }

  get view(): NodeView {
    return {
      me: 'me' as PeerIdString,
      scheduler: this.clock.scheduler,
      now: () => this.clock.scheduler.now(),
      plans: () => [...this.plans.keys()],
      tree: (p: PlanId) => this.plans.get(p)?.tree,
      held: (p: PlanId) => this.plans.get(p)?.held ?? null,
      catchingUp: () => this.catchingUp,
      onFolded: (fn: (events: readonly PlanEvent[]) => void) => {
        this.listener = fn
        return () => {
          this.listener = undefined
        }
      }
    } as unknown as NodeView
  }

  async run(ms: number): Promise<void> {
    await this.time.run(this.time.elapsed + ms)
  }
}

/** One intent per open plan, an act that takes `actMs`; counts decides per plan and records the acts in order. */
function countingHandler(
  fake: FakeView,
  actMs: number,
  wakes: Map<string, number> = new Map()
): RoleHandler & { decides: Map<string, number>; acts: string[] } {
  const decides = new Map<string, number>()
  const acts: string[] = []
  let wake: number | null = null
  const done = new Set<string>()
  return {
    decides,
    acts,
    decide: (tree: PlanTree, now: number): Intent[] => {
      decides.set(tree.plan, (decides.get(tree.plan) ?? 0) + 1)
      const at = wakes.get(tree.plan)
      if (at !== undefined && now < at) {
        wake = at
        return []
      }
      if (tree.status !== 'planning' || done.has(tree.plan)) return []
      return [{ key: `act:${tree.plan}` }]
    },
    nextWakeAt: () => {
      const w = wake
      wake = null
      return w
    },
    act: async (intent: { key: string }) => {
      acts.push(intent.key.slice(4))
      await new Promise<void>(resolve => fake.clock.scheduler.after(actMs, resolve))
      done.add(intent.key.slice(4))
      fake.change(intent.key.slice(4))
    }
  }
}

function ctxOf(fake: FakeView): Parameters<typeof startRole>[0] {
  return { view: fake.view, provider: {} as LlmProvider, say: () => {} }
}

describe('the role driver', () => {
  it('decides again only the plan that changed, however many are open', async () => {
    const fake = new FakeView()
    for (let i = 0; i < 200; i++) fake.add(`p${String(i).padStart(3, '0')}`, 'a', i, 'executing')
    const handler = countingHandler(fake, 10)
    const role = startRole(ctxOf(fake), handler, { pollMs: 250 })
    await fake.run(1_000)
    // Each plan decided once at the start; the polls since decided nothing (no plan changed, no timer due).
    expect(Math.max(...handler.decides.values())).toBe(1)
    expect(handler.decides.size).toBe(200)
    for (let k = 0; k < 5; k++) {
      fake.change('p100')
      await fake.run(300)
    }
    expect(handler.decides.get('p100')).toBe(6)
    expect([...handler.decides.values()].reduce((a, b) => a + b, 0)).toBe(205)
    await role.stop()
  })

  it('decides a plan again when the timer it reported comes due, without any event', async () => {
    const fake = new FakeView()
    fake.add('p1', 'a', 1)
    fake.add('p2', 'a', 2, 'executing')
    const t0 = fake.clock.scheduler.now()
    const handler = countingHandler(fake, 10, new Map([['p1', t0 + 700]]))
    const role = startRole(ctxOf(fake), handler, { pollMs: 250 })
    await fake.run(600)
    expect(handler.acts).toEqual([])
    await fake.run(400)
    expect(handler.acts).toEqual(['p1'])
    expect(handler.decides.get('p2')).toBe(1)
    await role.stop()
  })

  it('serves authors in turn: a flood of one author costs another one turn', async () => {
    const fake = new FakeView()
    // Author a posts 20 goals first; author b posts one after them.
    for (let i = 0; i < 20; i++) fake.add(`a${String(i).padStart(2, '0')}`, 'author-a', i)
    fake.add('b00', 'author-b', 100)
    const handler = countingHandler(fake, 1_000)
    const role = startRole(ctxOf(fake), handler, { pollMs: 250, concurrency: 2 })
    await fake.run(500)
    // Both slots taken at once: one for each author, each author's oldest plan first.
    expect(handler.acts.sort()).toEqual(['a00', 'b00'])
    await fake.run(30_000)
    expect(handler.acts.length).toBe(21)
    // Within an author, oldest plan first.
    const ofA = handler.acts.filter(p => p.startsWith('a'))
    expect(ofA).toEqual([...ofA].sort())
    await role.stop()
  })

  it('leaves a held plan alone until an earlier plan of its author finishes', async () => {
    const fake = new FakeView()
    fake.add('p1', 'a', 1)
    fake.add('p2', 'a', 2, 'planning', 'waits for 1 of its earlier plans')
    const handler = countingHandler(fake, 200)
    const role = startRole(ctxOf(fake), handler, { pollMs: 250 })
    await fake.run(1_000)
    expect(handler.acts).toEqual(['p1'])
    expect(handler.decides.get('p2')).toBeUndefined()
    // p1 finishes: the author limit lets p2 go, and the driver looks at p2 again without an event of p2.
    ;(fake.plans.get('p2' as PlanId) as FakePlan).held = null
    fake.change('p1', 'completed')
    await fake.run(1_000)
    expect(handler.acts).toEqual(['p1', 'p2'])
    await role.stop()
  })

  it('leaves a plan held as history alone while the node catches up, and decides it again once it stops', async () => {
    const fake = new FakeView()
    fake.catchingUp = true
    fake.add('old', 'a', 1, 'planning', 'waits while this node catches up on the swarm history')
    fake.add('new', 'b', 2)
    const handler = countingHandler(fake, 10)
    const role = startRole(ctxOf(fake), handler, { pollMs: 250 })
    await fake.run(1_000)
    expect(handler.acts).toEqual(['new'])
    // The stream stops: the plan is not held any more, and it is decided again without an event of its own.
    ;(fake.plans.get('old' as PlanId) as FakePlan).held = null
    fake.catchingUp = false
    await fake.run(1_000)
    expect(handler.acts).toEqual(['new', 'old'])
    await role.stop()
  })
})
