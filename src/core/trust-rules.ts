import { compareHlc } from './hlc.js'
import { hashParts } from './hash.js'
import { sortEvents } from './order.js'
import type { PlanIndex } from './plan-index.js'
import type { EventId, Hlc, PeerIdString, PlanEvent, ResolvedParams, TaskId } from './events.js'
import type { EvidenceItem, EvidenceKind } from './tree.js'

/**
 * A takeover's contest stays open this much longer than a fresh task's
 * window: honest executors take over only two seconds past a lapse, for
 * clock skew (roles/claim-rules.ts SKEW_ALLOWANCE_MS), and a claim stamped
 * one tick past the lapse must not win by its stamp.
 */
export const TAKEOVER_GRACE_MS = 2_000

/** A backup may start once a chain is this many times the plan's typical task time old (ADR-0050). */
export const BACKUP_FACTOR = 4
/**
 * A chain of a member outdone in the plan (`outdoneAt`) may be backed up this many typical task times after its
 * claim (ADR-0054).
 */
export const OUTDONE_BACKUP_FACTOR = 1

/** More than one author built on an event: it is built on against everyone. */
const MANY = Symbol('many')

function join(
  a: PeerIdString | typeof MANY | null,
  b: PeerIdString | typeof MANY | null
): PeerIdString | typeof MANY | null {
  if (a === null) return b
  if (b === null || a === b) return a
  return MANY
}

/** The kinds of event that build on what they cite (fold.md 11.5): proposals, claims and results. */
function builds(e: PlanEvent): boolean {
  const t = e.env.type
  return t === 'split-proposed' || t === 'task-claimed' || t === 'result-reported'
}

/**
 * Whether `e` is a claim citing a result of its own task: a claim after a rejection cites the rejected result as what
 * reopened the task, which replaces that result rather than building on it (fold.md 11.5).
 */
function reclaims(e: PlanEvent, d: PlanEvent | undefined): boolean {
  return (
    e.env.type === 'task-claimed' &&
    d?.env.type === 'result-reported' &&
    (d as PlanEvent<'result-reported'>).env.body.task === (e as PlanEvent<'task-claimed'>).env.body.task
  )
}

/**
 * How a claimer ranks for a task in protocol 5's contests (lower first): a
 * hash of the task id and the claimer's peer id, which neither can choose
 * after the task exists. The executors' stagger uses the same order
 * (roles/claim-rules.ts), so the claim the fold prefers is the one made first.
 */
export function claimRank(task: string, peer: string): string {
  return hashParts(task, peer)
}

/**
 * What protocol 5's rules read of the whole plan before any task is decided,
 * each a function of the plan's event set (ADR-0047):
 * - `equivocators`: every author with two events in one slot of the plan
 *   (proposal, ballot, review, renewal); their ballots and reviews do not count.
 * - `overLimit`: claims beyond their author's maxClaimsPerExecutor live claims.
 * - `demoted`: claims that rank after every other claim of a contest: a
 *   member's claims of a task after it ended a claim of that task without a
 *   result (a release or a failure; so it cannot hold a task by releasing and
 *   claiming again), its claims anywhere in the plan after it gave up a claim
 *   it held past its contest (planQuit), and after a result of it was rejected
 *   on review (the deciding review's stamp). An honest executor that loses a
 *   contest releases the claim before it held the task, and keeps its rank.
 * - per event, the later proposals, claims and results that cite it (what
 *   built on it: `citers`, `pinnedAgainst`), but not a claim of a task citing
 *   a result of that task (a claim after a rejection).
 */
export class TrustRules {
  readonly windowMs: number
  readonly equivocators: ReadonlySet<PeerIdString>
  /** Backup claims whose holder's result came first: their results are not evidence (ADR-0050). */
  readonly outrun = new Set<EventId>()
  private readonly pins = new Map<EventId, PlanEvent[]>()
  private readonly found: EvidenceItem[] = []
  private settled: ((r: PlanEvent<'result-reported'>) => boolean) | undefined = undefined
  private rejectedAt: (author: PeerIdString) => PlanEvent | undefined = () => undefined
  /** Per event, who built on it: nobody (null), one author, or more than one (MANY). */
  private readonly builders = new Map<EventId, PeerIdString | typeof MANY | null>()
  /** The deliverable's results the committee accepted and their causal past, once `settled` is known. */
  private settledPast: Set<EventId> | undefined = undefined
  /** Worked out on first use, after the review sample has said what the committee settled (settleWith). */
  private limits:
    | {
        backupMs: number
        typicalMs: number | undefined
        outdone: ReadonlyMap<PeerIdString, Hlc>
        overLimit: ReadonlySet<EventId>
        demoted: ReadonlySet<EventId>
      }
    | undefined

  constructor(
    private readonly index: PlanIndex,
    private readonly params: ResolvedParams
  ) {
    this.windowMs = params.trust?.claimWindowMs ?? 0
    for (const e of index.events.values()) {
      if (!builds(e)) continue
      for (const d of e.env.deps) {
        if (reclaims(e, index.event(d))) continue
        const s = this.pins.get(d)
        if (s === undefined) this.pins.set(d, [e])
        else s.push(e)
      }
    }
    this.equivocators = equivocatorsOf(index)
  }

  /** How long after a chain's claim another member may start a backup of it (`backupAfter`), unless outdone. */
  get backupMs(): number {
    return this.worked().backupMs
  }

  /**
   * Members outdone in the plan, each with the stamp of the earliest result that outdid it (`outdoneAt`), and how
   * soon their chains claimed after it may be backed up; undefined when nobody is.
   */
  get sooner(): { ms: number; after: ReadonlyMap<PeerIdString, Hlc> } | undefined {
    const w = this.worked()
    return w.typicalMs === undefined || w.outdone.size === 0
      ? undefined
      : { ms: Math.min(w.backupMs, OUTDONE_BACKUP_FACTOR * w.typicalMs), after: w.outdone }
  }

  /** How long after `claim` another member may back its chain up: sooner when its author was outdone before it. */
  backupMsOf(claim: PlanEvent<'task-claimed'>): number {
    const sooner = this.sooner
    const at = sooner?.after.get(claim.env.author)
    return sooner === undefined || at === undefined || compareHlc(at, claim.env.hlc) >= 0
      ? this.worked().backupMs
      : sooner.ms
  }

  /** Claims beyond their author's limit (claimLimits). */
  get overLimit(): ReadonlySet<EventId> {
    return this.worked().overLimit
  }

  /** Claims made after their author gave the task up (claimLimits). */
  get demoted(): ReadonlySet<EventId> {
    return this.worked().demoted
  }

  private worked(): NonNullable<TrustRules['limits']> {
    if (this.limits !== undefined) return this.limits
    const index = this.index
    const builtOn = (e: PlanEvent): boolean => this.pinnedAgainst(e.id, e.env.author)
    const { backupMs, typicalMs } = backupAfter(index, this.params, builtOn)
    const outdone = outdoneAt(index, this.params, this.windowMs, backupMs, builtOn)
    const { overLimit, demoted } = claimLimits(
      index,
      this.params.maxClaimsPerExecutor,
      this.windowMs,
      c => this.claimBuiltOn(c),
      this.rejectedAt,
      outdone
    )
    for (const id of overLimit) this.note('claim-over-limit', index.event(id) as PlanEvent)
    this.limits = { backupMs, typicalMs, outdone, overLimit, demoted }
    return this.limits
  }

  /**
   * Whether someone other than `author` built on `id`: cited it in a proposal, a claim or a result, or cited such
   * an event that built on it, however far down (its causal future among those kinds); or `id` is in the causal
   * past of the deliverable the committee accepted (fold.md 11.5, 11.9).
   */
  pinnedAgainst(id: EventId, author: PeerIdString): boolean {
    const by = this.builtBy(id)
    if (by === MANY || (by !== null && by !== author)) return true
    return this.inSettledPast(id)
  }

  /**
   * Whether a claim's result, or a review that accepted it, was built on by someone other than the claimer
   * (pinnedAgainst).
   */
  claimBuiltOn(c: PlanEvent<'task-claimed'>): boolean {
    const author = c.env.author
    for (const r of this.index.claimEvents(c).results) {
      if (this.pinnedAgainst(r.id, author)) return true
      // Only an accepting review: a claim citing the review that rejected a result builds on the rejection (the
      // task's failure or its reopening), not on the result.
      for (const v of this.index.reviews.get(r.id) ?? [])
        if (v.env.body.verdict === 'accept' && this.pinnedAgainst(v.id, author)) return true
    }
    return false
  }

  /** Who built on `id`, directly or through what cites it (memoised, without recursion). */
  private builtBy(id: EventId): PeerIdString | typeof MANY | null {
    const known = this.builders.get(id)
    if (known !== undefined) return known
    const stack: Array<{ id: EventId; next: number }> = [{ id, next: 0 }]
    const open = new Set<EventId>([id])
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { id: EventId; next: number }
      const citers = this.pins.get(top.id) ?? []
      const c = citers[top.next]
      if (c !== undefined) {
        top.next++
        if (!this.builders.has(c.id) && !open.has(c.id)) {
          open.add(c.id)
          stack.push({ id: c.id, next: 0 })
        }
        continue
      }
      let by: PeerIdString | typeof MANY | null = null
      for (const e of citers) {
        by = join(by, e.env.author)
        by = join(by, this.builders.get(e.id) ?? null)
        if (by === MANY) break
      }
      this.builders.set(top.id, by)
      open.delete(top.id)
      stack.pop()
    }
    return this.builders.get(id) ?? null
  }

  /** Whether `id` is a result the committee settled (settleWith) or in the causal past of one. */
  private inSettledPast(id: EventId): boolean {
    const settled = this.settled
    if (settled === undefined) return false
    if (this.settledPast === undefined) {
      const past = new Set<EventId>()
      const todo: EventId[] = []
      for (const list of this.index.resultsByTask.values())
        for (const r of list)
          if (settled(r)) {
            past.add(r.id)
            todo.push(r.id)
          }
      while (todo.length > 0) {
        const e = this.index.event(todo.pop() as EventId)
        if (e === undefined || !builds(e)) continue
        for (const d of e.env.deps)
          if (!past.has(d) && !reclaims(e, this.index.event(d))) {
            past.add(d)
            todo.push(d)
          }
      }
      this.settledPast = past
    }
    return this.settledPast.has(id)
  }

  /**
   * Let `settled` say which results the committee's accepting reviews built on (fold.md 11.9): the review sample
   * calls this once, as it knows the deliverable and the reviews (ReviewSample.acceptedDeliverable).
   */
  settleWith(
    settled: (r: PlanEvent<'result-reported'>) => boolean,
    rejectedAt: (author: PeerIdString) => PlanEvent | undefined
  ): void {
    if (this.limits !== undefined) throw new Error('settleWith comes before the claim limits are worked out')
    this.settled = settled
    this.rejectedAt = rejectedAt
    this.settledPast = undefined
  }

  /** The proposals, claims and results that cite `id`. */
  citers(id: EventId): readonly PlanEvent[] {
    return this.pins.get(id) ?? []
  }

  /** Record evidence against an event's author (kept once per event and kind). */
  note(kind: EvidenceKind, e: PlanEvent): void {
    this.found.push({ author: e.env.author, event: e.id, kind })
  }

  /** The evidence noted, sorted by author, kind and event, without repeats. */
  evidence(): EvidenceItem[] {
    const key = (x: EvidenceItem): string => `${x.author}\0${x.kind}\0${x.event}`
    const sorted = [...this.found].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    return sorted.filter((x, i) => i === 0 || key(x) !== key(sorted[i - 1] as EvidenceItem))
  }
}

/**
 * How long a chain runs before another member may back it up: BACKUP_FACTOR
 * times the plan's typical task time. The typical time is the median of the
 * plan's samples of work the swarm used: each result another member built
 * on, from its claim to it, and each split proposal another member built
 * on, from the latest of the goal and its deps to it (a member alone cannot
 * add such samples). With no sample yet it is the plan's leaseMs, and the
 * backup time at least two leases (so a holder that renews on time is never
 * backed up before it could have finished a short task). A function of the
 * event set; `typicalMs` is undefined while there is no sample.
 */
function backupAfter(
  index: PlanIndex,
  params: ResolvedParams,
  builtOn: (e: PlanEvent) => boolean
): { backupMs: number; typicalMs: number | undefined } {
  const took: number[] = []
  for (const list of index.resultsByTask.values())
    for (const r of list) {
      const c = index.event(r.env.body.claim)
      if (c !== undefined && builtOn(r)) took.push(Math.max(0, r.env.hlc.ms - c.env.hlc.ms))
    }
  const goalMs = index.goal?.env.hlc.ms
  for (const list of index.proposals.values())
    for (const p of list) {
      if (!builtOn(p)) continue
      let base = goalMs ?? p.env.hlc.ms
      for (const d of p.env.deps) base = Math.max(base, index.event(d)?.env.hlc.ms ?? base)
      took.push(Math.max(0, p.env.hlc.ms - base))
    }
  if (took.length === 0)
    return { backupMs: Math.max(2 * params.leaseMs, BACKUP_FACTOR * params.leaseMs), typicalMs: undefined }
  took.sort((a, b) => a - b)
  const typicalMs = took[took.length >> 1] as number
  return { backupMs: BACKUP_FACTOR * typicalMs, typicalMs }
}

/**
 * Per member, the stamp of the earliest result that outdid it in the plan
 * (ADR-0054): a result of another member's claim `b` of a task, built on
 * against that member, where the member held a claim `c` of the task past
 * its contest (no release or failure stamped within `windowMs` and the
 * takeover grace of it), `b` is stamped more than the backup time after `c`
 * while `c` still held (judged with the renewals stamped before `b`, no
 * release or failure of `c` stamped before `b`), and `c` has no result
 * stamped before the outdoing one. An honest executor that loses
 * a contest releases its claim within that time, so it is never outdone
 * unless it held a task longer than the backup time and a backup finished
 * it first. A function of the event set.
 */
function outdoneAt(
  index: PlanIndex,
  params: ResolvedParams,
  windowMs: number,
  backupMs: number,
  builtOn: (e: PlanEvent) => boolean
): Map<PeerIdString, Hlc> {
  const out = new Map<PeerIdString, Hlc>()
  const contestMs = windowMs + TAKEOVER_GRACE_MS
  for (const [task, list] of index.resultsByTask) {
    const claims = index.claims.get(task) ?? []
    for (const r of list) {
      if (!builtOn(r)) continue
      const b = index.event(r.env.body.claim)
      if (b === undefined || b.env.type !== 'task-claimed') continue
      for (const c of claims) {
        const m = c.env.author
        if (m === b.env.author || b.env.hlc.ms <= c.env.hlc.ms + backupMs) continue
        const was = out.get(m)
        if (was !== undefined && compareHlc(was, r.env.hlc) <= 0) continue
        const g = index.claimEvents(c)
        const quit = [...g.releases, ...g.failures]
        if (quit.some(q => q.env.hlc.ms <= c.env.hlc.ms + contestMs || compareHlc(q.env.hlc, b.env.hlc) < 0)) continue
        if (g.results.some(x => compareHlc(x.env.hlc, r.env.hlc) < 0)) continue
        let lastMs = c.env.hlc.ms
        for (const n of g.renewals) if (compareHlc(n.env.hlc, b.env.hlc) < 0) lastMs = Math.max(lastMs, n.env.hlc.ms)
        if (b.env.hlc.ms > Math.min(lastMs + params.leaseMs, c.env.hlc.ms + params.maxClaimMs)) continue
        out.set(m, r.env.hlc)
      }
    }
  }
  return out
}

/** Authors with two events in one slot anywhere in the plan. */
function equivocatorsOf(index: PlanIndex): Set<PeerIdString> {
  const out = new Set<PeerIdString>()
  const seen = new Map<string, EventId>()
  const slot = (k: string, e: PlanEvent): void => {
    const was = seen.get(k)
    if (was === undefined) seen.set(k, e.id)
    else if (was !== e.id) out.add(e.env.author)
  }
  for (const e of index.events.values()) {
    const b = e.env.body as Record<string, unknown>
    const a = e.env.author
    switch (e.env.type) {
      case 'split-proposed':
        slot(`p|${a}|${b.node as string}|${b.attempt as number}`, e)
        break
      case 'ballot-cast':
        slot(`b|${a}|${b.node as string}|${b.attempt as number}|${b.committee as string}`, e)
        break
      case 'result-reviewed':
        slot(`r|${a}|${b.result as string}|${b.committee as string}`, e)
        break
      case 'claim-renewed':
        slot(`n|${b.prev as string}`, e)
        break
      default:
        break
    }
  }
  return out
}

/**
 * The claim limit as a fold rule. A claim occupies its author's slot from
 * its stamp to its first result, release or failure, or else to its lapse by
 * its own renewals (a function of the claim and what cites it, so a claim
 * that lost a race and was released frees the slot at its release). Each
 * author's claims are taken in the total order; a claim counts only while
 * fewer than `limit` earlier counting claims of that author occupy a slot at
 * its stamp. An honest executor never holds more than the limit (and
 * releases a claim that lost), so the rule never touches it; a back-dated
 * claim or a late renewal of a member can push out only that member's own
 * claims, and never one whose result another member built on (`builtOn`):
 * that one still occupies its slot, but counts.
 */
function claimLimits(
  index: PlanIndex,
  limit: number,
  windowMs: number,
  builtOn: (c: PlanEvent<'task-claimed'>) => boolean,
  rejectedAt: (author: PeerIdString) => PlanEvent | undefined,
  outdone: ReadonlyMap<PeerIdString, Hlc>
): { overLimit: Set<EventId>; demoted: Set<EventId> } {
  const byAuthor = new Map<PeerIdString, Array<PlanEvent<'task-claimed'>>>()
  for (const list of index.claims.values())
    for (const c of list) {
      const a = byAuthor.get(c.env.author)
      if (a === undefined) byAuthor.set(c.env.author, [c])
      else a.push(c)
    }
  const overLimit = new Set<EventId>()
  const demoted = new Set<EventId>()
  for (const claims of byAuthor.values()) {
    // The slots occupied at the current claim's stamp: claims come in stamp order, so a slot that came free
    // before one claim is free for every later one, and the list never holds more than `limit`.
    let held: Array<{ end: PlanEvent | undefined; lapseMs: number }> = []
    // Per task, the earliest release or failure of a claim of this author: later claims of the task rank last.
    const abandoned = new Map<string, PlanEvent>()
    const quitPlan = planQuit(index, claims, windowMs)
    const rejected = claims[0] === undefined ? undefined : rejectedAt(claims[0].env.author)
    const outdid = claims[0] === undefined ? undefined : outdone.get(claims[0].env.author)
    for (const c of sortEvents(claims)) {
      const task = c.env.body.task
      const gaveUp = abandoned.get(task)
      if (gaveUp !== undefined && compareHlc(gaveUp.env.hlc, c.env.hlc) < 0) demoted.add(c.id)
      if (quitPlan !== undefined && compareHlc(quitPlan.env.hlc, c.env.hlc) < 0) demoted.add(c.id)
      if (rejected !== undefined && compareHlc(rejected.env.hlc, c.env.hlc) < 0) demoted.add(c.id)
      if (outdid !== undefined && compareHlc(outdid, c.env.hlc) < 0) demoted.add(c.id)
      held = held.filter(h =>
        h.end === undefined ? c.env.hlc.ms <= h.lapseMs : compareHlc(h.end.env.hlc, c.env.hlc) > 0
      )
      const live = held.length
      const g = index.claimEvents(c)
      const ends = sortEvents<PlanEvent>([...g.results, ...g.releases, ...g.failures])
      const quit = sortEvents<PlanEvent>([...g.releases, ...g.failures])[0]
      if (quit !== undefined && (gaveUp === undefined || compareHlc(quit.env.hlc, gaveUp.env.hlc) < 0))
        abandoned.set(task, quit)
      if (live >= limit && !builtOn(c)) {
        overLimit.add(c.id)
        continue
      }
      const renewed = sortEvents(g.renewals)
      const lastMs = (renewed[renewed.length - 1] ?? c).env.hlc.ms
      const params = index.goal?.env.body.params
      const lapseMs = Math.min(lastMs + (params?.leaseMs ?? 0), c.env.hlc.ms + (params?.maxClaimMs ?? 0))
      held.push({ end: ends[0], lapseMs })
    }
  }
  return { overLimit, demoted }
}

/**
 * The earliest release or failure by which an author ended a claim it had
 * held past its contest (stamped more than the claim window and the
 * takeover grace after the claim): its chain ended without a result. Every
 * later claim of the author in the plan ranks last (ADR-0050). An honest
 * executor releases a claim that lost its contest within that time, so it
 * keeps its rank.
 */
function planQuit(
  index: PlanIndex,
  claims: ReadonlyArray<PlanEvent<'task-claimed'>>,
  windowMs: number
): PlanEvent | undefined {
  let out: PlanEvent | undefined
  for (const c of claims) {
    const g = index.claimEvents(c)
    for (const q of [...g.releases, ...g.failures])
      if (
        q.env.hlc.ms > c.env.hlc.ms + windowMs + TAKEOVER_GRACE_MS &&
        (out === undefined || compareHlc(q.env.hlc, out.env.hlc) < 0)
      )
        out = q
  }
  return out
}

/** A claim's key in a contest: claims after an abandoned chain last, then by rank; the total order breaks ties. */
export function contestKey(rules: TrustRules, task: TaskId, c: PlanEvent<'task-claimed'>): string {
  return `${rules.demoted.has(c.id) ? '1' : '0'}${claimRank(task, c.env.author)}`
}
