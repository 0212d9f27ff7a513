import type { PeerIdString } from '../core/events.js'
import type { PlanTree, TreeNode } from '../core/tree.js'

/**
 * A plan as an agent reads it: the nodes in tree order with their status,
 * why a node waits, who owns its task, and its result trimmed to a length
 * the caller chooses (0 for whole), saying when it was cut and how to get it
 * whole. Plain JSON, no event internals beyond the ids an agent passes back.
 */
export interface TrimmedText {
  readonly text: string
  readonly chars: number
  readonly trimmed: boolean
}

export interface AgentNode {
  readonly id: string
  readonly parent: string | null
  readonly depth: number
  readonly title: string
  readonly detail: string
  readonly kind: 'decomposing' | 'leaf' | 'composite'
  readonly status: string
  /** Why nothing happens here now, in words; null when something can. */
  readonly waiting: string | null
  readonly dependsOn: readonly string[]
  readonly task: null | {
    readonly id: string
    readonly kind: 'leaf' | 'rollup'
    readonly status: string
    readonly owner: string | null
    readonly failures: number
    readonly result: null | (TrimmedText & { readonly source: string; readonly model: string; readonly author: string })
  }
}

export interface AgentPlan {
  readonly plan: string
  readonly goal: string
  readonly status: string
  readonly statusReason: string
  readonly author: string
  /** Whether this server's key submitted it (the author tools work only then). */
  readonly yours: boolean
  readonly spentTokens: number
  readonly budgetTokens: number
  readonly params: Readonly<Record<string, unknown>>
  readonly nodes: readonly AgentNode[]
  readonly deliverable: TrimmedText | null
  readonly treeHash: string | null
  /** How to get results whole when some were cut. */
  readonly hint: string | null
  /** Why the whole plan waits for its author's earlier plans to finish (the open-plan limit per author), or null. */
  readonly waits: string | null
}

export function trimText(text: string, max: number): TrimmedText {
  if (max <= 0 || text.length <= max) return { text, chars: text.length, trimmed: false }
  return { text: `${text.slice(0, max)}…`, chars: text.length, trimmed: true }
}

export function agentPlan(
  tree: PlanTree,
  me: PeerIdString,
  treeHash: string | undefined,
  maxResultChars: number,
  only?: string,
  waits: string | null = null
): AgentPlan {
  const tasks = new Map(tree.tasks.map(t => [t.id, t]))
  let cut = false
  const node = (n: TreeNode): AgentNode => {
    const t = n.task === null ? undefined : tasks.get(n.task)
    const accepted = t?.results.find(r => r.accepted)
    const result =
      accepted === undefined
        ? null
        : {
            ...trimText(accepted.output, maxResultChars),
            source: accepted.source,
            model: accepted.model,
            author: accepted.author
          }
    if (result?.trimmed === true) cut = true
    return {
      id: n.id,
      parent: n.parent,
      depth: n.depth,
      title: n.title,
      detail: n.detail,
      kind: n.kind,
      status: n.status,
      waiting: n.waiting,
      dependsOn: n.dependsOn,
      task:
        t === undefined
          ? null
          : { id: t.id, kind: t.kind, status: t.status, owner: t.owner, failures: t.failures, result }
    }
  }
  const nodes = tree.nodes.filter(n => only === undefined || n.id === only || n.task === only).map(node)
  const deliverable = tree.deliverable === null ? null : trimText(tree.deliverable.output, maxResultChars)
  if (deliverable?.trimmed === true) cut = true
  return {
    plan: tree.plan,
    goal: tree.goal,
    status: tree.status,
    statusReason: tree.statusReason,
    author: tree.author,
    yours: tree.author === me,
    spentTokens: tree.spentTokens,
    budgetTokens: tree.budgetTokens,
    params: tree.params as unknown as Record<string, unknown>,
    nodes,
    deliverable,
    treeHash: treeHash ?? null,
    waits,
    hint: cut
      ? 'some texts were cut: call plan_get again with maxResultChars: 0 (and node: <id> for one ' +
        'node), or read the resource plan-swarm://plans/<id>, or plan_export'
      : null
  }
}

/** A few lines a person reads: the status and one line per node. */
export function planText(p: AgentPlan): string {
  const lines = [
    `plan ${p.plan} ${p.status}: ${p.statusReason}`,
    `goal: ${p.goal}`,
    `tokens ${p.spentTokens}/${p.budgetTokens}`,
    ...(p.waits === null ? [] : [`the plan ${p.waits}`])
  ]
  for (const n of p.nodes) {
    const result = n.task?.result
    lines.push(
      `${'  '.repeat(n.depth)}- [${n.status}] ${n.title} ` +
        (`(node ${n.id.slice(0, 12)}${n.task === null ? '' : `, task ${n.task.id.slice(0, 12)}`})` +
          `${n.waiting === null ? '' : ` — ${n.waiting}`}`)
    )
    if (result !== null && result !== undefined)
      lines.push(`${'  '.repeat(n.depth + 1)}result: ${result.text.replace(/\s+/g, ' ').slice(0, 200)}`)
  }
  if (p.deliverable !== null) lines.push('', 'deliverable:', p.deliverable.text)
  if (p.hint !== null) lines.push('', p.hint)
  return lines.join('\n')
}
