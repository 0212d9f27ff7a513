/**
 * A plan as an A2A task (src/a2a/server-tasks.ts), on hand-made trees: the
 * states the offline swarm of test/e2e/a2a-server.test.ts cannot reach
 * (a spent budget, a plan held back by its author's limit, a failed plan),
 * who counts as a person awaited, and which results become artifacts.
 */
import { describe, expect, it } from 'vitest'
import { TaskState } from '@a2a-js/sdk'
import { artifactsOf, asSubmitted, stateOf, taskOf } from '../../src/a2a/server-tasks.js'
import type { PeerIdString } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const SCORER = '12D3KooWscorer' as PeerIdString
const PERSON = '12D3KooWperson' as PeerIdString
const ME = '12D3KooWme' as PeerIdString

function tree(over: Record<string, unknown> = {}): PlanTree {
  const node = (id: string, title: string, task: string | null, awaiting: PeerIdString[] = []): unknown => ({
    id,
    parent: id === 'root' ? null : 'root',
    title,
    task,
    awaiting,
    attempts: [{ proposals: [{ id: 'p' }] }]
  })
  const task = (id: string, nodeId: string, output: string | null): unknown => ({
    id,
    node: nodeId,
    kind: nodeId === 'root' ? 'rollup' : 'leaf',
    status: output === null ? 'ready' : 'done',
    awaiting: [],
    chains: [],
    finishedAt: output === null ? null : { ms: 2_000, c: 0 },
    results: output === null ? [] : [{ accepted: true, output, source: 'model', model: 'm', author: SCORER }]
  })
  return {
    plan: 'a'.repeat(64),
    goal: 'plan a picnic',
    author: ME,
    submittedAt: { ms: 1_000, c: 0 },
    params: {},
    status: 'executing',
    statusReason: 'executors are working on tasks',
    budgetTokens: 1_000,
    spentTokens: 10,
    nodes: [node('root', 'plan a picnic', 't-root'), node('n1', 'Book the park', 't1'), node('n2', 'Food', 't2')],
    tasks: [task('t1', 'n1', 'booked'), task('t2', 'n2', null), task('t-root', 'root', null)],
    deliverable: null,
    ...over
  } as unknown as PlanTree
}

const scorersOnly = { held: null, isPerson: (p: PeerIdString) => p !== SCORER }

describe('a plan as an A2A task', () => {
  it('is working, with how many tasks are done', () => {
    expect(stateOf(tree(), scorersOnly)).toEqual({
      state: TaskState.TASK_STATE_WORKING,
      text: 'executing: 1/3 tasks done, 3 nodes, 10/1000 tokens'
    })
  })

  it('asks for a larger budget when the budget is spent, and is submitted while held back', () => {
    const spent = stateOf(tree({ status: 'budget-exhausted' }), scorersOnly)
    expect(spent.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(spent.text).toMatch(/budget of 1000 tokens is spent.*data part \{"budgetTokens"/)
    const held = stateOf(tree(), { ...scorersOnly, held: "waits for its author's earlier open plan to finish" })
    expect(held).toEqual({
      state: TaskState.TASK_STATE_SUBMITTED,
      text: "submitted: the plan waits for its author's earlier open plan to finish"
    })
  })

  it('is input-required while a person is awaited, not while a scorer is', () => {
    const waitsScorer = tree({ nodes: [...tree().nodes.slice(0, 2), { ...tree().nodes[2], awaiting: [SCORER] }] })
    expect(stateOf(waitsScorer, scorersOnly).state).toBe(TaskState.TASK_STATE_WORKING)
    const waitsPerson = tree({ nodes: [...tree().nodes.slice(0, 2), { ...tree().nodes[2], awaiting: [PERSON] }] })
    const s = stateOf(waitsPerson, scorersOnly)
    expect(s.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(s.text).toContain(PERSON.slice(-8))
  })

  it('ends completed, failed or canceled', () => {
    expect(stateOf(tree({ status: 'completed' }), scorersOnly).state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(stateOf(tree({ status: 'failed', statusReason: 'the root task failed' }), scorersOnly).text).toMatch(
      /^failed: the root task failed/
    )
    expect(stateOf(tree({ status: 'cancelled', statusReason: 'cancelled by its author: no' }), scorersOnly)).toEqual({
      state: TaskState.TASK_STATE_CANCELED,
      text: 'cancelled by its author: no'
    })
  })

  it("has the accepted results as artifacts, the root's roll-up as the deliverable, last", () => {
    const done = tree({
      status: 'completed',
      tasks: [...tree().tasks.slice(0, 2), { ...tree().tasks[2], status: 'done', results: [{ accepted: true }] }],
      deliverable: { task: 't-root', result: 'r', output: 'the whole picnic' }
    })
    const a = artifactsOf(done)
    expect(a.map(x => [x.artifactId, x.name])).toEqual([
      ['task-t1', 'Book the park'],
      ['deliverable', 'deliverable']
    ])
    expect(a[1]?.parts[0]?.content).toEqual({ $case: 'text', value: 'the whole picnic' })
    const task = taskOf(done, { ...scorersOnly, treeHash: 'h', me: ME })
    expect(task.id).toBe(done.plan)
    expect(task.contextId).toBe(done.plan)
    expect(task.metadata).toMatchObject({ goal: 'plan a picnic', yours: true, treeHash: 'h' })
    expect(task.status?.timestamp).toBe(new Date(2_000).toISOString())
    expect(asSubmitted(task, 'peer').status?.state).toBe(TaskState.TASK_STATE_SUBMITTED)
  })
})
