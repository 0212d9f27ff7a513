/**
 * The shapes of a task's claim chains as the walk over them sees them: one
 * claim's chain, and the walk's answer. Types only, so that the claim
 * contest (claim-contest.ts) and the walk (task-chain.ts) both name them
 * without importing each other.
 */
import type { PlanEvent } from './events.js'
import type { ChainView, Equivocation, TaskStatus } from './tree.js'

export type WalkStatus = Exclude<TaskStatus, 'blocked'>

/** The chains in turn: who should work on the task now, and how many claims started a chain. */
export interface Walk {
  readonly chains: ChainView[]
  readonly owners: number
  readonly status: WalkStatus
  readonly equivocations: readonly Equivocation[]
  /** The result that ended the last chain and was not rejected, if any. */
  readonly result: PlanEvent<'result-reported'> | undefined
  /** The chain end (a failure, or a rejecting review) that used the last attempt, if any. */
  readonly failedBy: PlanEvent | undefined
}

/** One claim's chain: its renewals, its lapse, and what ended it first. */
export interface Chain {
  readonly claim: PlanEvent<'task-claimed'>
  readonly renewals: number
  /** The claim or its last renewal. */
  readonly last: PlanEvent
  readonly lapseMs: number
  /** Its earliest result, release or failure, if that came before any takeover. */
  readonly end: PlanEvent | undefined
  /** Where in the claims the claim that took over is; -1 if none took over. */
  readonly takeoverAt: number
  readonly equivocations: readonly Equivocation[]
}
