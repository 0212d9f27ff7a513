/**
 * An executor's tool loop inside the swarm (in-process peers, the fake
 * Messages API, an in-memory tool box): the limits that stop a loop are the
 * executor's, and what it publishes says why.
 *   - A model that never stops calling tools: the task fails at the step
 *     limit, saying so, with the turns and the tokens of every turn counted.
 *   - A plan that runs out of budget mid-loop: the loop stops between turns
 *     (no further model request), and the failure carries what it spent.
 *   - A plan without tools on the same executor: a plain call, no loop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RoleSwarm } from '../helpers/roles-swarm.js'
import { startFakeLlm } from '../helpers/fake-llm.js'
import type { ExecutorTools } from '../../roles/driver.js'
import type { FakeLlm } from '../helpers/fake-llm.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'

const TURN_USAGE = { input_tokens: 900, output_tokens: 100 }

describe('the tool loop inside the swarm', () => {
  let fake: FakeLlm
  let swarm: RoleSwarm
  let calls = 0
  const tools: ExecutorTools = {
    box: {
      list: () => [
        {
          server: 'lab',
          name: 'echo',
          description: 'echo',
          schema: { type: 'object', properties: { text: { type: 'string' } } }
        }
      ],
      call: async (_server, _tool, args) => {
        calls++
        return { ok: true, text: `echo ${JSON.stringify(args)}` }
      }
    },
    offers: () => ['lab', 'lab/echo'],
    limits: { maxSteps: 4, toolTimeoutMs: 5_000, maxResultBytes: 4_096 }
  }

  beforeAll(async () => {
    // A model that calls the tool on every turn it may, and answers only when forced to (never, here: see below).
    fake = await startFakeLlm({
      latencyMs: 5,
      script: req =>
        req.offered.includes('lab__echo')
          ? { kind: 'tool', name: 'lab__echo', input: { text: 'again' }, usage: TURN_USAGE }
          : { kind: 'auto' }
    })
    swarm = await RoleSwarm.start({
      decomposers: 0,
      scorers: 1,
      executors: 1,
      llm: { fake },
      tools: () => tools
    })
    await swarm.waitMeshed()
  }, 120_000)

  afterAll(async () => {
    await swarm?.stop()
    await fake?.close()
  })

  const failure = (plan: PlanId): PlanEvent<'task-failed'> | undefined =>
    swarm.client.view.planEvents(plan)?.find((e): e is PlanEvent<'task-failed'> => e.env.type === 'task-failed')

  it('a model that never stops calling tools fails at the step limit, every turn counted', async () => {
    const before = fake.requests.length
    calls = 0
    const plan = await swarm.submit('call the lab forever', { maxDepth: 0, maxAttempts: 1, tools: true })
    await swarm.waitStatus(plan, 'failed', 60_000)
    const f = failure(plan)
    expect(f?.env.body.error).toMatch(/step limit/)
    expect(f?.env.body.turns).toBe(4)
    expect(fake.requests.length - before).toBe(4)
    // Three turns ran the tool; the fourth forced report_result and got a tool call anyway.
    expect(calls).toBe(3)
    const tree = swarm.client.view.tree(plan)
    expect(tree?.spentTokens).toBe(4 * 1_000)
  }, 90_000)

  it('a plan out of budget stops the loop between turns', async () => {
    const before = fake.requests.length
    const plan = await swarm.submit('call the lab on a budget', {
      maxDepth: 0,
      maxAttempts: 1,
      tools: true,
      budgetTokens: 2_500
    })
    await swarm.waitStatus(plan, ['failed', 'budget-exhausted'], 60_000)
    const f = failure(plan)
    expect(f?.env.body.error).toMatch(/stopped between turns: the plan's budget of 2500 tokens is spent/)
    // Two turns fit under the budget and a third would not: it was never sent.
    expect(f?.env.body.turns).toBe(3)
    expect(fake.requests.length - before).toBe(3)
    expect((f?.env.body.usage.inputTokens ?? 0) + (f?.env.body.usage.outputTokens ?? 0)).toBe(3_000)
  }, 90_000)

  it('a plan without tools gets a plain call on the same executor', async () => {
    const before = fake.requests.length
    const plan = await swarm.submit('no tools here', { maxDepth: 0 })
    await swarm.waitStatus(plan, 'completed', 60_000)
    const mine = fake.requests.slice(before)
    expect(mine.every(r => !r.offered.includes('lab__echo'))).toBe(true)
    const result = swarm.client.view.tree(plan)?.tasks[0]?.results[0]
    expect(result?.toolCalls).toStrictEqual([])
  }, 90_000)
})
