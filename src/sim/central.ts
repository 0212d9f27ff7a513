import { chainLengths } from '../../roles/claim-rules.js'
import { nodeMap, pathOf } from '../../roles/plan-context.js'
import { callKey } from './latency.js'
import type { NodeId, PlanId } from '../core/events.js'
import type { PlanTree, TreeNode } from '../core/tree.js'
import type { CallKind } from './latency.js'

/**
 * An ideal central scheduler inside the simulator: it makes the calls a run
 * of the swarm made, read from the plans' final trees (every decomposer's
 * proposal for every composite node, every committee member's ballot, every
 * leaf and roll-up executed once), each with the latency the swarm's call
 * had (the latency is a function of the call's identity, src/sim/latency.ts),
 * under the swarm's limits: each decomposer and scorer at most
 * `roleConcurrency` calls at once (the role driver's concurrency), the same
 * number of executors, each at most `executorConcurrency` tasks at once and
 * at most the plan's maxClaimsPerExecutor of one plan. It dispatches every
 * call the moment its inputs exist and a slot is free: a node's proposals
 * when the node exists, its ballots once every proposal is in, its children
 * when the quorum-th ballot for the split the swarm accepted comes back, a
 * leaf when its node exists and the nodes it (or an ancestor) depends on are
 * done, a roll-up when its children are; executions longest remaining chain
 * first (as the swarm's executors rank them), then plan, then tree order;
 * role calls in the order they became possible. No network, no signatures,
 * no waits: what is left is the calls and the slots. A ballot that cited
 * only some of the node's proposals (its scorer's window ran out before the
 * others came) is cast once those it cited are in, given the events' deps
 * (CentralPlan.depsOf); without them, once every proposal is.
 *
 * It knows each plan's final tree from the start, so its chain lengths are
 * the whole plan's (a real central scheduler would know only the part
 * decomposed so far); everything else it learns when the swarm would.
 */
export interface CentralLimits {
  /** The decomposers' and committee's calls at once, each (Infinity: no limit). */
  readonly roleConcurrency: number
  /** Executors in the swarm (Infinity: one for every task). */
  readonly executors: number
  /** Tasks one executor runs at once, all plans together (the role driver's concurrency). */
  readonly executorConcurrency: number
  /** Tasks one executor runs at once in one plan (default each plan's maxClaimsPerExecutor; Infinity: no limit). */
  readonly perPlanClaims?: number
}

/** The role driver's default concurrency (roles/driver.ts): the limit the swarm's roles run under. */
export const DRIVER_CONCURRENCY = 4

export interface CentralPlan {
  readonly tree: PlanTree
  /** Virtual ms the goal is known at (0 for goals submitted together). */
  readonly startMs?: number
  /** The deps an event of the plan cited (a ballot's: the proposals it scored), if known. */
  readonly depsOf?: (id: string) => readonly string[] | undefined
}

export interface CentralResult {
  /** From the first goal to the last plan's root roll-up done. */
  readonly makespanMs: number
  /** Per plan, from the first goal to its root roll-up done. */
  readonly finishMs: ReadonlyMap<PlanId, number>
  readonly calls: number
  /** Calls by kind. */
  readonly callsByKind: Readonly<Record<string, number>>
  /** Sum of every call's latency (the work), and the most calls in flight at once. */
  readonly workMs: number
  readonly maxInFlight: number
  /** Every call's identity, in the order started (to check them against the swarm's). */
  readonly keys: readonly string[]
  /**
   * A lower bound on any schedule's makespan under `limits`: the longest chain of calls (what runCentral gives with no
   * limits, passed in as `chainMs`), or the busiest decomposer's or scorer's work over its slots, or the executions'
   * work over every executor's slots, whichever is largest. The greedy schedule above is not optimal when slots bind.
   */
  readonly floorMs: (chainMs: number) => number
}

type Latency = (kind: CallKind, key: string) => number

interface Job {
  readonly plan: number
  readonly kind: CallKind
  /** The decomposer or scorer whose call it is; null for an execution (any executor). */
  readonly worker: string | null
  /** The call's identity (src/sim/latency.ts callKey), and its latency. */
  readonly key: string
  readonly ms: number
  /** Order among role jobs: when it became possible, then a counter. */
  readonly readyAt: number
  readonly seq: number
  /** Executions: chain length (longer first) and tree order. */
  readonly chain: number
  readonly order: number
  readonly done: (at: number) => void
}

interface Running {
  readonly end: number
  readonly seq: number
  readonly job: Job
  readonly executor: number
}

/** Per composite node: its attempts' proposal and ballot authors, and what wins. */
interface NodeCalls {
  readonly attempts: ReadonlyArray<{
    readonly proposals: ReadonlyArray<{ readonly id: string; readonly author: string }>
    /** Each ballot's author and the proposals it must wait for. */
    readonly ballots: ReadonlyArray<{ readonly author: string; readonly cites: readonly string[] }>
    /** Ballots for the winner needed before the split applies (0 for a failed attempt). */
    readonly quorum: number
    /** The scorers whose ballots chose the winner. */
    readonly winners: ReadonlySet<string>
  }>
}

function callsOf(tree: PlanTree, node: TreeNode, depsOf: CentralPlan['depsOf']): NodeCalls {
  const quorumOf = new Map(tree.committees.map(c => [c.event as string, c.quorum]))
  const attempts = node.attempts.map(a => {
    const proposals = a.proposals
      .filter(p => !p.equivocated)
      .map(p => ({ id: p.id as string, author: p.author as string }))
    const ids = new Set(proposals.map(p => p.id))
    const all = proposals.map(p => p.id)
    const ballots = a.ballots
      .filter(b => !b.equivocated)
      .map(b => {
        const cited = depsOf?.(b.id)?.filter(d => ids.has(d))
        return { author: b.author as string, cites: cited === undefined || cited.length === 0 ? all : cited }
      })
    const won = a.outcome === 'won' && a.winner !== null
    const decided = a.ballots.find(b => b.id === a.decidedBy)
    const winners = new Set(
      a.ballots.filter(b => won && b.choice === a.winner && !b.equivocated).map(b => b.author as string)
    )
    const quorum = won ? Math.min(winners.size, quorumOf.get(decided?.committee ?? '') ?? winners.size) : 0
    return { proposals, ballots, quorum, winners }
  })
  return { attempts }
}

/** Replay the plans' calls under `limits`, each with its latency from `latency`; returns the makespan and more. */
export function runCentral(plans: readonly CentralPlan[], latency: Latency, limits: CentralLimits): CentralResult {
  const queueRole = new Map<string, Job[]>()
  const queueExec: Job[] = []
  const busyRole = new Map<string, number>()
  const executors = Number.isFinite(limits.executors) ? limits.executors : 0
  const busyExec = Array.from({ length: executors }, () => 0)
  const busyExecPlan = Array.from({ length: executors }, () => new Map<number, number>())
  const running: Running[] = []
  const finishMs = new Map<PlanId, number>()
  const callsByKind: Record<string, number> = {}
  let seq = 0
  let calls = 0
  let workMs = 0
  let maxInFlight = 0
  let now = 0
  const keys: string[] = []
  const workBy = new Map<string, number>()
  let execWorkMs = 0

  const push = (job: Omit<Job, 'seq' | 'readyAt' | 'ms'>): void => {
    const j: Job = { ...job, ms: latency(job.kind, job.key), readyAt: now, seq: seq++ }
    if (j.worker === null) queueExec.push(j)
    else {
      const q = queueRole.get(j.worker)
      if (q === undefined) queueRole.set(j.worker, [j])
      else q.push(j)
    }
  }

  plans.forEach((p, pi) => {
    const tree = p.tree
    const nodes = nodeMap(tree)
    const chain = chainLengths(tree)
    const doneAt = new Map<NodeId, number>()
    const taskOf = new Map(tree.tasks.map((t, i) => [t.node as string, { task: t, order: i }]))
    const keyOf = (kind: CallKind, caller: string | null, n: TreeNode): string =>
      callKey(kind, caller, tree.goal, [...pathOf(tree, n, nodes), n.title])
    const blockers = (n: TreeNode): TreeNode[] => {
      const out: TreeNode[] = []
      for (let a: TreeNode | undefined = n; a !== undefined; a = a.parent === null ? undefined : nodes.get(a.parent))
        for (const d of a.dependsOn) {
          const x = nodes.get(d)
          if (x !== undefined) out.push(x)
        }
      return out
    }
    const waiting = new Set<TreeNode>()
    const execute = (n: TreeNode): void => {
      const t = taskOf.get(n.id)
      if (t === undefined) throw new Error(`central: node ${n.id} has no task`)
      const kind: CallKind = t.task.kind === 'leaf' ? 'execute-leaf' : 'execute-rollup'
      push({
        plan: pi,
        kind,
        worker: null,
        key: keyOf(kind, null, n),
        chain: chain.get(t.task.id) ?? 0,
        order: t.order,
        done: at => {
          finished(n, at)
        }
      })
    }
    const leafReady = (n: TreeNode): boolean => blockers(n).every(b => doneAt.has(b.id))
    const finished = (n: TreeNode, at: number): void => {
      doneAt.set(n.id, at)
      if (n.parent === null) {
        finishMs.set(tree.plan, at)
        return
      }
      for (const w of [...waiting])
        if (leafReady(w)) {
          waiting.delete(w)
          execute(w)
        }
      const parent = nodes.get(n.parent)
      if (parent !== undefined && parent.children.every(c => doneAt.has(c))) execute(parent)
    }
    const exists = (n: TreeNode): void => {
      if (n.kind === 'decomposing')
        throw new Error(`central: node ${n.id} of plan ${tree.plan} was never decided (the plan did not finish)`)
      if (n.kind !== 'composite') {
        if (leafReady(n)) execute(n)
        else waiting.add(n)
        return
      }
      const plan = callsOf(tree, n, p.depsOf)
      const attempt = (k: number): void => {
        const a = plan.attempts[k]
        if (a === undefined) throw new Error(`central: node ${n.id} of plan ${tree.plan} has no attempt that won`)
        const done = new Set<string>()
        let scored = 0
        let chose = 0
        let applied = false
        const apply = (): void => {
          if (applied) return
          applied = true
          if (a.quorum === 0) {
            attempt(k + 1)
            return
          }
          for (const c of n.children) {
            const child = nodes.get(c)
            if (child !== undefined) exists(child)
          }
        }
        const pending = new Set(a.ballots)
        const cast = (): void => {
          for (const b of [...pending]) {
            if (!b.cites.every(c => done.has(c))) continue
            pending.delete(b)
            push({
              plan: pi,
              kind: 'score',
              worker: `score:${b.author}`,
              key: keyOf('score', b.author, n),
              chain: 0,
              order: 0,
              done: () => {
                scored++
                if (a.winners.has(b.author)) chose++
                if ((a.quorum > 0 && chose >= a.quorum) || scored === a.ballots.length) apply()
              }
            })
          }
        }
        if (a.ballots.length === 0 && a.proposals.length === 0) apply()
        for (const prop of a.proposals)
          push({
            plan: pi,
            kind: 'decompose',
            worker: `decompose:${prop.author}`,
            key: keyOf('decompose', prop.author, n),
            chain: 0,
            order: 0,
            done: () => {
              done.add(prop.id)
              cast()
              if (a.ballots.length === 0 && done.size === a.proposals.length) apply()
            }
          })
      }
      attempt(0)
    }
    const root = nodes.get(tree.root)
    if (root === undefined) throw new Error(`central: plan ${tree.plan} has no root`)
    if ((p.startMs ?? 0) !== 0) throw new Error('central: goals at different times are not supported')
    exists(root)
  })

  const perPlanOf = (pi: number): number => limits.perPlanClaims ?? plans[pi]?.tree.params.maxClaimsPerExecutor ?? 1
  const start = (job: Job, executor: number): void => {
    calls++
    keys.push(job.key)
    if (job.worker === null) execWorkMs += job.ms
    else workBy.set(job.worker, (workBy.get(job.worker) ?? 0) + job.ms)
    workMs += job.ms
    callsByKind[job.kind] = (callsByKind[job.kind] ?? 0) + 1
    running.push({ end: now + job.ms, seq: job.seq, job, executor })
    maxInFlight = Math.max(maxInFlight, running.length)
  }
  const dispatch = (): void => {
    for (const [worker, q] of queueRole) {
      q.sort((a, b) => a.readyAt - b.readyAt || a.seq - b.seq)
      while (q.length > 0 && (busyRole.get(worker) ?? 0) < limits.roleConcurrency) {
        busyRole.set(worker, (busyRole.get(worker) ?? 0) + 1)
        start(q.shift() as Job, -1)
      }
    }
    queueExec.sort((a, b) => b.chain - a.chain || a.plan - b.plan || a.order - b.order || a.seq - b.seq)
    for (let i = 0; i < queueExec.length; i++) {
      const job = queueExec[i] as Job
      let at = -1
      if (executors === 0) at = Infinity
      else {
        const cap = perPlanOf(job.plan)
        // The least busy executor with room in the job's plan (lowest index on a tie).
        for (let e = 0; e < executors; e++) {
          const b = busyExec[e] as number
          const inPlan = (busyExecPlan[e] as Map<number, number>).get(job.plan) ?? 0
          if (b < limits.executorConcurrency && inPlan < cap && (at < 0 || b < (busyExec[at] as number))) at = e
        }
      }
      if (at < 0) continue
      queueExec.splice(i--, 1)
      if (at !== Infinity) {
        busyExec[at] = (busyExec[at] as number) + 1
        const m = busyExecPlan[at] as Map<number, number>
        m.set(job.plan, (m.get(job.plan) ?? 0) + 1)
      }
      start(job, at)
    }
  }

  dispatch()
  while (running.length > 0) {
    let first = 0
    for (let i = 1; i < running.length; i++) {
      const r = running[i] as Running
      const f = running[first] as Running
      if (r.end < f.end || (r.end === f.end && r.seq < f.seq)) first = i
    }
    const r = running.splice(first, 1)[0] as Running
    now = r.end
    if (r.job.worker !== null) busyRole.set(r.job.worker, (busyRole.get(r.job.worker) ?? 1) - 1)
    else if (r.executor !== Infinity && r.executor >= 0) {
      busyExec[r.executor] = (busyExec[r.executor] as number) - 1
      const m = busyExecPlan[r.executor] as Map<number, number>
      m.set(r.job.plan, (m.get(r.job.plan) ?? 1) - 1)
    }
    r.job.done(now)
    // Everything that ends at this same moment is done before anything new starts.
    const next = running.reduce((m, x) => Math.min(m, x.end), Infinity)
    if (next > now) dispatch()
  }
  for (const p of plans)
    if (!finishMs.has(p.tree.plan))
      throw new Error(`central: plan ${p.tree.plan} never finished (a call it waits for was never made)`)
  return {
    makespanMs: Math.max(0, ...finishMs.values()),
    finishMs,
    calls,
    callsByKind,
    workMs,
    maxInFlight,
    keys,
    floorMs: chainMs =>
      Math.max(
        chainMs,
        ...[...workBy.values()].map(w => w / limits.roleConcurrency),
        execWorkMs / (limits.executors * limits.executorConcurrency)
      )
  }
}
