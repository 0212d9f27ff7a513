import { sleep } from '../../ports/scheduler.js'
import { inputsOf, nodeMap, pathOf } from '../../../roles/plan-context.js'
import { ZERO_USAGE } from '../../llm/types.js'
import { justAfterReady, stopped } from './forge.js'
import type { EventId, Hlc, PlanEvent, PlanId } from '../../core/events.js'
import type { PlanTree, TaskView } from '../../core/tree.js'
import type { RoleContext, RoleHandler } from '../../../roles/driver.js'
import type { Forger } from './forge.js'

/** One attack on one task (or plan): the driver runs it once, as it runs an honest role's intent. */
export interface Attack {
  readonly key: string
  readonly plan: PlanId
  readonly task: TaskView | null
}

/** What every policy shares: the node's role context, the identity it signs as, and a stop flag. */
export interface PolicyCtx {
  readonly ctx: RoleContext
  readonly forger: Forger
  /** Set when the node stops: loops end at their next wake-up. */
  readonly halted: () => boolean
}

/** The marker every junk output starts with, so a verdict can tell junk from work. */
export const JUNK_MARK = 'JUNK'

/** The model's output for `task`, as an honest executor would get it (with its virtual latency). */
export async function work(p: PolicyCtx, tree: PlanTree, task: TaskView): Promise<{ output: string; model: string }> {
  const nodes = nodeMap(tree)
  const node = nodes.get(task.node)
  if (node === undefined) return { output: 'done', model: 'none' }
  const out = await p.ctx.provider.execute({
    goal: tree.goal,
    path: pathOf(tree, node, nodes),
    task: { title: node.title, detail: node.detail },
    kind: task.kind,
    inputs: inputsOf(tree, task, nodes)
  })
  return { output: out.output, model: out.model }
}

/** A claim stamped one tick after readyAt, then the work and its result: it wins every task it sees ready. */
async function claimEarlyAndDo(p: PolicyCtx, tree: PlanTree, task: TaskView, doWork: boolean): Promise<void> {
  const view = p.ctx.view
  const claim = await p.forger.forge(
    'task-claimed',
    tree.plan,
    task.evidence,
    { task: task.id, prev: null },
    justAfterReady(view, task)
  )
  if (claim === undefined) return
  const done = doWork ? await work(p, tree, task) : { output: `${task.id.slice(0, 8)} done`, model: 'none' }
  await result(p, tree.plan, task, claim, done.output, done.model)
}

async function result(
  p: PolicyCtx,
  plan: PlanId,
  task: TaskView,
  claim: PlanEvent,
  output: string,
  model: string,
  at?: Hlc
): Promise<PlanEvent | undefined> {
  return await p.forger.forge(
    'result-reported',
    plan,
    [claim.id],
    { task: task.id, claim: claim.id, output, usage: ZERO_USAGE, model, source: 'offline' },
    at
  )
}

/** Tasks an executor could take now in an open plan: ready, or held by someone else. */
export function takeable(tree: PlanTree, me: string): TaskView[] {
  if (stopped(tree)) return []
  return tree.tasks.filter(
    t => t.readyAt !== null && (t.status === 'ready' || (t.status === 'claimed' && t.owner !== me))
  )
}

/** A handler whose every intent is an attack, run once per key. */
export function attacker(
  decide: (tree: PlanTree) => Attack[],
  act: (a: Attack, tree: PlanTree) => Promise<void>
): RoleHandler {
  const made = new Set<string>()
  return {
    decide: tree => decide(tree).filter(a => !made.has(a.key)),
    act: async (a: Attack, tree) => {
      made.add(a.key)
      await act(a, tree)
    }
  }
}

/** backdate: every ready task claimed at readyAt + 1 tick, then done and reported. */
export function backdate(p: PolicyCtx): RoleHandler {
  return attacker(
    tree => takeable(tree, p.forger.me).map(t => ({ key: `bd:${t.id}`, plan: tree.plan, task: t })),
    async (a, tree) => {
      if (a.task !== null) await claimEarlyAndDo(p, tree, a.task, true)
    }
  )
}

/**
 * hoard: every task it sees claimed at readyAt + 1 tick, renewed every half lease up to maxClaimMs, then claimed
 * again (a takeover of its own chain, stamped one ms after the lapse, published before it), never finished.
 */
export function hoard(p: PolicyCtx): RoleHandler {
  const view = p.ctx.view
  return attacker(
    tree => takeable(tree, p.forger.me).map(t => ({ key: `hoard:${t.id}`, plan: tree.plan, task: t })),
    async (a, tree) => {
      const task = a.task
      if (task === null) return
      const { leaseMs, maxClaimMs } = tree.params
      let at: Hlc = justAfterReady(view, task)
      let prev: EventId | null = null
      let cites: readonly EventId[] = task.evidence
      while (!p.halted()) {
        const claim = await p.forger.forge('task-claimed', a.plan, cites, { task: task.id, prev }, at)
        if (claim === undefined) return
        let last: PlanEvent = claim
        const lapseAt = claim.env.hlc.ms + maxClaimMs
        for (;;) {
          await sleep(view.scheduler, leaseMs / 2)
          const t = view.tree(a.plan)
          if (p.halted() || t === undefined || stopped(t)) return
          if (view.now() + leaseMs / 2 >= lapseAt) break
          const r = await p.forger.forge('claim-renewed', a.plan, [claim.id, last.id], {
            task: task.id,
            claim: claim.id,
            prev: last.id
          })
          if (r === undefined) return
          last = r
        }
        await sleep(view.scheduler, Math.max(0, lapseAt - view.now() - 2_000))
        at = { ms: lapseAt + 1, c: 0 }
        prev = last.id
        cites = [...task.evidence, last.id]
      }
    }
  )
}

/**
 * not-held: a claim of every task another executor holds (it loses the walk) and at once a result for it: the
 * fold accepts the earliest result of any counting claim, so the task is done by one who never held it.
 */
export function notHeld(p: PolicyCtx, honest: RoleHandler): RoleHandler {
  const own = attacker(
    tree =>
      stopped(tree)
        ? []
        : tree.tasks
            .filter(t => t.status === 'claimed' && t.owner !== p.forger.me)
            .map(t => ({ key: `nh:${t.id}`, plan: tree.plan, task: t })),
    async a => {
      if (a.task === null) return
      const claim = await p.forger.forge('task-claimed', a.plan, a.task.evidence, { task: a.task.id, prev: null })
      if (claim !== undefined) await result(p, a.plan, a.task, claim, `${a.task.id.slice(0, 8)} done`, 'none')
    }
  )
  return beside(honest, own)
}

/**
 * late-rewrite: honest work, then once a plan has completed a claim and a result for every done task stamped just
 * after its readyAt, so each becomes the earliest result and replaces the accepted one (the root's: the deliverable).
 */
export function lateRewrite(p: PolicyCtx, honest: RoleHandler, onDone: (plan: PlanId) => void): RoleHandler {
  const view = p.ctx.view
  const own = attacker(
    tree => (tree.status === 'completed' ? [{ key: `rw:${tree.plan}`, plan: tree.plan, task: null }] : []),
    async (a, tree) => {
      await sleep(view.scheduler, 500)
      for (const task of tree.tasks) {
        if (task.status !== 'done' || p.halted()) continue
        const at = justAfterReady(view, task)
        const claim = await p.forger.forge('task-claimed', a.plan, task.evidence, { task: task.id, prev: null }, at)
        if (claim !== undefined)
          await result(p, a.plan, task, claim, `REWRITTEN ${task.id.slice(0, 8)}`, 'none', { ms: at.ms, c: at.c + 1 })
      }
      onDone(a.plan)
    }
  )
  return beside(honest, own)
}

/** Two handlers on one node: the honest role's intents and the attacker's, each acted on by its own. */
export function beside(honest: RoleHandler, own: RoleHandler): RoleHandler {
  const mine = new Set<string>()
  return {
    ...honest,
    decide: (tree, now) => {
      const extra = own.decide(tree, now)
      for (const i of extra) mine.add(i.key)
      return [...honest.decide(tree, now), ...extra]
    },
    act: async (intent: { key: string }, tree) => {
      await (mine.has(intent.key) ? own : honest).act(intent as never, tree)
    }
  }
}
