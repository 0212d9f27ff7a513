import { sleep } from '../../ports/scheduler.js'
import { attacker, beside, JUNK_MARK } from './executor-policies.js'
import type { Bodies, EventId, PlanId } from '../../core/events.js'
import type { NodeView, Publish } from '../../ports/node-view.js'
import type { LlmProvider } from '../../llm/types.js'
import type { RoleHandler } from '../../../roles/driver.js'
import type { PolicyCtx } from './executor-policies.js'

/** Junk proposals a budget-drain decomposer adds to each of its proposals, each reporting the most usage counted. */
export const DRAIN_PER_PROPOSAL = 40
/** Proposals a stuffing decomposer adds to each of its own in one attempt: more than a ballot may cite (MAX_DEPS). */
export const STUFF_PER_PROPOSAL = 70

/** A view whose publish is `publish`, the rest the node's: the honest roles run on it unchanged. */
export function tamper(view: NodeView, publish: Publish): NodeView {
  return { ...view, publish }
}

/** The same proposal again with another rationale: a second event in the author's slot. */
function again(body: Bodies['split-proposed'], k: number, usage = body.usage): Bodies['split-proposed'] {
  return { ...body, rationale: `${body.rationale} (${k})`, usage }
}

/**
 * equivocate-early: every proposal and ballot at once followed by a second, different one in the same slot, so
 * neither counts (a proposal's rationale changed; a ballot's choice none).
 */
export function equivocateEarly(view: NodeView): NodeView {
  return tamper(view, async (type, plan, cites, body) => {
    const r = await view.publish(type, plan, cites, body)
    if (type === 'split-proposed')
      await view.publish('split-proposed', plan, cites, again(body as Bodies['split-proposed'], 2))
    if (type === 'ballot-cast')
      await view.publish('ballot-cast', plan, cites, {
        ...(body as Bodies['ballot-cast']),
        choice: null,
        notes: 'none after all'
      })
    return r
  })
}

/**
 * equivocate-late: honest proposals and ballots, then once the plan has completed a second event in every slot
 * of its whose proposal won or whose ballot chose the winner: both are void, and a decided split loses its winner.
 */
export function equivocateLate(p: PolicyCtx, honest: RoleHandler, onDone: (plan: PlanId) => void): RoleHandler {
  const view = p.ctx.view
  const me = view.me
  const own = attacker(
    tree => (tree.status === 'completed' ? [{ key: `el:${tree.plan}`, plan: tree.plan, task: null }] : []),
    async (a, tree) => {
      await sleep(view.scheduler, 500)
      for (const n of tree.nodes)
        for (const at of n.attempts) {
          for (const prop of at.proposals) {
            if (prop.author !== me || prop.id !== at.winner) continue
            const e = view.event(prop.id)
            if (e === undefined || e.env.type !== 'split-proposed') continue
            const body = e.env.body as Bodies['split-proposed']
            const cites = e.env.deps.filter(d => d !== (a.plan as string as EventId))
            await p.forger.forge('split-proposed', a.plan, cites, again(body, 2))
          }
          for (const b of at.ballots) {
            const e = b.author === me && b.choice === at.winner ? view.event(b.id) : undefined
            if (e === undefined || e.env.type !== 'ballot-cast') continue
            const cites = e.env.deps.filter(d => d !== (a.plan as string as EventId))
            const body = e.env.body as Bodies['ballot-cast']
            await p.forger.forge('ballot-cast', a.plan, cites, { ...body, choice: null, notes: 'none after all' })
          }
        }
      onDone(a.plan)
    }
  )
  return beside(honest, own)
}

/** stuff: each proposal followed by STUFF_PER_PROPOSAL more in the same attempt. */
export function stuff(view: NodeView): NodeView {
  return tamper(view, async (type, plan, cites, body) => {
    const r = await view.publish(type, plan, cites, body)
    if (type === 'split-proposed')
      for (let k = 2; k <= STUFF_PER_PROPOSAL + 1; k++)
        await view.publish('split-proposed', plan, cites, again(body as Bodies['split-proposed'], k))
    return r
  })
}

/** budget-drain: each proposal reports the most usage one event may count, and DRAIN_PER_PROPOSAL junk ones follow. */
export function budgetDrain(view: NodeView): NodeView {
  return tamper(view, async (type, plan, cites, body) => {
    if (type !== 'split-proposed') return await view.publish(type, plan, cites, body)
    const max = view.tree(plan as PlanId)?.params.maxTokensPerCall ?? 16_000
    const most = { inputTokens: max, outputTokens: 0 }
    const b = body as Bodies['split-proposed']
    const r = await view.publish(type, plan, cites, { ...b, usage: most } as typeof body)
    for (let k = 2; k <= DRAIN_PER_PROPOSAL + 1; k++)
      await view.publish('split-proposed', plan, cites, again(b, k, most))
    return r
  })
}

/**
 * junk: the honest executor's claims, with output that is no work. Every other one names the task's title, which
 * the offline review (and a careless reviewer) takes for work; the rest do not and are rejected under review.
 */
export function junkProvider(provider: LlmProvider): LlmProvider {
  let n = 0
  const junk: LlmProvider = {
    ...provider,
    withModel: () => junk,
    downgrade: () => junk,
    execute: async (input, opts) => {
      const out = await provider.execute(input, opts)
      n++
      return { ...out, output: n % 2 === 0 ? `${JUNK_MARK} ${input.task.title}` : `${JUNK_MARK} ${n}` }
    }
  }
  return junk
}

/**
 * The honest scorers' reviewer in a junk run: the offline review, except that junk (output starting JUNK_MARK) is
 * rejected, as a reviewing model that reads the output would. The offline review alone checks only that the output
 * names its task, so it takes half the junk for work (ByzOptions.reviewer: 'stand-in' runs with it).
 */
export function junkJudge(provider: LlmProvider): LlmProvider {
  const judge: LlmProvider = {
    ...provider,
    withModel: () => judge,
    downgrade: () => judge,
    review: async (input, opts) => {
      const out = await provider.review(input, opts)
      return input.output.startsWith(JUNK_MARK)
        ? { ...out, verdict: 'reject', notes: 'The output is no work on the task.' }
        : out
    }
  }
  return judge
}
