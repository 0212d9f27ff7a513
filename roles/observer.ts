import { writeFileSync } from 'node:fs'
import { renderMarkdown, renderTree, short } from './render.js'
import { executorOffers, unmetNeeds } from '../src/core/needs.js'
import { isFinished } from '../src/core/view.js'
import { isPoor } from '../src/core/peer-standing.js'
import type { NodeView } from '../src/ports/node-view.js'
import type { PlanId } from '../src/core/events.js'

export interface ObserverOptions {
  readonly json: boolean
  /** Write the Markdown export of each finished plan here (one plan: this path; several: suffixed with the plan id). */
  readonly markdown?: string
  /** Redraw in place (a terminal) instead of printing snapshots. */
  readonly tty: boolean
  /** Print every node of every tree: no finished or quiet subtree folded into one line (roles/render.ts). */
  readonly expand?: boolean
  readonly write: (text: string) => void
}

/** What the observer reads of its node: it never publishes. */
export type ObserverView = Pick<
  NodeView,
  | 'plans'
  | 'tree'
  | 'loadTree'
  | 'isEvicted'
  | 'treeHash'
  | 'summary'
  | 'now'
  | 'scheduler'
  | 'health'
  | 'roster'
  | 'held'
  | 'standing'
>

/**
 * The observer never publishes plan events: it prints the trees live
 * (redrawn in place on a terminal, a snapshot whenever a tree changes
 * otherwise) and exports finished plans as Markdown.
 */
export function startObserver(view: ObserverView, opts: ObserverOptions): { stop: () => void; render: () => string } {
  const shown = new Map<PlanId, string>()
  const exported = new Set<PlanId>()
  const render = (): string => {
    const plans = view.plans()
    const health = view.health()
    if (plans.length === 0)
      return `no plans yet · ${health.peers} peers · waiting for a goal (npm start -- submit "...")`
    const offers = executorOffers(view.roster())
    const poor = new Set((view.standing?.() ?? []).filter(isPoor).map(r => r.peer))
    return plans
      .map(p => {
        const tree = view.tree(p)
        if (tree === undefined) return evictedLine(view, p)
        const printed = renderTree(tree, view.now(), {
          treeHash: view.treeHash(p),
          peers: health.peers,
          parked: health.parked,
          rejected: health.rejected,
          unmet: unmetNeeds(tree, offers),
          expand: opts.expand,
          poor
        })
        // A plan held under the open-plan limit per author: its reason under the plan's first line.
        const held = view.held(p)
        if (held === null) return printed
        const cut = printed.indexOf('\n')
        const line = `  ⏸ the plan ${held}; it starts by itself then`
        return cut < 0 ? `${printed}\n${line}` : `${printed.slice(0, cut)}\n${line}${printed.slice(cut)}`
      })
      .join('\n\n')
  }
  const exportFinished = (): void => {
    if (opts.markdown === undefined) return
    const plans = view.plans()
    for (const p of plans) {
      if (exported.has(p)) continue
      // A finished plan that has left memory is loaded back once to be exported.
      const tree = view.isEvicted(p) ? view.loadTree(p) : view.tree(p)
      if (tree === undefined || !isFinished(tree)) continue
      const path = plans.length === 1 ? opts.markdown : opts.markdown.replace(/(\.md)?$/, `-${p.slice(0, 12)}.md`)
      writeFileSync(path, renderMarkdown(tree))
      exported.add(p)
      opts.write(`${opts.json ? JSON.stringify({ event: 'exported', plan: p, path }) : `wrote ${path}`}\n`)
    }
  }
  let lastScreen = ''
  const draw = (): void => {
    if (opts.json) {
      for (const p of view.plans()) {
        const hash = view.treeHash(p) ?? ''
        if (shown.get(p) === hash) continue
        shown.set(p, hash)
        opts.write(JSON.stringify({ event: 'tree', treeHash: hash, tree: view.tree(p) ?? null }) + '\n')
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
  const cancel = view.scheduler.every(opts.tty ? 500 : 1_000, draw)
  draw()
  return {
    stop: () => {
      cancel()
      draw()
    },
    render
  }
}

/** A finished plan that has left memory (it stays on disk): one line from its summary, not its tree. */
function evictedLine(view: ObserverView, plan: PlanId): string {
  const s = view.summary(plan)
  const hash = (view.treeHash(plan) ?? '').slice(0, 12)
  return (
    `plan ${short(plan)} "${s?.goal ?? ''}"\n ` +
    ` ${s?.status ?? ''}${s?.statusReason === undefined || s.statusReason === '' ? '' : `: ${s.statusReason}`} ` +
    `· ${s?.done ?? 0}/${s?.nodes ?? 0} nodes done · treeHash ${hash} · out of memory, on disk ` +
    `(GET /plans/<id> loads it)`
  )
}
