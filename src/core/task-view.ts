import type { TaskView } from './tree.js'

/**
 * A task's view in two parts: where it sits in the tree and what made it
 * claimable (`TaskPlace`, from the tree), and what its claims, results and
 * reviews decided (`TaskOutcome`, from `decideTask`). Both are cut from
 * `TaskView`, so a field added there lands in exactly one of them.
 */
export type TaskPlace = Pick<TaskView, 'blockedBy' | 'evidence' | 'id' | 'kind' | 'node' | 'readyAt'>

export type TaskOutcome = Omit<TaskView, keyof TaskPlace>

/**
 * The one place a TaskView is built. Its keys are in sorted order:
 * canonicalJson then hashes it without copying.
 */
export function taskView(place: TaskPlace, o: TaskOutcome): TaskView {
  return {
    accepted: o.accepted,
    attemptsAllowed: o.attemptsAllowed,
    awaiting: o.awaiting,
    blockedBy: place.blockedBy,
    chains: o.chains,
    duplicates: o.duplicates,
    evidence: place.evidence,
    failures: o.failures,
    finishEvent: o.finishEvent,
    finishedAt: o.finishedAt,
    id: place.id,
    ignoredClaims: o.ignoredClaims,
    kind: place.kind,
    node: place.node,
    owner: o.owner,
    readyAt: place.readyAt,
    results: o.results,
    status: o.status
  }
}
