import { isFinished } from '../../core/view.js'
import { describeRecord, isPoor } from '../../core/peer-standing.js'
import type { PeerRecord } from '../../core/peer-standing.js'
import type { PlanId } from '../../core/events.js'
import type { PlanStatus } from '../../core/tree.js'
import { summarizeTree } from '../../core/fold.js'
import type { PlanSummary } from '../../core/fold.js'
import type { PlanTree } from '../../core/tree.js'
import type { AwaitingItem } from '../../author/person-events.js'

/**
 * What the dashboard reads from (and, with `--allow-submit`, asks of) its
 * node. The observer's node view provides it (peer-source.ts); tests provide a
 * stub. Everything here is read-only except `submit` and `cancel`.
 */
export interface DashboardSource {
  now: () => number
  status: () => {
    peerId: string
    role: string
    swarm: string
    peers: number
    roster: ReadonlyArray<{ peerId: string; role: string; lastSeenMs: number; capabilities: readonly string[] }>
    events: { held: number; parked: number }
  }
  plans: () => readonly PlanId[]
  tree: (plan: PlanId) => PlanTree | undefined
  treeHash: (plan: PlanId) => string | undefined
  /**
   * A plan's line without its tree: also for finished plans that left
   * memory, which the list shows without loading them back. Without it the
   * list is made from `tree`.
   */
  summary?: (plan: PlanId) => PlanSummary | undefined
  /** Why the plan waits its turn under the open-plan limit per author (src/core/admission.ts), or null. */
  held?: (plan: PlanId) => string | null
  /** Called with the number of events folded, whenever some are. */
  onFolded: (fn: (count: number) => void) => () => void
  /** Events this node rejected since it started, by reason. */
  rejected: () => Record<string, number>
  /** Publish a goal as this node; values are flag-named (`max-depth`, `budget`, `committee`, ...). */
  submit: (
    goal: string,
    values: Readonly<Record<string, string | boolean | undefined>>
  ) => Promise<{
    plan: PlanId
    committee: readonly string[]
    quorum: number
    waits?: string
    /** What the submitter should know about the committee (too small to outvote one faulty member, scorers left out). */
    warnings?: readonly string[]
  }>
  /** Publish `goal-cancelled` as this node (it must be the goal's author). */
  cancel: (plan: PlanId, reason: string | undefined) => Promise<void>
  /**
   * The splits and results that wait for this node's key, for
   * the "awaiting you" panel of a writable dashboard. Without it (and
   * without `vote` and `review`) the panel stays empty.
   */
  awaiting?: () => readonly AwaitingItem[]
  /** Publish this node's ballot: a proposal of the node's open attempt, or null for none (which needs notes). */
  vote?: (plan: PlanId, node: string, choice: string | null, notes: string) => Promise<{ event: string }>
  /** Each member with evidence against it in this node's plans, the worst first (ADR-0048); without it the panel is empty. */
  standing?: () => readonly PeerRecord[]
  /** Publish this node's review of the task's pending result (a reject needs notes). */
  review?: (plan: PlanId, task: string, verdict: 'accept' | 'reject', notes: string) => Promise<{ event: string }>
}

export interface PlanLine {
  id: PlanId
  goal: string
  status: PlanStatus
  statusReason: string
  nodes: number
  done: number
  spentTokens: number
  budgetTokens: number
  submittedMs: number
  /** This node authored the goal: with --allow-submit, the page may cancel it. */
  mine: boolean
}

/** Everything on the page but the tree: sent as `summary` on the stream. */
export interface Summary {
  now: number
  peerId: string
  role: string
  swarm: string
  allowSubmit: boolean
  peers: number
  /** `offers`: what an executor offers to tasks that need tools (protocol 3). */
  roster: Array<{ peerId: string; role: string; lastSeenMs: number; offers: string[] }>
  events: { held: number; parked: number; perSecond: number }
  rejected: Record<string, number>
  plans: PlanLine[]
  /** With --allow-submit: what waits for this observer's key (`peerId`), oldest first, at most MAX_AWAITING_ITEMS; null when read-only. */
  awaiting: AwaitingLine[] | null
  /** Items beyond those in `awaiting`. */
  awaitingMore: number
  /** Members with evidence against them, the worst first, at most MAX_STANDING_LINES (ADR-0048). */
  standing: StandingLine[]
  /** Members beyond those in `standing`. */
  standingMore: number
}

/** One member's standing as the panel shows it. */
export interface StandingLine {
  peer: string
  /** Its record counts against it: its gossip is scored down and default committees draw it last. */
  poor: boolean
  penalty: number
  /** The evidence in a few words (`2 equivocation, 1 late in 2 plans`). */
  says: string
  /** The plans it came from (sorted by id), at most MAX_STANDING_PLANS. */
  plans: string[]
}

/** Members the standing panel lists at most (GET /standing lists every one). */
export const MAX_STANDING_LINES = 20
/** Plans a standing line names at most. */
export const MAX_STANDING_PLANS = 5

/** The standing panel's lines: at most MAX_STANDING_LINES, the worst first (as the records come). */
export function standingLines(records: readonly PeerRecord[]): { standing: StandingLine[]; standingMore: number } {
  return {
    standing: records.slice(0, MAX_STANDING_LINES).map(r => ({
      peer: r.peer,
      poor: isPoor(r),
      penalty: r.penalty,
      says: describeRecord(r),
      plans: r.plans.slice(0, MAX_STANDING_PLANS)
    })),
    standingMore: Math.max(0, records.length - MAX_STANDING_LINES)
  }
}

/** Items the panel lists at most: the snapshot stays bounded however much waits. */
export const MAX_AWAITING_ITEMS = 30
/** A result is shown up to this many characters (the whole one is in the tree and at GET /plans/<id>). */
export const MAX_PANEL_RESULT_CHARS = 4_000
/** Notes and rationales are shown up to this many characters each. */
export const MAX_PANEL_NOTES_CHARS = 1_000

/**
 * One item of the "awaiting you" panel: an AwaitingItem with its texts cut
 * to size. `result.outputChars` is the whole result's length, so the page
 * can say when it shows only the beginning.
 */
export type AwaitingLine = Omit<AwaitingItem, 'result'> & {
  readonly result:
    null | (NonNullable<AwaitingItem['result']> & { readonly outputChars: number; readonly cut: boolean })
}

/** A text cut to `max` characters, saying how much was left out. */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} … (${text.length - max} more characters)`
}

/** The panel's items from what waits for this key: at most MAX_AWAITING_ITEMS, each text bounded. */
export function awaitingLines(items: readonly AwaitingItem[]): { awaiting: AwaitingLine[]; awaitingMore: number } {
  const awaiting = items.slice(0, MAX_AWAITING_ITEMS).map((i): AwaitingLine => ({
    ...i,
    proposals: i.proposals.map(p => ({
      ...p,
      rationale: cutText(p.rationale, MAX_PANEL_NOTES_CHARS),
      scores: p.scores.map(x => ({ ...x, notes: cutText(x.notes, MAX_PANEL_NOTES_CHARS) }))
    })),
    notes: i.notes.map(n => ({ ...n, notes: cutText(n.notes, MAX_PANEL_NOTES_CHARS) })),
    result:
      i.result === null
        ? null
        : {
            ...i.result,
            output: i.result.output.slice(0, MAX_PANEL_RESULT_CHARS),
            outputChars: i.result.output.length,
            cut: i.result.output.length > MAX_PANEL_RESULT_CHARS
          }
  }))
  return { awaiting, awaitingMore: Math.max(0, items.length - MAX_AWAITING_ITEMS) }
}

/** The plans as the page lists them: newest first. */
export function planLines(
  source: Pick<DashboardSource, 'plans' | 'tree' | 'summary' | 'held'>,
  self: string
): PlanLine[] {
  const lines: PlanLine[] = []
  for (const id of source.plans()) {
    const t = source.summary !== undefined ? source.summary(id) : summaryOf(source.tree(id))
    if (t === undefined) continue
    const held = source.held?.(id) ?? null
    lines.push({
      id,
      goal: t.goal,
      status: t.status,
      // A held plan is 'planning' by its tree, but nobody grows it yet: say why it waits instead.
      statusReason: held === null ? t.statusReason : `the plan ${held}`,
      nodes: t.nodes,
      done: t.done,
      spentTokens: t.spentTokens,
      budgetTokens: t.budgetTokens,
      submittedMs: t.submittedAt.ms,
      mine: t.author === self
    })
  }
  return lines.sort((a, b) => b.submittedMs - a.submittedMs || (a.id < b.id ? -1 : 1))
}

function summaryOf(tree: PlanTree | undefined): PlanSummary | undefined {
  return tree === undefined ? undefined : summarizeTree(tree)
}

/** The plan a page follows when it has not chosen one: the newest still running, else the newest. */
export function defaultPlan(lines: readonly PlanLine[]): PlanId | null {
  return (lines.find(l => !isFinished(l)) ?? lines[0])?.id ?? null
}

/**
 * Events folded per second over a sliding window of whole seconds. `now` is
 * passed in so tests can drive it.
 */
export class RateMeter {
  private readonly buckets = new Map<number, number>()
  constructor(
    private readonly windowS = 10,
    private readonly startedMs = 0
  ) {}

  add(count: number, nowMs: number): void {
    const s = Math.floor(nowMs / 1000)
    this.buckets.set(s, (this.buckets.get(s) ?? 0) + count)
    for (const k of this.buckets.keys()) if (k <= s - this.windowS) this.buckets.delete(k)
  }

  /** Mean over the last `windowS` whole seconds (or since start, when that is shorter). */
  perSecond(nowMs: number): number {
    const s = Math.floor(nowMs / 1000)
    let sum = 0
    for (const [k, n] of this.buckets) if (k > s - this.windowS && k < s) sum += n
    const span = Math.max(1, Math.min(this.windowS - 1, s - Math.floor(this.startedMs / 1000)))
    return Math.round((sum / span) * 10) / 10
  }
}
