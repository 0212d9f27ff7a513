import { hashParts } from '../src/core/hash.js'
import { view } from '../src/core/view.js'
import { ANGLES } from '../src/llm/types.js'
import { isIdle, nearBudget, nodeMap, pathOf } from './plan-context.js'
import { executorOffers } from '../src/core/needs.js'
import { MAX_NEEDS, NEED_PATTERN } from '../src/core/limits.js'
import type { PeerIdString, PlanId, Subgoal } from '../src/core/events.js'
import type { PlanTree, TreeNode } from '../src/core/tree.js'
import type { RoleContext, RoleHandler } from './driver.js'

/** A decomposer's angle, fixed by its peer id, so that several decomposers' proposals compete. */
export function angleOf(peer: string): string {
  const h = parseInt(hashParts('angle', peer).slice(0, 8), 16)
  return ANGLES[h % ANGLES.length] as string
}

/**
 * A subgoal as published: its needs kept only when the plan uses tools and
 * the names are on offer in the swarm (sorted, distinct, at most MAX_NEEDS),
 * so that a model's invented name cannot leave a task waiting for nobody.
 */
export function withNeeds(s: Subgoal, offered: readonly string[]): Subgoal {
  const { needs, ...rest } = s
  const kept = [...new Set(needs ?? [])].filter(n => offered.includes(n) && NEED_PATTERN.test(n)).sort()
  return kept.length === 0 ? rest : { ...rest, needs: kept.slice(0, MAX_NEEDS) }
}

export interface ProposeIntent {
  readonly kind: 'propose'
  readonly key: string
  readonly plan: PlanId
  readonly node: TreeNode
  readonly attempt: number
  readonly path: string[]
  readonly notes: string[]
}

/**
 * For every node with an open attempt that this decomposer has not proposed
 * for, propose a split; after a failed attempt, with the committee's notes.
 */
export function decideDecomposer(tree: PlanTree, me: PeerIdString, nowMs: number): ProposeIntent[] {
  if (isIdle(tree)) return []
  const nodes = nodeMap(tree)
  return view(tree, nowMs).openAttempts.flatMap(({ node, attempt }) => {
    const a = node.attempts.find(x => x.attempt === attempt)
    if (a?.proposals.some(p => p.author === me) === true) return []
    const previous = node.attempts.find(x => x.attempt === attempt - 1)
    const notes = previous?.ballots.map(b => b.notes).filter(n => n.trim() !== '') ?? []
    return [
      {
        kind: 'propose' as const,
        key: `propose:${tree.plan}:${node.id}#${attempt}`,
        plan: tree.plan,
        node,
        attempt,
        path: pathOf(tree, node, nodes),
        notes
      }
    ]
  })
}

/** Capability names a decomposer remembers at most (what executors offered since it started). */
export const MAX_KNOWN_OFFERS = 256

export function createDecomposer(ctx: RoleContext): RoleHandler {
  const angle = angleOf(ctx.view.me)
  // Every capability an executor offered since this node started, not only those in sight now: the laptop
  // with the browser may be closed for the night, and a task that needs it should wait for it, not lose the need.
  const known = new Set<string>()
  const knownOffers = (): string[] => {
    for (const o of executorOffers(ctx.view.roster()))
      for (const n of o) if (known.size < MAX_KNOWN_OFFERS || known.has(n)) known.add(n)
    return [...known].sort()
  }
  ctx.say(`decomposer angle: ${angle}`)
  return {
    decide: (tree, now) => decideDecomposer(tree, ctx.view.me, now),
    tick: () => {
      knownOffers()
    },
    act: async (intent: ProposeIntent, tree) => {
      const p = tree.params
      const provider = nearBudget(tree) ? ctx.provider.downgrade() : ctx.provider
      // Protocol 3: what executors offer, so that a subgoal can say what it needs.
      const offered = p.tools ? knownOffers() : []
      const out = await provider.decompose(
        {
          tools: offered,
          goal: tree.goal,
          path: intent.path,
          node: { title: intent.node.title, detail: intent.node.detail },
          angle,
          minChildren: p.minChildren,
          maxChildren: p.maxChildren,
          leafHint: intent.node.depth + 1 >= p.maxDepth,
          notes: intent.notes
        },
        { trace: { plan: intent.plan, for: { slot: 'proposal', node: intent.node.id, attempt: intent.attempt } } }
      )
      await ctx.view.publish('split-proposed', intent.plan, intent.node.evidence, {
        node: intent.node.id,
        attempt: intent.attempt,
        subgoals: out.subgoals.map(sg => withNeeds(sg, offered)),
        rationale: out.rationale,
        usage: out.usage
      })
      ctx.say(`proposed ${out.subgoals.length} subgoals for "${intent.node.title}" (attempt ${intent.attempt})`)
    }
  }
}
