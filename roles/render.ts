import { view } from '../src/core/view.js'
import { needsPhrase } from '../src/core/needs.js'
import type { ToolCallRecord } from '../src/core/events.js'
import type { PlanTree, TreeNode, NodeStatus } from '../src/core/tree.js'

const GLYPH: Record<NodeStatus, string> = {
  decomposing: '…',
  blocked: '⏸',
  ready: '○',
  claimed: '⟳',
  'in-review': '?',
  done: '✓',
  failed: '✗'
}

/** A result's tool calls in one line: `notes/read_note` (12 ms), `notes/search_notes` (failed: ...). */
export function toolsLine(calls: readonly ToolCallRecord[]): string {
  return calls
    .map(c => `\`${c.server}/${c.tool}\` (${c.ok ? `${c.ms} ms` : `failed: ${c.error ?? 'error'}`})`)
    .join(', ')
}

export function short(id: string): string {
  return id.length > 12 ? `…${id.slice(-6)}` : id
}

/** One plan as an indented tree with status glyphs, votes, owners, lease left and why nodes wait. */
export function renderTree(
  tree: PlanTree,
  nowMs: number,
  extra: {
    treeHash?: string
    peers?: number
    parked?: number
    rejected?: Readonly<Record<string, number>>
    /** Ready tasks that no live executor can take (src/core/needs.ts unmetNeeds), by node. */
    unmet?: ReadonlyMap<string, readonly string[]>
  } = {}
): string {
  const v = view(tree, nowMs)
  const byId = new Map(tree.nodes.map(n => [n.id, n]))
  const tasks = new Map(tree.tasks.map(t => [t.id, t]))
  const lines: string[] = []
  const done = tree.nodes.filter(n => n.status === 'done').length
  lines.push(`plan ${short(tree.plan)} "${tree.goal}"`)
  lines.push(`  ${tree.status}: ${tree.statusReason}`)
  lines.push(
    `  ${done}/${tree.nodes.length} nodes done · tokens ${tree.spentTokens}/${tree.budgetTokens}` +
      (extra.peers !== undefined ? ` · ${extra.peers} peers` : '') +
      (extra.treeHash !== undefined ? ` · treeHash ${extra.treeHash.slice(0, 12)}` : '')
  )
  const flags: string[] = []
  if (tree.equivocations.length > 0)
    flags.push(
      `${tree.equivocations.length} equivocation(s): ${tree.equivocations.map(e => short(e.author)).join(', ')}`
    )
  if (tree.duplicates > 0) flags.push(`${tree.duplicates} duplicate execution(s)`)
  if (tree.ignoredClaims > 0) flags.push(`${tree.ignoredClaims} claim(s) lost a race or came early`)
  if ((extra.parked ?? 0) > 0) flags.push(`${extra.parked ?? 0} event(s) parked`)
  const rejected = Object.entries(extra.rejected ?? {}).filter(([, n]) => n > 0)
  if (rejected.length > 0)
    flags.push(`rejected events (this node): ${rejected.map(([why, n]) => `${n} ${why}`).join(', ')}`)
  if (flags.length > 0) lines.push(`  ! ${flags.join(' · ')}`)

  const describe = (n: TreeNode): string => {
    const t = n.task === null ? undefined : tasks.get(n.task)
    const parts: string[] = []
    if (n.kind === 'decomposing') {
      const a = n.attempts[n.attempts.length - 1]
      if (a !== undefined && a.proposals.length > 0)
        parts.push(
          `attempt ${a.attempt}: ${a.proposals.length} proposal(s), votes ${a.proposals.map(p => p.votes).join('/')}`
        )
    }
    if (n.leafReason !== null && n.leafReason !== 'marked-leaf' && n.leafReason !== 'max-depth')
      parts.push(`leaf: ${n.leafReason}`)
    const unmet = extra.unmet?.get(n.id)
    if (unmet !== undefined) parts.push(`waits for ${needsPhrase(unmet)}`)
    else if (n.needs.length > 0) parts.push(`needs ${n.needs.map(x => `\`${x}\``).join(', ')}`)
    if (t !== undefined) {
      if (t.kind === 'rollup' && (n.status === 'ready' || n.status === 'claimed')) parts.push('roll-up')
      if (t.owner !== null) {
        const left = v.leaseLeftMs(t)
        parts.push(
          `claimed by ${short(t.owner)}${left !== null ? `, lease ${Math.max(0, Math.round(left / 1000))}s` : ''}`
        )
      }
      const accepted = t.results.find(r => r.accepted)
      if (accepted !== undefined)
        parts.push(`by ${short(accepted.author)}${accepted.source === 'offline' ? ' (offline)' : ''}`)
      if (accepted !== undefined && accepted.toolCalls.length > 0) parts.push(`tools: ${toolsLine(accepted.toolCalls)}`)
      if (t.duplicates > 0) parts.push(`${t.duplicates} duplicate(s)`)
      if (t.failures > 0) parts.push(`${t.failures}/${t.attemptsAllowed} failed`)
    }
    if (n.waiting !== null && n.status !== 'ready') parts.push(n.waiting)
    if (t !== undefined && t.status === 'in-review' && t.awaiting.length > 0)
      parts.push(`review awaited from ${t.awaiting.map(short).join(', ')}`)
    return parts.join(' · ')
  }
  const walk = (n: TreeNode, prefix: string, last: boolean, root: boolean): void => {
    const branch = root ? '' : last ? '└─ ' : '├─ '
    const d = describe(n)
    lines.push(`${prefix}${branch}${GLYPH[n.status]} ${n.title}${d === '' ? '' : `  [${d}]`}`)
    const next = root ? prefix : prefix + (last ? '   ' : '│  ')
    n.children.forEach((c, i) => {
      const child = byId.get(c)
      if (child !== undefined) walk(child, next, i === n.children.length - 1, false)
    })
  }
  const root = byId.get(tree.root)
  if (root !== undefined) walk(root, '  ', true, true)
  if (tree.deliverable !== null) {
    lines.push('', '  deliverable:', ...tree.deliverable.output.split('\n').map(l => `    ${l}`))
  }
  return lines.join('\n')
}

/** The finished plan as Markdown: the tree with each step's result, then the deliverable. */
export function renderMarkdown(tree: PlanTree): string {
  const byId = new Map(tree.nodes.map(n => [n.id, n]))
  const tasks = new Map(tree.tasks.map(t => [t.id, t]))
  const out: string[] = [
    `# ${tree.goal}`,
    '',
    `Status: **${tree.status}** (${tree.statusReason}). Tokens spent: ${tree.spentTokens} ` +
      `of ${tree.budgetTokens}. Plan id: \`${tree.plan}\`.`,
    ''
  ]
  if (tree.deliverable !== null) out.push('## Deliverable', '', tree.deliverable.output, '')
  out.push('## Plan', '')
  const walk = (n: TreeNode, depth: number): void => {
    const t = n.task === null ? undefined : tasks.get(n.task)
    const r = t?.results.find(x => x.accepted)
    out.push(`${'  '.repeat(depth)}- ${GLYPH[n.status]} **${n.title}**${n.detail !== '' ? `: ${n.detail}` : ''}`)
    if (r !== undefined && n.kind === 'leaf') {
      if (r.toolCalls.length > 0) out.push(`${'  '.repeat(depth + 1)}- tools: ${toolsLine(r.toolCalls)}`)
      for (const l of r.output.split('\n')) out.push(`${'  '.repeat(depth + 1)}> ${l}`)
    }
    for (const c of n.children) {
      const child = byId.get(c)
      if (child !== undefined) walk(child, depth + 1)
    }
  }
  const root = byId.get(tree.root)
  if (root !== undefined) walk(root, 0)
  return out.join('\n') + '\n'
}
