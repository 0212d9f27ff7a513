import { BOUND_SLACK_MS } from './timing.js'
import { dayText } from './problems.js'
import { expiryOf } from './quiet.js'
import type { PlanId } from '../../core/events.js'
import type { World } from '../world.js'
import type { Ledger } from './ledger.js'
import type { Problems } from './problems.js'

/**
 * The bound check, made at every simulated day and before every skip:
 * every live node's store, sync id set and tombstones within the bounds
 * the ledger gives, and no plan a node expired back in its store or fold.
 * A node started less than BOUND_SLACK_MS ago is not held to it yet. Keeps
 * the largest figures seen, for the report.
 */
export class BoundCheck {
  checks = 0
  failures = 0
  /** Largest store a live node held at a check, which node, when (elapsed ms), and the bound then. */
  maxStore = 0
  maxStoreNode = 0
  maxStoreAt = 0
  boundAtMaxStore = 0
  maxBound = 0
  maxIdSet = 0
  maxTombstones = 0
  maxTombstoneBound = 0

  constructor(
    private readonly world: World,
    private readonly ledger: Ledger,
    private readonly problems: Problems,
    private readonly startedAt: ReadonlyMap<number, number>
  ) {}

  /** The bound on what a node may hold now (Ledger.storeBound, with node 0's view of expiry). */
  storeBound(): number {
    return this.ledger.storeBound(this.world.time.elapsed, plan => expiryOf(this.world, plan))
  }

  run(): void {
    const { world, ledger } = this
    const b = { store: this.storeBound(), tombstones: 0 }
    this.checks++
    this.maxBound = Math.max(this.maxBound, b.store)
    const now = world.time.elapsed
    for (const n of world.nodes) {
      const rt = n.runtime
      if (rt === undefined) continue
      const count = n.store.count()
      const ids = rt.replica.ids.size
      const tomb = ledger.tombstonesOf(n.index)
      // Just (re)started: held to the bound once its passes had their time.
      if (now - (this.startedAt.get(n.index) ?? 0) < BOUND_SLACK_MS) continue
      b.tombstones = ledger.tombstoneBound(n.index, now)
      this.maxTombstoneBound = Math.max(this.maxTombstoneBound, b.tombstones)
      if (count > this.maxStore) {
        this.maxStore = count
        this.maxStoreNode = n.index
        this.maxStoreAt = now
        this.boundAtMaxStore = b.store
      }
      this.maxIdSet = Math.max(this.maxIdSet, ids)
      this.maxTombstones = Math.max(this.maxTombstones, tomb)
      if (count > b.store || ids > b.store || tomb > b.tombstones) {
        this.failures++
        this.problems.add(
          `node ${n.index} at day ${dayText(now)} holds ${count} events, an id set of ${ids} and ${tomb} tombstones; ` +
            `bound ${b.store} events, ${b.tombstones} tombstones`
        )
      }
      // A plan this node expired is not back in its store or fold.
      for (const plan of ledger.expiredHere[n.index]?.keys() ?? []) {
        if (n.store.countByPlan(plan) > 0 || rt.replica.fold.facts(plan as PlanId) !== undefined) {
          ledger.returned++
          this.problems.add(
            `node ${n.index} holds plan ${plan.slice(0, 12)} at day ${dayText(now)}, which it expired before`
          )
        }
      }
    }
  }
}
