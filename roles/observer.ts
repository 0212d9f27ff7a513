import { writeFileSync } from 'node:fs'
import { renderMarkdown, renderTree, short } from './render.js'
import type { Peer } from '../src/runtime/peer.js'
import type { PlanId } from '../src/core/events.js'

export interface ObserverOptions {
  readonly json: boolean
  /** Write the Markdown export of each finished plan here (one plan: this path; several: suffixed with the plan id). */
  readonly markdown?: string
  /** Redraw in place (a terminal) instead of printing snapshots. */
  readonly tty: boolean
  readonly write: (text: string) => void
}

/**
 * The observer never publishes plan events: it prints the trees live
 * (redrawn in place on a terminal, a snapshot whenever a tree changes
 * otherwise) and exports finished plans as Markdown.
 */
export function startObserver (peer: Peer, opts: ObserverOptions): { stop: () => void, render: () => string } {
  const shown = new Map<PlanId, string>()
  const exported = new Set<PlanId>()
  const render = (): string => {
    const plans = peer.replica.fold.plans()
    if (plans.length === 0) return `no plans yet · ${peer.node.connectedPeers().length} peers · waiting for a goal (npm start -- submit "...")`
    return plans.map(p => {
      const tree = peer.replica.tree(p)
      if (tree === undefined) return evictedLine(peer, p)
      return renderTree(tree, peer.now(), { treeHash: peer.replica.fold.treeHash(p), peers: peer.node.connectedPeers().length, parked: peer.replica.fold.events.parkedCount, rejected: Object.fromEntries(peer.metrics.rejectedByReason) })
    }).join('\n\n')
  }
  const exportFinished = (): void => {
    if (opts.markdown === undefined) return
    const plans = peer.replica.fold.plans()
    for (const p of plans) {
      if (exported.has(p)) continue
      // A finished plan that has left memory is loaded back once to be exported.
      const tree = peer.replica.fold.isEvicted(p) ? peer.replica.loadTree(p) : peer.replica.tree(p)
      if (tree === undefined || !['completed', 'failed', 'cancelled'].includes(tree.status)) continue
      const path = plans.length === 1 ? opts.markdown : opts.markdown.replace(/(\.md)?$/, `-${p.slice(0, 12)}.md`)
      writeFileSync(path, renderMarkdown(tree))
      exported.add(p)
      opts.write(`${opts.json ? JSON.stringify({ event: 'exported', plan: p, path }) : `wrote ${path}`}\n`)
    }
  }
  let lastScreen = ''
  const draw = (): void => {
    if (opts.json) {
      for (const p of peer.replica.fold.plans()) {
        const hash = peer.replica.fold.treeHash(p) ?? ''
        if (shown.get(p) === hash) continue
        shown.set(p, hash)
        opts.write(JSON.stringify({ event: 'tree', treeHash: hash, tree: peer.replica.tree(p) ?? null }) + '\n')
      }
    } else {
      const screen = render()
      if (screen !== lastScreen) {
        lastScreen = screen
        opts.write(opts.tty ? `\x1b[H\x1b[2J${screen}\n` : `${screen}\n\n`)
      }
    }
    exportFinished()
  }
  const timer = setInterval(draw, opts.tty ? 500 : 1_000)
  draw()
  return { stop: () => { clearInterval(timer); draw() }, render }
}

/** A finished plan that has left memory (it stays on disk): one line from its summary, not its tree. */
function evictedLine (peer: Peer, plan: PlanId): string {
  const s = peer.replica.fold.summary(plan)
  const hash = (peer.replica.fold.treeHash(plan) ?? '').slice(0, 12)
  return `plan ${short(plan)} "${s?.goal ?? ''}"\n  ${s?.status ?? ''}${s?.statusReason === undefined || s.statusReason === '' ? '' : `: ${s.statusReason}`} · ${s?.done ?? 0}/${s?.nodes ?? 0} nodes done · treeHash ${hash} · out of memory, on disk (GET /plans/<id> loads it)`
}
