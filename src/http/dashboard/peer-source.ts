import { isFinished } from '../../core/view.js'
import { parseCommittee, planParams, publishCancel, publishGoal, scorersInSight } from '../../commands/author-events.js'
import { DashboardRequestError } from './guard.js'
import type { Peer } from '../../runtime/peer.js'
import type { DashboardSource } from './state.js'

/**
 * The dashboard's view of a running peer. Submit and cancel build their
 * events with the same code as the `submit` and `cancel` commands, signed
 * with this peer's key: the observer is then the goal's author.
 */
export function dashboardSource (peer: Peer): DashboardSource {
  return {
    now: peer.now,
    status: () => peer.status(),
    plans: () => peer.replica.fold.plans(),
    // One plan at a time (the one a page shows): a finished plan out of memory is loaded back for it.
    tree: plan => peer.replica.loadTree(plan),
    treeHash: plan => peer.replica.fold.treeHash(plan),
    summary: plan => peer.replica.fold.summary(plan),
    onFolded: fn => peer.replica.onFolded(events => { fn(events.length) }),
    rejected: () => Object.fromEntries(peer.metrics.rejectedByReason),
    submit: async (goal, values) => {
      const committee = parseCommittee(values.committee) ?? scorersInSight(peer)
      if (committee.length === 0) throw new DashboardRequestError(409, 'no scorer in sight yet, so there is no committee to vote: start a scorer (or wait for this observer to hear from one), or name the committee')
      const params = planParams(values, committee)
      const plan = await publishGoal(peer, goal, params)
      return { plan, committee, quorum: params.quorum }
    },
    cancel: async (plan, reason) => {
      const tree = peer.replica.loadTree(plan)
      if (tree === undefined) throw new DashboardRequestError(404, `no plan ${plan} here`)
      if (tree.author !== peer.replica.peerId) throw new DashboardRequestError(403, `plan ${plan.slice(0, 12)} was submitted by ${tree.author}, not by this observer: only its author can cancel it (npm start -- cancel ${plan} from the submitter's --data-dir)`)
      if (isFinished(tree)) throw new DashboardRequestError(409, `plan ${plan.slice(0, 12)} is already ${tree.status}: nothing to cancel`)
      await publishCancel(peer, tree, reason)
    }
  }
}
