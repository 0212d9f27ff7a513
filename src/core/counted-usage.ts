import type { PlanIndex } from './plan-index.js'
import type { EventId, PlanEvent, ResolvedParams } from './events.js'
import type { TreeNode, TaskView } from './tree.js'
import type { TrustRules } from './trust-rules.js'

/**
 * Protocol 5's spent tokens: usage is self-reported, so it counts only where
 * the event counted (ADR-0047): proposals and ballots of the tree's attempts
 * that filled their slot alone (ballots of equivocators left out), the
 * results, failures and rejected results that ended a chain, and the reviews
 * of those results that filled their slot alone. Each is capped as in
 * versions 1 to 4 (maxTokensPerCall per model turn). So a member adds at
 * most what an honest member in its place could: one proposal per attempt,
 * one ballot per attempt and committee, the work of the chains it held.
 */
export function countedTokens(
  index: PlanIndex,
  params: ResolvedParams,
  nodes: readonly TreeNode[],
  tasks: readonly TaskView[],
  rules: TrustRules
): number {
  const counted = new Set<EventId>()
  for (const n of nodes)
    for (const a of n.attempts) {
      for (const p of a.proposals) if (!p.equivocated) counted.add(p.id)
      for (const b of a.ballots) if (!b.equivocated && !rules.equivocators.has(b.author)) counted.add(b.id)
    }
  for (const t of tasks)
    for (const c of t.chains) {
      if (c.end === null || c.end.kind === 'released' || c.end.kind === 'superseded') continue
      counted.add(c.end.event)
      if (c.end.kind === 'failed') continue
      const slots = new Map<string, Array<PlanEvent<'result-reviewed'>>>()
      for (const r of index.reviews.get(c.end.event) ?? []) {
        const k = `${r.env.author}@${r.env.body.committee}`
        slots.set(k, [...(slots.get(k) ?? []), r])
      }
      for (const s of slots.values()) {
        const r = s[0] as PlanEvent<'result-reviewed'>
        if (s.length === 1 && !rules.equivocators.has(r.env.author)) counted.add(r.id)
      }
    }
  let spent = 0
  for (const id of counted) {
    const body = index.event(id)?.env.body as { usage?: { inputTokens: number; outputTokens: number }; turns?: number }
    if (body?.usage === undefined) continue
    spent += Math.min(body.usage.inputTokens + body.usage.outputTokens, params.maxTokensPerCall * (body.turns ?? 1))
  }
  return spent
}
