/**
 * Which claimable tasks an executor claims, when, and whether it waits to
 * confirm: pure functions of a plan's tree, this executor's view of the
 * others and its clock. The model and A2A executors decide with them
 * (through ./claim-book.ts), so they rank and stagger alike; the outside
 * executor takes its order, its confirmation wait and its takeover allowance
 * from them.
 */
import { logger } from '@libp2p/logger'
import { BACKUP_FACTOR, claimRank } from '../src/core/trust-rules.js'
import { backupTask, outdoneBefore } from './backup-rules.js'
import { meetsNeeds } from '../src/core/needs.js'
import { view } from '../src/core/view.js'
import { isIdle, nodeMap, welcomesModels } from './plan-context.js'
import type { EventId, PeerIdString, PlanId } from '../src/core/events.js'
import type { PlanTree, TaskView, TreeNode } from '../src/core/tree.js'

const log = logger('plan-swarm:executor')

/**
 * Each later-ranked executor waits this much longer, after it first sees a
 * task claimable, before claiming it: executors spread out without talking,
 * as long as a claim travels faster than this.
 */
export const STAGGER_MS = 250
/** A takeover waits this long past a lapsed lease, for clock skew between peers. */
export const SKEW_ALLOWANCE_MS = 2_000
/**
 * A backup waits this long past the fold's backup time, for clock skew between
 * peers: the takeover allowance, but never more than the plan's typical task
 * time (the backup time over BACKUP_FACTOR), so that where tasks take less than
 * the allowance a hoarded task is not held mostly by the allowance (ADR-0054).
 * The backup's own stamp is at least this executor's clock, so it counts as a
 * backup whatever the skew; a shorter wait only backs up a holder whose clock
 * runs behind a little sooner.
 */
export function backupSkewMs(backupMs: number): number {
  return Math.min(SKEW_ALLOWANCE_MS, backupMs / BACKUP_FACTOR)
}
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
  /** Protocol 5: a backup of another member's chain held past the fold's backup time (./backup-rules.ts). */
  readonly backup?: true
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

/**
 * How much executor `peer` prefers `task` (lower first): a hash of both,
 * memoized. It is protocol 5's claim rank (src/core/trust-rules.ts), so in a
 * version-5 plan the executor that claims first is the one the fold prefers.
 */
function preference(task: string, peer: string): string {
  const key = `${task}:${peer}`
  let h = rankCache.get(key)
  if (h === undefined) {
    h = claimRank(task, peer)
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
 * claimable task, whether or not there is room; in a version-5 plan, again
 * after each chain of it ended: seenKey), so the executor that
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
  // Protocol 5: a member outdone in the plan or with a result rejected ranks last in its contests from then on
  // (fold.md 11.8): nobody waits for it.
  const last = ranksLast(tree)
  if (last.size > 0) executors = executors.filter(p => p === me || !last.has(p))
  const v = view(tree, nowMs, SKEW_ALLOWANCE_MS)
  const workingOn = ev.workingOn ?? (() => true)
  const lapsed = new Set(v.claimable.map(t => t.id))
  let room =
    tree.params.maxClaimsPerExecutor -
    Math.max(working, v.ownedBy(me).filter(t => !lapsed.has(t.id) || workingOn(t.id)).length)
  const stable = ev.stableView === true
  const out: ClaimIntent[] = []
  const seen = new Map(v.claimable.map(t => [t.id, seenAt(seenKey(tree, t))]))
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
  const contested = contestable(tree, me, last, nowMs, lastFull === undefined ? undefined : lastFull + staggerMs)
  for (const t of contested) if (!seen.has(t.id)) seen.set(t.id, seenAt(seenKey(tree, t)))
  const order = [...v.claimable, ...contested].sort((a, b) => (chain.get(b.id) ?? 0) - (chain.get(a.id) ?? 0))
  const contestIds = new Set(contested.map(t => t.id))
  const nodes = tree.params.tools ? nodeMap(tree) : undefined
  const mine = ev.offers ?? NOTHING
  const offersOf = ev.offersOf ?? (() => NOTHING)
  // Whether a task this executor could take is claimable or contestable (now or after its stagger).
  let takeable = false
  for (const task of order) {
    if (room <= 0) break
    const needs = task.kind === 'leaf' ? (nodes?.get(task.node)?.needs ?? []) : []
    if (needs.length > 0 && !meetsNeeds(mine, needs)) continue
    takeable = true
    const able = needs.length === 0 ? executors : executors.filter(p => p === me || meetsNeeds(offersOf(p), needs))
    const ableFree = needs.length === 0 ? free : free.filter(p => p === me || meetsNeeds(offersOf(p), needs))
    const current = task.chains[task.chains.length - 1]
    const contest = contestIds.has(task.id)
    const takeover = !contest && task.status === 'claimed' && current !== undefined
    if (takeover && current.owner === me && workingOn(task.id)) continue
    const first = seen.get(task.id) as number
    const since = takeover
      ? Math.max(current.lapseMs, ev.heardAt === undefined ? 0 : ev.heardAt(current.last) + tree.params.leaseMs) +
        SKEW_ALLOWANCE_MS
      : first
    const rank = rankFor(task.id, me, able)
    const due = since + ((rank === 0 ? 0 : rankFor(task.id, me, ableFree)) + (stable ? 0 : 1)) * staggerMs
    if (nowMs < due) {
      if (!contest || due < windowEnd(task, tree)) ev.wake?.(due)
      continue
    }
    if (contest && nowMs >= windowEnd(task, tree)) continue
    const ended = current?.end
    const prev = takeover
      ? current.last
      : !contest && ended !== null && ended !== undefined && ended.kind !== 'superseded'
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
  // Protocol 5: idle in the plan (no claim held or worked, nothing to take), back up one hoarded task.
  if (!takeable && room >= tree.params.maxClaimsPerExecutor && tree.backupMs !== undefined) {
    const b = backupTask(tree, me, nowMs, {
      rankFor,
      able: task => {
        const needs = task.kind === 'leaf' ? (nodes?.get(task.node)?.needs ?? []) : []
        if (needs.length > 0 && !meetsNeeds(mine, needs)) return null
        const fits = (p: string): boolean => p === me || needs.length === 0 || meetsNeeds(offersOf(p), needs)
        const owner = task.chains[task.chains.length - 1]?.owner
        return {
          all: executors.filter(p => p !== owner && fits(p)),
          free: free.filter(p => p !== owner && fits(p))
        }
      },
      staggerMs,
      skewMs: backupSkewMs(tree.backupMs),
      stable,
      ...(ev.wake === undefined ? {} : { wake: ev.wake })
    })
    if (b !== undefined) {
      log('backup %s: rank %d, chain held past the backup time %d ms', b.task.id.slice(0, 8), b.rank, tree.backupMs)
      const key = `claim:${tree.plan}:${b.task.id}`
      out.push({ kind: 'claim', key, plan: tree.plan, task: b.task, prev: b.prev, confirm: true, backup: true })
    }
  }
  return out
}

/**
 * Protocol 5: the members whose claims the fold ranks after every other
 * claim from now on (fold.md 11.8): those outdone in the plan (ADR-0054) and
 * those with a result rejected on review. Nothing in an earlier version's plan.
 */
function ranksLast(tree: PlanTree): Set<string> {
  const out = new Set<string>()
  if (tree.params.trust === undefined) return out
  for (const p of Object.keys(tree.backupSooner?.after ?? {})) out.add(p)
  for (const t of tree.tasks) for (const r of t.results) if (r.review === 'rejected') out.add(r.author)
  return out
}

/**
 * What the stagger of a claimable task counts from: when this executor first
 * saw it claimable, and in a version-5 plan, when it first saw it claimable
 * again after its last chain ended (a release, a failure, a rejection).
 * Otherwise every executor claims a reopened task at once, and each that
 * loses the contest releases its claim, which ranks it last for that task
 * from then on (fold.md 11.1): after one reopening the honest executors rank
 * behind a member whose result was rejected there.
 */
function seenKey(tree: PlanTree, task: TaskView): string {
  const end = task.chains[task.chains.length - 1]?.end
  return tree.params.trust === undefined || end === null || end === undefined ? task.id : `${task.id}:${end.event}`
}

/**
 * When this executor stops claiming a contested task of a version-5 plan: a
 * quarter of the window (at most 250 ms) before the window closes, so its
 * claim is stamped within it despite some clock skew.
 */
function windowEnd(task: TaskView, tree: PlanTree): number {
  const w = tree.params.trust?.claimWindowMs ?? 0
  return (task.readyAt?.ms ?? -Infinity) + w - Math.min(250, w / 4)
}

/**
 * Protocol 5: the tasks of a version-5 plan whose first chain another
 * executor started within the claim window, and that this executor outranks
 * (src/core/claim-contest.ts): a claim of this executor stamped within the
 * window still wins them, so it claims them while the window is open, after
 * its own stagger as for a ready task. Nothing in an earlier version's plan.
 * Not a chain claimed before `fullUntilMs` (this executor held the plan's
 * limit of claims less than a stagger before): its owner rightly skipped
 * this executor in its rank and may be done already, so a contest would
 * only run the task twice. Nor, when this executor ranks last (`last`), a
 * chain of a member that does not: its claim would lose the contest, again
 * on every pass while the window is open.
 */
function contestable(
  tree: PlanTree,
  me: string,
  last: ReadonlySet<string>,
  nowMs: number,
  fullUntilMs?: number
): TaskView[] {
  const w = tree.params.trust?.claimWindowMs
  if (w === undefined || w === 0) return []
  return tree.tasks.filter(t => {
    const c = t.chains[0]
    return (
      t.status === 'claimed' &&
      t.chains.length === 1 &&
      c !== undefined &&
      c.end === null &&
      c.owner !== me &&
      t.readyAt !== null &&
      c.claimedAt.ms <= t.readyAt.ms + w &&
      (fullUntilMs === undefined || c.claimedAt.ms > fullUntilMs) &&
      nowMs < windowEnd(t, tree) &&
      (!last.has(me) || last.has(c.owner)) &&
      (preference(t.id, me) < preference(t.id, c.owner) || outdoneBefore(tree, c.owner, c.claimedAt))
    )
  })
}

/** How many live claims each executor holds in the plan (leaving out tasks in `lapsed`). */
export function liveClaims(tree: PlanTree, lapsed: ReadonlySet<string> = new Set()): Map<string, number> {
  const held = new Map<string, number>()
  for (const t of tree.tasks) {
    const c = t.chains[t.chains.length - 1]
    if (t.status === 'claimed' && c !== undefined && c.end === null && !lapsed.has(t.id))
      held.set(c.owner, (held.get(c.owner) ?? 0) + 1)
  }
  return held
}
