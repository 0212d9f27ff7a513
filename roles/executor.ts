import { hashParts } from '../src/core/hash.js'
import { view } from '../src/core/view.js'
import { MAX_OUTPUT_CHARS, MAX_REASON_CHARS } from '../src/core/limits.js'
import { isIdle, nearBudget, nodeMap, pathOf, inputsOf } from './plan-context.js'
import type { EventId, PeerIdString, PlanEvent, PlanId } from '../src/core/events.js'
import type { PlanTree, TaskView } from '../src/core/tree.js'
import type { RoleContext, RoleHandler } from './driver.js'

/**
 * Each later-ranked executor waits this much longer, after it first sees a
 * task claimable, before claiming it: executors spread out without talking,
 * as long as a claim travels faster than this.
 */
export const STAGGER_MS = 250
/** A takeover waits this long past a lapsed lease, for clock skew between peers. */
export const SKEW_ALLOWANCE_MS = 2_000
/** After claiming, wait this long for an earlier competing claim to show up before calling the model. */
export const CONFIRM_MS = 150

/**
 * Waits that must outlast propagation grow with the delay this node observes
 * on gossip (on a loaded machine events take seconds, not milliseconds), so
 * executors keep spreading out instead of racing. Never below the base, at
 * most 2 s.
 */
export function propagationWait (baseMs: number, lagMs: number): number {
  return Math.min(2_000, Math.max(baseMs, Math.round(2 * lagMs)))
}

export interface ClaimIntent {
  readonly kind: 'claim'
  readonly key: string
  readonly plan: PlanId
  readonly task: TaskView
  /** The last event of the chain this claim takes over, or null for a fresh claim. */
  readonly prev: EventId | null
}

/** This executor's rank for a task among the live executors (0 = it prefers the task most). */
export function rankFor (task: string, me: string, executors: readonly string[]): number {
  const all = [...new Set([...executors, me])]
  const score = (p: string): string => hashParts(task, p)
  all.sort((a, b) => score(a) < score(b) ? -1 : 1)
  return all.indexOf(me)
}

/**
 * Claim claimable tasks (leaves and roll-ups), at most the plan's limit at
 * once: each waits `rank * STAGGER_MS` after this executor first saw the task
 * claimable (`seenAt`), so the executor that prefers it most gets it first; a
 * lapsed claim is taken over only once this executor's clock is past the
 * lapse plus the skew allowance.
 */
export function decideExecutor (tree: PlanTree, me: PeerIdString, nowMs: number, executors: readonly string[], working: number, seenAt: (task: string) => number, staggerMs = STAGGER_MS): ClaimIntent[] {
  if (isIdle(tree)) return []
  const v = view(tree, nowMs, SKEW_ALLOWANCE_MS)
  let room = tree.params.maxClaimsPerExecutor - Math.max(working, v.ownedBy(me).length)
  const out: ClaimIntent[] = []
  for (const task of v.claimable) {
    if (room <= 0) break
    const current = task.chains[task.chains.length - 1]
    const takeover = task.status === 'claimed' && current !== undefined
    if (takeover && current.owner === me) continue
    const since = takeover ? current.lapseMs + SKEW_ALLOWANCE_MS : seenAt(task.id)
    if (nowMs < since + rankFor(task.id, me, executors) * staggerMs) continue
    const ended = current?.end
    const prev = takeover ? current.last : ended !== null && ended !== undefined && ended.kind !== 'superseded' ? ended.event : null
    out.push({ kind: 'claim', key: `claim:${tree.plan}:${task.id}`, plan: tree.plan, task, prev })
    room--
  }
  return out
}

/** Cut text to fit the wire's cap, saying so. */
function fit (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 40)}\n[... cut to fit ${max} characters]`
}

export function createExecutor (ctx: RoleContext): RoleHandler {
  const me = ctx.peer.replica.peerId
  const working = new Map<string, { check: () => void, stop: () => void }>()
  const firstSeen = new Map<string, number>()
  const seenAt = (task: string): number => {
    let t = firstSeen.get(task)
    if (t === undefined) {
      t = ctx.peer.now()
      firstSeen.set(task, t)
      if (firstSeen.size > 10_000) firstSeen.delete(firstSeen.keys().next().value as string)
    }
    return t
  }

  /** Where our claim stands: heading the task now, once owner (then superseded or ended), or never owner (an earlier claim won). */
  const standing = (plan: PlanId, task: string, claim: EventId): 'owner' | 'was-owner' | 'lost' => {
    const t = ctx.peer.replica.tree(plan)?.tasks.find(x => x.id === task)
    const chain = t?.chains[t.chains.length - 1]
    if (chain?.claim === claim && chain.end === null && t?.status === 'claimed') return 'owner'
    return t?.chains.some(c => c.claim === claim) === true ? 'was-owner' : 'lost'
  }

  return {
    decide: (tree, now) => {
      const executors = ctx.peer.roster.list(now).filter(r => r.role === 'executor').map(r => r.peerId)
      return decideExecutor(tree, me, now, executors, [...working.keys()].filter(k => k.startsWith(tree.plan)).length, seenAt, propagationWait(STAGGER_MS, ctx.peer.replica.lagMs))
    },
    tick: () => { for (const w of working.values()) w.check() },
    stop: () => { for (const w of working.values()) w.stop() },
    act: async (intent: ClaimIntent, tree) => {
      const cites = intent.prev === null ? intent.task.evidence : [...intent.task.evidence, intent.prev]
      const { event: claim } = await ctx.peer.publish('task-claimed', intent.plan, cites, { task: intent.task.id, prev: intent.prev })
      await new Promise(resolve => setTimeout(resolve, propagationWait(CONFIRM_MS, ctx.peer.replica.lagMs)))
      const now = ctx.peer.replica.tree(intent.plan)
      if (now !== undefined && isIdle(now)) {
        // Cancelled, finished or out of budget while we confirmed: no model call. Out of budget, hand
        // the task back so that it is free at once when the author raises the budget.
        if (now.status === 'budget-exhausted') await ctx.peer.publish('task-released', intent.plan, [claim.id], { task: intent.task.id, claim: claim.id, reason: 'the plan ran out of budget' })
        ctx.say(`not executing "${intent.task.id.slice(0, 8)}": the plan is ${now.status}`)
        return
      }
      if (standing(intent.plan, intent.task.id, claim.id) !== 'owner') {
        ctx.say(`lost the claim race for a task of plan ${intent.plan.slice(0, 8)}; another executor holds it`)
        return
      }
      const nodes = nodeMap(tree)
      const node = nodes.get(intent.task.node)
      if (node === undefined) throw new Error(`task ${intent.task.id} has no node`)
      const abort = new AbortController()
      let last: PlanEvent = claim
      let renewing = false
      const renewEveryMs = Math.max(500, Math.floor(tree.params.leaseMs / 3))
      const key = `${intent.plan}:${intent.task.id}`
      working.set(key, {
        // On every pass: stop at once when an earlier claim turns out to have won; renew the lease when due.
        check: () => {
          if (standing(intent.plan, intent.task.id, claim.id) === 'lost') { abort.abort(); return }
          if (renewing || ctx.peer.now() - last.env.hlc.ms < renewEveryMs) return
          renewing = true
          ctx.peer.publish('claim-renewed', intent.plan, [claim.id, last.id], { task: intent.task.id, claim: claim.id, prev: last.id })
            .then(r => { last = r.event }, (err: Error) => { ctx.say(`could not renew a lease: ${err.message}`) })
            .finally(() => { renewing = false })
        },
        stop: () => { abort.abort() }
      })
      try {
        const provider = nearBudget(tree) ? ctx.provider.downgrade() : ctx.provider
        ctx.say(`executing ${intent.task.kind === 'rollup' ? 'roll-up of ' : ''}"${node.title}"`)
        let out
        try {
          out = await provider.execute({
            goal: tree.goal,
            path: pathOf(tree, node, nodes),
            task: { title: node.title, detail: node.detail },
            kind: intent.task.kind,
            inputs: inputsOf(tree, intent.task, nodes)
          }, { signal: abort.signal, maxOutputTokens: tree.params.maxTokensPerCall })
        } catch (err) {
          if (abort.signal.aborted) { ctx.say(`stopped "${node.title}": an earlier claim won or the node is stopping`); return }
          await ctx.peer.publish('task-failed', intent.plan, [claim.id], { task: intent.task.id, claim: claim.id, error: fit((err as Error).message, MAX_REASON_CHARS), usage: { inputTokens: 0, outputTokens: 0 } })
          ctx.say(`"${node.title}" failed: ${(err as Error).message}`)
          return
        }
        if (standing(intent.plan, intent.task.id, claim.id) === 'lost') {
          ctx.say(`dropped the result of "${node.title}": an earlier claim won while it ran`)
          return
        }
        await ctx.peer.publish('result-reported', intent.plan, [claim.id, last.id], {
          task: intent.task.id, claim: claim.id, output: fit(out.output, MAX_OUTPUT_CHARS), usage: out.usage, model: out.model, source: out.source
        })
        ctx.say(`done "${node.title}"`)
      } finally {
        working.delete(key)
      }
    }
  }
}
