import { view } from '../src/core/view.js'
import { needsPhrase } from '../src/core/needs.js'
import { evidenceByNode, evidencePhrase, standingLine } from './render-standing.js'
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

/** The order statuses are counted in, on the totals line and a collapsed subtree's line. */
const STATUS_ORDER: readonly NodeStatus[] = [
  'done',
  'claimed',
  'in-review',
  'ready',
  'blocked',
  'decomposing',
  'failed'
]

/** Plans of more nodes than this also collapse quiet subtrees (nothing under way); smaller ones only finished ones. */
export const QUIET_FROM = 50

/** How many nodes of a subtree are in each status, and how many of its tasks' attempts failed. */
interface Counts {
  nodes: number
  failedAttempts: number
  /** Nodes someone is working on or must look at: claimed, in review, failed, a split under way, unmet needs. */
  active: number
  readonly by: Record<NodeStatus, number>
}

const zero = (): Counts => ({
  nodes: 0,
  failedAttempts: 0,
  active: 0,
  by: { decomposing: 0, blocked: 0, ready: 0, claimed: 0, 'in-review': 0, done: 0, failed: 0 }
})

/** `12 done · 3 ready`: the statuses that have nodes, in STATUS_ORDER. */
function countsPhrase(c: Counts): string {
  return STATUS_ORDER.filter(s => c.by[s] > 0)
    .map(s => `${c.by[s]} ${s}`)
    .join(' · ')
}

/**
 * One plan as an indented tree with status glyphs, votes, owners, lease left and why nodes wait.
 *
 * A big plan reads in a few dozen lines: under a totals line, a composite node whose whole subtree is done prints as
 * one line with its counts (`✓ title — 48 nodes done`). In a plan of more than QUIET_FROM nodes, so does a quiet
 * subtree, one with nothing under way (`○ title — 24 nodes, none under way: 4 done · 16 ready · 4 blocked`). A
 * subtree with anything under way (a claim, a review, a split being voted on), a failure or a wait for a missing
 * capability stays expanded down to those nodes. The root is never collapsed. `expand: true` prints every node.
 */
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
    /** Print every node, collapsing nothing. */
    expand?: boolean
    /** Peers whose standing across this node's plans counts against them (ADR-0048): marked where they appear. */
    poor?: ReadonlySet<string>
  } = {}
): string {
  const v = view(tree, nowMs)
  /** A peer's short id, marked when its standing across plans is poor. */
  const who = (id: string): string => (extra.poor?.has(id) === true ? `${short(id)} (poor record)` : short(id))
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
  const standing = standingLine(tree, who)
  if (standing !== null) lines.push(`  ! ${standing}`)
  const evidence = evidenceByNode(tree)

  // Each subtree's counts, children before parents (the nodes are in breadth-first order).
  const counts = new Map<string, Counts>()
  for (let i = tree.nodes.length - 1; i >= 0; i--) {
    const n = tree.nodes[i] as TreeNode
    const c = zero()
    c.nodes = 1
    c.by[n.status] = 1
    const t = n.task === null ? undefined : tasks.get(n.task)
    c.failedAttempts = t?.failures ?? 0
    const splitting = n.status === 'decomposing' && (n.attempts[n.attempts.length - 1]?.proposals.length ?? 0) > 0
    const busy = n.status === 'claimed' || n.status === 'in-review' || n.status === 'failed'
    c.active = busy || splitting || extra.unmet?.has(n.id) === true || (t?.owner ?? null) !== null ? 1 : 0
    for (const k of n.children) {
      const kc = counts.get(k)
      if (kc === undefined) continue
      c.nodes += kc.nodes
      c.failedAttempts += kc.failedAttempts
      c.active += kc.active
      for (const s of STATUS_ORDER) c.by[s] += kc.by[s]
    }
    counts.set(n.id, c)
  }
  const all = counts.get(tree.root)
  if (all !== undefined) lines.push(`  nodes: ${countsPhrase(all)}`)

  /** A collapsed subtree's line after its title, or null when it stays expanded. */
  const collapsed = (n: TreeNode, c: Counts): string | null => {
    if (extra.expand === true || n.children.length === 0) return null
    const failed = c.failedAttempts > 0 ? `, ${c.failedAttempts} failed attempt(s) retried` : ''
    if (c.by.done === c.nodes) return `${c.nodes} nodes done${failed}`
    if (c.active === 0 && tree.nodes.length > QUIET_FROM)
      return `${c.nodes} nodes, none under way: ${countsPhrase(c)}${failed}`
    return null
  }

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
          `claimed by ${who(t.owner)}${left !== null ? `, lease ${Math.max(0, Math.round(left / 1000))}s` : ''}`
        )
      }
      const accepted = t.results.find(r => r.accepted)
      if (accepted !== undefined)
        parts.push(`by ${who(accepted.author)}${accepted.source === 'offline' ? ' (offline)' : ''}`)
      if (accepted !== undefined && accepted.toolCalls.length > 0) parts.push(`tools: ${toolsLine(accepted.toolCalls)}`)
      if (t.duplicates > 0) parts.push(`${t.duplicates} duplicate(s)`)
      if (t.failures > 0) parts.push(`${t.failures}/${t.attemptsAllowed} failed`)
    }
    if (n.waiting !== null && n.status !== 'ready') parts.push(n.waiting)
    if (t !== undefined && t.status === 'in-review' && t.awaiting.length > 0)
      parts.push(`review awaited from ${t.awaiting.map(short).join(', ')}`)
    const found = evidence.get(n.id)
    if (found !== undefined) parts.push(`⚠ evidence: ${evidencePhrase(found, short)}`)
    return parts.join(' · ')
  }
  const walk = (n: TreeNode, prefix: string, last: boolean, root: boolean): void => {
    const branch = root ? '' : last ? '└─ ' : '├─ '
    const c = counts.get(n.id)
    const folded = root || c === undefined ? null : collapsed(n, c)
    if (folded !== null) {
      lines.push(`${prefix}${branch}${GLYPH[n.status]} ${n.title} — ${folded}`)
      return
    }
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
