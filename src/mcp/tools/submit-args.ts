import * as z from 'zod'
import { MAX_GOAL_CHARS } from '../../core/limits.js'
import { parseCommittee, planParams } from '../../author/author-events.js'
import { committeeWarnings, defaultCommittee } from '../../author/committee.js'
import { int } from './plan-input.js'
import { ToolInputError } from './tool-result.js'
import type { NodeView } from '../../ports/node-view.js'

/** plan_submit's arguments; A2A's data parts take the same plan parameters. */
export const SUBMIT = z.object({
  goal: z.string().describe(`what to plan, in plain words (at most ${MAX_GOAL_CHARS} characters)`),
  committee: z
    .array(z.string())
    .optional()
    .describe(
      'peer ids whose ballots decide splits (default: drawn from the scorers in sight, at most 32, long-known ' +
        'ones first); people may be members'
    ),
  quorum: int('ballots that accept a split (default: a majority of the committee)'),
  maxDepth: int('depth of the deepest leaves, root = 0 (default 3)'),
  minChildren: int('fewest subgoals per split (default 2)'),
  maxChildren: int('most subgoals per split (default 7)'),
  maxAttempts: int('decomposition and execution attempts (default 3)'),
  leaseMs: int('a claim holds a task this long between renewals (default 15000)'),
  maxClaimMs: int(
    'no claim lasts longer, renewals included (default 600000; raise it for outside workers who take long)'
  ),
  maxNodes: int('largest tree (default 200)'),
  budgetTokens: int('token budget (default 2000000)'),
  maxTokensPerCall: int('most tokens one event may count (default 16000)'),
  maxClaimsPerExecutor: int('live claims one executor may hold in this plan (default 2)'),
  retainDays: int('whole days every node keeps the plan once finished, 1-3650 (default 30; then archived and removed)'),
  review: z.boolean().optional().describe('results need a committee quorum of accepting reviews'),
  executors: z
    .enum(['model', 'outside', 'any'])
    .optional()
    .describe('who does the tasks: model executors (default), outside workers only (task_next), or both'),
  useTools: z
    .boolean()
    .optional()
    .describe("the plan uses executors' tools: leaves may name what they need and go to executors that offer it"),
  trust: z
    .boolean()
    .optional()
    .describe(
      'protocol 5: rules that hold against a dishonest member (ranked claims, results only from the holder, ' +
        'final decisions); nodes of earlier releases only store and relay such a plan'
    ),
  reviewOneIn: int(
    'with trust: without review the committee still reviews each member’s first results, all after a rejection, ' +
      'and one result in N of the rest, 0-1000 (default 0: none)'
  ),
  approvers: z.array(z.string()).optional().describe('peer ids whose ballot is needed as well as the quorum (people)'),
  approveFor: z
    .enum(['splits', 'results', 'both'])
    .optional()
    .describe('what the approvers must approve (default both)'),
  timeoutSeconds: int('how long to wait for a peer to hold the goal (default 60)')
})
export type SubmitArgs = z.infer<typeof SUBMIT>

/** Plan parameters from an agent's camelCase arguments, through the same checks as the `submit` flags. */
export function paramsFrom(view: NodeView, a: SubmitArgs): ReturnType<typeof planParams> {
  return paramsAndWarnings(view, a).params
}

/** paramsFrom, and what the submitter should be told about the committee (src/author/committee.ts). */
export function paramsAndWarnings(
  view: NodeView,
  a: SubmitArgs
): { params: ReturnType<typeof planParams>; warnings: string[] } {
  const drawn = a.committee === undefined ? defaultCommittee(view) : undefined
  const committee = drawn?.committee ?? parseCommittee(a.committee?.join(','))
  if (committee === undefined || committee.length === 0)
    throw new ToolInputError('no committee: no scorer is in sight, and none was given (committee: [peer ids])')
  const values: Record<string, string | string[] | boolean | undefined> = {}
  const flag = (name: string, v: number | undefined): void => {
    if (v !== undefined) values[name] = String(v)
  }
  flag('quorum', a.quorum)
  flag('max-depth', a.maxDepth)
  flag('min-children', a.minChildren)
  flag('max-children', a.maxChildren)
  flag('max-attempts', a.maxAttempts)
  flag('lease-ms', a.leaseMs)
  flag('max-claim-ms', a.maxClaimMs)
  flag('max-nodes', a.maxNodes)
  flag('budget', a.budgetTokens)
  flag('max-tokens-per-call', a.maxTokensPerCall)
  flag('max-claims-per-executor', a.maxClaimsPerExecutor)
  flag('retain-days', a.retainDays)
  flag('review-one-in', a.reviewOneIn)
  if (a.review === true) values.review = true
  if (a.executors !== undefined) values.executors = a.executors
  if (a.useTools === true) values['use-tools'] = true
  if (a.trust === true) values.trust = true
  if (a.approvers !== undefined) values.approver = a.approvers
  if (a.approveFor !== undefined) values.approve = a.approveFor
  const params = planParams(values, committee)
  return { params, warnings: drawn?.warnings ?? committeeWarnings(params.committee) }
}
