/**
 * Protocol 5's backup executions as an honest executor starts them
 * (docs/protocol/fold.md 11.8, ADR-0050): an executor with nothing to do in a
 * version-5 plan claims, as a backup, a task whose chain another member has
 * held for longer than the fold's backup time (`PlanTree.backupMs`, the
 * fold's own `backupAfter`). Pure: a function of the tree, this executor's
 * view of the others and its clock.
 */
import { compareHlc } from '../src/core/hlc.js'
import type { Hlc, PeerIdString } from '../src/core/events.js'
import type { ChainView, PlanTree, TaskView } from '../src/core/tree.js'

export interface BackupOptions {
  /** This executor's rank for a task among some executors (claim-rules.ts `rankFor`, the fold's contest rank). */
  readonly rankFor: (task: string, me: string, executors: readonly string[]) => number
  /** The executors that could take the task (what it needs), and of them those with room in the plan. */
  readonly able: (task: TaskView) => { all: readonly string[]; free: readonly string[] } | null
  readonly staggerMs: number
  /** Waited past the backup time, for clock skew between peers (as for a takeover past a lapse). */
  readonly skewMs: number
  /** This executor's view of the others is not yet stable: it waits one stagger more. */
  readonly stable: boolean
  /** Told when the first backup comes due (the driver wakes then). */
  readonly wake?: (atMs: number) => void
}

export interface BackupIntent {
  readonly task: TaskView
  /** The chain's last event, which the backup claim cites as `prev` (as a takeover does). */
  readonly prev: ChainView['last']
  /** This executor's rank among the able executors (0 = the fold prefers its claim). */
  readonly rank: number
}

/**
 * The task this executor backs up now, if any. The caller has checked that
 * it is idle in the plan: it holds no claim there and nothing is claimable
 * for it, so it backs up one task at a time. A candidate's last chain is
 * another member's, open and not lapsed (a lapsed one is taken over instead),
 * and older than `tree.backupMs` (`tree.backupSooner.ms` for a chain its
 * owner claimed after it was outdone, ADR-0054); the longest-held comes first. The executors
 * that could take it wait, past the backup time plus the skew allowance, in
 * the fold's contest order: each later-ranked one a stagger longer (counting
 * those with room), so the claim made first is the one the fold prefers.
 * Nothing in a plan of versions 1 to 4, or while the plan takes no work.
 */
export function backupTask(
  tree: PlanTree,
  me: PeerIdString,
  nowMs: number,
  o: BackupOptions
): BackupIntent | undefined {
  const backupMs = tree.backupMs
  if (backupMs === undefined) return undefined
  const held: Array<{ task: TaskView; chain: ChainView }> = []
  for (const task of tree.tasks) {
    const chain = task.chains[task.chains.length - 1]
    if (task.status !== 'claimed' || chain === undefined || chain.end !== null || chain.owner === me) continue
    if (nowMs > chain.lapseMs) continue
    held.push({ task, chain })
  }
  held.sort((a, b) => a.chain.claimedAt.ms - b.chain.claimedAt.ms || (a.task.id < b.task.id ? -1 : 1))
  let wakeAt = Infinity
  for (const { task, chain } of held) {
    const able = o.able(task)
    if (able === null) continue
    const rank = o.rankFor(task.id, me, able.all)
    const waits = (rank === 0 ? 0 : o.rankFor(task.id, me, able.free)) + (o.stable ? 0 : 1)
    const due = chain.claimedAt.ms + backupMsOf(tree, chain, backupMs) + o.skewMs + waits * o.staggerMs
    // A backup is a claim stamped before the chain's lapse: one too close to it would be a takeover anyway.
    if (due > chain.lapseMs) continue
    if (nowMs < due) {
      wakeAt = Math.min(wakeAt, due)
      continue
    }
    return { task, prev: chain.last, rank }
  }
  if (wakeAt !== Infinity) o.wake?.(wakeAt)
  return undefined
}

/** The fold's backup time of a chain: sooner when its owner claimed it after it was outdone in the plan. */
function backupMsOf(tree: PlanTree, chain: ChainView, backupMs: number): number {
  const sooner = tree.backupSooner
  return sooner !== undefined && outdoneBefore(tree, chain.owner, chain.claimedAt) ? sooner.ms : backupMs
}

/** Protocol 5: whether `owner` was outdone in the plan before `at`, so that its claims then rank last (ADR-0054). */
export function outdoneBefore(tree: PlanTree, owner: PeerIdString, at: Hlc): boolean {
  const was = tree.backupSooner?.after[owner]
  return was !== undefined && compareHlc(was, at) < 0
}
