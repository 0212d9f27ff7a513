import { isFinished } from '../../core/view.js'
import type { World } from '../world.js'
import type { Ledger } from './ledger.js'
import type { Problems } from './problems.js'

/**
 * The checks at the end of a run: every goal published, every plan
 * finished (or expired), one treeHash per plan on every live node that
 * holds it, and every live node holding as many events.
 */
export function checkEnd(world: World, ledger: Ledger, plans: number, problems: Problems): void {
  const liveNodes = world.nodes.filter(n => n.runtime !== undefined)
  if (ledger.byK.length < plans) problems.add(`${plans - ledger.byK.length} goals were never published`)
  for (const l of ledger.byK) {
    const hashes = new Map<string, number[]>()
    let unfinished = 0
    for (const n of liveNodes) {
      const fold = n.runtime?.replica.fold
      if (fold === undefined) continue
      const h = fold.treeHash(l.plan)
      if (h === undefined) continue
      const t = fold.tree(l.plan)
      if (t !== undefined && !isFinished(t)) unfinished++
      hashes.set(h, [...(hashes.get(h) ?? []), n.index])
    }
    if (unfinished > 0)
      problems.add(`plan ${l.plan.slice(0, 12)} (goal ${l.k}) is still under way on ${unfinished} nodes`)
    if (hashes.size > 1)
      problems.add(
        `plan ${l.plan.slice(0, 12)} has ${hashes.size} treeHashes: ` +
          [...hashes].map(([h, ns]) => `${h.slice(0, 12)} on ${ns.length} nodes`).join(', ')
      )
    if (hashes.size === 0 && l.expiredAt === undefined)
      problems.add(`plan ${l.plan.slice(0, 12)} (goal ${l.k}) is held by no node, and none expired it`)
  }
  const sizes = new Set(liveNodes.map(n => n.runtime?.replica.ids.size))
  if (sizes.size > 1) problems.add(`at the end the live nodes hold ${[...sizes].join(', ')} events`)
}
