import { logger } from '@libp2p/logger'
import { toolsLine } from './render.js'
import { MAX_OUTPUT_CHARS, MAX_REASON_CHARS } from '../src/core/limits.js'
import { isIdle, nearBudget, nodeMap, pathOf, inputsOf } from './plan-context.js'
import { MAX_EVENT_BYTES, MAX_TOOL_RECORDS, MAX_TURNS } from '../src/core/limits.js'
import { ZERO_USAGE } from '../src/llm/types.js'
import { createClaimBook } from './claim-book.js'
import type { EventId, PlanId, ResultSource, ToolCallRecord, Usage } from '../src/core/events.js'
import type { ClaimIntent } from './claim-rules.js'
import type { RoleContext, RoleHandler } from './driver.js'

const log = logger('plan-swarm:executor')

/** What a failed call cost, as the provider's errors carry it (usage, and a tool loop's turns). */
function usageOfError(err: unknown): { usage: Usage; turns: number } {
  const e = err as { usage?: Usage; steps?: number }
  const ok = (u: Usage | undefined): u is Usage =>
    u !== undefined && Number.isSafeInteger(u.inputTokens) && Number.isSafeInteger(u.outputTokens)
  return {
    usage: ok(e.usage) ? { inputTokens: e.usage.inputTokens, outputTokens: e.usage.outputTokens } : ZERO_USAGE,
    turns: typeof e.steps === 'number' && Number.isSafeInteger(e.steps) && e.steps > 0 ? e.steps : 1
  }
}

/** The UTF-8 bytes tool call records take in a result event, at most (keys and framing included). */
function recordsBytes(calls: readonly ToolCallRecord[]): number {
  return calls.reduce((n, c) => n + 64 + Buffer.byteLength(JSON.stringify(c)), 0)
}

/** Cut text to at most `maxBytes` of UTF-8, saying so (a result's output beside its tool call records). */
function fitBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text
  let cut = text.slice(0, Math.max(0, Math.floor(maxBytes / 3) - 40))
  while (Buffer.byteLength(cut) > maxBytes - 60) cut = cut.slice(0, -100)
  return `${cut}\n[... cut to fit the event beside its tool calls]`
}

/** Cut text to fit the wire's cap, saying so. */
function fit(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 40)}\n[... cut to fit ${max} characters]`
}

/**
 * The model executor: it claims as every executor does (./claim-book.ts)
 * and does each task with its model (a tool loop when the plan uses tools
 * and it has some). Its work stops when an earlier claim wins, between
 * turns when the plan runs out of budget or stops, and when the node stops;
 * what it produced is published unless an earlier claim won meanwhile.
 */
export function createExecutor(ctx: RoleContext): RoleHandler {
  const view = ctx.view
  const tools = ctx.tools
  const book = createClaimBook(view, {
    say: ctx.say,
    offers: tools === undefined ? undefined : () => new Set(tools.offers()),
    viewChanged: n => {
      log('executors in view: %d', n)
    }
  })
  /** Why a tool loop must stop before its next turn for budget, or null. */
  const outOfBudget = (plan: PlanId, used: Usage): string | null => {
    const t = view.tree(plan)
    if (t === undefined) return null
    if (t.status === 'budget-exhausted') return 'the plan ran out of budget'
    const sum = used.inputTokens + used.outputTokens
    return t.spentTokens + sum >= t.budgetTokens
      ? `stopped between turns: the plan's budget of ${t.budgetTokens} tokens is spent (${t.spentTokens} before this task, ${sum} in it)`
      : null
  }
  /** Why a tool loop must stop because its claim is gone or the plan ended, or null. */
  const lostReason = (plan: PlanId, task: string, claim: EventId): string | null => {
    const t = view.tree(plan)
    if (t !== undefined && isIdle(t)) return `the plan is ${t.status}`
    return book.standing(plan, task, claim) === 'lost' ? 'an earlier claim won' : null
  }

  return {
    decide: book.decide,
    nextWakeAt: book.nextWakeAt,
    viewKey: now => `${book.viewKey(now)}|${tools === undefined ? '' : tools.offers().join(',')}`,
    tick: book.tick,
    stop: book.stop,
    act: async (intent: ClaimIntent, tree) => {
      const claimed = await book.claim(intent)
      if (claimed === null) return
      const claim = claimed.event
      const nodes = nodeMap(tree)
      const node = nodes.get(intent.task.node)
      if (node === undefined) throw new Error(`task ${intent.task.id} has no node`)
      const abort = new AbortController()
      // On every pass: stop at once when an earlier claim turns out to have won; renew the lease when due.
      const hold = book.hold(intent, claim, tree, {
        keep: 'lost',
        abort: () => {
          abort.abort()
        }
      })
      try {
        const provider = nearBudget(tree) ? ctx.provider.downgrade() : ctx.provider
        ctx.say(`executing ${intent.task.kind === 'rollup' ? 'roll-up of ' : ''}"${node.title}"`)
        const input = {
          goal: tree.goal,
          path: pathOf(tree, node, nodes),
          task: { title: node.title, detail: node.detail },
          kind: intent.task.kind,
          inputs: inputsOf(tree, intent.task, nodes)
        }
        const opts = {
          signal: abort.signal,
          maxOutputTokens: tree.params.maxTokensPerCall,
          trace: { plan: intent.plan, for: { slot: 'claim' as const, claim: claim.id } }
        }
        // A plan that uses tools (protocol 3) runs a leaf as a loop with this executor's tools, if it has any.
        const loop =
          tree.params.tools && intent.task.kind === 'leaf' && tools !== undefined && tools.box.list().length > 0
        let out: {
          output: string
          usage: Usage
          model: string
          source: ResultSource
          calls?: readonly ToolCallRecord[]
          steps?: number
        }
        try {
          out = loop
            ? await provider.executeWithTools(input, {
                ...opts,
                tools: tools.box,
                limits: tools.limits,
                beforeTurn: usage =>
                  outOfBudget(intent.plan, usage) ?? lostReason(intent.plan, intent.task.id, claim.id),
                afterTurn: hold.check
              })
            : await provider.execute(input, opts)
        } catch (err) {
          if (abort.signal.aborted) {
            ctx.say(`stopped "${node.title}": an earlier claim won or the node is stopping`)
            return
          }
          if (!hold.settle()) {
            ctx.say(`dropped "${node.title}": an earlier claim won while it ran`)
            return
          }
          const spent = usageOfError(err)
          await hold.publish('task-failed', {
            error: fit((err as Error).message, MAX_REASON_CHARS),
            usage: spent.usage,
            ...(tree.params.tools && spent.turns > 1 ? { turns: Math.min(spent.turns, MAX_TURNS) } : {})
          })
          ctx.say(`"${node.title}" failed: ${(err as Error).message}`)
          return
        }
        if (!hold.settle()) {
          ctx.say(`dropped the result of "${node.title}": an earlier claim won while it ran`)
          return
        }
        const calls = (out.calls ?? []).slice(0, MAX_TOOL_RECORDS)
        await hold.publish('result-reported', {
          output: fitBytes(fit(out.output, MAX_OUTPUT_CHARS), MAX_EVENT_BYTES - 8_192 - recordsBytes(calls)),
          usage: out.usage,
          model: out.model,
          source: out.source,
          ...(tree.params.tools && loop
            ? { toolCalls: calls, turns: Math.min(Math.max(1, out.steps ?? 1), MAX_TURNS) }
            : {})
        })
        if (calls.length > 0) ctx.say(`"${node.title}": ${calls.length} tool call(s): ${toolsLine(calls)}`)
        ctx.say(`done "${node.title}"`)
      } finally {
        hold.drop()
      }
    }
  }
}
