import { scorersInSight } from '../../author/author-events.js'
import { planOf } from '../../core/event-set.js'
import type { PlanId } from '../../core/events.js'
import type { World } from '../world.js'
import type { Ledger } from './ledger.js'
import type { Problems } from './problems.js'

/**
 * The nodes of a long run as it starts, crashes and restarts them, and the
 * goals it has them publish: how long each was up (for bytes per node per
 * day), when it last started (a node just started is not held to the
 * bound yet), and how many goals are being published (the swarm is not
 * quiet until none is).
 */
export class Fleet {
  private readonly upSince = new Map<number, number>()
  /** Node-ms up, summed over the nodes that went down (every node goes down at the end). */
  upMs = 0
  /** Per node: virtual ms (elapsed) it last started. */
  readonly startedAt = new Map<number, number>()
  /** Goals whose publish has not resolved. */
  publishing = 0

  constructor(
    private readonly world: World,
    private readonly ledger: Ledger,
    private readonly problems: Problems,
    /** Nodes at the start: goal k is authored by node k mod initial while it is up. */
    private readonly initial: number
  ) {}

  /** Indexes of the nodes up now. */
  live(): number[] {
    return this.world.nodes.filter(n => n.runtime !== undefined).map(n => n.index)
  }

  /** Node i is down from now (its up time counted). */
  down(i: number): void {
    const s = this.upSince.get(i)
    if (s !== undefined) this.upMs += this.world.time.elapsed - s
    this.upSince.delete(i)
  }

  /** Every node down, at the end of the run. */
  downAll(): void {
    for (const i of [...this.upSince.keys()]) this.down(i)
  }

  /** Start node i (first start, restart or newcomer), every event it folds watched by the ledger. */
  async start(i: number): Promise<void> {
    const time = this.world.time
    await this.world.startNode(i)
    this.upSince.set(i, time.elapsed)
    this.startedAt.set(i, time.elapsed)
    this.world.nodes[i]?.runtime?.view.onFolded(events => {
      for (const e of events) this.ledger.folded(i, planOf(e) as string)
    })
  }

  /** Crash a node drawn by `rnd` from those up (not node 0, not a newcomer); its index, or undefined if none is. */
  crash(rnd: () => number): number | undefined {
    const candidates = this.live().filter(i => i !== 0 && i < this.initial)
    const i = candidates[Math.floor(rnd() * candidates.length)]
    if (i === undefined) return undefined
    this.down(i)
    this.world.crashNode(i)
    return i
  }

  /**
   * Publish goal k from its author (node k mod initial, or another node up
   * if that one is down). The committee is the scorers the author sees
   * (itself too, if it is one), as `submit` picks it: one pinned while it is
   * down would hold the plan until it restarts (with two scorers, a quorum of both).
   */
  submit(k: number, retainDays: number | null): void {
    const world = this.world
    const nodes = world.nodes
    const up = this.live()
    const author = nodes[k % this.initial]?.runtime !== undefined ? k % this.initial : (up[k % up.length] as number)
    const view = nodes[author]?.runtime?.view
    if (view === undefined) return
    const seen = scorersInSight(view)
    const params = seen.length > 0 ? world.params(seen) : world.params()
    this.publishing++
    void view
      .publish('goal-submitted', '', [], {
        text: world.goalText(k),
        params: { ...params, ...(retainDays === null ? {} : { retainDays }) }
      })
      .then(
        r => {
          this.ledger.published(r.event.id as string as PlanId, k, retainDays)
        },
        (err: Error) => {
          this.problems.add(`goal ${k} could not be published: ${err.message}`)
        }
      )
      .finally(() => {
        this.publishing--
      })
  }
}
