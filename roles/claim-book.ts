/**
 * The bookkeeping of an executor that works its claims in this process (the
 * model executor of ./executor.ts, the A2A executor of src/a2a): what it
 * sees of the other executors, the tasks it works, where each claim stands,
 * publishing a claim, renewing its lease while the work runs, and publishing
 * what ends it only while the claim still stands. Both executors keep one
 * book each, so they rank, stagger, renew and give up alike; what differs
 * (what they offer, when they take nothing, how their work stops) comes in
 * as options.
 */
import { offersIn } from '../src/core/needs.js'
import { passedReviewCites } from '../src/core/review-sample.js'
import { sleep } from '../src/ports/scheduler.js'
import {
  CONFIRM_MS,
  STAGGER_MS,
  VIEW_UNCHANGED_MS,
  decideExecutor,
  liveClaims,
  propagationWait,
  stableViewMs
} from './claim-rules.js'
import { isIdle } from './plan-context.js'
import type { Bodies, EventId, PlanEvent, PlanId } from '../src/core/events.js'
import type { PlanTree } from '../src/core/tree.js'
import type { NodeView } from '../src/ports/node-view.js'
import type { ClaimIntent } from './claim-rules.js'

/** A claim waiting out its confirmation, and how to hand it back (once) if it lost meanwhile. */
interface Confirming {
  readonly plan: PlanId
  readonly task: string
  readonly claim: PlanEvent
  readonly handBack: () => Promise<unknown>
}

/** Where a claim stands: heading its task now, once heading it (then superseded or ended), or never (an earlier claim won). */
export type Standing = 'owner' | 'was-owner' | 'lost'

/** Where `claim` stands in the task's chains as this node's tree has them now. */
export function standingOf(view: NodeView, plan: PlanId, task: string, claim: EventId): Standing {
  const t = view.tree(plan)?.tasks.find(x => x.id === task)
  const chain = t?.chains[t.chains.length - 1]
  if (chain?.claim === claim && chain.end === null && t?.status === 'claimed') return 'owner'
  return t?.chains.some(c => c.claim === claim) === true ? 'was-owner' : 'lost'
}

/** How often a claim's lease is renewed while its work runs: a third of the lease, at least every 500 ms. */
export function renewEveryMs(leaseMs: number): number {
  return Math.max(500, Math.floor(leaseMs / 3))
}

/**
 * When work on a claim must be done, with time left to publish before the
 * lease that the last renewal allows runs out (renewals stop at the claim's
 * maxClaimMs).
 */
export function claimDeadlineMs(claim: PlanEvent, params: PlanTree['params']): number {
  return claim.env.hlc.ms + params.maxClaimMs - Math.min(2_000, Math.floor(params.leaseMs / 2))
}

export interface ClaimBookOptions {
  /** Told what happens (a lost race, a failed renewal). */
  readonly say: (line: string) => void
  /** What this executor offers now (protocol 3); default nothing. */
  readonly offers?: () => ReadonlySet<string>
  /** Whether it takes tasks now (default always): while not, it decides no claim. */
  readonly ready?: () => boolean
  /** Told how many executors are in view (this one included) each time the set or what they offer changes. */
  readonly viewChanged?: (executors: number) => void
}

/**
 * What ends a claim's work before it is done, and so what its end needs to
 * be published: 'lost' while no earlier claim won (the claim may have ended
 * otherwise); 'owner' while the claim heads its task, with the work also
 * stopped when the plan stops taking work.
 */
export type Keep = 'lost' | 'owner'

export interface HoldOptions {
  readonly keep: Keep
  /** Stop the work, saying why in a sentence (an earlier claim won, the plan ended, the node is stopping). */
  readonly abort: (why: string) => void
  /** Stop renewing this long before the claim's maxClaimMs (default: renew while the work runs). */
  readonly renewStopMs?: number
}

type EndType = 'result-reported' | 'task-failed' | 'task-released'

/** The work on one claim, registered in the book from `hold` until `drop`. */
export interface Hold {
  /** Renew the lease if due, or stop the work when the claim is gone (done on every pass of the role). */
  readonly check: () => void
  /** The work is over: no more renewals or stops. */
  readonly drop: () => void
  /** Whether the claim still stands as `keep` asks; if so, note the slot coming free: its end may be published. */
  readonly settle: () => boolean
  /** Publish the end of the claim (a result, a failure, a release), citing the claim and its last renewal. */
  readonly publish: <T extends EndType>(type: T, body: Omit<Bodies[T], 'task' | 'claim'>) => Promise<void>
}

export interface ClaimBook {
  /** The claims to make in a plan now (decideExecutor over this executor's view). */
  readonly decide: (tree: PlanTree, now: number) => ClaimIntent[]
  readonly nextWakeAt: () => number | null
  /** The executors in view and whether that view is stable; an executor adds what else its decisions read. */
  readonly viewKey: (now: number) => string
  /** On every pass: note the view, renew or stop every claim worked. */
  readonly tick: (now: number) => void
  /** Stop every claim's work: the node is stopping. */
  readonly stop: () => void
  readonly standing: (plan: PlanId, task: string, claim: EventId) => Standing
  /**
   * Publish the claim, wait out its confirmation if it asks for one, and
   * return it with the plan's tree then; null (having said why) when the plan
   * stopped taking work meanwhile (out of budget, the task is handed back at
   * once) or an earlier claim won.
   */
  readonly claim: (intent: ClaimIntent) => Promise<{ event: PlanEvent; tree: PlanTree | undefined } | null>
  /** Start working a claim: renewed on every pass while it stands as `opts.keep` asks, stopped when it does not. */
  readonly hold: (intent: ClaimIntent, claim: PlanEvent, tree: PlanTree, opts: HoldOptions) => Hold
}

const NOTHING: ReadonlySet<string> = new Set()

/** One executor's book; the view of the other executors is the same for every kind, so their ranks agree. */
export function createClaimBook(view: NodeView, opts: ClaimBookOptions): ClaimBook {
  const me = view.me
  const say = opts.say
  const working = new Map<string, { plan: PlanId; task: string; claim: EventId; check: () => void; stop: () => void }>()
  const firstSeen = new Map<string, number>()
  // When the set of live executors this node sees last changed.
  let viewKey = ''
  const upSince = view.now()
  let viewSince = upSince
  // The driver ticks and then decides each plan at one `now`: the roster is listed once per pass, not once per call.
  let listed: { at: number; executors: string[] } = { at: NaN, executors: [] }
  // What each live executor offers (protocol 3), from its presence; refreshed with the list.
  let offered = new Map<string, ReadonlySet<string>>()
  const offersOf = (peer: string): ReadonlySet<string> => offered.get(peer) ?? NOTHING
  /** The live executors, noting when the set (or what they offer) last changed. */
  const noteView = (now: number): string[] => {
    if (listed.at === now) return listed.executors
    const entries = view.roster().filter(r => r.role === 'executor')
    const executors = entries.map(r => r.peerId)
    offered = new Map(entries.map(r => [r.peerId, new Set(offersIn(r.capabilities))]))
    listed = { at: now, executors }
    const offerKey = entries
      .filter(r => offersOf(r.peerId).size > 0)
      .map(r => `${r.peerId}=${[...offersOf(r.peerId)].sort().join('+')}`)
      .sort()
    const key =
      [...new Set([...executors, me])].sort().join(',') + (offerKey.length > 0 ? `|${offerKey.join(',')}` : '')
    if (key !== viewKey) {
      opts.viewChanged?.(executors.length + 1)
      viewKey = key
      viewSince = now
    }
    return executors
  }
  const stable = (now: number): boolean =>
    now - upSince >= stableViewMs(view.presenceIntervalMs()) && now - viewSince >= VIEW_UNCHANGED_MS
  // Per plan, when this executor last held the plan's limit of claims.
  const fullAt = new Map<PlanId, number>()
  const noteFull = (plan: PlanId, at: number): void => {
    if (fullAt.size >= 1_000 && !fullAt.has(plan)) fullAt.clear()
    fullAt.set(plan, at)
  }
  /** Before this executor frees a slot: if it held the plan's limit, others see it full until they hear of the slot coming free. */
  const freeing = (plan: PlanId): void => {
    const t = view.tree(plan)
    if (t === undefined) return
    if ((liveClaims(t).get(me) ?? 0) >= t.params.maxClaimsPerExecutor) noteFull(plan, view.now())
  }
  let wakeAt: number | null = null
  /** Claims published and waiting out their confirmation: not yet held, but counted by the fold. */
  const confirming = new Map<EventId, Confirming>()
  const seenAt = (task: string): number => {
    let t = firstSeen.get(task)
    if (t === undefined) {
      t = view.now()
      firstSeen.set(task, t)
      if (firstSeen.size > 10_000) firstSeen.delete(firstSeen.keys().next().value as string)
    }
    return t
  }
  const standing = (plan: PlanId, task: string, claim: EventId): Standing => standingOf(view, plan, task, claim)
  /**
   * In a version-5 plan, release a claim that lost its contest: the fold
   * counts a member's claims against maxClaimsPerExecutor until they end
   * (src/core/trust-rules.ts), so an unreleased lost claim would cost this
   * executor a slot until its lease lapses. Published before the slot is
   * reused, so the release is stamped before the next claim.
   */
  const releaseLost = (plan: PlanId, task: string, claim: PlanEvent, last: PlanEvent): Promise<unknown> => {
    if (view.tree(plan)?.params.trust === undefined) return Promise.resolve()
    return view
      .publish('task-released', plan, [claim.id, last.id], {
        task: task as Bodies['task-released']['task'],
        claim: claim.id,
        reason: 'another claim won the task'
      })
      .catch((err: Error) => {
        say(`could not hand back a lost claim: ${err.message}`)
      })
  }

  const hold = (intent: ClaimIntent, claim: PlanEvent, tree: PlanTree, h: HoldOptions): Hold => {
    const { plan } = intent
    const task = intent.task.id
    let last: PlanEvent = claim
    let renewing = false
    const every = renewEveryMs(tree.params.leaseMs)
    const key = `${plan}:${task}`
    const stands = (s: Standing): boolean => (h.keep === 'lost' ? s !== 'lost' : s === 'owner')
    let handedBack = false
    const check = (): void => {
      const s = standing(plan, task, claim.id)
      if (!stands(s)) {
        // Protocol 5 counts a claim against the limit until it ends: a claim that lost is handed back, once.
        if (s === 'lost' && !handedBack) {
          handedBack = true
          void releaseLost(plan, task, claim, last)
        }
        // Nothing of this claim is published yet, so an ended chain was taken over (its lease lapsed).
        h.abort(s === 'lost' ? 'an earlier claim won the task' : 'the lease lapsed and another executor took over')
        return
      }
      const t = h.keep === 'owner' ? view.tree(plan) : undefined
      if (t !== undefined && isIdle(t)) {
        h.abort(`the plan is ${t.status}`)
        return
      }
      if (renewing || view.now() - last.env.hlc.ms < every) return
      // A renewal stamped past the claim's maxClaimMs is refused.
      if (h.renewStopMs !== undefined && view.now() >= claim.env.hlc.ms + tree.params.maxClaimMs - h.renewStopMs) return
      renewing = true
      view
        .publish('claim-renewed', plan, [claim.id, last.id], { task, claim: claim.id, prev: last.id })
        .then(
          r => {
            last = r.event
          },
          (err: Error) => {
            say(`could not renew a lease: ${err.message}`)
          }
        )
        .finally(() => {
          renewing = false
        })
    }
    working.set(key, { plan, task, claim: claim.id, check, stop: () => h.abort('the node is stopping') })
    return {
      check,
      drop: () => {
        working.delete(key)
      },
      settle: () => {
        if (!stands(standing(plan, task, claim.id))) return false
        freeing(plan)
        return true
      },
      publish: async (type, body) => {
        const full = { task, claim: claim.id, ...body } as unknown as Bodies[typeof type]
        // Protocol 5: a result cites this executor's passed review, so its review sample does not count it as a first.
        const t = type === 'result-reported' ? view.tree(plan) : undefined
        const passed = t === undefined ? [] : passedReviewCites(t, me, id => view.reviewsOf(plan, id))
        await view.publish(type, plan, [claim.id, last.id, ...passed], full)
      }
    }
  }

  /**
   * The `prev` a claim cites. In a version-5 plan no member takes over its
   * own chain: a lapsed chain of an earlier run of this executor is released
   * first, and the claim follows the release.
   */
  const ownChainReleased = async (intent: ClaimIntent): Promise<EventId | null> => {
    const t = view.tree(intent.plan)
    const current = intent.task.chains[intent.task.chains.length - 1]
    if (t?.params.trust === undefined || intent.prev === null || current?.owner !== me || current.end !== null)
      return intent.prev
    const { event } = await view.publish('task-released', intent.plan, [current.claim, current.last], {
      task: intent.task.id,
      claim: current.claim,
      reason: 'an earlier run of this executor left the claim'
    })
    return event.id
  }

  return {
    decide: (tree, now) => {
      const executors = noteView(now)
      if (opts.ready !== undefined && !opts.ready()) return []
      const lagMs = view.lagMs()
      const mine = [...working.values()].filter(w => w.plan === tree.plan)
      // Protocol 5 counts a lost claim against the limit until its release: a lost claim still held here, or still
      // confirming, is handed back now, so its release is stamped before any claim this call leads to.
      if (tree.params.trust !== undefined) {
        for (const w of mine) if (standing(w.plan, w.task, w.claim) === 'lost') w.check()
        for (const c of confirming.values())
          if (c.plan === tree.plan && standing(c.plan, c.task, c.claim.id) === 'lost') void c.handBack()
      }
      // A task whose result is folded already no longer takes a slot, though its publish may still be under way.
      const busy = mine.filter(w => standing(w.plan, w.task, w.claim) === 'owner').length
      return decideExecutor(tree, me, now, executors, busy, seenAt, propagationWait(STAGGER_MS, lagMs), {
        stableView: stable(now),
        lagMs,
        workingOn: task => working.has(`${tree.plan}:${task}`),
        heardAt: seenAt,
        wake: at => {
          if (wakeAt === null || at < wakeAt) wakeAt = at
        },
        lastFullMs: fullAt.get(tree.plan),
        full: at => {
          noteFull(tree.plan, at)
        },
        offers: opts.offers?.() ?? NOTHING,
        offersOf
      })
    },
    nextWakeAt: () => {
      const at = wakeAt
      wakeAt = null
      return at
    },
    viewKey: now => {
      noteView(now)
      return `${viewKey}|${stable(now) ? 'stable' : 'changing'}`
    },
    tick: now => {
      // Watched from the start, not from the first plan: a plan submitted to a settled swarm finds the view stable already.
      noteView(now)
      for (const w of working.values()) w.check()
    },
    stop: () => {
      for (const w of working.values()) w.stop()
    },
    standing,
    claim: async intent => {
      const prev = await ownChainReleased(intent)
      const cites = prev === null ? intent.task.evidence : [...intent.task.evidence, prev]
      const { event: claim } = await view.publish('task-claimed', intent.plan, cites, {
        task: intent.task.id,
        prev
      })
      let handedBack: Promise<unknown> | undefined
      const handBack = (): Promise<unknown> => (handedBack ??= releaseLost(intent.plan, intent.task.id, claim, claim))
      if (intent.confirm) {
        confirming.set(claim.id, { plan: intent.plan, task: intent.task.id, claim, handBack })
        try {
          await sleep(view.scheduler, propagationWait(CONFIRM_MS, view.lagMs()))
        } finally {
          confirming.delete(claim.id)
        }
      }
      const now = view.tree(intent.plan)
      if (now !== undefined && isIdle(now)) {
        // Cancelled, finished or out of budget while we confirmed: no work. Out of budget, hand
        // the task back so that it is free at once when the author raises the budget.
        if (now.status === 'budget-exhausted')
          await view.publish('task-released', intent.plan, [claim.id], {
            task: intent.task.id,
            claim: claim.id,
            reason: 'the plan ran out of budget'
          })
        say(`not executing "${intent.task.id.slice(0, 8)}": the plan is ${now.status}`)
        return null
      }
      if (standing(intent.plan, intent.task.id, claim.id) !== 'owner') {
        say(`lost the claim race for a task of plan ${intent.plan.slice(0, 8)}; another executor holds it`)
        await handBack()
        return null
      }
      return { event: claim, tree: now }
    },
    hold
  }
}
