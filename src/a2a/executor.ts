/**
 * `--role executor --a2a-agent URL`: an executor whose every task is done by
 * a remote A2A agent (LangGraph's agent server, ADK, CrewAI, another swarm).
 *
 * It takes tasks exactly as a model executor does (roles/executor.ts's
 * `decideExecutor`: the same plans, ranks, staggers, confirmation waits and
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
import { offersIn } from '../core/needs.js'
import { ZERO_USAGE } from '../llm/types.js'
import {
  CONFIRM_MS,
  STAGGER_MS,
  VIEW_UNCHANGED_MS,
  decideExecutor,
  propagationWait,
  stableViewMs
} from '../../roles/executor.js'
import { startRole } from '../../roles/driver.js'
import { inputsOf, isIdle, nodeMap, pathOf } from '../../roles/plan-context.js'
import { sleep } from '../ports/scheduler.js'
import { backoffMs, cut, describeError, discoverAgent, runAgentTask, taskMessage } from './agent-client.js'
import type { AgentLink, AgentOutcome } from './agent-client.js'
import type { ClaimIntent } from '../../roles/executor.js'
import type { RoleHandler } from '../../roles/driver.js'
import type { EventId, PlanEvent, PlanId } from '../core/events.js'
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

const NOTHING: ReadonlySet<string> = new Set()

/** The role: decideExecutor's claims, and acts that hand the task to the agent. */
export function createA2aExecutor(view: NodeView, finder: AgentFinder, opts: A2aExecutorOptions): RoleHandler {
  const me = view.me
  const say = opts.say
  const working = new Map<string, { plan: PlanId; task: string; claim: EventId; check: () => void; stop: () => void }>()
  const firstSeen = new Map<string, number>()
  let viewKey = ''
  const upSince = view.now()
  let viewSince = upSince
  let listed: { at: number; executors: string[] } = { at: NaN, executors: [] }
  let offered = new Map<string, ReadonlySet<string>>()
  const fullAt = new Map<PlanId, number>()
  let wakeAt: number | null = null

  // The same view of the other executors as a model executor keeps (roles/executor.ts), so the ranks agree.
  const noteView = (now: number): string[] => {
    if (listed.at === now) return listed.executors
    const entries = view.roster().filter(r => r.role === 'executor')
    const executors = entries.map(r => r.peerId)
    offered = new Map(entries.map(r => [r.peerId, new Set(offersIn(r.capabilities))]))
    listed = { at: now, executors }
    const offerKey = entries
      .filter(r => (offered.get(r.peerId)?.size ?? 0) > 0)
      .map(r => `${r.peerId}=${[...(offered.get(r.peerId) ?? [])].sort().join('+')}`)
      .sort()
    const key =
      [...new Set([...executors, me])].sort().join(',') + (offerKey.length > 0 ? `|${offerKey.join(',')}` : '')
    if (key !== viewKey) {
      viewKey = key
      viewSince = now
    }
    return executors
  }
  const stable = (now: number): boolean =>
    now - upSince >= stableViewMs(view.presenceIntervalMs()) && now - viewSince >= VIEW_UNCHANGED_MS
  const seenAt = (task: string): number => {
    let t = firstSeen.get(task)
    if (t === undefined) {
      t = view.now()
      firstSeen.set(task, t)
      if (firstSeen.size > 10_000) firstSeen.delete(firstSeen.keys().next().value as string)
    }
    return t
  }
  const standing = (plan: PlanId, task: string, claim: EventId): 'owner' | 'was-owner' | 'lost' => {
    const t = view.tree(plan)?.tasks.find(x => x.id === task)
    const chain = t?.chains[t.chains.length - 1]
    if (chain?.claim === claim && chain.end === null && t?.status === 'claimed') return 'owner'
    return t?.chains.some(c => c.claim === claim) === true ? 'was-owner' : 'lost'
  }
  const noteFull = (plan: PlanId, at: number): void => {
    if (fullAt.size >= 1_000 && !fullAt.has(plan)) fullAt.clear()
    fullAt.set(plan, at)
  }
  const freeing = (plan: PlanId): void => {
    const t = view.tree(plan)
    if (t === undefined) return
    const mine = t.tasks.filter(x => {
      const c = x.chains[x.chains.length - 1]
      return x.status === 'claimed' && c?.owner === me && c.end === null
    }).length
    if (mine >= t.params.maxClaimsPerExecutor) noteFull(plan, view.now())
  }

  return {
    decide: (tree, now) => {
      const executors = noteView(now)
      if (finder.current() === null) return []
      const lagMs = view.lagMs()
      const busy = [...working.values()].filter(
        w => w.plan === tree.plan && standing(w.plan, w.task, w.claim) === 'owner'
      ).length
      return decideExecutor(tree, me, now, executors, busy, seenAt, propagationWait(STAGGER_MS, lagMs), {
        stableView: stable(now),
        lagMs,
        workingOn: task => working.has(`${tree.plan}:${task}`),
        heardAt: seenAt,
        wake: at => {
          if (wakeAt === null || at < wakeAt) wakeAt = at
        },
        lastFullMs: fullAt.get(tree.plan),
        full: at => {
          noteFull(tree.plan, at)
        },
        offers: NOTHING,
        offersOf: peer => offered.get(peer) ?? NOTHING
      })
    },
    nextWakeAt: () => {
      const at = wakeAt
      wakeAt = null
      return at
    },
    viewKey: now => {
      noteView(now)
      return `${viewKey}|${stable(now) ? 'stable' : 'changing'}|${finder.current() === null ? 'no agent' : 'agent'}`
    },
    tick: now => {
      noteView(now)
      for (const w of working.values()) w.check()
    },
    stop: () => {
      for (const w of working.values()) w.stop()
    },
    act: async (intent: ClaimIntent, tree) => {
      const link = finder.current()
      if (link === null) return
      const cites = intent.prev === null ? intent.task.evidence : [...intent.task.evidence, intent.prev]
      const { event: claim } = await view.publish('task-claimed', intent.plan, cites, {
        task: intent.task.id,
        prev: intent.prev
      })
      if (intent.confirm) await sleep(view.scheduler, propagationWait(CONFIRM_MS, view.lagMs()))
      const now = view.tree(intent.plan)
      if (now !== undefined && isIdle(now)) {
        if (now.status === 'budget-exhausted')
          await view.publish('task-released', intent.plan, [claim.id], {
            task: intent.task.id,
            claim: claim.id,
            reason: 'the plan ran out of budget'
          })
        say(`not executing "${intent.task.id.slice(0, 8)}": the plan is ${now.status}`)
        return
      }
      if (standing(intent.plan, intent.task.id, claim.id) !== 'owner') {
        say(`lost the claim race for a task of plan ${intent.plan.slice(0, 8)}; another executor holds it`)
        return
      }
      const fresh = now ?? tree
      const nodes = nodeMap(fresh)
      const node = nodes.get(intent.task.node)
      if (node === undefined) throw new Error(`task ${intent.task.id} has no node`)
      const abort = new AbortController()
      let last: PlanEvent = claim
      let renewing = false
      const renewEveryMs = Math.max(500, Math.floor(tree.params.leaseMs / 3))
      const key = `${intent.plan}:${intent.task.id}`
      working.set(key, {
        plan: intent.plan,
        task: intent.task.id,
        claim: claim.id,
        // On every pass: stop when the claim or the plan is gone; renew the lease while the agent works.
        check: () => {
          const s = standing(intent.plan, intent.task.id, claim.id)
          if (s !== 'owner') {
            // Nothing of this claim is published yet, so an ended chain was taken over (its lease lapsed).
            abort.abort(
              s === 'lost' ? 'an earlier claim won the task' : 'the lease lapsed and another executor took over'
            )
            return
          }
          const t = view.tree(intent.plan)
          if (t !== undefined && isIdle(t)) {
            abort.abort(`the plan is ${t.status}`)
            return
          }
          if (renewing || view.now() - last.env.hlc.ms < renewEveryMs) return
          // A renewal stamped past the claim's maxClaimMs is refused: the deadline below ends the task first.
          if (view.now() >= claim.env.hlc.ms + tree.params.maxClaimMs - 250) return
          renewing = true
          view
            .publish('claim-renewed', intent.plan, [claim.id, last.id], {
              task: intent.task.id,
              claim: claim.id,
              prev: last.id
            })
            .then(
              r => {
                last = r.event
              },
              (err: Error) => {
                say(`could not renew a lease: ${err.message}`)
              }
            )
            .finally(() => {
              renewing = false
            })
        },
        stop: () => {
          abort.abort('the node is stopping')
        }
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
        // Done before the lease the last renewal allows runs out, with time left to publish.
        const deadlineMs =
          claim.env.hlc.ms + tree.params.maxClaimMs - Math.min(2_000, Math.floor(tree.params.leaseMs / 2))
        outcome = await runAgentTask(link, message, {
          signal: abort.signal,
          silenceMs: opts.silenceMs,
          deadlineMs,
          now: () => view.now()
        })
      } finally {
        working.delete(key)
      }
      const where = `"${node.title}"`
      if (outcome.kind === 'stopped') {
        say(`stopped ${where}: ${outcome.reason}; the agent's task is cancelled`)
        return
      }
      if (standing(intent.plan, intent.task.id, claim.id) !== 'owner') {
        say(`dropped what came of ${where}: the claim ended while the agent worked`)
        return
      }
      freeing(intent.plan)
      if (outcome.kind === 'completed') {
        await view.publish('result-reported', intent.plan, [claim.id, last.id], {
          task: intent.task.id,
          claim: claim.id,
          output: fitOutput(outcome.output),
          usage: ZERO_USAGE,
          model: link.model,
          source: 'llm'
        })
        say(`done ${where} (by A2A agent "${link.name}")`)
      } else if (outcome.kind === 'unreachable') {
        await view.publish('task-released', intent.plan, [claim.id, last.id], {
          task: intent.task.id,
          claim: claim.id,
          reason: cut(outcome.reason, MAX_REASON_CHARS)
        })
        say(`released ${where}: ${outcome.reason}`)
        finder.lost(outcome.reason)
      } else {
        await view.publish('task-failed', intent.plan, [claim.id, last.id], {
          task: intent.task.id,
          claim: claim.id,
          error: cut(outcome.reason, MAX_REASON_CHARS),
          usage: ZERO_USAGE
        })
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
