import { BOUND_SLACK_MS } from './timing.js'
import { TOMBSTONE_KEEP_MS } from '../../runtime/retention.js'
import { dayText } from './problems.js'
import type { Problems } from './problems.js'
import type { PlanId } from '../../core/events.js'
import type { EventRow, EventStore } from '../../ports/event-store.js'

/** What the run knows of one plan: every event any node stored of it, and when it expired. */
export interface PlanLedger {
  readonly plan: PlanId
  readonly k: number
  readonly retainDays: number | null
  /** Every event id of the plan any node stored. */
  readonly ids: Set<string>
  /** Virtual ms (elapsed) the plan expires at by its rule, once it finished (node 0's record). */
  expiresAt: number | undefined
  /** Virtual ms some node first expired it, and which. */
  expiredAt: number | undefined
  expiredBy: number | undefined
}

/**
 * What every store takes in and lets go, across the run: the record the
 * bounds are drawn from. Every store is watched as it takes rows, so an
 * event of a plan some node expired, stored again by any node, is counted
 * in `returned` and reported the moment it happens.
 */
export class Ledger {
  /** Every plan published, by id; and in the order published. */
  readonly plans = new Map<string, PlanLedger>()
  readonly byK: PlanLedger[] = []
  /** Plans some node expired. */
  readonly expiredEver = new Map<string, PlanLedger>()
  /** Plans published and not yet seen finished on every node (see `unquiet`). */
  readonly open = new Set<PlanLedger>()
  /** Per node: plans it expired itself, and when (elapsed ms). */
  readonly expiredHere: Array<Map<string, number>> = []
  /** Per node: tombstones held, by plan. */
  private readonly tombstones: Array<Map<string, number>> = []
  /** Events of plans whose goal's publish has not resolved here yet (a node can store them before). */
  readonly unknownIds = new Map<string, Set<string>>()
  /** Times an expired plan's event was stored or folded again, by any node. */
  returned = 0
  /** The stores are watched from before the world exists (it creates them): its clock is read through this. */
  private clock: { readonly elapsed: number } | undefined

  constructor(private readonly problems: Problems) {}

  /** Read the virtual clock from now on (until then it reads 0). */
  attach(clock: { readonly elapsed: number }): void {
    this.clock = clock
  }

  private get elapsed(): number {
    return this.clock?.elapsed ?? 0
  }

  private idsOf(plan: string): Set<string> {
    const l = this.plans.get(plan)
    if (l !== undefined) return l.ids
    let s = this.unknownIds.get(plan)
    if (s === undefined) {
      s = new Set()
      this.unknownIds.set(plan, s)
    }
    return s
  }

  private took(index: number, row: EventRow, isNew: boolean): void {
    if (!isNew) return
    this.idsOf(row.plan).add(row.id)
    const gone = this.expiredEver.get(row.plan)
    if (gone !== undefined) {
      this.returned++
      this.problems.add(
        `node ${index} stored an event of plan ${row.plan.slice(0, 12)} at day ${dayText(this.elapsed)}, after node ` +
          `${gone.expiredBy} expired it at day ${dayText(gone.expiredAt ?? 0)}`
      )
    }
  }

  /** Node `index`'s store, watched: every row it takes, every plan it expires, every tombstone it purges. */
  watch(index: number, store: EventStore): EventStore {
    this.tombstones[index] = new Map()
    this.expiredHere[index] = new Map()
    return {
      ...store,
      put: row => {
        const isNew = store.put(row)
        this.took(index, row, isNew)
        return isNew
      },
      putMany: rows => {
        const list = [...rows]
        const fresh = list.map(r => !store.has(r.id))
        const n = store.putMany(list)
        list.forEach((r, i) => {
          this.took(index, r, fresh[i] === true)
        })
        return n
      },
      expirePlan: (plan, nowMs) => {
        const ids = store.expirePlan(plan, nowMs)
        this.tombstones[index]?.set(plan, ids.length)
        this.expiredHere[index]?.set(plan, this.elapsed)
        const l = this.plans.get(plan)
        if (l !== undefined && l.expiredAt === undefined) {
          l.expiredAt = this.elapsed
          l.expiredBy = index
          this.expiredEver.set(plan, l)
        }
        return ids
      },
      purgeExpired: beforeMs => {
        const n = store.purgeExpired(beforeMs)
        if (n > 0) {
          const listed = new Set(store.expiredPlans())
          const held = this.tombstones[index]
          for (const p of [...(held?.keys() ?? [])]) if (!listed.has(p)) held?.delete(p)
        }
        return n
      }
    }
  }

  /** Goal `k`'s publish resolved as `plan`: from now on its events are the plan's, the ones stored before too. */
  published(plan: PlanId, k: number, retainDays: number | null): void {
    const l: PlanLedger = {
      plan,
      k,
      retainDays,
      ids: this.unknownIds.get(plan) ?? new Set([plan]),
      expiresAt: undefined,
      expiredAt: undefined,
      expiredBy: undefined
    }
    this.unknownIds.delete(plan)
    this.plans.set(plan, l)
    this.byK.push(l)
    this.open.add(l)
  }

  /** Node `index` folded an event of `plan`: a problem if some node expired the plan before. */
  folded(index: number, plan: string): void {
    const gone = this.expiredEver.get(plan)
    if (gone === undefined) return
    this.returned++
    this.problems.add(
      `node ${index} folded an event of plan ${plan.slice(0, 12)} at day ${dayText(this.elapsed)}, after node ` +
        `${gone.expiredBy} expired it at day ${dayText(gone.expiredAt ?? 0)}`
    )
  }

  /** Tombstones node `index` holds now. */
  tombstonesOf(index: number): number {
    let tomb = 0
    for (const c of this.tombstones[index]?.values() ?? []) tomb += c
    return tomb
  }

  /**
   * The bound on what a node holds at `now`: the events of every plan not yet
   * expired by its rule BOUND_SLACK_MS ago (plans under way, and finished
   * plans within their retention window), each plan counted with every event
   * any node ever stored of it. `expiryOf` is node 0's view of when a plan expires.
   */
  storeBound(now: number, expiryOf: (plan: PlanId) => number | undefined): number {
    let store = 0
    for (const l of this.byK) {
      if (!this.open.has(l) && l.expiredAt === undefined) l.expiresAt = expiryOf(l.plan) ?? l.expiresAt
      const at = l.expiresAt
      if (at === undefined || at + BOUND_SLACK_MS > now) store += l.ids.size
    }
    for (const s of this.unknownIds.values()) store += s.size
    return store
  }

  /**
   * The bound on node `index`'s tombstones at `now`: the events of the plans
   * it expired less than TOMBSTONE_KEEP_MS + BOUND_SLACK_MS ago (a node that
   * was down when a plan expired by its rule expires it, and keeps its
   * tombstones a week, from its restart).
   */
  tombstoneBound(index: number, now: number): number {
    let n = 0
    for (const [plan, at] of this.expiredHere[index] ?? [])
      if (at + TOMBSTONE_KEEP_MS + BOUND_SLACK_MS > now) n += this.plans.get(plan)?.ids.size ?? 0
    return n
  }
}
