import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError
} from '@a2a-js/sdk/errors'
import { TaskState } from '@a2a-js/sdk'
import { MAX_GOAL_CHARS } from '../core/limits.js'
import { isFinished } from '../core/view.js'
import { ConfigError } from '../errors.js'
import { sleep } from '../ports/scheduler.js'
import { parseCommittee, publishCancel, publishGoal } from '../author/author-events.js'
import { publishAmend, publishRaiseBudget, publishRetry } from '../author/plan-actions.js'
import { confirmHeld, readiness } from '../mcp/tools/readiness.js'
import { paramsFrom } from '../mcp/tools/submit-args.js'
import { ToolInputError } from '../mcp/tools/tool-result.js'
import { TERMINAL, asSubmitted, lastChangeMs, taskOf, taskOfPeerSummary, taskOfSummary } from './server-tasks.js'
import { agentCard } from './server-card.js'
import { FOLLOW_UP, GOAL_DATA, partsOf, planIdOf, zodMessage } from './server-input.js'
import type {
  AgentCard,
  Artifact,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
  ListTaskPushNotificationConfigsResponse
} from '@a2a-js/sdk'
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server'
import type { NodeView } from '../ports/node-view.js'
import type { GoalRate } from '../author/goal-rate.js'
import type { PeerIdString, PlanId } from '../core/events.js'
import type { PlanTree } from '../core/tree.js'
import type { TaskFacts } from './server-tasks.js'

/**
 * The swarm as an A2A agent, over one node's view: SendMessage submits a
 * goal (signed with this node's key, through the author actions the CLI
 * and MCP use) and every plan the node holds is a task. No task store: each
 * answer is derived from the plan tree when it is asked for, so a task can
 * never disagree with the plan, and a client that drops a stream loses
 * nothing (the plan goes on; GetTask or SubscribeToTask picks it up).
 *
 * A mistake of the caller is an A2A error that says what to do, and
 * publishes nothing.
 */
export interface SwarmA2aDeps {
  readonly view: NodeView
  /** Goals this node takes in a minute, shared with its dashboard and MCP. */
  readonly rate: GoalRate
  /** Lines for the node's log. */
  readonly say: (line: string) => void
  /** The release, the card's version. */
  readonly version: string
  /** How long SendMessage waits for another peer to hold a new goal (default 60 s). */
  readonly heldTimeoutMs?: number
}

/** The key under which the HTTP layer puts an AbortSignal in the call context's state: the client went away. */
export const SIGNAL_KEY = 'plan-swarm.signal'

/** The JSON-RPC methods this agent answers (A2A v1.0 names). */
export const METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'GetExtendedAgentCard',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig'
] as const

const HINT = "only plans this node's key submitted can be changed here; submit a goal of your own"

/** A SendMessage done: the plan it is about, and, for a new goal, the peer that took it. */
type Accepted = { readonly plan: PlanId; readonly returnImmediately: boolean; readonly heldBy?: string | null }

export interface SwarmA2a {
  /** The SDK's request handler (JsonRpcTransportHandler wraps it). */
  readonly handler: A2ARequestHandler
  /** The Agent Card, naming `url` as its JSON-RPC endpoint. */
  readonly card: (url: string) => AgentCard
}

export function createSwarmA2a(deps: SwarmA2aDeps): SwarmA2a {
  const view = deps.view
  const me = view.me

  const isPerson = (peer: PeerIdString): boolean => {
    if (peer === me) return view.role !== 'scorer'
    return view.roster().find(r => r.peerId === peer)?.role !== 'scorer'
  }
  const facts = (tree: PlanTree): TaskFacts => ({
    held: view.held(tree.plan),
    isPerson,
    treeHash: view.treeHash(tree.plan),
    me
  })

  const treeOf = (raw: string, field = 'id'): PlanTree => {
    const id = planIdOf(raw, field)
    const tree = view.loadTree(id)
    if (tree === undefined)
      throw new TaskNotFoundError(
        `plan ${id.slice(0, 12)} is not held by this node: check the id with ListTasks (a plan just submitted ` +
          'elsewhere arrives within seconds)'
      )
    return tree
  }

  /** Run a check or an author action: the caller's mistakes become invalid params. */
  const asked = async <T>(body: () => Promise<T> | T): Promise<T> => {
    try {
      return await body()
    } catch (err) {
      if (err instanceof ConfigError || err instanceof ToolInputError) throw new RequestMalformedError(err.message)
      throw err
    }
  }

  const submitGoal = async (
    text: string,
    data: Record<string, unknown> | undefined
  ): Promise<{ plan: PlanId; heldBy: string | null }> => {
    if (text === '')
      throw new RequestMalformedError(
        'the message has no goal: put what to plan in a text part, e.g. "plan a two-week trip to Japan"'
      )
    if (text.length > MAX_GOAL_CHARS)
      throw new RequestMalformedError(
        `the goal is ${text.length} characters long; the most is ${MAX_GOAL_CHARS}: say it shorter`
      )
    const parsed = GOAL_DATA.safeParse(data ?? {})
    if (!parsed.success)
      throw new RequestMalformedError(zodMessage(parsed.error, 'plan parameters', Object.keys(GOAL_DATA.shape)))
    const { budget, ...args } = parsed.data
    if (budget !== undefined && args.budgetTokens !== undefined && budget !== args.budgetTokens)
      throw new RequestMalformedError('budget and budgetTokens name the same thing: give one of them')
    if (args.committee === undefined && !readiness(view).canSubmit)
      throw new UnsupportedOperationError(`cannot submit now: ${readiness(view).why}`)
    const params = await asked(() =>
      paramsFrom(view, { ...args, goal: text, budgetTokens: budget ?? args.budgetTokens })
    )
    const refused = deps.rate.refusal(view.now())
    if (refused !== null) throw new UnsupportedOperationError(`${refused}; nothing was published`)
    const plan = await asked(async () => await publishGoal(view, text, params))
    deps.rate.took(view.now())
    deps.say(`submitted plan ${plan} over A2A`)
    // Published and stored here: from now on the answer is the task, never an error. A goal no peer
    // confirmed holding in time reaches the swarm when a peer connects, and its task says so.
    let heldBy: string | null = null
    try {
      heldBy = await confirmHeld(view, deps.heldTimeoutMs ?? 1_000 * (args.timeoutSeconds ?? 60))
    } catch (err) {
      if (!(err instanceof ToolInputError)) throw err
      deps.say(`plan ${plan}: no peer confirmed holding it yet; it reaches the swarm when a peer connects`)
    }
    return { plan, heldBy }
  }

  /** A follow-up message on one of this node's plans: raise its budget, amend its committee, or retry a task. */
  const followUp = async (tree: PlanTree, data: Record<string, unknown> | undefined): Promise<void> => {
    const parsed = FOLLOW_UP.safeParse(data ?? {})
    if (!parsed.success)
      throw new RequestMalformedError(zodMessage(parsed.error, 'a follow-up', Object.keys(FOLLOW_UP.shape)))
    const f = parsed.data
    const budget = f.budgetTokens ?? f.budget
    const actions = [budget !== undefined, f.committee !== undefined, f.retry !== undefined].filter(Boolean).length
    if (actions !== 1)
      throw new RequestMalformedError(
        `a follow-up on plan ${tree.plan.slice(0, 12)} makes one change, in a data part: ` +
          '{"budgetTokens": N} raises its budget, {"committee": [peer ids], "quorum": n} amends its committee, ' +
          '{"retry": "<task id>"} retries a failed task. Its text is not read: a goal cannot change once ' +
          'submitted, so send a new message without taskId and contextId for a new goal'
      )
    const done = await asked(async () => {
      if (budget !== undefined) return await publishRaiseBudget(view, tree, budget, HINT)
      if (f.committee !== undefined)
        return await publishAmend(view, tree, parseCommittee(f.committee.join(',')) ?? [], f.quorum, HINT)
      return await publishRetry(view, tree, f.retry, HINT)
    })
    deps.say(`${done} (A2A)`)
    await view.syncOnce()
  }

  /** What a SendMessage asks for, done: a new goal, or a follow-up on a plan named by taskId or contextId. */
  const accept = async (params: SendMessageRequest): Promise<Accepted> => {
    const message = params.message
    if (message === undefined)
      throw new RequestMalformedError(
        'params.message is missing: send {"message": {"role": "ROLE_USER", "messageId": "<any id>", ' +
          '"parts": [{"text": "<the goal>"}]}}'
      )
    const { text, data } = partsOf(message)
    const returnImmediately = params.configuration?.returnImmediately === true
    if (message.taskId !== '' && message.contextId !== '' && message.taskId !== message.contextId)
      throw new RequestMalformedError(
        'taskId and contextId name different plans: a task here is a plan, and its contextId is its plan id'
      )
    const target = message.taskId !== '' ? message.taskId : message.contextId
    if (target === '') {
      const submitted = await submitGoal(text, data)
      // Nobody else holds it yet: waiting for the plan to finish would wait on a swarm that has not seen it.
      return { ...submitted, returnImmediately: returnImmediately || submitted.heldBy === null }
    }
    if (message.taskId === '' && !/^[0-9a-f]{64}$/.test(target))
      throw new RequestMalformedError(
        `contextId ${JSON.stringify(target.slice(0, 80))} is no plan's context here: leave contextId out to ` +
          "submit a new goal (its task's contextId is then its plan id), or use the contextId of a task this agent returned"
      )
    const tree = treeOf(target, message.taskId !== '' ? 'taskId' : 'contextId')
    if (isFinished(tree))
      throw new UnsupportedOperationError(
        `plan ${tree.plan.slice(0, 12)} is ${tree.status}: a finished task takes no more messages; send a new goal ` +
          'without taskId and contextId'
      )
    await followUp(tree, data)
    return { plan: tree.plan, returnImmediately }
  }

  const current = (plan: PlanId): PlanTree => {
    const tree = view.loadTree(plan)
    if (tree === undefined) throw new TaskNotFoundError(`plan ${plan.slice(0, 12)} is no longer held by this node`)
    return tree
  }

  /**
   * The plan's tree now, then again each time its events fold (or every few
   * seconds, for what the tree does not say: a plan held back, the roster),
   * until the caller stops or the client goes away.
   */
  async function* watch(plan: PlanId, signal: AbortSignal | undefined): AsyncGenerator<PlanTree> {
    let wake: (() => void) | undefined
    let dirty = true
    const poke = (): void => {
      dirty = true
      wake?.()
    }
    const off = view.onFolded(events => {
      if (events.some(e => e.env.plan === plan)) poke()
    })
    signal?.addEventListener('abort', poke)
    try {
      while (signal?.aborted !== true) {
        if (dirty) {
          dirty = false
          yield current(plan)
          continue
        }
        await new Promise<void>(resolve => {
          const cancel = view.scheduler.after(5_000, () => {
            dirty = true
            resolve()
          })
          wake = () => {
            cancel()
            resolve()
          }
        })
        wake = undefined
        // Let a burst of events fold before the next look.
        await sleep(view.scheduler, 100)
      }
    } finally {
      off()
      signal?.removeEventListener('abort', poke)
    }
  }

  const signalOf = (context: ServerCallContext): AbortSignal | undefined =>
    context.state.get(SIGNAL_KEY) as AbortSignal | undefined

  /** Status and artifact updates as the plan moves, after `first`, until it finishes. */
  async function* updates(
    plan: PlanId,
    first: Task,
    context: ServerCallContext
  ): AsyncGenerator<StreamResponse, void, undefined> {
    yield { payload: { $case: 'task', value: first } }
    const sent = new Set<string>()
    let last = `${first.status?.state}|${first.status?.message?.messageId}`
    for await (const tree of watch(plan, signalOf(context))) {
      const task = taskOf(tree, facts(tree))
      for (const a of task.artifacts) {
        if (sent.has(a.artifactId)) continue
        sent.add(a.artifactId)
        yield { payload: { $case: 'artifactUpdate', value: artifactUpdate(plan, a) } }
      }
      const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED
      const key = `${state}|${task.status?.message?.messageId}`
      if (key !== last) {
        last = key
        yield {
          payload: {
            $case: 'statusUpdate',
            value: { taskId: plan, contextId: plan, status: task.status, metadata: task.metadata }
          }
        }
      }
      if (TERMINAL.has(state)) return
    }
  }

  const handler: A2ARequestHandler = {
    getAgentCard: async () => await Promise.resolve(card('')),
    getAuthenticatedExtendedAgentCard: async () => {
      throw new ExtendedAgentCardNotConfiguredError(
        'this agent has no extended card: read /.well-known/agent-card.json'
      )
    },

    async sendMessage(params, context) {
      const { plan, returnImmediately, heldBy } = await accept(params)
      if (heldBy === null) {
        const tree = current(plan)
        return asSubmitted(taskOf(tree, facts(tree)), null)
      }
      if (!returnImmediately) {
        // Blocking, as A2A asks by default: until the plan finishes or waits for input.
        for await (const tree of watch(plan, signalOf(context))) {
          const state = taskOf(tree, facts(tree), false).status?.state ?? TaskState.TASK_STATE_UNSPECIFIED
          if (TERMINAL.has(state) || state === TaskState.TASK_STATE_INPUT_REQUIRED) break
        }
      }
      const tree = current(plan)
      return taskOf(tree, facts(tree))
    },

    async *sendMessageStream(params, context) {
      const { plan, heldBy } = await accept(params)
      const tree = current(plan)
      const task = taskOf(tree, facts(tree), false)
      yield* updates(plan, heldBy === undefined ? task : asSubmitted(task, heldBy), context)
    },

    async getTask(params: GetTaskRequest) {
      const id = planIdOf(params.id, 'id')
      const loaded = view.loadTree(id)
      // A node that never fetches finished plans asks its peers for theirs.
      if (loaded === undefined && view.history === 'open') {
        const found = await view.planSummary(id)
        if (found !== null) return taskOfPeerSummary(found.summary, found.from)
      }
      const tree = loaded ?? treeOf(id)
      return taskOf(tree, facts(tree))
    },

    async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
      return await Promise.resolve(list(params))
    },

    async cancelTask(params: CancelTaskRequest) {
      const tree = treeOf(params.id)
      if (tree.status === 'cancelled') return taskOf(tree, facts(tree))
      if (isFinished(tree))
        throw new TaskNotCancelableError(`plan ${tree.plan.slice(0, 12)} is ${tree.status}: there is nothing to cancel`)
      if (tree.author !== me)
        throw new TaskNotCancelableError(
          `plan ${tree.plan.slice(0, 12)} was submitted by ${tree.author}, not by this node's key (${me}): only ` +
            "its author can cancel it, from the author's node"
        )
      const reason = params.metadata?.reason as unknown
      await asked(async () => {
        await publishCancel(view, tree, typeof reason === 'string' ? reason : 'cancelled over A2A', HINT)
      })
      deps.say(`cancelled plan ${tree.plan} (A2A)`)
      await view.syncOnce()
      const after = current(tree.plan)
      return taskOf(after, facts(after))
    },

    async *resubscribe(params: SubscribeToTaskRequest, context) {
      const tree = treeOf(params.id)
      if (isFinished(tree))
        throw new UnsupportedOperationError(
          `plan ${tree.plan.slice(0, 12)} is ${tree.status}: there is nothing more to follow; read it with GetTask`
        )
      yield* updates(tree.plan, taskOf(tree, facts(tree), false), context)
    },

    createTaskPushNotificationConfig: noPush<TaskPushNotificationConfig>,
    getTaskPushNotificationConfig: noPush<TaskPushNotificationConfig>,
    listTaskPushNotificationConfigs: noPush<ListTaskPushNotificationConfigsResponse>,
    deleteTaskPushNotificationConfig: noPush<void>
  }

  /** ListTasks over every plan held, newest first; plans out of memory come from their summaries. */
  const list = (params: ListTasksRequest): ListTasksResponse => {
    const size = params.pageSize ?? 50
    if (!Number.isInteger(size) || size < 1 || size > 100)
      throw new RequestMalformedError(`pageSize ${size}: expected 1 to 100 (default 50)`)
    const after =
      params.statusTimestampAfter === undefined || params.statusTimestampAfter === ''
        ? undefined
        : Date.parse(params.statusTimestampAfter)
    if (after !== undefined && Number.isNaN(after))
      throw new RequestMalformedError(
        `statusTimestampAfter ${JSON.stringify(params.statusTimestampAfter)}: expected an ISO 8601 time`
      )
    const rows: Array<{ id: PlanId; ms: number; task: () => Task }> = []
    for (const id of view.plans()) {
      if (params.contextId !== '' && params.contextId !== id) continue
      const tree = view.tree(id)
      if (tree !== undefined) {
        const task = taskOf(tree, facts(tree), params.includeArtifacts === true)
        rows.push({ id, ms: lastChangeMs(tree), task: () => task })
        continue
      }
      const s = view.summary(id)
      if (s === undefined) continue
      rows.push({
        id,
        ms: s.submittedAt.ms,
        task: () => {
          if (params.includeArtifacts !== true) return taskOfSummary(s, me)
          const t = view.loadTree(id)
          return t === undefined ? taskOfSummary(s, me) : taskOf(t, facts(t))
        }
      })
    }
    const wanted = params.status
    const filtered = rows
      .filter(r => after === undefined || r.ms >= after)
      .map(r => ({ ...r, t: r.task() }))
      .filter(r => wanted === TaskState.TASK_STATE_UNSPECIFIED || r.t.status?.state === wanted)
      .sort((a, b) => b.ms - a.ms || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    let start = 0
    if (params.pageToken !== '') {
      const [ms, id] = Buffer.from(params.pageToken, 'base64url').toString().split(':')
      if (id === undefined || !/^\d+$/.test(ms ?? ''))
        throw new RequestMalformedError('pageToken: not one this agent gave; use nextPageToken of the last ListTasks')
      const cut = Number(ms)
      start = filtered.findIndex(r => r.ms < cut || (r.ms === cut && r.id < id))
      if (start < 0) start = filtered.length
    }
    const page = filtered.slice(start, start + size)
    const lastRow = page[page.length - 1]
    const more = start + size < filtered.length && lastRow !== undefined
    return {
      tasks: page.map(r => r.t),
      nextPageToken: more ? Buffer.from(`${lastRow.ms}:${lastRow.id}`).toString('base64url') : '',
      pageSize: size,
      totalSize: filtered.length
    }
  }

  const card = (url: string): AgentCard => agentCard(view.swarm, deps.version, url)

  return { handler, card }
}

function artifactUpdate(
  plan: string,
  artifact: Artifact
): {
  taskId: string
  contextId: string
  artifact: Artifact
  append: boolean
  lastChunk: boolean
  metadata: undefined
} {
  return { taskId: plan, contextId: plan, artifact, append: false, lastChunk: true, metadata: undefined }
}

async function noPush<T>(): Promise<T> {
  return await Promise.reject(
    new PushNotificationNotSupportedError(
      'this agent sends no push notifications: follow a task with SendStreamingMessage or SubscribeToTask, or poll GetTask'
    )
  )
}
