import type { EventId, NodeId, PeerIdString } from '../src/core/events.js'
import type { EvidenceItem, EvidenceKind, PlanTree } from '../src/core/tree.js'

/** Authors a plan's standing line names at most. */
const AUTHORS_SHOWN = 5

/**
 * The evidence of a version-5 plan (its tree's `standing`, ADR-0047) per
 * node: each item whose event is a proposal, claim, renewal, result or
 * chain end the node shows. Items the tree shows nowhere (a claim over the
 * limit that never held its task) are in the plan's standing line only.
 */
export function evidenceByNode(tree: PlanTree): Map<NodeId, EvidenceItem[]> {
  const out = new Map<NodeId, EvidenceItem[]>()
  const items = tree.standing?.evidence ?? []
  if (items.length === 0) return out
  const nodeOf = new Map<EventId, NodeId>()
  for (const n of tree.nodes) for (const a of n.attempts) for (const p of a.proposals) nodeOf.set(p.id, n.id)
  for (const t of tree.tasks) {
    for (const r of t.results) nodeOf.set(r.id, t.node)
    for (const c of t.chains) {
      nodeOf.set(c.claim, t.node)
      nodeOf.set(c.last, t.node)
      if (c.end !== null) nodeOf.set(c.end.event, t.node)
    }
  }
  for (const x of items) {
    const node = nodeOf.get(x.event)
    if (node === undefined) continue
    const list = out.get(node)
    if (list === undefined) out.set(node, [x])
    else list.push(x)
  }
  return out
}

/** Items as `1 late by 12D3…abcd, 2 equivocation by 12D3…ef01`, counted per kind and author. */
export function evidencePhrase(items: readonly EvidenceItem[], short: (id: string) => string): string {
  const counts = new Map<string, { kind: EvidenceKind; author: PeerIdString; n: number }>()
  for (const x of items) {
    const k = `${x.kind}\0${x.author}`
    const c = counts.get(k)
    if (c === undefined) counts.set(k, { kind: x.kind, author: x.author, n: 1 })
    else c.n++
  }
  return [...counts.values()].map(c => `${c.n} ${c.kind} by ${short(c.author)}`).join(', ')
}

/** The plan's standing in one line (`standing: 12D3…abcd 2 equivocation · …`), or null without evidence. */
export function standingLine(tree: PlanTree, short: (id: string) => string): string | null {
  const items = tree.standing?.evidence ?? []
  if (items.length === 0 && (tree.standing?.equivocators.length ?? 0) === 0) return null
  const byAuthor = new Map<PeerIdString, Map<EvidenceKind, number>>()
  for (const x of items) {
    const m = byAuthor.get(x.author) ?? new Map<EvidenceKind, number>()
    m.set(x.kind, (m.get(x.kind) ?? 0) + 1)
    byAuthor.set(x.author, m)
  }
  for (const a of tree.standing?.equivocators ?? []) if (!byAuthor.has(a)) byAuthor.set(a, new Map())
  const authors = [...byAuthor.keys()].sort()
  const parts = authors.slice(0, AUTHORS_SHOWN).map(a => {
    const kinds = [...(byAuthor.get(a) as Map<EvidenceKind, number>)].map(([k, n]) => `${n} ${k}`)
    const equivocator = tree.standing?.equivocators.includes(a) === true ? ' (its votes do not count)' : ''
    return `${short(a)} ${kinds.join(', ') || 'equivocated'}${equivocator}`
  })
  const more = authors.length > AUTHORS_SHOWN ? ` · and ${authors.length - AUTHORS_SHOWN} more` : ''
  return `standing: ${parts.join(' · ')}${more}`
}
