import { createHash } from 'node:crypto'
import { TaskState } from '@a2a-js/sdk'
import { approversFor } from '../core/events.js'
import type { Artifact, Message, Part, Task, TaskStatus } from '@a2a-js/sdk'
import type { PlanSummary } from '../core/fold.js'
import type { PeerIdString } from '../core/events.js'
import type { PlanStatus, PlanTree } from '../core/tree.js'
import type { PlanSummaryAnswer } from '../ports/transport.js'

/**
 * A plan as an A2A task, derived from the node's view every time it is
 * asked for: the plan tree is the one truth, so nothing here is stored.
 * The task id and the context id are both the plan id; the state and its
 * message say how far the plan is; the artifacts are the results of its
 * tasks in tree order, then the deliverable.
 */

/** The artifact id of a plan's deliverable. */
export const DELIVERABLE = 'deliverable'

/** States after which nothing more happens to a task. */
export const TERMINAL: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED
])

/** What a task's state is derived from, besides the tree. */
export interface TaskFacts {
  /** Why the plan waits for its author's earlier plans (view.held), or null. */
  readonly held: string | null
  /** Whether a peer the plan waits for is a person or an approver rather than a scorer at work. */
  readonly isPerson: (peer: PeerIdString) => boolean
  /** The plan's tree hash, for the metadata. */
  readonly treeHash: string | undefined
  /** This node's key: `yours` in the metadata. */
  readonly me: PeerIdString
}

export function textPart(text: string, mediaType = 'text/plain'): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType }
}

function agentMessage(plan: string, text: string): Message {
  return {
    // The same words on the same plan make the same id: a status message is derived, never stored.
    messageId: createHash('sha256').update(`${plan}\n${text}`).digest('hex').slice(0, 32),
    contextId: plan,
    taskId: plan,
    role: 2, // Role.ROLE_AGENT
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: []
  }
}

function counts(tree: PlanTree): string {
  const done = tree.tasks.filter(t => t.status === 'done').length
  return (
    `${done}/${tree.tasks.length} tasks done, ${tree.nodes.length} node${tree.nodes.length === 1 ? '' : 's'}, ` +
    `${tree.spentTokens}/${tree.budgetTokens} tokens`
  )
}

/** The people (committee members who are not scorers at work, and approvers) an open plan waits for. */
export function awaitedPeople(tree: PlanTree, isPerson: (peer: PeerIdString) => boolean): PeerIdString[] {
  const approvers = new Set([...approversFor(tree.params, 'splits'), ...approversFor(tree.params, 'results')])
  const out = new Set<PeerIdString>()
  for (const n of tree.nodes) for (const p of n.awaiting) if (approvers.has(p) || isPerson(p)) out.add(p)
  for (const t of tree.tasks) for (const p of t.awaiting) if (approvers.has(p) || isPerson(p)) out.add(p)
  return [...out].sort()
}

/** A plan's A2A state and the words that go with it. */
export function stateOf(
  tree: PlanTree,
  facts: Pick<TaskFacts, 'held' | 'isPerson'>
): { state: TaskState; text: string } {
  switch (tree.status) {
    case 'completed':
      return { state: TaskState.TASK_STATE_COMPLETED, text: `completed: ${counts(tree)}` }
    case 'failed':
      return { state: TaskState.TASK_STATE_FAILED, text: `failed: ${tree.statusReason} (${counts(tree)})` }
    case 'cancelled':
      return { state: TaskState.TASK_STATE_CANCELED, text: tree.statusReason }
    case 'budget-exhausted':
      return {
        state: TaskState.TASK_STATE_INPUT_REQUIRED,
        text:
          `the budget of ${tree.budgetTokens} tokens is spent (${counts(tree)}): to go on, send a message on ` +
          `this task with a data part {"budgetTokens": <a larger budget>}`
      }
    default:
  }
  if (facts.held !== null) return { state: TaskState.TASK_STATE_SUBMITTED, text: `submitted: the plan ${facts.held}` }
  const people = awaitedPeople(tree, facts.isPerson)
  if (people.length > 0)
    return {
      state: TaskState.TASK_STATE_INPUT_REQUIRED,
      text:
        `waits for ${people.length === 1 ? 'a person' : `${people.length} people`} (a committee member or ` +
        `approver): ${people.map(p => p.slice(-8)).join(', ')} answer with \`npm start -- inbox\`, then \`vote\` ` +
        `or \`review\`, or on the dashboard; the plan goes on by itself after that (${counts(tree)})`
    }
  const root = tree.nodes[0]
  if (tree.tasks.length === 0 && (root?.attempts ?? []).every(a => a.proposals.length === 0))
    return { state: TaskState.TASK_STATE_SUBMITTED, text: 'submitted: waiting for a decomposer to propose a split' }
  return { state: TaskState.TASK_STATE_WORKING, text: `${tree.status}: ${counts(tree)}` }
}

/** The last moment the plan moved, as far as the tree says: its submission, a claim, or a finished task. */
export function lastChangeMs(tree: PlanTree): number {
  let ms = tree.submittedAt.ms
  for (const t of tree.tasks) {
    if (t.finishedAt !== null && t.finishedAt.ms > ms) ms = t.finishedAt.ms
    for (const c of t.chains) if (c.claimedAt.ms > ms) ms = c.claimedAt.ms
  }
  return ms
}

/** The results of a plan's tasks in tree order (the root's roll-up is the deliverable instead), then the deliverable. */
export function artifactsOf(tree: PlanTree): Artifact[] {
  const nodes = new Map(tree.nodes.map(n => [n.id, n]))
  const out: Artifact[] = []
  for (const t of tree.tasks) {
    const accepted = t.results.find(r => r.accepted)
    if (accepted === undefined || t.id === tree.deliverable?.task) continue
    const node = nodes.get(t.node)
    out.push({
      artifactId: `task-${t.id}`,
      name: node?.title ?? t.id,
      description: `the result of ${t.kind === 'rollup' ? 'the roll-up' : 'the task'} of node ${t.node.slice(0, 12)}`,
      parts: [textPart(accepted.output)],
      metadata: {
        node: t.node,
        task: t.id,
        kind: t.kind,
        source: accepted.source,
        model: accepted.model,
        author: accepted.author
      },
      extensions: []
    })
  }
  if (tree.deliverable !== null)
    out.push({
      artifactId: DELIVERABLE,
      name: 'deliverable',
      description: 'what the goal asked for: the roll-up of the whole plan',
      parts: [textPart(tree.deliverable.output)],
      metadata: { task: tree.deliverable.task, result: tree.deliverable.result },
      extensions: []
    })
  return out
}

function status(plan: string, state: TaskState, text: string, ms: number): TaskStatus {
  return { state, message: agentMessage(plan, text), timestamp: new Date(ms).toISOString() }
}

/**
 * A new goal's first word: submitted, and held by another peer (or, with
 * `heldBy` null, stored on this node alone so far). The plan may be further
 * along already (a decomposer on this node proposes at once); the updates
 * that follow say so.
 */
export function asSubmitted(task: Task, heldBy: string | null): Task {
  const ms = Date.parse(task.status?.timestamp ?? '') || Date.now()
  const text =
    heldBy === null
      ? 'submitted: stored on this node, and no peer confirmed holding it yet; it reaches the swarm when a peer connects'
      : `submitted: the goal is held by ${heldBy}`
  return { ...task, status: status(task.id, TaskState.TASK_STATE_SUBMITTED, text, ms) }
}

/** A plan as a task; `artifacts: false` leaves them out (a stream sends them one at a time). */
export function taskOf(tree: PlanTree, facts: TaskFacts, artifacts = true): Task {
  const { state, text } = stateOf(tree, facts)
  return {
    id: tree.plan,
    contextId: tree.plan,
    status: status(tree.plan, state, text, lastChangeMs(tree)),
    artifacts: artifacts ? artifactsOf(tree) : [],
    history: [],
    metadata: {
      goal: tree.goal,
      author: tree.author,
      yours: tree.author === facts.me,
      planStatus: tree.status,
      spentTokens: tree.spentTokens,
      budgetTokens: tree.budgetTokens,
      treeHash: facts.treeHash ?? null
    }
  }
}

const SUMMARY_STATE: Record<PlanStatus, TaskState> = {
  planning: TaskState.TASK_STATE_WORKING,
  executing: TaskState.TASK_STATE_WORKING,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
  'budget-exhausted': TaskState.TASK_STATE_INPUT_REQUIRED
}

/**
 * A plan this node never fetched (`--history open`), as a peer describes it:
 * the state and counts it says, and its deliverable as the one artifact. The
 * status says whose word it is.
 */
export function taskOfPeerSummary(s: PlanSummaryAnswer, from: string): Task {
  const state = SUMMARY_STATE[s.status as PlanStatus] ?? TaskState.TASK_STATE_UNSPECIFIED
  const text =
    `${s.status}: ${s.done}/${s.nodes} nodes done, as peer ${from} describes it ` +
    '(this node keeps only the plans under way, --history open)'
  return {
    id: s.plan,
    contextId: s.plan,
    status: status(s.plan, state, text, Date.now()),
    artifacts:
      s.deliverable === null
        ? []
        : [
            {
              artifactId: DELIVERABLE,
              name: 'deliverable',
              description: `what the goal asked for, as peer ${from} holds it`,
              parts: [textPart(s.deliverable)],
              metadata: { from },
              extensions: []
            }
          ],
    history: [],
    metadata: { goal: s.goal, planStatus: s.status, treeHash: s.treeHash, from, held: false }
  }
}

/** A plan out of memory (finished, on disk only) as a task without artifacts, from its summary. */
export function taskOfSummary(s: PlanSummary, me: PeerIdString): Task {
  const state = SUMMARY_STATE[s.status]
  return {
    id: s.plan,
    contextId: s.plan,
    status: status(s.plan, state, `${s.status}: ${s.statusReason}`, s.submittedAt.ms),
    artifacts: [],
    history: [],
    metadata: {
      goal: s.goal,
      author: s.author,
      yours: s.author === me,
      planStatus: s.status,
      spentTokens: s.spentTokens,
      budgetTokens: s.budgetTokens,
      treeHash: null
    }
  }
}
