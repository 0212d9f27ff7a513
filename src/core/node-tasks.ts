import { HLC_ZERO, compareHlc } from './hlc.js'
import { rollupId } from './node-ids.js'
import { blockedOutcome, decideTask } from './task-chain.js'
import { taskView } from './task-view.js'
import { NO_EQUIVOCATIONS } from './slots.js'
import { neededApprovers } from './decide-node.js'
import { approversFor } from './events.js'
import type { NeededApprovers } from './split-pins.js'
import type { Draft } from './grow-tree.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, NodeId, ResolvedParams, TaskId } from './events.js'
import type { CommitteeView, Equivocation, NodeStatus, TaskView } from './tree.js'
import type { TrustRules } from './trust-rules.js'
import { ReviewSample } from './review-sample.js'

/** How a node's task ends (null fields while it has not), its view, and what deciding it found. */
export interface Finish {
  readonly task: TaskId | null
  readonly status: NodeStatus
  readonly at: Hlc | null
  readonly event: EventId | null
  readonly view: TaskView | null
  readonly blockedBy: readonly NodeId[]
  readonly equivocations: readonly Equivocation[]
}

const DECOMPOSING: Finish = {
  task: null,
  status: 'decomposing',
  at: null,
  event: null,
  view: null,
  blockedBy: [],
  equivocations: NO_EQUIVOCATIONS
}

/**
 * The nodes' tasks, each decided once: a leaf's own task, or a composite's
 * roll-up. A task is ready once its node's base is reached and every node it
 * waits for (its and its ancestors' `dependsOn` siblings; a roll-up's
 * children) has finished, done or failed. A dependency cycle throws.
 */
export class NodeTasks {
  private readonly finished = new Map<Draft, Finish>()
  private readonly visiting = new Set<Draft>()
  /** Roll-up task ids by node (a hash each): kept while the instance lives, as live-tree.ts keeps it. */
  private readonly rollups = new Map<NodeId, TaskId>()
  private readonly approvers: NeededApprovers
  /** Protocol 5: which results the committee reviews. */
  private readonly sample: ReviewSample | undefined = undefined

  constructor(
    private readonly index: PlanIndex,
    private readonly params: ResolvedParams,
    private readonly committees: readonly CommitteeView[],
    /** Protocol 5's plan-wide facts; undefined for plans of versions 1 to 4. */
    private readonly rules?: TrustRules,
    /** The root node: its task is the plan's deliverable, which protocol 5 always has reviewed. */
    root?: NodeId
  ) {
    this.approvers = neededApprovers(committees, approversFor(params, 'results'))
    if (rules !== undefined) {
      const deliverable = new Set<string>(root === undefined ? [] : [root, rollupId(root)])
      const sample = new ReviewSample(index, params, committees, this.approvers, rules, deliverable)
      rules.settleWith(
        r => sample.acceptedDeliverable(r),
        author => sample.firstRejection(author)
      )
      this.sample = sample
    }
  }

  /** A composite node's roll-up task id (rollupId), remembered. */
  rollupOf(node: NodeId): TaskId {
    let t = this.rollups.get(node)
    if (t === undefined) {
      t = rollupId(node)
      this.rollups.set(node, t)
    }
    return t
  }

  /** The finish worked out for `d`, if it was. */
  known(d: Draft): Finish | undefined {
    return this.finished.get(d)
  }

  /**
   * Drop what was worked out for `d` (its events or its blockers changed; live-tree.ts): the next `finishOf` decides
   * it again. Returns what it was.
   */
  forget(d: Draft): Finish | undefined {
    const f = this.finished.get(d)
    this.finished.delete(d)
    return f
  }

  finishOf(d: Draft): Finish {
    const known = this.finished.get(d)
    if (known !== undefined) return known
    if (this.visiting.has(d)) throw new Error(`dependency cycle at node ${d.id}`)
    this.visiting.add(d)
    const f = this.decide(d)
    this.visiting.delete(d)
    this.finished.set(d, f)
    return f
  }

  private decide(d: Draft): Finish {
    if (d.kind === 'decomposing') return DECOMPOSING
    const task = d.kind === 'leaf' ? (d.id as string as TaskId) : this.rollupOf(d.id)
    const kind = d.kind === 'leaf' ? 'leaf' : 'rollup'
    const blockedBy: NodeId[] = []
    // readyAt: the latest of these stamps (the first of equal ones, as maxHlc takes it).
    let readyAt = later(HLC_ZERO, d.base.at)
    const evidence: EventId[] = [...d.base.evidence]
    if (d.kind === 'composite' && d.decision?.kind === 'won') readyAt = later(readyAt, d.decision.decidedBy.env.hlc)
    for (const b of blockersOf(d)) {
      const f = this.finishOf(b)
      if (f.at === null || f.event === null) {
        blockedBy.push(b.id)
      } else {
        readyAt = later(readyAt, f.at)
        evidence.push(f.event)
      }
    }
    if (blockedBy.length > 0) {
      const view = taskView(
        { blockedBy, evidence: [], id: task, kind, node: d.id, readyAt: null },
        blockedOutcome(this.index, task, this.params)
      )
      return { task, status: 'blocked', at: null, event: null, view, blockedBy, equivocations: NO_EQUIVOCATIONS }
    }
    const { outcome, equivocations } = decideTask(
      this.index,
      task,
      readyAt,
      this.params,
      this.committees,
      this.approvers,
      this.rules,
      this.sample
    )
    const view = taskView(
      { blockedBy: [], evidence: sortedUnique(evidence), id: task, kind, node: d.id, readyAt },
      outcome
    )
    return {
      task,
      status: outcome.status,
      at: outcome.finishedAt,
      event: outcome.finishEvent,
      view,
      blockedBy: [],
      equivocations
    }
  }
}

/** `b` if it is after `a`, else `a`. */
function later(a: Hlc, b: Hlc): Hlc {
  return compareHlc(b, a) > 0 ? b : a
}

/** The nodes a node's task waits for: the `dependsOn` siblings of the node and of each ancestor, then a composite's children. */
export function blockersOf(d: Draft): Draft[] {
  const blockers: Draft[] = []
  for (let a: Draft | null = d; a !== null; a = a.parent) {
    if (a.dependsOnIdx.length === 0) continue
    const siblings = a.parent?.children ?? []
    for (const i of a.dependsOnIdx) {
      const s = siblings[i]
      if (s !== undefined) blockers.push(s)
    }
  }
  if (d.kind === 'composite') for (const c of d.children) blockers.push(c)
  return blockers
}

/** Sorted, without repeats (in place). */
function sortedUnique(ids: EventId[]): EventId[] {
  ids.sort()
  let n = 0
  for (let i = 0; i < ids.length; i++) if (i === 0 || ids[i] !== ids[n - 1]) ids[n++] = ids[i] as EventId
  ids.length = n
  return ids
}
