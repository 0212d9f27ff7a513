import { compareHlc } from './hlc.js'
import { childIds } from './node-ids.js'
import { committeesOf, derivePlan } from './derive.js'
import { decideNode } from './decide-node.js'
import { growTree, regrow } from './grow-tree.js'
import { NodeTasks } from './node-tasks.js'
import { planOutcome } from './plan-status.js'
import { onePerSlot } from './slots.js'
import { breadthFirst, treeNode } from './tree-nodes.js'
import { approversFor, resolveParams } from './events.js'
import type { NodeDecision } from './decide-node.js'
import type { Draft, Growing, GrowHooks } from './grow-tree.js'
import type { Finish } from './node-tasks.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, NodeId, PlanEvent, ResolvedParams, TaskId } from './events.js'
import type { CommitteeView, Equivocation, PlanTree, TaskView, TreeNode } from './tree.js'

/** Where a draft's node and task sit in the tree's lists, and what they show there now. */
interface Slot {
  readonly draft: Draft
  node: TreeNode | undefined
  /** Its index in `nodes`. */
  pos: number
  /** Its task's view in `tasks` (null: it has none), and that view's index there (-1 without one). */
  view: TaskView | null
  taskPos: number
  /** Whether its decision or its task found equivocations. */
  equivocates: boolean
}

/** What the tree is kept as between reads: the drafts, their finishes and nodes, and the lists and sums built of them. */
interface Kept {
  readonly goal: PlanEvent<'goal-submitted'>
  readonly params: ResolvedParams
  readonly committees: CommitteeView[]
  readonly root: Draft
  readonly tasks: NodeTasks
  readonly slots: Map<NodeId, Slot>
  /** Each composite's roll-up task id, to its node's id. */
  readonly rollups: Map<TaskId, NodeId>
  nodes: TreeNode[]
  views: TaskView[]
  duplicates: number
  ignoredClaims: number
  /** How many tasks have a chain (the plan is executing). */
  chained: number
  /** How many slots equivocate. */
  equivocating: number
}

/**
 * One plan's tree, kept up to date as its index grows: what `derivePlan` gives for the same events, worked out
 * from what changed since the last read (issue 44).
 *
 * Each read takes the events folded since the last one and marks what they touch: a proposal or ballot its node's
 * decision, a claim, renewal, release, failure, result, review or retry its task (through the claim and result
 * it cites, both of which the set holds before it). A node whose decision changes shape (another winner, other
 * deciding ballots, another failure) grows its subtree again; any other decision just replaces the node's view.
 * Then each touched task is decided again, and a finish that moved (its stamp or event) sends its dependants (the
 * parent's roll-up, the siblings that depend on it and their subtrees) to be decided again too; the nodes and task
 * views that changed replace theirs in copies of the lists. A read after one event so costs about what that
 * event changed, not the plan's size.
 *
 * Everything else takes the whole derivation: the first read, a committee amendment (every decision reads the
 * committees), an event whose claim or result the index lacks, a tree with two nodes of one id, and protocol 5
 * plans, whose plan-wide rules (claim limits, demotions, backup time, what was built on) almost any event can move.
 * A property test (test/property/live-tree.test.ts) holds every read equal to a fresh `derivePlan`.
 */
export class LiveTree {
  /** How many of the index's events the kept tree has taken in. */
  private seen = 0
  private kept: Kept | undefined = undefined
  private last: PlanTree | undefined = undefined
  /** Decisions by node: a function of the node's proposals and ballots and the committees, so kept until one arrives. */
  private readonly decisions = new Map<NodeId, NodeDecision>()
  /** Children ids by (parent, proposal, count): hashes, and a function of their key. */
  private readonly childIds = new Map<string, readonly string[]>()
  private readonly hooks: GrowHooks
  /** How many reads took the whole derivation (the first included); the rest were kept up to date. */
  wholeReads = 0
  /** How many reads were kept up to date, and how many subtrees they grew again (for the property test's census). */
  keptReads = 0
  regrown = 0
  /** How many reads failed in the kept tree and were answered by the whole derivation (a bug if not a cycle). */
  recovered = 0

  constructor(readonly index: PlanIndex) {
    this.hooks = {
      decide: id => this.decide(id),
      childIds: (parent, proposal, count) => {
        const k = `${parent}|${proposal}|${count}`
        let ids = this.childIds.get(k)
        if (ids === undefined) {
          ids = childIds(parent, proposal, count)
          this.childIds.set(k, ids)
        }
        return ids
      }
    }
  }

  /** The plan's tree as `derivePlan(index)` gives it. */
  tree(): PlanTree {
    const index = this.index
    if (this.last !== undefined && this.seen === index.size) return this.last
    const goal = index.goal
    if (goal === undefined || goal.env.body.params.trust !== undefined) return this.whole()
    try {
      const fresh = this.seen > 0 && this.kept !== undefined && this.kept.goal === goal ? index.since(this.seen) : null
      this.seen = index.size
      if (fresh !== null && this.update(fresh)) {
        this.keptReads++
      } else {
        this.wholeReads++
        this.rebuild(goal)
      }
      this.last = this.assemble()
      return this.last
    } catch {
      // A dependency cycle (events that skipped validation): the derivation throws its own error for it.
      this.recovered++
      return this.whole()
    }
  }

  /** The whole derivation, nothing kept. If it throws, nothing is kept and the next read derives (and throws) again. */
  private whole(): PlanTree {
    this.kept = undefined
    this.last = undefined
    this.decisions.clear()
    this.wholeReads++
    const tree = derivePlan(this.index)
    this.seen = this.index.size
    this.last = tree
    return tree
  }

  private decide(id: NodeId): NodeDecision {
    let d = this.decisions.get(id)
    if (d === undefined) {
      const k = this.kept as Kept
      const p = k.goal.env.body.params
      d = decideNode(this.index, id, p.maxAttempts, k.committees, approversFor(p, 'splits'))
      this.decisions.set(id, d)
    }
    return d
  }

  /** Derive the whole tree, keeping its parts. */
  private rebuild(goal: PlanEvent<'goal-submitted'>): void {
    const index = this.index
    this.decisions.clear()
    const params = resolveParams(goal.env.body.params)
    const committees = committeesOf(goal, index.amendments)
    const tasks = new NodeTasks(index, params, committees, undefined, index.id as string as NodeId)
    // The decisions read the kept committees: set them before the tree grows.
    const kept: Kept = {
      goal,
      params,
      committees,
      root: undefined as unknown as Draft,
      tasks,
      slots: new Map(),
      rollups: new Map(),
      nodes: [],
      views: [],
      duplicates: 0,
      ignoredClaims: 0,
      chained: 0,
      equivocating: 0
    }
    this.kept = kept
    const root = growTree(index, goal, committees, undefined, this.hooks)
    ;(kept as { root: Draft }).root = root
    for (const d of breadthFirst(root)) this.place(kept, d)
    this.relist(kept)
  }

  /** A new draft's slot; it throws if its id is taken (never, but for a hash collision), and the read derives whole. */
  private place(kept: Kept, d: Draft): void {
    if (kept.slots.has(d.id)) throw new Error(`two nodes of id ${d.id}`)
    kept.slots.set(d.id, { draft: d, node: undefined, pos: -1, view: null, taskPos: -1, equivocates: false })
    if (d.kind === 'composite') kept.rollups.set(kept.tasks.rollupOf(d.id), d.id)
  }

  /** Whether `d` is in the tree now. */
  private live(kept: Kept, d: Draft): boolean {
    return kept.slots.get(d.id)?.draft === d
  }

  /**
   * Take in events folded since the last read. False when they need the whole derivation: a committee
   * amendment, a goal, or an event whose claim or result the index lacks.
   */
  private update(events: readonly PlanEvent[]): boolean {
    const kept = this.kept as Kept
    const index = this.index
    const dirtyNodes = new Set<NodeId>()
    const dirtyTasks = new Set<TaskId>()
    const claimTask = (id: EventId): boolean => {
      const c = index.event(id)
      if (c?.env.type !== 'task-claimed') return false
      dirtyTasks.add((c as PlanEvent<'task-claimed'>).env.body.task)
      return true
    }
    for (const e of events) {
      switch (e.env.type) {
        case 'goal-submitted':
        case 'committee-amended':
          return false
        case 'budget-raised':
        case 'goal-cancelled':
          break
        case 'split-proposed':
          dirtyNodes.add((e as PlanEvent<'split-proposed'>).env.body.node)
          break
        case 'ballot-cast':
          dirtyNodes.add((e as PlanEvent<'ballot-cast'>).env.body.node)
          break
        case 'task-claimed':
          dirtyTasks.add((e as PlanEvent<'task-claimed'>).env.body.task)
          break
        case 'task-retried':
          dirtyTasks.add((e as PlanEvent<'task-retried'>).env.body.task)
          break
        case 'claim-renewed':
        case 'task-released':
        case 'task-failed':
          if (!claimTask((e as PlanEvent<'claim-renewed'>).env.body.claim)) return false
          break
        case 'result-reported': {
          const r = e as PlanEvent<'result-reported'>
          dirtyTasks.add(r.env.body.task)
          if (!claimTask(r.env.body.claim)) return false
          break
        }
        case 'result-reviewed': {
          const r = index.event((e as PlanEvent<'result-reviewed'>).env.body.result)
          if (r?.env.type !== 'result-reported') return false
          const result = r as PlanEvent<'result-reported'>
          dirtyTasks.add(result.env.body.task)
          if (!claimTask(result.env.body.claim)) return false
          break
        }
        default: {
          const never: never = e.env.type
          throw new Error(`unhandled event type ${String(never)}`)
        }
      }
    }

    // Decisions: a new one of the same shape replaces the node's view; another shape grows its subtree again.
    const changed = new Set<Draft>()
    const regrown: Draft[] = []
    for (const id of dirtyNodes) {
      this.decisions.delete(id)
      const d = kept.slots.get(id)?.draft
      if (d === undefined || d.decision === null) continue
      const next = this.decide(id)
      if (sameShape(d.decision, next)) {
        ;(d as Growing).decision = next
        changed.add(d)
      } else {
        regrown.push(d)
      }
    }
    const stale: Draft[] = []
    let reordered = false
    regrown.sort((a, b) => a.depth - b.depth)
    for (const d of regrown) {
      if (!this.live(kept, d)) continue
      for (const c of d.children) this.drop(kept, c)
      if (d.kind === 'composite') kept.rollups.delete(kept.tasks.rollupOf(d.id))
      regrow(d, index, kept.goal, kept.committees, undefined, this.hooks)
      if (d.kind === 'composite') kept.rollups.set(kept.tasks.rollupOf(d.id), d.id)
      changed.add(d)
      stale.push(d)
      this.regrown++
      for (const c of d.children)
        for (const x of breadthFirst(c)) {
          this.place(kept, x)
          changed.add(x)
          stale.push(x)
        }
      reordered = true
    }

    // Tasks: those the events touched, and, while a finish moves, its dependants.
    const tasks = kept.tasks
    const before = new Map<Draft, Finish | undefined>()
    const start = new Map<Draft, Finish | undefined>()
    const queue: Draft[] = []
    // `before` holds, for each task waiting to be decided again, the finish its dependants last saw. A task decided
    // again meanwhile (a blocker of another, through finishOf) and then forgotten again keeps that first value, so
    // a move its dependants have not seen is still a move.
    const forget = (d: Draft): void => {
      const was = tasks.forget(d)
      if (!start.has(d)) start.set(d, was)
      if (!before.has(d)) before.set(d, was)
      queue.push(d)
    }
    for (const d of stale) forget(d)
    for (const t of dirtyTasks) {
      const leaf = kept.slots.get(t as string as NodeId)?.draft
      if (leaf !== undefined) forget(leaf)
      const owner = kept.rollups.get(t)
      const composite = owner === undefined ? undefined : kept.slots.get(owner)?.draft
      if (composite !== undefined) forget(composite)
    }
    while (queue.length > 0) {
      const d = queue.pop() as Draft
      if (!before.has(d)) continue
      const was = before.get(d)
      before.delete(d)
      if (!this.live(kept, d)) continue
      const f = tasks.finishOf(d)
      if (was === undefined || moved(was, f)) for (const y of dependantsOf(d)) forget(y)
    }
    for (const [d, was] of start) if (tasks.known(d) !== was) changed.add(d)
    // A node whose decision changed may have left with its ancestor's subtree since.
    for (const d of changed) if (!this.live(kept, d)) changed.delete(d)

    // The nodes that changed, worked out again; the lists are copied with them replaced, unless nodes came or went
    // or a task view came or went: then they are listed again.
    let relist = reordered
    for (const d of changed) if (!this.renode(kept, kept.slots.get(d.id) as Slot)) relist = true
    if (relist) {
      this.relist(kept)
      return true
    }
    const nodes = kept.nodes.slice()
    let views: TaskView[] | undefined
    for (const d of changed) {
      const s = kept.slots.get(d.id) as Slot
      nodes[s.pos] = s.node as TreeNode
      const view = tasks.finishOf(d).view as TaskView
      const old = s.view as TaskView
      if (view === old) continue
      views ??= kept.views.slice()
      views[s.taskPos] = view
      kept.duplicates += view.duplicates - old.duplicates
      kept.ignoredClaims += view.ignoredClaims - old.ignoredClaims
      kept.chained += (view.chains.length > 0 ? 1 : 0) - (old.chains.length > 0 ? 1 : 0)
      s.view = view
    }
    kept.nodes = nodes
    if (views !== undefined) kept.views = views
    return true
  }

  /**
   * Work out a slot's node again, and whether it equivocates. False when its task view came or went
   * (the task list must be built again).
   */
  private renode(kept: Kept, s: Slot): boolean {
    const d = s.draft
    const f = kept.tasks.finishOf(d)
    s.node = treeNode(d, f, this.titles(kept))
    const eq = (d.decision?.equivocations.length ?? 0) > 0 || f.equivocations.length > 0
    if (eq !== s.equivocates) kept.equivocating += eq ? 1 : -1
    s.equivocates = eq
    return (f.view === null) === (s.view === null)
  }

  private titles(kept: Kept): { of: (id: NodeId) => string } {
    return { of: id => kept.slots.get(id)?.draft.title ?? id }
  }

  /** Take a draft and its subtree out of the tree. */
  private drop(kept: Kept, d: Draft): void {
    for (const x of breadthFirst(d)) {
      if (kept.slots.get(x.id)?.equivocates === true) kept.equivocating--
      kept.slots.delete(x.id)
      kept.tasks.forget(x)
      if (x.kind === 'composite') kept.rollups.delete(kept.tasks.rollupOf(x.id))
    }
  }

  /** Build the node and task lists and their sums from the tree, breadth-first (as derivePlan lists them). */
  private relist(kept: Kept): void {
    const nodes: TreeNode[] = []
    const views: TaskView[] = []
    kept.duplicates = 0
    kept.ignoredClaims = 0
    kept.chained = 0
    for (const d of breadthFirst(kept.root)) {
      const s = kept.slots.get(d.id) as Slot
      const f = kept.tasks.finishOf(d)
      if (s.node === undefined) this.renode(kept, s)
      s.pos = nodes.length
      nodes.push(s.node as TreeNode)
      s.view = f.view
      s.taskPos = -1
      if (f.view !== null) {
        s.taskPos = views.length
        views.push(f.view)
        kept.duplicates += f.view.duplicates
        kept.ignoredClaims += f.view.ignoredClaims
        if (f.view.chains.length > 0) kept.chained++
      }
    }
    kept.nodes = nodes
    kept.views = views
  }

  /** The tree from what is kept, as derivePlan builds it for a plan without protocol 5's rules. */
  private assemble(): PlanTree {
    const kept = this.kept as Kept
    const index = this.index
    const { goal, params, root } = kept
    const rootTask = kept.tasks.finishOf(root).view
    let equivocations: Equivocation[] = []
    if (kept.equivocating > 0) {
      const found: Equivocation[] = []
      for (const d of breadthFirst(root)) {
        for (const e of d.decision?.equivocations ?? []) found.push(e)
        for (const e of kept.tasks.finishOf(d).equivocations) found.push(e)
      }
      equivocations = onePerSlot(found)
    }
    const spentTokens = index.spentTokens
    const { budgetTokens, deliverable, status, statusReason } = planOutcome(
      index,
      params,
      rootTask,
      kept.views,
      spentTokens,
      kept.chained > 0
    )
    // Keys in sorted order, as derivePlan has them.
    return {
      author: goal.env.author,
      budgetTokens,
      committees: kept.committees,
      deliverable,
      duplicates: kept.duplicates,
      equivocations,
      events: index.size,
      goal: goal.env.body.text,
      ignoredClaims: kept.ignoredClaims,
      nodes: kept.nodes,
      params,
      plan: index.id,
      root: root.id,
      spentTokens,
      status,
      statusReason,
      submittedAt: goal.env.hlc,
      tasks: kept.views
    }
  }
}

/** Whether two decisions of a node grow the same subtree: only their views (attempts, who is awaited) differ. */
function sameShape(a: NodeDecision, b: NodeDecision): boolean {
  switch (a.kind) {
    case 'open':
      return b.kind === 'open'
    case 'won':
      return (
        b.kind === 'won' &&
        a.proposal.id === b.proposal.id &&
        a.decidedBy.id === b.decidedBy.id &&
        sameIds(a.deciding, b.deciding)
      )
    case 'exhausted':
      return b.kind === 'exhausted' && compareHlc(a.failedAt, b.failedAt) === 0 && sameIds(a.lastBallots, b.lastBallots)
  }
}

function sameIds(a: readonly EventId[], b: readonly EventId[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Whether a finish moved for the tasks that wait for it: they read its stamp and event. */
function moved(a: Finish, b: Finish): boolean {
  if (a.event !== b.event) return true
  if (a.at === null || b.at === null) return a.at !== b.at
  return compareHlc(a.at, b.at) !== 0
}

/**
 * The nodes whose tasks wait for `d`'s (NodeTasks' blockers, the other way): its parent's roll-up, and each
 * sibling that depends on it with that sibling's subtree.
 */
function dependantsOf(d: Draft): Draft[] {
  const p = d.parent
  if (p === null) return []
  const out: Draft[] = [p]
  for (const s of p.children)
    if (s !== d && s.dependsOnIdx.includes(d.index)) for (const x of breadthFirst(s)) out.push(x)
  return out
}
