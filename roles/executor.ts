import { logger } from '@libp2p/logger'
import { hashParts } from '../src/core/hash.js'
import { meetsNeeds, offersIn } from '../src/core/needs.js'
import { toolsLine } from './render.js'
import { view } from '../src/core/view.js'
import { MAX_OUTPUT_CHARS, MAX_REASON_CHARS } from '../src/core/limits.js'
import { sleep } from '../src/ports/scheduler.js'
import { isIdle, nearBudget, nodeMap, pathOf, inputsOf, welcomesModels } from './plan-context.js'
import { MAX_EVENT_BYTES, MAX_TOOL_RECORDS, MAX_TURNS } from '../src/core/limits.js'
import { ZERO_USAGE } from '../src/llm/types.js'
import type {
  EventId,
  PeerIdString,
  PlanEvent,
  PlanId,
  ResultSource,
  ToolCallRecord,
  Usage
} from '../src/core/events.js'
import type { PlanTree, TaskView, TreeNode } from '../src/core/tree.js'
import type { RoleContext, RoleHandler } from './driver.js'

const log = logger('plan-swarm:executor')

/**
 * Each later-ranked executor waits this much longer, after it first sees a
 * task claimable, before claiming it: executors spread out without talking,
 * as long as a claim travels faster than this.
 */
export const STAGGER_MS = 250
/** A takeover waits this long past a lapsed lease, for clock skew between peers. */
export const SKEW_ALLOWANCE_MS = 2_000
/** After claiming, wait this long for an earlier competing claim to show up before calling the model. */
export const CONFIRM_MS = 150
/**
 * How long this node must have been up before it trusts that its view of
 * the executors is whole: two presence announcements of every peer (at the
 * node's current presence interval), so it has heard of everyone.
 */
export function stableViewMs(presenceIntervalMs: number): number {
  return 2 * presenceIntervalMs
}
/**
 * ... and how long the executors it sees must have stayed the same, so that a
 * newcomer and everyone else have heard of each other: the newcomer
 * announces itself swarm-wide on its first peer and learns the roster from
 * the roster exchange, both within a second; this is two of the smallest
 * presence intervals (2 x 3 s, src/net/presence-interval.ts). Not two of
 * the current intervals: those grow with the swarm (10 s at 10 peers), and
 * the first plans into a swarm that had just settled would confirm every
 * claim.
 */
export const VIEW_UNCHANGED_MS = 6_000

/**
 * Whether a claim needs the confirmation wait. It does not when nobody else
 * can have claimed the task before this claim reaches them: this executor
 * ranks first for the task, its view of the executors has been stable for
 * stableViewMs (so the others rank alike), it is not a takeover, and
 * either it is the only executor it knows of, or it claims soon enough after
 * both first seeing the task and the stamp at which the task became ready.
 * Another executor may claim S (the stagger) after it saw the task at the
 * earliest, so not before ready + S, while this claim, made at ready + x,
 * reaches it within one gossip delay L: safe while x + L < S. L is taken as
 * twice the observed mean delay (`lagMs`, for the tail) and a quarter of S
 * is kept for clock skew, so the claim goes ahead without confirming while
 * x <= 3S/4 - 2 lag (127 ms at S = 250 ms and a 30 ms lag; nothing once the
 * lag reaches 3S/8). The stamp matters because delays differ between peers
 * on a loaded machine (one peer may see a task half a second after
 * another); the local time matters across machines, where stamps carry
 * clock skew. Every other claim confirms: a late claim (e.g. after waiting
 * for room) can cross another executor's claim in flight, and so can the
 * claim of an executor that held the plan's limit of claims less than a
 * stagger ago (`recentlyFull`): the others, not yet aware that a slot came
 * free, skipped it in their ranks and may have claimed at once (unless the
 * result that freed the slot is what made the task ready: then nobody saw
 * the task claimable before hearing of it). The window is this wide because
 * on a loaded 2-core machine the claims on a plan's critical path come
 * 60-150 ms after ready; a narrower one makes most of them pay the 150 ms
 * confirmation (ADR-0030).
 */
export function needsConfirm(o: {
  rank: number
  executors: number
  stableView: boolean
  takeover: boolean
  recentlyFull?: boolean
  sinceSeenMs: number
  sinceReadyMs: number
  lagMs: number
  staggerMs: number
}): boolean {
  if (o.rank !== 0 || !o.stableView || o.takeover) return true
  if (o.executors <= 1) return false
  if (o.recentlyFull === true) return true
  const budget = (3 * o.staggerMs) / 4 - 2 * o.lagMs
  return !(o.sinceSeenMs <= budget && o.sinceReadyMs <= budget)
}

/**
 * Waits that must outlast propagation grow with the delay this node observes
 * on gossip (on a loaded machine events take seconds, not milliseconds), so
 * executors keep spreading out instead of racing. Never below the base, at
 * most 2 s.
 */
export function propagationWait(baseMs: number, lagMs: number): number {
  return Math.min(2_000, Math.max(baseMs, Math.round(2 * lagMs)))
}

export interface ClaimIntent {
  readonly kind: 'claim'
  readonly key: string
  readonly plan: PlanId
  readonly task: TaskView
  /** The last event of the chain this claim takes over, or null for a fresh claim. */
  readonly prev: EventId | null
  /** Wait for an earlier competing claim before calling the model (see needsConfirm). */
  readonly confirm: boolean
}

/**
 * For each task, how many tasks lie on the longest chain from it to the
 * plan's end (itself included): a leaf is followed by its parent's roll-up
 * and by the siblings that depend on it; a roll-up by its parent's roll-up
 * and by whatever depends on its node. Executors take the longest chains
 * first, as a list scheduler on the critical path does.
 */
export function chainLengths(tree: PlanTree): Map<string, number> {
  const nodes = nodeMap(tree)
  const dependents = new Map<string, TreeNode[]>()
  for (const n of tree.nodes) for (const d of n.dependsOn) dependents.set(d, [...(dependents.get(d) ?? []), n])
  const memo = new Map<string, number>()
  // The chain that starts when node `n` starts (its first task): a leaf's own task, a composite's deepest leaf.
  const fromStart = (n: TreeNode, depth: number): number => {
    if (depth > 64) return 0
    if (n.kind !== 'composite') return fromNode(n, depth + 1)
    return Math.max(
      0,
      ...n.children.map(c => {
        const x = nodes.get(c)
        return x === undefined ? 0 : fromStart(x, depth + 1)
      })
    )
  }
  // The chain from node `n`'s task (leaf task or roll-up) to the end.
  const fromNode = (n: TreeNode, depth: number): number => {
    const hit = memo.get(n.id)
    if (hit !== undefined) return hit
    if (depth > 64) return 1
    const parent = n.parent === null ? undefined : nodes.get(n.parent)
    const after = Math.max(
      parent === undefined ? 0 : fromNode(parent, depth + 1),
      ...(dependents.get(n.id) ?? []).map(d => fromStart(d, depth + 1))
    )
    memo.set(n.id, 1 + after)
    return 1 + after
  }
  const out = new Map<string, number>()
  for (const t of tree.tasks) {
    const n = nodes.get(t.node)
    if (n !== undefined) out.set(t.id, fromNode(n, 0))
  }
  return out
}

export interface ExecutorView {
  /**
   * This executor has been up stableViewMs(presence interval), and its view of the live executors has not changed for
   * VIEW_UNCHANGED_MS.
   */
  readonly stableView?: boolean
  /** The observed gossip delay (ms). */
  readonly lagMs?: number
  /**
   * Whether this process is working on a task (default: yes for every task it
   * owns). A lapsed claim of this peer that no work holds is the claim of an
   * earlier run that was killed: this executor takes it over like anyone's.
   */
  readonly workingOn?: (task: string) => boolean
  /**
   * Local time this executor first saw an event (default: none kept). With
   * it, a takeover also waits until the chain's last claim or renewal was
   * heard a lease ago by this node's own clock: durations on one clock, so an
   * executor whose clock runs ahead does not see live leases as lapsed and
   * take them all over (a takeover storm).
   */
  readonly heardAt?: (event: string) => number
  /** Told the time at which a task put off for its stagger comes due (the driver wakes then). */
  readonly wake?: (atMs: number) => void
  /** When this executor last held the plan's limit of claims (`full` is told each time it does). */
  readonly lastFullMs?: number
  readonly full?: (atMs: number) => void
  /**
   * Protocol 3: what this executor offers (default nothing) and what another
   * live executor offers (default nothing). A task that needs something is
   * claimed only by an executor that offers it, and its ranks and staggers
   * count only the executors that could take it.
   */
  readonly offers?: ReadonlySet<string>
  readonly offersOf?: (peer: string) => ReadonlySet<string>
}

const NOTHING: ReadonlySet<string> = new Set()

/** Preference hashes kept (task, executor): every pass ranks every claimable task among every live executor. */
const RANK_CACHE_MAX = 100_000
const rankCache = new Map<string, string>()

/** How much executor `peer` prefers `task` (lower first): a hash of both, memoized. */
function preference(task: string, peer: string): string {
  const key = `${task}:${peer}`
  let h = rankCache.get(key)
  if (h === undefined) {
    h = hashParts(task, peer)
    if (rankCache.size >= RANK_CACHE_MAX) rankCache.clear()
    rankCache.set(key, h)
  }
  return h
}

/** This executor's rank for a task among the live executors (0 = it prefers the task most). */
export function rankFor(task: string, me: string, executors: readonly string[]): number {
  const mine = preference(task, me)
  let rank = 0
  for (const p of new Set(executors)) if (p !== me && preference(task, p) < mine) rank++
  return rank
}

/**
 * Claim claimable tasks (leaves and roll-ups), longest chain to the plan's
 * end first, at most the plan's limit at once: each waits `rank * STAGGER_MS`
 * after this executor first saw the task claimable (`seenAt`, noted for every
 * claimable task, whether or not there is room), so the executor that
 * prefers it most gets it first. The rank counts only the executors with room
 * in the plan: one that holds the plan's limit of live claims takes nothing
 * now, so nobody waits out its stagger (a claim that skipped one confirms).
 * An executor whose view of the others is not yet stable waits one stagger
 * more, deferring to those that know the swarm.
 * A lapsed claim is taken over only once this executor's clock is past the
 * lapse plus the skew allowance, and (with `ev.heardAt`) a lease after this
 * node heard the chain's last claim or renewal.
 */
export function decideExecutor(
  tree: PlanTree,
  me: PeerIdString,
  nowMs: number,
  executors: readonly string[],
  working: number,
  seenAt: (task: string) => number,
  staggerMs = STAGGER_MS,
  ev: ExecutorView = {}
): ClaimIntent[] {
  if (isIdle(tree) || !welcomesModels(tree)) return []
  const v = view(tree, nowMs, SKEW_ALLOWANCE_MS)
  const workingOn = ev.workingOn ?? (() => true)
  const lapsed = new Set(v.claimable.map(t => t.id))
  let room =
    tree.params.maxClaimsPerExecutor -
    Math.max(working, v.ownedBy(me).filter(t => !lapsed.has(t.id) || workingOn(t.id)).length)
  const stable = ev.stableView === true
  const out: ClaimIntent[] = []
  const seen = new Map(v.claimable.map(t => [t.id, seenAt(t.id)]))
  // A lease that runs out makes its task claimable without an event: the driver is told when to look again.
  for (const t of tree.tasks) {
    const c = t.chains[t.chains.length - 1]
    if (t.status === 'claimed' && c !== undefined && c.end === null && !lapsed.has(t.id))
      ev.wake?.(c.lapseMs + SKEW_ALLOWANCE_MS + 1)
  }
  if (ev.heardAt !== undefined)
    for (const t of tree.tasks)
      if (t.status === 'claimed') {
        const c = t.chains[t.chains.length - 1]
        if (c !== undefined) ev.heardAt(c.last)
      }
  if (room <= 0) {
    ev.full?.(nowMs)
    return out
  }
  // Held its limit less than a stagger ago: others may still see it full and skip it, unless the task became
  // ready through a result of this executor's since then (nobody sees the task claimable before that result).
  const lastFull = ev.lastFullMs
  const freedBy =
    lastFull !== undefined && nowMs - lastFull < staggerMs
      ? new Set(tree.tasks.flatMap(t => t.results.filter(r => r.author === me && r.at.ms >= lastFull).map(r => r.id)))
      : undefined
  // Executors that hold the plan's limit of live claims take nothing more now: ranks skip them, so the
  // next executor need not wait out their stagger. Such a claim always confirms (its rank among all is not 0).
  const held = liveClaims(tree, lapsed)
  const free = executors.filter(p => p === me || (held.get(p) ?? 0) < tree.params.maxClaimsPerExecutor)
  const chain = chainLengths(tree)
  const order = [...v.claimable].sort((a, b) => (chain.get(b.id) ?? 0) - (chain.get(a.id) ?? 0))
  const nodes = tree.params.tools ? nodeMap(tree) : undefined
  const mine = ev.offers ?? NOTHING
  const offersOf = ev.offersOf ?? (() => NOTHING)
  for (const task of order) {
    if (room <= 0) break
    const needs = task.kind === 'leaf' ? (nodes?.get(task.node)?.needs ?? []) : []
    if (needs.length > 0 && !meetsNeeds(mine, needs)) continue
    const able = needs.length === 0 ? executors : executors.filter(p => p === me || meetsNeeds(offersOf(p), needs))
    const ableFree = needs.length === 0 ? free : free.filter(p => p === me || meetsNeeds(offersOf(p), needs))
    const current = task.chains[task.chains.length - 1]
    const takeover = task.status === 'claimed' && current !== undefined
    if (takeover && current.owner === me && workingOn(task.id)) continue
    const first = seen.get(task.id) as number
    const since = takeover
      ? Math.max(current.lapseMs, ev.heardAt === undefined ? 0 : ev.heardAt(current.last) + tree.params.leaseMs) +
        SKEW_ALLOWANCE_MS
      : first
    const rank = rankFor(task.id, me, able)
    const due = since + ((rank === 0 ? 0 : rankFor(task.id, me, ableFree)) + (stable ? 0 : 1)) * staggerMs
    if (nowMs < due) {
      ev.wake?.(due)
      continue
    }
    const ended = current?.end
    const prev = takeover
      ? current.last
      : ended !== null && ended !== undefined && ended.kind !== 'superseded'
        ? ended.event
        : null
    const sinceReadyMs = nowMs - (task.readyAt?.ms ?? -Infinity)
    const confirm = needsConfirm({
      rank,
      executors: new Set([...able, me]).size,
      stableView: stable,
      takeover,
      recentlyFull: freedBy !== undefined && !task.evidence.some(e => freedBy.has(e)),
      sinceSeenMs: nowMs - first,
      sinceReadyMs,
      lagMs: ev.lagMs ?? 0,
      staggerMs
    })
    log(
      'claim %s: rank %d of %d (%d with room), view %s, %d ms after first seen, %d ms after ready, lag %d ms, stagger %d ms: %s',
      task.id.slice(0, 8),
      rank,
      able.length,
      ableFree.length,
      stable ? 'stable' : 'changing',
      nowMs - first,
      sinceReadyMs,
      Math.round(ev.lagMs ?? 0),
      staggerMs,
      confirm ? 'confirm' : 'no confirm'
    )
    out.push({ kind: 'claim', key: `claim:${tree.plan}:${task.id}`, plan: tree.plan, task, prev, confirm })
    room--
  }
  return out
}

/** How many live claims each executor holds in the plan (leaving out tasks in `lapsed`). */
function liveClaims(tree: PlanTree, lapsed: ReadonlySet<string> = new Set()): Map<string, number> {
  const held = new Map<string, number>()
  for (const t of tree.tasks) {
    const c = t.chains[t.chains.length - 1]
    if (t.status === 'claimed' && c !== undefined && c.end === null && !lapsed.has(t.id))
      held.set(c.owner, (held.get(c.owner) ?? 0) + 1)
  }
  return held
}

/** What a failed call cost, as the provider's errors carry it (usage, and a tool loop's turns). */
function usageOfError(err: unknown): { usage: Usage; turns: number } {
  const e = err as { usage?: Usage; steps?: number }
  const ok = (u: Usage | undefined): u is Usage =>
    u !== undefined && Number.isSafeInteger(u.inputTokens) && Number.isSafeInteger(u.outputTokens)
  return {
    usage: ok(e.usage) ? { inputTokens: e.usage.inputTokens, outputTokens: e.usage.outputTokens } : ZERO_USAGE,
    turns: typeof e.steps === 'number' && Number.isSafeInteger(e.steps) && e.steps > 0 ? e.steps : 1
  }
}

/** The UTF-8 bytes tool call records take in a result event, at most (keys and framing included). */
function recordsBytes(calls: readonly ToolCallRecord[]): number {
  return calls.reduce((n, c) => n + 64 + Buffer.byteLength(JSON.stringify(c)), 0)
}

/** Cut text to at most `maxBytes` of UTF-8, saying so (a result's output beside its tool call records). */
function fitBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text
  let cut = text.slice(0, Math.max(0, Math.floor(maxBytes / 3) - 40))
  while (Buffer.byteLength(cut) > maxBytes - 60) cut = cut.slice(0, -100)
  return `${cut}\n[... cut to fit the event beside its tool calls]`
}

/** Cut text to fit the wire's cap, saying so. */
function fit(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 40)}\n[... cut to fit ${max} characters]`
}

export function createExecutor(ctx: RoleContext): RoleHandler {
  const view = ctx.view
  const me = view.me
  const tools = ctx.tools
  /** Why a tool loop must stop before its next turn for budget, or null. */
  const outOfBudget = (plan: PlanId, used: Usage): string | null => {
    const t = view.tree(plan)
    if (t === undefined) return null
    if (t.status === 'budget-exhausted') return 'the plan ran out of budget'
    const sum = used.inputTokens + used.outputTokens
    return t.spentTokens + sum >= t.budgetTokens
      ? `stopped between turns: the plan's budget of ${t.budgetTokens} tokens is spent (${t.spentTokens} before this task, ${sum} in it)`
      : null
  }
  /** Why a tool loop must stop because its claim is gone or the plan ended, or null. */
  const lostReason = (plan: PlanId, task: string, claim: EventId): string | null => {
    const t = view.tree(plan)
    if (t !== undefined && isIdle(t)) return `the plan is ${t.status}`
    return standing(plan, task, claim) === 'lost' ? 'an earlier claim won' : null
  }
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
      log('executors in view: %d', executors.length + 1)
      viewKey = key
      viewSince = now
    }
    return executors
  }
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
  const wake = (at: number): void => {
    if (wakeAt === null || at < wakeAt) wakeAt = at
  }
  const seenAt = (task: string): number => {
    let t = firstSeen.get(task)
    if (t === undefined) {
      t = view.now()
      firstSeen.set(task, t)
      if (firstSeen.size > 10_000) firstSeen.delete(firstSeen.keys().next().value as string)
    }
    return t
  }

  /** Where our claim stands: heading the task now, once owner (then superseded or ended), or never owner (an earlier claim won). */
  const standing = (plan: PlanId, task: string, claim: EventId): 'owner' | 'was-owner' | 'lost' => {
    const t = view.tree(plan)?.tasks.find(x => x.id === task)
    const chain = t?.chains[t.chains.length - 1]
    if (chain?.claim === claim && chain.end === null && t?.status === 'claimed') return 'owner'
    return t?.chains.some(c => c.claim === claim) === true ? 'was-owner' : 'lost'
  }

  return {
    decide: (tree, now) => {
      const executors = noteView(now)
      const lagMs = view.lagMs()
      // A task whose result is folded already no longer takes a slot, though its publish may still be under way.
      const busy = [...working.values()].filter(
        w => w.plan === tree.plan && standing(w.plan, w.task, w.claim) === 'owner'
      ).length
      return decideExecutor(tree, me, now, executors, busy, seenAt, propagationWait(STAGGER_MS, lagMs), {
        stableView: now - upSince >= stableViewMs(view.presenceIntervalMs()) && now - viewSince >= VIEW_UNCHANGED_MS,
        lagMs,
        workingOn: task => working.has(`${tree.plan}:${task}`),
        heardAt: seenAt,
        wake,
        lastFullMs: fullAt.get(tree.plan),
        full: at => {
          noteFull(tree.plan, at)
        },
        offers: tools === undefined ? NOTHING : new Set(tools.offers()),
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
      const stable = now - upSince >= stableViewMs(view.presenceIntervalMs()) && now - viewSince >= VIEW_UNCHANGED_MS
      return `${viewKey}|${stable ? 'stable' : 'changing'}|${tools === undefined ? '' : tools.offers().join(',')}`
    },
    tick: now => {
      // Watched from the start, not from the first plan: a plan submitted to a settled swarm finds the view stable already.
      noteView(now)
      for (const w of working.values()) w.check()
    },
    stop: () => {
      for (const w of working.values()) w.stop()
    },
    act: async (intent: ClaimIntent, tree) => {
      const cites = intent.prev === null ? intent.task.evidence : [...intent.task.evidence, intent.prev]
      const { event: claim } = await view.publish('task-claimed', intent.plan, cites, {
        task: intent.task.id,
        prev: intent.prev
      })
      if (intent.confirm) await sleep(view.scheduler, propagationWait(CONFIRM_MS, view.lagMs()))
      const now = view.tree(intent.plan)
      if (now !== undefined && isIdle(now)) {
        // Cancelled, finished or out of budget while we confirmed: no model call. Out of budget, hand
        // the task back so that it is free at once when the author raises the budget.
        if (now.status === 'budget-exhausted')
          await view.publish('task-released', intent.plan, [claim.id], {
            task: intent.task.id,
            claim: claim.id,
            reason: 'the plan ran out of budget'
          })
        ctx.say(`not executing "${intent.task.id.slice(0, 8)}": the plan is ${now.status}`)
        return
      }
      if (standing(intent.plan, intent.task.id, claim.id) !== 'owner') {
        ctx.say(`lost the claim race for a task of plan ${intent.plan.slice(0, 8)}; another executor holds it`)
        return
      }
      const nodes = nodeMap(tree)
      const node = nodes.get(intent.task.node)
      if (node === undefined) throw new Error(`task ${intent.task.id} has no node`)
      const abort = new AbortController()
      let last: PlanEvent = claim
      let renewing = false
      const renewEveryMs = Math.max(500, Math.floor(tree.params.leaseMs / 3))
      const key = `${intent.plan}:${intent.task.id}`
      working.set(key, {
        plan: intent.plan,
        task: intent.task.id,
        claim: claim.id,
        // On every pass: stop at once when an earlier claim turns out to have won; renew the lease when due.
        check: () => {
          if (standing(intent.plan, intent.task.id, claim.id) === 'lost') {
            abort.abort()
            return
          }
          if (renewing || view.now() - last.env.hlc.ms < renewEveryMs) return
          renewing = true
          view
            .publish('claim-renewed', intent.plan, [claim.id, last.id], {
              task: intent.task.id,
              claim: claim.id,
              prev: last.id
            })
            .then(
              r => {
                last = r.event
              },
              (err: Error) => {
                ctx.say(`could not renew a lease: ${err.message}`)
              }
            )
            .finally(() => {
              renewing = false
            })
        },
        stop: () => {
          abort.abort()
        }
      })
      try {
        const provider = nearBudget(tree) ? ctx.provider.downgrade() : ctx.provider
        ctx.say(`executing ${intent.task.kind === 'rollup' ? 'roll-up of ' : ''}"${node.title}"`)
        const input = {
          goal: tree.goal,
          path: pathOf(tree, node, nodes),
          task: { title: node.title, detail: node.detail },
          kind: intent.task.kind,
          inputs: inputsOf(tree, intent.task, nodes)
        }
        const opts = {
          signal: abort.signal,
          maxOutputTokens: tree.params.maxTokensPerCall,
          trace: { plan: intent.plan, for: { slot: 'claim' as const, claim: claim.id } }
        }
        // A plan that uses tools (protocol 3) runs a leaf as a loop with this executor's tools, if it has any.
        const loop =
          tree.params.tools && intent.task.kind === 'leaf' && tools !== undefined && tools.box.list().length > 0
        let out: {
          output: string
          usage: Usage
          model: string
          source: ResultSource
          calls?: readonly ToolCallRecord[]
          steps?: number
        }
        try {
          out = loop
            ? await provider.executeWithTools(input, {
                ...opts,
                tools: tools.box,
                limits: tools.limits,
                beforeTurn: usage =>
                  outOfBudget(intent.plan, usage) ?? lostReason(intent.plan, intent.task.id, claim.id),
                afterTurn: () => {
                  working.get(key)?.check()
                }
              })
            : await provider.execute(input, opts)
        } catch (err) {
          if (abort.signal.aborted) {
            ctx.say(`stopped "${node.title}": an earlier claim won or the node is stopping`)
            return
          }
          if (standing(intent.plan, intent.task.id, claim.id) === 'lost') {
            ctx.say(`dropped "${node.title}": an earlier claim won while it ran`)
            return
          }
          freeing(intent.plan)
          const spent = usageOfError(err)
          await view.publish('task-failed', intent.plan, [claim.id, last.id], {
            task: intent.task.id,
            claim: claim.id,
            error: fit((err as Error).message, MAX_REASON_CHARS),
            usage: spent.usage,
            ...(tree.params.tools && spent.turns > 1 ? { turns: Math.min(spent.turns, MAX_TURNS) } : {})
          })
          ctx.say(`"${node.title}" failed: ${(err as Error).message}`)
          return
        }
        if (standing(intent.plan, intent.task.id, claim.id) === 'lost') {
          ctx.say(`dropped the result of "${node.title}": an earlier claim won while it ran`)
          return
        }
        freeing(intent.plan)
        const calls = (out.calls ?? []).slice(0, MAX_TOOL_RECORDS)
        await view.publish('result-reported', intent.plan, [claim.id, last.id], {
          task: intent.task.id,
          claim: claim.id,
          output: fitBytes(fit(out.output, MAX_OUTPUT_CHARS), MAX_EVENT_BYTES - 8_192 - recordsBytes(calls)),
          usage: out.usage,
          model: out.model,
          source: out.source,
          ...(tree.params.tools && loop
            ? { toolCalls: calls, turns: Math.min(Math.max(1, out.steps ?? 1), MAX_TURNS) }
            : {})
        })
        if (calls.length > 0) ctx.say(`"${node.title}": ${calls.length} tool call(s): ${toolsLine(calls)}`)
        ctx.say(`done "${node.title}"`)
      } finally {
        working.delete(key)
      }
    }
  }
}
