/**
 * What the A2A server reads from a client's message: the goal and its plan
 * parameters, a follow-up's one change, a task handed over by another
 * swarm's executor, a task id. Each mistake is an A2A error that says what
 * to do.
 */
import * as z from 'zod'
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors'
import { MAX_GOAL_CHARS } from '../core/limits.js'
import { SUBMIT } from '../mcp/tools/submit-args.js'
import { taskTextWithin } from './agent-client.js'
import type { Message } from '@a2a-js/sdk'
import type { PlanId } from '../core/events.js'

/** A new goal's plan parameters in a data part: plan_submit's, less the goal, plus `budget` for budgetTokens. */
export const GOAL_DATA = SUBMIT.omit({ goal: true })
  .extend({ budget: z.number().int().nonnegative().optional().describe('token budget (same as budgetTokens)') })
  .strict()

/** A follow-up on a plan: one change at a time. */
export const FOLLOW_UP = z
  .object({
    budgetTokens: z.number().int().positive().optional(),
    budget: z.number().int().positive().optional(),
    committee: z.array(z.string()).optional(),
    quorum: z.number().int().positive().optional(),
    retry: z.string().optional(),
    reason: z.string().optional()
  })
  .strict()

/**
 * The data part with which another swarm's --a2a-agent executor hands over
 * one of its tasks (agent-client.ts's taskMessage): not plan parameters.
 */
const HANDED = z.object({
  plan: z.string(),
  task: z.string(),
  kind: z.enum(['leaf', 'rollup']),
  goal: z.string(),
  path: z.array(z.string()),
  title: z.string(),
  detail: z.string(),
  inputs: z.array(z.object({ title: z.string(), output: z.string() }))
})

export function zodMessage(err: z.ZodError, what: string, keys: readonly string[]): string {
  const issues = err.issues.map(i => `${i.path.join('.') || '(the part)'}: ${i.message}`).join('; ')
  return `${what}: ${issues} (the keys it takes: ${keys.join(', ')})`
}

export function planIdOf(raw: string, field = 'id'): PlanId {
  if (!/^[0-9a-f]{64}$/.test(raw))
    throw new TaskNotFoundError(
      `${field} ${JSON.stringify(raw.slice(0, 80))} is no task here: a task id is a plan id (64 hex digits); ` +
        'list them with ListTasks'
    )
  return raw as PlanId
}

/**
 * The text and data of a client's message. A task handed over by another
 * swarm's executor becomes its goal, cut to fit: the text part it comes
 * with quotes every input in full, often more than a goal may hold.
 */
export function partsOf(message: Message): { text: string; data: Record<string, unknown> | undefined } {
  const texts: string[] = []
  let data: Record<string, unknown> | undefined
  for (const p of message.parts) {
    const c = p.content
    if (c === undefined) continue
    if (c.$case === 'text') texts.push(c.value)
    else if (c.$case === 'data') {
      const v = c.value as unknown
      if (typeof v !== 'object' || v === null || Array.isArray(v))
        throw new RequestMalformedError(
          'a data part must hold a JSON object of plan parameters, e.g. {"maxDepth": 2, "budgetTokens": 500000}'
        )
      data = { ...data, ...(v as Record<string, unknown>) }
    } else
      throw new ContentTypeNotSupportedError(
        `a ${c.$case} part cannot be read here: send the goal as a text part and plan parameters as a data part`
      )
  }
  if (data === undefined || !('planSwarm' in data)) return { text: texts.join('\n').trim(), data }
  const { planSwarm, ...rest } = data
  const handed = HANDED.safeParse(planSwarm)
  if (!handed.success)
    throw new RequestMalformedError(
      zodMessage(handed.error, 'the planSwarm data part (a task from another swarm)', Object.keys(HANDED.shape))
    )
  return { text: taskTextWithin(handed.data, MAX_GOAL_CHARS), data: Object.keys(rest).length > 0 ? rest : undefined }
}
