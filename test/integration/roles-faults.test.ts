/**
 * Roles under faults and author actions, as real in-process peers against
 * the fake Messages API: an executor that dies holding a claim, a plan that
 * runs out of budget and is resumed, a plan cancelled mid-way.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeLlm, type FakeLlm, type RecordedRequest } from '../helpers/fake-llm.js'
import { waitUntil } from '../helpers/wait.js'
import { RoleSwarm, autoStep, modelOf, promptOf, titleIn } from '../helpers/roles-swarm.js'
import { SKEW_ALLOWANCE_MS } from '../../roles/claim-rules.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree, TaskView } from '../../src/core/tree.js'

const GOAL = 'plan a two-week trip to Japan'

let swarm: RoleSwarm | undefined
let fake: FakeLlm | undefined

afterEach(async () => {
  await swarm?.stop()
  await fake?.close()
  swarm = undefined
  fake = undefined
})

function taskTitled(tree: PlanTree, title: string): TaskView | undefined {
  const node = tree.nodes.find(n => n.title === title)
  return node === undefined ? undefined : tree.tasks.find(t => t.id === node.task)
}

/** Until the fake's request count stays the same for `ms`; returns the count. */
async function flatFor(f: FakeLlm, ms: number): Promise<{ before: number; after: number; late: RecordedRequest[] }> {
  const before = f.requests.length
  await sleep(ms)
  return { before, after: f.requests.length, late: f.requests.slice(before) }
}

describe('roles: faults and author actions', () => {
  it('an executor stopped while it holds a claim: another takes the leaf over after the lease lapses, and the plan completes', async () => {
    const t0 = Date.now()
    // Executions of the first leaf to be executed hang (a minute-long answer) until its holder is stopped: the holder
    // is mid-task when it stops (so is any executor that raced it for the leaf, until it learns it lost).
    let slowTitle: string | undefined
    let slow = true
    fake = await startFakeLlm({
      latencyMs: 50,
      auto: { children: 3 },
      script: req => {
        const p = promptOf(req)
        if (req.tool === 'report_result' && p.startsWith('Role: executor.')) {
          slowTitle ??= titleIn(p, 'task') ?? undefined
          if (slow && titleIn(p, 'task') === slowTitle) return { kind: 'auto', delayMs: 60_000 }
        }
        return { kind: 'auto' }
      }
    })
    swarm = await RoleSwarm.start({ llm: { fake }, decomposers: 1, scorers: 1, executors: 3 })
    const leaseMs = 2_000
    const plan = await swarm.submit(GOAL, { maxDepth: 1, leaseMs })

    await waitUntil('an executor to be mid-task on a leaf', () => slowTitle !== undefined, 60_000)
    const title = slowTitle as string
    // Its owner holds the claim, has asked the model, and keeps its lease alive while the model works.
    let ownerId: string | null = null
    await waitUntil(
      'the owner of the leaf to renew its lease',
      () => {
        const t = taskTitled(swarm?.tree(plan) as PlanTree, title)
        ownerId = t?.owner ?? null
        return t?.status === 'claimed' && (t.chains[t.chains.length - 1]?.renewals ?? 0) >= 1
      },
      30_000
    )
    const holder = swarm.live('executor').find(m => m.id === ownerId)
    expect(holder).toBeDefined()
    expect(
      fake.calls('report_result').some(r => titleIn(promptOf(r), 'task') === title && modelOf(r) === holder!.model)
    ).toBe(true)

    await swarm.stopMember(holder!)
    const stoppedAt = Date.now()
    slow = false
    await waitUntil(
      'another executor to take the leaf over and finish it',
      () => taskTitled(swarm?.tree(plan) as PlanTree, title)?.status === 'done',
      60_000
    )
    await swarm.waitStatus(plan, 'completed', 60_000)
    const hash = await swarm.waitConverged(plan)

    const tree = swarm.tree(plan) as PlanTree
    const task = taskTitled(tree, title) as TaskView
    // The superseded chain: the dead holder's claim (renewed, never ended), then the takeover that produced the result.
    expect(task.chains.length).toBeGreaterThanOrEqual(2)
    const [first, second] = task.chains
    expect(first?.owner).toBe(holder!.id)
    expect(first?.renewals).toBeGreaterThanOrEqual(1)
    expect(first?.end?.kind).toBe('superseded')
    expect(second?.owner).not.toBe(holder!.id)
    expect(swarm.live('executor').map(m => m.id)).toContain(second?.owner)
    // The takeover is stamped after the lapse, and after the lapse plus the skew allowance as the taker saw the
    // chain: its claim cites the last claim or renewal it held (a later renewal may have reached it late).
    expect(second!.claimedAt.ms).toBeGreaterThan(first!.lapseMs)
    const takeover = swarm.client.replica.fold.events.get(second!.claim) as PlanEvent<'task-claimed'>
    const seen =
      takeover.env.body.prev === null ? undefined : swarm.client.replica.fold.events.get(takeover.env.body.prev)
    expect(seen?.env.author).toBe(holder!.id)
    expect(takeover.env.deps).toContain(seen?.id)
    expect(second!.claimedAt.ms).toBeGreaterThan((seen?.env.hlc.ms ?? Infinity) + leaseMs + SKEW_ALLOWANCE_MS)
    // The result ends a taker's chain. (Under heavy load a third executor may claim after the taker's lease looked
    // lapsed to it; that chain is then left open by the result, so the result's chain need not be the last.)
    const resulted = task.chains.filter(c => c.end?.kind === 'result')
    expect(resulted).toHaveLength(1)
    expect(resulted[0]?.owner).not.toBe(holder!.id)
    const accepted = task.results.filter(r => r.accepted)
    expect(accepted).toHaveLength(1)
    expect(swarm.live('executor').map(m => m.id)).toContain(accepted[0]?.author)
    expect(task.results.some(r => r.author === holder!.id)).toBe(false)
    expect(tree.deliverable).not.toBeNull()
    // The model saw the task from the dead holder before the stop, then from the taker after it.
    const calls = fake.calls('report_result').filter(r => titleIn(promptOf(r), 'task') === title)
    expect(calls.filter(r => modelOf(r) === holder!.model)).toHaveLength(1)
    const after = calls.filter(r => r.at > stoppedAt)
    expect(after.length).toBeGreaterThanOrEqual(1)
    for (const r of after) expect(modelOf(r)).not.toBe(holder!.model)
    for (const h of swarm.hashes(plan)) expect(h.fold, h.name).toBe(hash)
    // The stopped executor published nothing after it stopped: its last event is a renewal of the claim.
    expect(holder!.lines.some(l => l.startsWith('stopped'))).toBe(true)
    console.log(
      `takeover: ${Date.now() - t0} ms; taken over ${second!.claimedAt.ms - stoppedAt} ms after ` +
        `the stop (lease ${leaseMs} ms + skew ${SKEW_ALLOWANCE_MS} ms)`
    )
  }, 150_000)

  it('a plan out of budget stops making model calls until its author raises the budget, then completes', async () => {
    const t0 = Date.now()
    // Every call reports 1000 tokens.
    fake = await startFakeLlm({
      latencyMs: 50,
      script: req => autoStep(req, { auto: { children: 3 }, usage: { input_tokens: 900, output_tokens: 100 } })
    })
    swarm = await RoleSwarm.start({ llm: { fake }, decomposers: 1, scorers: 1, executors: 2 })
    const plan = await swarm.submit(GOAL, { maxDepth: 1, budgetTokens: 3_000 })

    await swarm.waitStatus(plan, 'budget-exhausted', 60_000)
    // Calls a peer started before it heard of the exhaustion may still land (an executor past its claim calls after a
    // 150 ms confirmation); then nothing more.
    await sleep(300)
    const flat = await flatFor(fake, 2_000)
    expect(flat.late.map(r => `${r.tool ?? ''} ${modelOf(r)}`)).toEqual([])
    let tree = swarm.tree(plan) as PlanTree
    expect(tree.status).toBe('budget-exhausted')
    expect(tree.spentTokens).toBeGreaterThanOrEqual(3_000)
    // The overspend is bounded by the calls in flight: here at most the three leaves.
    expect(tree.spentTokens).toBeLessThanOrEqual(5_000)
    expect(tree.deliverable).toBeNull()
    for (const p of swarm.peers()) expect(p.replica.tree(plan)?.status).toBe('budget-exhausted')
    const beforeRaise = fake.requests.length

    // The author raises the budget; the plan resumes where it stopped and completes.
    const raisedAt = Date.now()
    await swarm.client.publish('budget-raised', plan, [], { budgetTokens: 100_000 })
    await swarm.waitStatus(plan, 'completed', 60_000)
    await swarm.waitConverged(plan)
    tree = swarm.tree(plan) as PlanTree
    expect(tree.budgetTokens).toBe(100_000)
    expect(tree.deliverable).not.toBeNull()
    // Spent is what the model reported, event by event: every event that carries usage carries the fake's 1000 tokens.
    const withUsage = [...(swarm.client.replica.fold.events.plan(plan)?.events.values() ?? [])]
      .map(e => (e.env.body as { usage?: { inputTokens: number; outputTokens: number } }).usage)
      .filter(u => u !== undefined)
    expect(withUsage.length).toBeGreaterThanOrEqual(6)
    for (const u of withUsage) expect(u).toEqual({ inputTokens: 900, outputTokens: 100 })
    expect(tree.spentTokens).toBe(1_000 * withUsage.length)
    const after = fake.requests.slice(beforeRaise)
    expect(after.length).toBeGreaterThan(0)
    for (const r of after) expect(r.at).toBeGreaterThanOrEqual(raisedAt)
    // The root's roll-up ran only after the raise.
    expect(after.some(r => r.tool === 'report_result' && promptOf(r).startsWith('Role: executor (roll-up).'))).toBe(
      true
    )
    console.log(`budget: ${Date.now() - t0} ms, spent ${tree.spentTokens} of ${tree.budgetTokens}`)
  }, 150_000)

  it('a plan cancelled by its author mid-way is cancelled on every peer and makes no more model calls', async () => {
    const t0 = Date.now()
    // Executions take a while, so the plan is mid-way when it is cancelled.
    fake = await startFakeLlm({
      latencyMs: 50,
      script: req =>
        autoStep(req, { auto: { children: 3 }, ...(req.tool === 'report_result' ? { delayMs: 1_500 } : {}) })
    })
    swarm = await RoleSwarm.start({ llm: { fake }, decomposers: 1, scorers: 1, executors: 2 })
    const plan = await swarm.submit(GOAL, { maxDepth: 2 })

    await waitUntil('the first execution to start', () => fake!.calls('report_result').length > 0, 60_000)
    await swarm.client.publish('goal-cancelled', plan, [], { reason: 'the trip is off' })
    await swarm.waitStatus(plan, 'cancelled', 30_000)
    await sleep(300)
    // Meanwhile the calls in flight at the cancellation finish (1.5 s each) and their results are folded.
    const flat = await flatFor(fake, 2_000)
    expect(flat.late.map(r => `${r.tool ?? ''} ${modelOf(r)}`)).toEqual([])
    // The plan stays cancelled.
    const hash = await swarm.waitConverged(plan)
    for (const p of swarm.peers()) {
      const t = p.replica.tree(plan) as PlanTree
      expect(t.status).toBe('cancelled')
      expect(t.statusReason).toContain('the trip is off')
      expect(t.deliverable).toBeNull()
      expect(p.replica.fold.treeHash(plan)).toBe(hash)
    }
    const tree = swarm.tree(plan) as PlanTree
    expect(tree.tasks.filter(t => t.status === 'done').length).toBeLessThan(tree.tasks.length)
    console.log(
      `cancel: ${Date.now() - t0} ms; ${tree.tasks.filter(t => t.status === 'done').length}/${tree.tasks.length} tasks done when cancelled`
    )
  }, 150_000)

  it('an executor that learns of the cancellation while it confirms its claim does not call the model', async () => {
    // roles/executor.ts: after claiming, the executor waits CONFIRM_MS for an earlier competing claim, then
    // checks only that it still owns the task; it does not check that the plan still takes work. Here the
    // cancellation is folded at the executor right after its claim (inside the confirmation wait): the
    // executor knows the plan is cancelled before it calls the model.
    const run: { plan?: PlanId } = {}
    let cancelled: { at: number; status: string | undefined } | undefined
    fake = await startFakeLlm({ latencyMs: 50, auto: { children: 3 } })
    swarm = await RoleSwarm.start({
      llm: { fake },
      decomposers: 1,
      scorers: 1,
      executors: 1,
      afterPublish: async (member, event) => {
        const plan = run.plan
        if (
          member.role !== 'executor' ||
          event.env.type !== 'task-claimed' ||
          cancelled !== undefined ||
          plan === undefined ||
          swarm === undefined
        )
          return
        const { bytes } = await swarm.client.publish('goal-cancelled', plan, [], {
          reason: 'cancelled while an executor confirms its claim'
        })
        member.peer.replica.ingest(bytes, 'gossip')
        cancelled = { at: Date.now(), status: member.peer.replica.tree(plan)?.status }
      }
    })
    const plan = await swarm.submit(GOAL, { maxDepth: 1 })
    run.plan = plan
    await waitUntil(
      'the executor to claim a leaf, and the cancellation to reach it',
      () => cancelled !== undefined,
      60_000
    )
    expect(cancelled?.status).toBe('cancelled')
    await swarm.waitStatus(plan, 'cancelled', 30_000)
    await sleep(1_500)
    // Expected: no model call for the plan once the executor holds its cancellation. Actual (see the report):
    // the executor calls the model for the leaf it had just claimed, and for any other claim of the same pass.
    const calls = fake.calls('report_result').filter(r => r.at >= (cancelled?.at ?? 0))
    expect(
      calls.map(
        r =>
          `execute "${titleIn(promptOf(r), 'task') ?? ''}" ` +
          `by ${modelOf(r)}, ${r.at - (cancelled?.at ?? 0)} ms after the executor folded the cancellation`
      )
    ).toEqual([])
    const executor = swarm.live('executor')[0]!
    expect(
      executor.lines.filter(l => l.startsWith('executing')),
      'what the executor said'
    ).toEqual([])
  }, 120_000)
})
