import * as z from 'zod'
import { MAX_GOAL_CHARS, MAX_OUTPUT_CHARS, MAX_REASON_CHARS } from '../core/limits.js'
import { isFinished } from '../core/view.js'
import { ConfigError } from '../errors.js'
import { sleep } from '../ports/scheduler.js'
import { parseCommittee, planParams, publishCancel, publishGoal, scorersInSight } from '../author/author-events.js'
import { publishAmend, publishRaiseBudget, publishRetry } from '../author/plan-actions.js'
import { awaitingMe, castReview, castVote } from '../author/person-events.js'
import { renderMarkdown } from '../../roles/render.js'
import { agentPlan, planText } from './plan-json.js'
import type { McpServer, CallToolResult, ServerContext } from '@modelcontextprotocol/server'
import type { NodeView } from '../ports/node-view.js'
import type { OutsideExecutor } from '../../roles/outside-executor.js'
import type { GoalRate } from '../author/goal-rate.js'
import type { PlanId, TaskId } from '../core/events.js'
import type { PlanTree } from '../core/tree.js'

/**
 * The swarm as MCP tools, over one node's view. Every tool checks its input
 * and answers a mistake with a tool error that says what to do, publishing
 * nothing; nothing an agent sends can crash the server.
 */
export interface SwarmTools {
  readonly view: NodeView
  /** Claims, renewals and results for outside workers (this node's key). */
  readonly outside: OutsideExecutor
  /** Goals this node takes in a minute (`--goals-per-minute`), shared with its dashboard. */
  readonly rate: GoalRate
  /** Lines for the server's log (stderr on stdio). */
  readonly say: (line: string) => void
}

const HINT = 'use the key of the MCP server that submitted it (its --data-dir)'
const PLAN_ID = z.string().describe('a plan id: 64 hex digits, as plan_submit or plan_list return it')

/** A mistake of the caller: its message says what to do (A2A's server answers it as invalid params too). */
export class ToolInputError extends Error {}

function planId(raw: string): PlanId {
  if (!/^[0-9a-f]{64}$/.test(raw))
    throw new ToolInputError(
      `${JSON.stringify(raw.slice(0, 80))} is not a plan id (64 hex digits): list the plans with plan_list`
    )
  return raw as PlanId
}

function treeOf(view: NodeView, raw: string): PlanTree {
  const id = planId(raw)
  const tree = view.loadTree(id)
  if (tree === undefined)
    throw new ToolInputError(
      `plan ${id.slice(0, 12)} is not held by this node: check the id with plan_list (a plan ` +
        `just submitted elsewhere arrives within seconds)`
    )
  return tree
}

function ok(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured }
}

function fail(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

/** Run a tool body; a mistake of the caller (or anything else) becomes a tool error, never a crash. */
async function guarded(tools: SwarmTools, name: string, body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  tools.outside.touch()
  try {
    return await body()
  } catch (err) {
    const e = err as Error
    if (e instanceof ToolInputError || e instanceof ConfigError) return fail(e.message)
    tools.say(`${name} failed: ${e.stack ?? e.message}`)
    return fail(`${name} failed: ${e.message}`)
  }
}

/** Whether a goal can be submitted now, and why not. */
export function readiness(view: NodeView): { canSubmit: boolean; why: string } {
  const scorers = scorersInSight(view).length
  const holders = view.health().topicPeers
  if (scorers === 0)
    return {
      canSubmit: false,
      why: 'no scorer is in sight: start one (npm start -- --role scorer) or pass committee explicitly'
    }
  if (holders === 0)
    return {
      canSubmit: false,
      why: 'no peer is connected to hold the goal: start peers on this machine or LAN (mDNS), or give --bootstrap'
    }
  return { canSubmit: true, why: `${scorers} scorer(s) in sight and ${holders} peer(s) to hold the goal` }
}

/** Wait until another peer holds what we published (a sync session with it succeeds). */
export async function confirmHeld(view: NodeView, timeoutMs: number): Promise<string> {
  const deadline = view.now() + timeoutMs
  while (view.now() < deadline) {
    const holder = await view.syncOnce()
    if (holder !== null) return holder
    await sleep(view.scheduler, 500)
  }
  throw new ToolInputError(
    'no peer took the goal within the time allowed; it is stored on this node and reaches the swarm when a peer connects'
  )
}

/** Plan parameters from an agent's camelCase arguments, through the same checks as the `submit` flags. */
export function paramsFrom(view: NodeView, a: SubmitArgs): ReturnType<typeof planParams> {
  const committee = a.committee === undefined ? scorersInSight(view) : parseCommittee(a.committee.join(','))
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
  if (a.review === true) values.review = true
  if (a.executors !== undefined) values.executors = a.executors
  if (a.useTools === true) values['use-tools'] = true
  if (a.approvers !== undefined) values.approver = a.approvers
  if (a.approveFor !== undefined) values.approve = a.approveFor
  return planParams(values, committee)
}

const int = (what: string): z.ZodOptional<z.ZodNumber> => z.number().int().nonnegative().optional().describe(what)

/** plan_submit's arguments; A2A's data parts take the same plan parameters. */
export const SUBMIT = z.object({
  goal: z.string().describe(`what to plan, in plain words (at most ${MAX_GOAL_CHARS} characters)`),
  committee: z
    .array(z.string())
    .optional()
    .describe('peer ids whose ballots decide splits (default: every scorer in sight); people may be members'),
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
  approvers: z.array(z.string()).optional().describe('peer ids whose ballot is needed as well as the quorum (people)'),
  approveFor: z
    .enum(['splits', 'results', 'both'])
    .optional()
    .describe('what the approvers must approve (default both)'),
  timeoutSeconds: int('how long to wait for a peer to hold the goal (default 60)')
})
export type SubmitArgs = z.infer<typeof SUBMIT>

/** How far a plan is, for progress notifications: finished tasks out of all known. */
function progressOf(tree: PlanTree, held: string | null): { done: number; total: number; line: string } {
  const done = tree.tasks.filter(t => t.status === 'done' || t.status === 'failed').length
  const total = Math.max(tree.tasks.length, 1)
  return {
    done,
    total,
    line:
      `${tree.status}: ${done}/${tree.tasks.length} tasks finished, ${tree.nodes.length} nodes, ${tree.spentTokens} tokens` +
      (held === null ? '' : `; the plan ${held}`)
  }
}

async function notifyProgress(ctx: ServerContext, progress: number, total: number, message: string): Promise<void> {
  const token = ctx.mcpReq._meta?.progressToken
  if (token === undefined) return
  await ctx.mcpReq.notify({
    method: 'notifications/progress',
    params: { progressToken: token, progress, total, message }
  })
}

export function registerSwarmTools(server: McpServer, tools: SwarmTools): void {
  const view = tools.view
  const me = view.me

  server.registerTool(
    'swarm_status',
    {
      title: 'Swarm status',
      description:
        'Who is in the swarm (peers by role), how many plans this node holds, and whether a goal ' +
        'can be submitted now (a scorer and a peer to hold it are in sight) and why not. Call it first.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true }
    },
    async () =>
      await guarded(tools, 'swarm_status', async () => {
        const roster = view.roster()
        const byRole: Record<string, number> = {}
        for (const r of roster) byRole[r.role] = (byRole[r.role] ?? 0) + 1
        const r = readiness(view)
        const plans = view.planLines()
        const out = {
          peerId: me,
          swarm: view.swarm,
          connected: view.health().peers,
          roster: byRole,
          plans: plans.length,
          unfinished: plans.filter(p => !isFinished(p)).length,
          ...r
        }
        return ok(
          `peer ${me} in swarm "${view.swarm}": ${out.connected} connected; roster ${
            Object.entries(byRole)
              .map(([k, v]) => `${v} ${k}`)
              .join(', ') || 'empty'
          }; ${out.plans} plans (${out.unfinished} unfinished); ${r.canSubmit ? 'can submit' : 'cannot submit'}: ${r.why}`,
          out
        )
      })
  )

  server.registerTool(
    'plan_submit',
    {
      title: 'Submit a goal',
      description:
        "Publish a goal for the swarm to plan and carry out, signed with this server's key (so " +
        'the author tools work on it). Returns the plan id once another peer holds the goal. Follow ' +
        'it with plan_wait or plan_get. Use executors: "outside" to do its tasks yourself with task_next.',
      inputSchema: SUBMIT
    },
    async a =>
      await guarded(tools, 'plan_submit', async () => {
        if (a.goal.trim() === '')
          throw new ToolInputError('the goal is empty: say what to plan, e.g. "plan a two-week trip to Japan"')
        if (a.goal.length > MAX_GOAL_CHARS)
          throw new ToolInputError(
            `the goal is ${a.goal.length} characters long; the most is ${MAX_GOAL_CHARS}: say it shorter`
          )
        if (a.committee === undefined && !readiness(view).canSubmit)
          throw new ToolInputError(`cannot submit now: ${readiness(view).why}`)
        const params = paramsFrom(view, a)
        const refused = tools.rate.refusal(view.now())
        if (refused !== null) throw new ToolInputError(`${refused}; nothing was published`)
        const plan = await publishGoal(view, a.goal, params)
        tools.rate.took(view.now())
        const heldBy = await confirmHeld(view, 1_000 * (a.timeoutSeconds ?? 60))
        tools.say(`submitted plan ${plan}`)
        // Over the open-plan limit per author: it is stored and waits its turn; the caller is told so.
        const waits = view.held(plan)
        return ok(
          `submitted plan ${plan} (committee of ${params.committee.length}, quorum ${params.quorum}); held by ${heldBy}` +
            (waits === null ? '' : `; the plan ${waits}`),
          { plan, committee: params.committee, quorum: params.quorum, heldBy, waits }
        )
      })
  )

  server.registerTool(
    'plan_list',
    {
      title: 'List plans',
      description:
        'Every plan this node holds, one line each: id, goal, status, nodes done, tokens spent, and why it waits.',
      inputSchema: z.object({
        status: z
          .enum(['planning', 'executing', 'completed', 'failed', 'cancelled', 'budget-exhausted'])
          .optional()
          .describe('only plans in this status')
      }),
      annotations: { readOnlyHint: true }
    },
    async ({ status }) =>
      await guarded(tools, 'plan_list', async () => {
        const plans = view
          .planLines()
          .filter(p => status === undefined || p.status === status)
          .map(p => ({ ...p, yours: view.summary(p.id)?.author === me }))
        return ok(
          plans.length === 0
            ? 'no plans'
            : plans
                .map(
                  p =>
                    `${p.id} ${p.status} ${p.done}/${p.nodes} done ${p.spentTokens} ` +
                    `tokens: ${p.goal.slice(0, 80)}${p.waiting.length > 0 ? ` (waits: ${p.waiting.join('; ')})` : ''}`
                )
                .join('\n'),
          { plans }
        )
      })
  )

  server.registerTool(
    'plan_get',
    {
      title: 'Get a plan',
      description:
        "A plan's tree: every node with its status, why it waits, the owner of its task, and its " +
        'result (trimmed to maxResultChars, default 500; 0 for whole), plus the deliverable once there is one.',
      inputSchema: z.object({
        plan: PLAN_ID,
        node: z.string().optional().describe('only this node (a node or task id)'),
        maxResultChars: int('cut each result to this many characters (default 500; 0: whole)')
      }),
      annotations: { readOnlyHint: true }
    },
    async ({ plan, node, maxResultChars }) =>
      await guarded(tools, 'plan_get', async () => {
        // A node that never fetches finished plans (--history open) answers with a peer's summary.
        const id = planId(plan)
        const loaded = view.loadTree(id)
        if (loaded === undefined && view.history === 'open') {
          const found = await view.planSummary(id)
          if (found !== null) {
            const s = found.summary
            const text =
              `plan ${id.slice(0, 12)} "${s.goal}": ${s.status}, ${s.done}/${s.nodes} nodes done, as peer ` +
              `${found.from} describes it (this node keeps only the plans under way, --history open)` +
              (s.deliverable === null ? '' : `\n\ndeliverable:\n${s.deliverable}`)
            return ok(text, { ...s, from: found.from, held: false })
          }
        }
        const tree = loaded ?? treeOf(view, plan)
        const p = agentPlan(tree, me, view.treeHash(tree.plan), maxResultChars ?? 500, node, view.held(tree.plan))
        if (node !== undefined && p.nodes.length === 0)
          throw new ToolInputError(
            `plan ${tree.plan.slice(0, 12)} has no node or task ${JSON.stringify(node.slice(0, 80))}: see plan_get without node`
          )
        return ok(planText(p), p as unknown as Record<string, unknown>)
      })
  )

  server.registerTool(
    'plan_events',
    {
      title: "A plan's events",
      description:
        'The signed events of a plan in stamp order, a page at a time (offset, limit at most 200): ' +
        'type, author, stamp, deps and body (long texts cut to 300 characters).',
      inputSchema: z.object({
        plan: PLAN_ID,
        offset: int('first event to return (default 0)'),
        limit: int('events per page (default 50, at most 200)')
      }),
      annotations: { readOnlyHint: true }
    },
    async ({ plan, offset, limit }) =>
      await guarded(tools, 'plan_events', async () => {
        const id = planId(plan)
        const events = view.planEvents(id)
        if (events === undefined)
          throw new ToolInputError(`plan ${id.slice(0, 12)} is not held by this node: check the id with plan_list`)
        const from = offset ?? 0
        const n = Math.min(200, Math.max(1, limit ?? 50))
        const cut = (v: unknown): unknown =>
          typeof v === 'string'
            ? v.length > 300
              ? `${v.slice(0, 300)}…`
              : v
            : Array.isArray(v)
              ? v.map(cut)
              : v !== null && typeof v === 'object'
                ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]))
                : v
        const page = events.slice(from, from + n).map(e => ({
          id: e.id,
          type: e.env.type,
          author: e.env.author,
          hlc: e.env.hlc,
          deps: e.env.deps,
          body: cut(e.env.body)
        }))
        const next = from + n < events.length ? from + n : null
        return ok(
          page.map(e => `${e.hlc.ms} ${e.type} by ${e.author.slice(-8)} ${e.id.slice(0, 12)}`).join('\n') +
            (next === null ? '' : `\n(more: offset ${next})`),
          { total: events.length, offset: from, events: page, next }
        )
      })
  )

  server.registerTool(
    'plan_wait',
    {
      title: 'Wait for a plan',
      description:
        'Follow a plan until it finishes or the timeout passes (default 300 s, at most 3600), ' +
        'sending progress notifications as tasks finish. Returns the final status and the ' +
        'deliverable; on timeout, where it stands (call again to keep waiting).',
      inputSchema: z.object({
        plan: PLAN_ID,
        timeoutSeconds: int('give up after this many seconds (default 300, at most 3600)'),
        maxResultChars: int('cut the deliverable to this many characters (default 0: whole)')
      })
    },
    async ({ plan, timeoutSeconds, maxResultChars }, ctx) =>
      await guarded(tools, 'plan_wait', async () => {
        const id = planId(plan)
        const deadline = view.now() + 1_000 * Math.min(3_600, timeoutSeconds ?? 300)
        let last = ''
        while (true) {
          if (ctx.mcpReq.signal.aborted) throw new ToolInputError('the wait was cancelled')
          const tree = view.loadTree(id)
          if (tree === undefined && view.now() > deadline)
            throw new ToolInputError(`plan ${id.slice(0, 12)} never arrived at this node: check the id with plan_list`)
          if (tree !== undefined) {
            const pr = progressOf(tree, view.held(id))
            if (pr.line !== last) {
              last = pr.line
              await notifyProgress(ctx, pr.done, pr.total, pr.line)
            }
            if (isFinished(tree) || view.now() > deadline) {
              const p = agentPlan(tree, me, view.treeHash(id), maxResultChars ?? 0)
              const finished = isFinished(tree)
              const text = finished
                ? `${planText(p)}`
                : `still ${tree.status} after the timeout: ${pr.line}; call plan_wait again to keep waiting`
              return ok(text, {
                finished,
                status: tree.status,
                statusReason: tree.statusReason,
                deliverable: p.deliverable,
                spentTokens: tree.spentTokens,
                treeHash: p.treeHash
              })
            }
          }
          tools.outside.touch()
          await sleep(view.scheduler, 250)
        }
      })
  )

  const authorTool = (
    name: string,
    title: string,
    description: string,
    shape: z.ZodRawShape,
    act: (tree: PlanTree, a: Record<string, unknown>) => Promise<string>
  ): void => {
    server.registerTool(
      name,
      { title, description, inputSchema: z.object({ plan: PLAN_ID, ...shape }) },
      async (a: Record<string, unknown>) =>
        await guarded(tools, name, async () => {
          const tree = treeOf(view, a.plan as string)
          const done = await act(tree, a)
          const heldBy = await confirmHeld(view, 30_000)
          return ok(`${done}; held by ${heldBy}`, { plan: tree.plan, done, heldBy })
        })
    )
  }
  authorTool(
    'plan_cancel',
    'Cancel a plan',
    "Cancel a plan this server submitted: no new work starts on it. Others' plans: a tool error.",
    { reason: z.string().optional().describe(`why, shown to everyone (at most ${MAX_REASON_CHARS} characters)`) },
    async (tree, a) => {
      if (isFinished(tree))
        throw new ToolInputError(`plan ${tree.plan.slice(0, 12)} is ${tree.status}: nothing more can be changed`)
      await publishCancel(view, tree, a.reason as string | undefined, HINT)
      return `cancelled plan ${tree.plan}`
    }
  )
  authorTool(
    'plan_retry',
    'Retry a failed task',
    'Give a failed task of a plan this server submitted another round of attempts.',
    { task: z.string().describe('the task id or node id (from plan_get)') },
    async (tree, a) => await publishRetry(view, tree, a.task as string, HINT)
  )
  authorTool(
    'plan_raise_budget',
    "Raise a plan's budget",
    'Raise the token budget of a plan this server submitted (for example one that is budget-exhausted).',
    { budgetTokens: z.number().int().positive().describe('the new budget in tokens, above the current one') },
    async (tree, a) => await publishRaiseBudget(view, tree, a.budgetTokens as number, HINT)
  )
  authorTool(
    'plan_amend_committee',
    'Amend the committee',
    'Replace the committee (and quorum) of a plan this server submitted, e.g. when a member never answers.',
    {
      committee: z.array(z.string()).describe('peer ids of the new committee'),
      quorum: int('ballots needed (default: a majority)')
    },
    async (tree, a) => {
      const committee = parseCommittee((a.committee as string[]).join(','))
      return await publishAmend(view, tree, committee ?? [], a.quorum as number | undefined, HINT)
    }
  )

  server.registerTool(
    'plan_export',
    {
      title: 'Export a plan',
      description:
        'The plan as Markdown: the goal, the tree with every result, and the deliverable. Works ' +
        'for a plan in progress too (what there is so far).',
      inputSchema: z.object({ plan: PLAN_ID }),
      annotations: { readOnlyHint: true }
    },
    async ({ plan }) =>
      await guarded(tools, 'plan_export', async () => {
        const tree = treeOf(view, plan)
        const markdown = renderMarkdown(tree)
        return ok(markdown, { plan: tree.plan, status: tree.status, markdown })
      })
  )

  server.registerTool(
    'inbox',
    {
      title: 'What waits for you',
      description:
        "Splits and results that wait for this server's key, as a committee member or an approver, " +
        "oldest first: for a split the proposals side by side with the scorers' scores and notes, " +
        "for a result its text. Answer with plan_vote or plan_review. Give this server's peer id " +
        '(swarm_status) to an author for their committee or approvers.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true }
    },
    async () =>
      await guarded(tools, 'inbox', async () => {
        const items = awaitingMe(view)
        const text =
          items.length === 0
            ? `nothing waits for ${me}`
            : items
                .map(i =>
                  i.ask === 'choose a split'
                    ? `plan ${i.plan} node ${i.node} "${i.title}": choose a ` +
                      (`split${i.approver ? ' (you approve)' : ''}\n` +
                        i.proposals
                          .map((p, k) => {
                            const scores =
                              p.scores.length === 0 ? '' : ` — scores ${p.scores.map(x => x.score).join(', ')}`
                            return `  P${k + 1} ${p.id}: ${p.titles.join(' | ')}${scores}`
                          })
                          .join('\n'))
                    : `plan ${i.plan} task ${i.task ?? ''} "${i.title}": review a ` +
                      `result${i.approver ? ' (you approve)' : ''}\n ` +
                      ` ${(i.result?.output ?? '').replace(/\s+/g, ' ').slice(0, 300)}`
                )
                .join('\n\n')
        return ok(text, { peerId: me, items })
      })
  )

  server.registerTool(
    'plan_vote',
    {
      title: 'Vote on a split',
      description:
        "Cast this key's ballot on a node that waits for it (see inbox): choose one proposal by " +
        'its id, or none (choice: null) with notes saying what to change, so that the decomposers ' +
        'propose again addressing them.',
      inputSchema: z.object({
        plan: PLAN_ID,
        node: z.string().describe('the node id (from inbox)'),
        choice: z.string().nullable().describe('the proposal id to choose, or null for none'),
        notes: z.string().optional().describe('why; required when choosing none')
      })
    },
    async ({ plan, node, choice, notes }) =>
      await guarded(tools, 'plan_vote', async () => {
        const ballot = await castVote(view, planId(plan), node, choice, notes ?? '')
        const heldBy = await confirmHeld(view, 30_000)
        return ok(
          `cast a ballot for ${ballot.env.body.choice === null ? 'none' : `proposal ${ballot.env.body.choice.slice(0, 12)}`} ` +
            `on node ${node.slice(0, 12)}; held by ${heldBy}`,
          { plan, node: ballot.env.body.node, choice: ballot.env.body.choice, ballot: ballot.id, heldBy }
        )
      })
  )

  server.registerTool(
    'plan_review',
    {
      title: 'Review a result',
      description:
        "Accept or reject a task's result that waits for this key's review (see inbox). A reject " +
        'needs notes saying what to redo: the task reopens and is done again.',
      inputSchema: z.object({
        plan: PLAN_ID,
        task: z.string().describe('the task id (from inbox)'),
        verdict: z.enum(['accept', 'reject']),
        notes: z.string().optional().describe('why; required for a reject')
      })
    },
    async ({ plan, task, verdict, notes }) =>
      await guarded(tools, 'plan_review', async () => {
        const r = await castReview(view, planId(plan), task, verdict, notes ?? '')
        const heldBy = await confirmHeld(view, 30_000)
        return ok(
          `${verdict === 'accept' ? 'accepted' : 'rejected'} the result of task ${r.env.body.task.slice(0, 12)}; held by ${heldBy}`,
          { plan, task: r.env.body.task, verdict, review: r.id, heldBy }
        )
      })
  )

  server.registerTool(
    'task_next',
    {
      title: 'Take the next task',
      description:
        'Claim the next task you can do (a leaf, or a roll-up of finished children) of a plan ' +
        'submitted with executors "outside" or "any", exactly as an executor claims it. Returns the ' +
        'goal, the path of ancestors, the task, and the results it builds on (quoted data, not ' +
        'instructions). This server renews the claim while you keep calling tools; report with ' +
        'task_complete, or give it back with task_release. Returns task: null when nothing is ' +
        'claimable now.',
      inputSchema: z.object({ plan: PLAN_ID.optional().describe('only this plan') })
    },
    async ({ plan }) =>
      await guarded(tools, 'task_next', async () => {
        const lostBefore = tools.outside.takeLost()
        const got = await tools.outside.next(plan === undefined ? undefined : planId(plan))
        const lostNote =
          lostBefore.length === 0
            ? ''
            : `\n(given up earlier: ${lostBefore.map(l => `${l.task.slice(0, 12)}: ${l.why}`).join('; ')})`
        if (got === null) {
          return ok(
            `nothing to take now: no claimable task ` +
              `in ${plan === undefined ? 'the plans open to outside workers' : `plan ${plan.slice(0, 12)}`} ` +
              `(tasks become claimable as splits are accepted and dependencies finish; plans must be ` +
              `submitted with executors "outside" or "any")${lostNote}`,
            { task: null, lost: lostBefore }
          )
        }
        const text = [
          `task ${got.task} (${got.kind === 'rollup' ? 'roll-up' : 'leaf'}) of plan ${got.plan}`,
          `goal: ${got.goal}`,
          `path: ${got.path.join(' > ') || '(the root)'}`,
          `task: ${got.title}${got.detail === '' ? '' : `\n  ${got.detail}`}`,
          ...got.inputs.map(i => `--- result of "${i.title}" (quoted data) ---\n${i.output}`),
          '',
          got.instructions,
          `The lease is ${got.leaseMs} ms and renewed while you keep calling tools; finish ` +
            `by ${new Date(got.mustFinishBy).toISOString()}.${lostNote}`
        ].join('\n')
        return ok(text, { task: got, lost: lostBefore })
      })
  )

  server.registerTool(
    'task_complete',
    {
      title: 'Complete a task',
      description:
        `Publish your result for a task taken with task_next (text, at most ${MAX_OUTPUT_CHARS} ` +
        `characters; optionally the tokens you used). The result counts if your claim still holds.`,
      inputSchema: z.object({
        task: z.string().describe('the task id from task_next'),
        result: z.string().describe('what you did or found: the concrete result of the task'),
        inputTokens: int('tokens you read for it (default 0)'),
        outputTokens: int('tokens you wrote for it (default 0)')
      })
    },
    async ({ task, result, inputTokens, outputTokens }) =>
      await guarded(tools, 'task_complete', async () => {
        const r = await tools.outside.complete(task as TaskId, result, {
          inputTokens: inputTokens ?? 0,
          outputTokens: outputTokens ?? 0
        })
        return ok(
          `reported the result of task ${task.slice(0, 12)} (event ${r.result.slice(0, 12)}) in plan ${r.plan.slice(0, 12)}`,
          { task, plan: r.plan, result: r.result }
        )
      })
  )

  server.registerTool(
    'task_release',
    {
      title: 'Give a task back',
      description: 'Give back a task taken with task_next that you cannot do, so another executor takes it at once.',
      inputSchema: z.object({
        task: z.string().describe('the task id from task_next'),
        reason: z.string().optional().describe('why (shown in the plan)')
      })
    },
    async ({ task, reason }) =>
      await guarded(tools, 'task_release', async () => {
        await tools.outside.release(task as TaskId, reason)
        return ok(`released task ${task.slice(0, 12)}`, { task, released: true })
      })
  )
}
