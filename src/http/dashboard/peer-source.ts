import { isFinished } from '../../core/view.js'
import { parseCommittee, planParams, publishCancel, publishGoal } from '../../author/author-events.js'
import { committeeWarnings, defaultCommittee } from '../../author/committee.js'
import { awaitingMe, castReview, castVote } from '../../author/person-events.js'
import { DashboardRequestError } from './guard.js'
import type { GoalRate } from '../../author/goal-rate.js'
import type { NodeView } from '../../ports/node-view.js'
import type { DashboardSource } from './state.js'

/**
 * The dashboard's source, read from a node's view. Submit and cancel build
 * their events with the same code as the `submit` and `cancel` commands,
 * signed with this node's key: the observer is then the goal's author. A
 * person's ballot and review (the "awaiting you" panel) are those of the
 * `vote` and `review` commands (src/author/person-events.ts), as this key.
 */
export function dashboardSource(view: NodeView, rate: GoalRate): DashboardSource {
  return {
    now: view.now,
    status: () => view.status(),
    plans: () => view.plans(),
    // One plan at a time (the one a page shows): a finished plan out of memory is loaded back for it.
    tree: plan => view.loadTree(plan),
    treeHash: plan => view.treeHash(plan),
    summary: plan => view.summary(plan),
    held: plan => view.held(plan),
    onFolded: fn =>
      view.onFolded(events => {
        fn(events.length)
      }),
    rejected: () => ({ ...view.health().rejected }),
    standing: () => view.standing?.() ?? [],
    submit: async (goal, values) => {
      const named = parseCommittee(values.committee)
      const drawn = named === undefined ? defaultCommittee(view) : undefined
      const committee = named ?? drawn?.committee ?? []
      if (committee.length === 0)
        throw new DashboardRequestError(
          409,
          'no scorer in sight yet, so there is no committee to vote: start a scorer (or wait for ' +
            'this observer to hear from one), or name the committee'
        )
      const params = planParams(values, committee)
      const refused = rate.refusal(view.now())
      if (refused !== null) throw new DashboardRequestError(429, refused)
      const plan = await publishGoal(view, goal, params)
      rate.took(view.now())
      const waits = view.held(plan)
      const warnings = drawn?.warnings ?? committeeWarnings(committee)
      return {
        plan,
        committee,
        quorum: params.quorum,
        ...(waits === null ? {} : { waits: `the plan ${waits}` }),
        ...(warnings.length > 0 ? { warnings } : {})
      }
    },
    cancel: async (plan, reason) => {
      const tree = view.loadTree(plan)
      if (tree === undefined) throw new DashboardRequestError(404, `no plan ${plan} here`)
      if (tree.author !== view.me)
        throw new DashboardRequestError(
          403,
          `plan ${plan.slice(0, 12)} was submitted by ${tree.author}, not by this observer: only its ` +
            `author can cancel it (npm start -- cancel ${plan} from the submitter's --data-dir)`
        )
      if (isFinished(tree))
        throw new DashboardRequestError(409, `plan ${plan.slice(0, 12)} is already ${tree.status}: nothing to cancel`)
      await publishCancel(view, tree, reason)
    },
    awaiting: () => awaitingMe(view),
    vote: async (plan, node, choice, notes) => ({ event: (await castVote(view, plan, node, choice, notes)).id }),
    review: async (plan, task, verdict, notes) => ({ event: (await castReview(view, plan, task, verdict, notes)).id })
  }
}
