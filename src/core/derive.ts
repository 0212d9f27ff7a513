import { hashParts, hashPartsEach } from './hash.js'
import { HLC_ZERO, compareHlc, maxHlc } from './hlc.js'
import { compareEvents, earliest, sortEvents } from './order.js'
import { committeeOf } from './dep-rules.js'
import { decideNode } from './decide-node.js'
import { decideTask } from './task-chain.js'
import type { NodeDecision } from './decide-node.js'
import type { TaskOutcome } from './task-chain.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, NodeId, PlanEvent, PlanParams, TaskId } from './events.js'
import type { CommitteeView, Equivocation, LeafReason, NodeStatus, PlanStatus, PlanTree, TaskView, TreeNode } from './tree.js'

/** A child's id: every replica that sees the same accepted split makes the same children. */
export function childId (parent: NodeId, proposal: EventId, index: number): NodeId {
  return hashParts(parent, proposal, String(index)) as NodeId
}

/** childId(parent, proposal, i) for i < count. */
function childIds (parent: NodeId, proposal: EventId, count: number): string[] {
  const indexes: string[] = []
  for (let i = 0; i < count; i++) indexes.push(String(i))
  return hashPartsEach([parent, proposal], indexes)
}

/** A composite node's roll-up task id. */
export function rollupId (node: NodeId): TaskId {
  return hashParts(node, 'rollup') as TaskId
}

interface Draft {
  id: NodeId
  parent: Draft | null
  index: number
  depth: number
  title: string
  detail: string
  dependsOnIdx: readonly number[]
  markedLeaf: boolean
  evidence: readonly EventId[]
  /** When the node could first be executed as a leaf, and the events that show it. */
  base: { at: Hlc, evidence: readonly EventId[] }
  decision: NodeDecision | null
  kind: TreeNode['kind']
  leafReason: LeafReason | null
  accepted: EventId | null
  children: Draft[]
  /**
   * How many descendants this node may still have. The root gets maxNodes - 1;
   * a split into k children is applied only if k fits, and each child gets an
   * equal share of what is left. A node's budget depends only on its
   * ancestors' accepted splits, so a late event never cuts a split that was
   * already applied.
   */
  budget: number
  /** How its task ends (worked out once), and whether that is being worked out. */
  finish: Finish | null
  visiting: boolean
}

interface Finish {
  readonly task: TaskId | null
  readonly status: NodeStatus
  readonly at: Hlc | null
  readonly event: EventId | null
  readonly view: TaskView | null
  readonly blockedBy: readonly NodeId[]
}

/**
 * The plan tree as a pure function of a plan's folded events.
 *
 * Nothing here reads the arrival order: every group of events is sorted in
 * the total order (hlc, author, id) before use, and maxNodes is shared out
 * top-down (see Draft.budget), so it cuts the same way everywhere and never
 * undoes an applied split.
 */
export function derivePlan (index: PlanIndex): PlanTree {
  const goal = index.goal
  if (goal === undefined) throw new Error(`plan ${index.id} has no goal folded`)
  const params = goal.env.body.params
  const equivocations: Equivocation[] = []
  const committees: CommitteeView[] = sortEvents<PlanEvent>([goal, ...index.amendments]).map(e => {
    const c = committeeOf(e) as NonNullable<ReturnType<typeof committeeOf>>
    return { event: e.id, members: c.members, quorum: c.quorum }
  })

  const root: Draft = {
    id: index.id as string as NodeId,
    parent: null,
    index: 0,
    depth: 0,
    title: goal.env.body.text,
    detail: '',
    dependsOnIdx: [],
    markedLeaf: false,
    evidence: [],
    base: { at: goal.env.hlc, evidence: [] },
    decision: null,
    kind: 'decomposing',
    leafReason: null,
    accepted: null,
    children: [],
    budget: params.maxNodes - 1,
    finish: null,
    visiting: false
  }
  const pending: Draft[] = []
  const expand = (d: Draft): void => {
    if (d.markedLeaf || d.depth >= params.maxDepth) {
      d.kind = 'leaf'
      d.leafReason = d.markedLeaf ? 'marked-leaf' : 'max-depth'
      return
    }
    const decision = decideNode(index, d.id, params.maxAttempts, committees, equivocations)
    d.decision = decision
    if (decision.kind === 'won') {
      pending.push(d)
    } else if (decision.kind === 'exhausted') {
      d.kind = 'leaf'
      d.leafReason = 'attempts-exhausted'
      d.base = { at: maxHlc([d.base.at, decision.failedAt]), evidence: decision.lastBallots }
    }
  }
  expand(root)
  // The order in which accepted splits are applied does not matter: a node's
  // children and budget depend only on its own split and its ancestors'.
  while (pending.length > 0) {
    const d = pending.pop() as Draft
    const won = d.decision as Extract<NodeDecision, { kind: 'won' }>
    const subgoals = won.proposal.env.body.subgoals
    const evidence = [won.proposal.id, ...won.deciding].sort() as EventId[]
    d.accepted = won.proposal.id
    if (subgoals.length > d.budget) {
      d.kind = 'leaf'
      d.leafReason = 'max-nodes'
      d.base = { at: won.decidedBy.env.hlc, evidence }
      continue
    }
    d.kind = 'composite'
    const childBudget = Math.floor((d.budget - subgoals.length) / subgoals.length)
    const ids = childIds(d.id, won.proposal.id, subgoals.length)
    d.children = subgoals.map((s, i) => ({
      id: ids[i] as NodeId,
      parent: d,
      index: i,
      depth: d.depth + 1,
      title: s.title,
      detail: s.detail,
      dependsOnIdx: s.dependsOn,
      markedLeaf: s.leaf,
      evidence,
      base: { at: won.decidedBy.env.hlc, evidence },
      decision: null,
      kind: 'decomposing',
      leafReason: null,
      accepted: null,
      children: [],
      budget: childBudget,
      finish: null,
      visiting: false
    }))
    for (const c of d.children) expand(c)
  }

  // Tasks, memoised: a task is ready once its base is reached and every node it waits for has finished.
  const finishOf = (d: Draft): Finish => {
    if (d.finish !== null) return d.finish
    if (d.visiting) throw new Error(`dependency cycle at node ${d.id}`)
    d.visiting = true
    const f = computeFinish(d)
    d.visiting = false
    d.finish = f
    return f
  }
  const computeFinish = (d: Draft): Finish => {
    if (d.kind === 'decomposing') return { task: null, status: 'decomposing', at: null, event: null, view: null, blockedBy: [] }
    const blockers: Draft[] = []
    for (let a: Draft | null = d; a !== null; a = a.parent) {
      if (a.dependsOnIdx.length === 0) continue
      const siblings = a.parent?.children ?? []
      for (const i of a.dependsOnIdx) { const s = siblings[i]; if (s !== undefined) blockers.push(s) }
    }
    if (d.kind === 'composite') for (const c of d.children) blockers.push(c)
    const task = d.kind === 'leaf' ? d.id as string as TaskId : rollupId(d.id)
    const blockedBy: NodeId[] = []
    // readyAt: the latest of these stamps (the first of equal ones, as maxHlc takes it).
    let readyAt = HLC_ZERO
    if (compareHlc(d.base.at, readyAt) > 0) readyAt = d.base.at
    const evidence: EventId[] = [...d.base.evidence]
    if (d.kind === 'composite') {
      const won = d.decision as Extract<NodeDecision, { kind: 'won' }>
      if (compareHlc(won.decidedBy.env.hlc, readyAt) > 0) readyAt = won.decidedBy.env.hlc
    }
    for (const b of blockers) {
      const f = finishOf(b)
      if (f.at === null || f.event === null) blockedBy.push(b.id)
      else {
        if (compareHlc(f.at, readyAt) > 0) readyAt = f.at
        evidence.push(f.event)
      }
    }
    const kind = d.kind === 'leaf' ? 'leaf' : 'rollup'
    if (blockedBy.length > 0) {
      const view: TaskView = {
        accepted: null, attemptsAllowed: params.maxAttempts, blockedBy, chains: [], duplicates: 0, evidence: [], failures: 0, finishedAt: null,
        finishEvent: null, id: task, ignoredClaims: (index.claims.get(task) ?? []).length, kind, node: d.id, owner: null, readyAt: null, results: [], status: 'blocked'
      }
      return { task, status: 'blocked', at: null, event: null, view, blockedBy }
    }
    const o: TaskOutcome = decideTask(index, task, readyAt, params, committees, equivocations)
    const owner = o.status === 'claimed' ? (o.chains[o.chains.length - 1]?.owner ?? null) : null
    const view: TaskView = {
      accepted: o.accepted,
      attemptsAllowed: o.attemptsAllowed,
      blockedBy: [],
      chains: o.chains,
      duplicates: o.duplicates,
      evidence: sortedUnique(evidence),
      failures: o.failures,
      finishEvent: o.finishEvent,
      finishedAt: o.finishedAt,
      id: task,
      ignoredClaims: o.ignoredClaims,
      kind,
      node: d.id,
      owner,
      readyAt,
      results: o.results,
      status: o.status
    }
    return { task, status: o.status, at: o.finishedAt, event: o.finishEvent, view, blockedBy: [] }
  }

  // Breadth-first order, children in split order.
  const order: Draft[] = []
  for (let q: Draft[] = [root]; q.length > 0;) {
    const next: Draft[] = []
    for (const d of q) { order.push(d); next.push(...d.children) }
    q = next
  }
  const nodes: TreeNode[] = []
  const tasks: TaskView[] = []
  const titles = new NodeTitles(order)
  for (const d of order) {
    const f = finishOf(d)
    if (f.view !== null) tasks.push(f.view)
    // Tree objects are built with their keys in sorted order: canonicalJson then hashes them without copying.
    nodes.push({
      accepted: d.accepted,
      attempts: d.decision?.attempts ?? [],
      children: d.children.map(c => c.id),
      dependsOn: d.dependsOnIdx.map(i => d.parent?.children[i]?.id).filter((x): x is NodeId => x !== undefined),
      depth: d.depth,
      detail: d.detail,
      evidence: d.evidence,
      id: d.id,
      index: d.index,
      kind: d.kind,
      leafReason: d.leafReason,
      parent: d.parent?.id ?? null,
      status: f.status,
      task: f.task,
      title: d.title,
      waiting: waitingReason(d, f, titles)
    })
  }

  const rootFinish = finishOf(root)
  const rootTask = rootFinish.view
  const budgetTokens = Math.max(params.budgetTokens, ...index.raises.map(r => r.env.body.budgetTokens))
  const cancel = earliest(index.cancels)
  const completed = rootTask?.status === 'done' && rootTask.finishedAt !== null
  const { status, statusReason } = planStatus({ index, params, cancel, completed, failed: rootTask?.status === 'failed', rootTask, budgetTokens, tasks })
  const accepted = rootTask?.results.find(r => r.accepted)
  equivocations.sort((a, b) => a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : 0)
  const dedup = equivocations.filter((e, i) => i === 0 || e.slot !== (equivocations[i - 1] as Equivocation).slot)
  return {
    author: goal.env.author,
    budgetTokens,
    committees,
    deliverable: status === 'completed' && rootTask !== null && accepted !== undefined ? { output: accepted.output, result: accepted.id, task: rootTask.id } : null,
    duplicates: tasks.reduce((n, t) => n + t.duplicates, 0),
    equivocations: dedup,
    events: index.size,
    goal: goal.env.body.text,
    ignoredClaims: tasks.reduce((n, t) => n + t.ignoredClaims, 0),
    nodes,
    params,
    plan: index.id,
    root: root.id,
    spentTokens: index.spentTokens,
    status,
    statusReason,
    submittedAt: goal.env.hlc,
    tasks
  }
}

/** Node titles by id, for what blocked tasks wait for; the map is built the first time it is asked. */
class NodeTitles {
  private byId: Map<NodeId, string> | undefined = undefined
  constructor (private readonly order: readonly Draft[]) {}

  of (id: NodeId): string {
    if (this.byId === undefined) {
      this.byId = new Map()
      // The first node with an id wins, as a search in order would find it.
      for (const x of this.order) if (!this.byId.has(x.id)) this.byId.set(x.id, x.title)
    }
    return this.byId.get(id) ?? id
  }
}

function waitingReason (d: Draft, f: Finish, titles: NodeTitles): string | null {
  switch (f.status) {
    case 'decomposing':
      return d.decision?.kind === 'open' ? d.decision.waiting : 'waiting for proposals from decomposers'
    case 'blocked':
      return `waiting for ${f.blockedBy.map(id => JSON.stringify(titles.of(id))).join(', ')} to finish`
    case 'ready':
      return 'ready: waiting for an executor to claim it'
    case 'in-review':
      return 'waiting for the committee to review the result'
    default:
      return null
  }
}

/** Sorted, without repeats (a fresh array). */
function sortedUnique (ids: EventId[]): EventId[] {
  ids.sort()
  let n = 0
  for (let i = 0; i < ids.length; i++) if (i === 0 || ids[i] !== ids[n - 1]) ids[n++] = ids[i] as EventId
  ids.length = n
  return ids
}

function planStatus (x: {
  index: PlanIndex
  params: PlanParams
  cancel: PlanEvent<'goal-cancelled'> | undefined
  completed: boolean
  failed: boolean
  rootTask: TaskView | null
  budgetTokens: number
  tasks: readonly TaskView[]
}): { status: PlanStatus, statusReason: string } {
  const finishEvent = x.rootTask?.finishEvent === null || x.rootTask === null ? undefined : x.index.event(x.rootTask.finishEvent)
  if (x.cancel !== undefined && (finishEvent === undefined || compareEvents(x.cancel, finishEvent) < 0)) {
    return { status: 'cancelled', statusReason: `cancelled by its author: ${x.cancel.env.body.reason}` }
  }
  if (x.completed) return { status: 'completed', statusReason: 'the root roll-up has an accepted result: the deliverable' }
  if (x.failed) return { status: 'failed', statusReason: `the root task failed after ${x.rootTask?.failures ?? 0} attempts` }
  if (x.index.spentTokens >= x.budgetTokens) {
    return { status: 'budget-exhausted', statusReason: `spent ${x.index.spentTokens} of ${x.budgetTokens} tokens; the author can raise the budget` }
  }
  if (x.tasks.some(t => t.chains.length > 0)) return { status: 'executing', statusReason: 'executors are working on tasks' }
  return { status: 'planning', statusReason: 'decomposers and scorers are growing the tree' }
}
