/**
 * `--role executor --a2a-agent URL`: an executor whose every task is done by
 * a remote A2A agent (LangGraph's agent server, ADK, CrewAI, another swarm).
 *
 * It takes tasks exactly as a model executor does (the claim book of
 * roles/claim-book.ts: the same plans, ranks, staggers, confirmation waits and
 * takeovers, at most the plan's limit of claims at once), and where a model
 * executor calls its model it sends the task to the agent (./agent-client.ts)
 * and follows the remote task, renewing the lease while it runs. Then:
 *
 *   - completed: the agent's final artifact is the result, with `model`
 *     `a2a:<agent name>` and `source` 'llm' (see below);
 *   - failed, rejected, canceled, asking for input or authentication, silent
 *     past `--worker-silence-s`, unreadable, or not done within the plan's
 *     maxClaimMs: the remote task is cancelled and the task failed with the
 *     reason (an attempt counts, so an agent that cannot do it does not take
 *     it forever);
 *   - the agent out of reach before it took the task: the task is released
 *     (no attempt counts) and the executor takes nothing until it finds the
 *     agent again, retrying with backoff;
 *   - the claim lost, the plan ended, or the node stopping: the remote task is
 *     cancelled and nothing is published.
 *
 * Which plans: those a model executor takes (`executors` "model", the
 * default, or "any"), not those reserved for outside workers. To the swarm
 * this node is an executor like the others: it signs its claims and results
 * with its own key, ranks among the other executors and answers for its
 * agent as a model executor answers for its model. A plan marked "outside"
 * asks for agents and people who pull tasks one at a time (task_next,
 * `task next`), and stays theirs.
 *
 * Why `source` 'llm': results of protocol version 1 (every plan with the
 * default parameters) may only say 'llm' or 'offline', and a new source value
 * would make every node of the current and older releases refuse the result
 * as malformed. 'llm' is valid in every version and says what the result is
 * (the work of a model-driven agent, not an offline placeholder); `model`, a
 * free text field, names the agent.
 */
import { MAX_EVENT_BYTES, MAX_OUTPUT_CHARS, MAX_REASON_CHARS } from '../core/limits.js'
import { ZERO_USAGE } from '../llm/types.js'
import { claimDeadlineMs, createClaimBook } from '../../roles/claim-book.js'
import { startRole } from '../../roles/driver.js'
import { inputsOf, nodeMap, pathOf } from '../../roles/plan-context.js'
import { backoffMs, cut, describeError, discoverAgent, runAgentTask, taskMessage } from './agent-client.js'
import type { AgentLink, AgentOutcome } from './agent-client.js'
import type { ClaimIntent } from '../../roles/claim-rules.js'
import type { RoleHandler } from '../../roles/driver.js'
import type { LlmProvider } from '../llm/types.js'
import type { NodeView } from '../ports/node-view.js'
import type { Cancel } from '../ports/scheduler.js'

export interface A2aExecutorOptions {
  /** The agent's card, or the base URL that serves /.well-known/agent-card.json. */
  readonly url: string
  /** Give a task up when the agent has sent nothing for this long (`--worker-silence-s`). */
  readonly silenceMs: number
  readonly say: (line: string) => void
  /** Sent as `Authorization: Bearer` to the agent's origin (default: PLAN_SWARM_A2A_AGENT_TOKEN, else none). */
  readonly token?: string
  /** Find an agent (default: fetch its card); a seam for tests. */
  readonly discover?: (url: string) => Promise<AgentLink>
  /** The first wait before finding the agent again (default 1 s, doubling to 60 s). */
  readonly backoffBaseMs?: number
}

/** The agent this executor works for: found, or being looked for with backoff. */
export interface AgentFinder {
  /** The agent, or null while it is being looked for. */
  current: () => AgentLink | null
  /** The agent could not be reached: look for it again (after a backoff). */
  lost: (reason: string) => void
  stop: () => void
}

/** Look for the agent now, and again with backoff until it answers; say plainly what happens. */
export function findAgent(view: NodeView, opts: A2aExecutorOptions): AgentFinder {
  const token = opts.token ?? process.env.PLAN_SWARM_A2A_AGENT_TOKEN
  const discover = opts.discover ?? (async (url: string) => await discoverAgent(url, { token }))
  let link: AgentLink | null = null
  let failures = 0
  let stopped = false
  let looking = false
  let timer: Cancel | undefined
  const look = (): void => {
    if (stopped || looking) return
    looking = true
    discover(opts.url).then(
      found => {
        looking = false
        if (stopped) return
        link = found
        failures = 0
        opts.say(
          `A2A agent "${found.name}" at ${found.url} (${found.streaming ? 'streaming' : 'no streaming: polled'}): ` +
            'taking tasks for it'
        )
      },
      (err: unknown) => {
        looking = false
        if (stopped) return
        const wait = backoffMs(failures++, opts.backoffBaseMs)
        opts.say(
          `could not reach the A2A agent: ${describeError(err)}; taking no tasks, trying again in ` +
            `${Math.round(wait / 100) / 10} s (check that the agent runs and that --a2a-agent names its card)`
        )
        timer = view.scheduler.after(wait, look)
      }
    )
  }
  look()
  return {
    current: () => link,
    lost: reason => {
      if (link === null || stopped) return
      link = null
      const wait = backoffMs(failures++, opts.backoffBaseMs)
      opts.say(`lost the A2A agent (${reason}); taking no tasks, looking for it again in ${Math.round(wait / 1000)} s`)
      timer = view.scheduler.after(wait, look)
    },
    stop: () => {
      stopped = true
      timer?.()
    }
  }
}

/** Cut text to fit the wire's caps (characters, and the event's bytes beside its other fields). */
function fitOutput(text: string): string {
  let out = cut(text, MAX_OUTPUT_CHARS)
  const maxBytes = MAX_EVENT_BYTES - 8_192
  if (Buffer.byteLength(out) <= maxBytes) return out
  out = out.slice(0, Math.floor(maxBytes / 3) - 40)
  return `${out}\n[... cut to fit the event]`
}

/** The role: the claims of an executor's claim book, and acts that hand the task to the agent. */
export function createA2aExecutor(view: NodeView, finder: AgentFinder, opts: A2aExecutorOptions): RoleHandler {
  const say = opts.say
  const book = createClaimBook(view, { say, ready: () => finder.current() !== null })

  return {
    decide: book.decide,
    nextWakeAt: book.nextWakeAt,
    viewKey: now => `${book.viewKey(now)}|${finder.current() === null ? 'no agent' : 'agent'}`,
    tick: book.tick,
    stop: book.stop,
    act: async (intent: ClaimIntent, tree) => {
      const link = finder.current()
      if (link === null) return
      const claimed = await book.claim(intent)
      if (claimed === null) return
      const claim = claimed.event
      const fresh = claimed.tree ?? tree
      const nodes = nodeMap(fresh)
      const node = nodes.get(intent.task.node)
      if (node === undefined) throw new Error(`task ${intent.task.id} has no node`)
      const abort = new AbortController()
      // On every pass: stop when the claim or the plan is gone; renew the lease while the agent works, up to
      // maxClaimMs (the deadline below ends the task first).
      const hold = book.hold(intent, claim, tree, {
        keep: 'owner',
        abort: why => {
          abort.abort(why)
        },
        renewStopMs: 250
      })
      let outcome: AgentOutcome
      try {
        say(`sending ${intent.task.kind === 'rollup' ? 'roll-up of ' : ''}"${node.title}" to A2A agent "${link.name}"`)
        const message = taskMessage(
          {
            plan: intent.plan,
            task: intent.task.id,
            kind: intent.task.kind,
            goal: fresh.goal,
            path: pathOf(fresh, node, nodes),
            title: node.title,
            detail: node.detail,
            inputs: inputsOf(fresh, intent.task, nodes)
          },
          { data: link.acceptsData }
        )
        outcome = await runAgentTask(link, message, {
          signal: abort.signal,
          silenceMs: opts.silenceMs,
          deadlineMs: claimDeadlineMs(claim, tree.params),
          now: () => view.now()
        })
      } finally {
        hold.drop()
      }
      const where = `"${node.title}"`
      if (outcome.kind === 'stopped') {
        say(`stopped ${where}: ${outcome.reason}; the agent's task is cancelled`)
        return
      }
      if (!hold.settle()) {
        say(`dropped what came of ${where}: the claim ended while the agent worked`)
        return
      }
      if (outcome.kind === 'completed') {
        await hold.publish('result-reported', {
          output: fitOutput(outcome.output),
          usage: ZERO_USAGE,
          model: link.model,
          source: 'llm'
        })
        say(`done ${where} (by A2A agent "${link.name}")`)
      } else if (outcome.kind === 'unreachable') {
        await hold.publish('task-released', { reason: cut(outcome.reason, MAX_REASON_CHARS) })
        say(`released ${where}: ${outcome.reason}`)
        finder.lost(outcome.reason)
      } else {
        await hold.publish('task-failed', { error: cut(outcome.reason, MAX_REASON_CHARS), usage: ZERO_USAGE })
        say(`${where} failed: ${outcome.reason}`)
      }
    }
  }
}

/** No model: an A2A executor's driver never asks one, and says so if anything does. */
function noModel(url: string): LlmProvider {
  const refuse = async (): Promise<never> =>
    await Promise.reject(new Error(`this executor has no model: its tasks go to the A2A agent at ${url}`))
  const p: LlmProvider = {
    name: 'offline',
    model: 'none',
    cheapModel: null,
    withModel: () => p,
    downgrade: () => p,
    decompose: refuse,
    score: refuse,
    execute: refuse,
    executeWithTools: refuse,
    review: refuse
  }
  return p
}

/** Start the role: find the agent (with backoff, never failing the node) and take tasks for it. */
export function startA2aExecutor(view: NodeView, opts: A2aExecutorOptions): { stop: () => Promise<void> } {
  const finder = findAgent(view, opts)
  const handler = createA2aExecutor(view, finder, opts)
  const role = startRole({ view, provider: noModel(opts.url), say: opts.say }, handler)
  return {
    stop: async () => {
      finder.stop()
      await role.stop()
    }
  }
}
