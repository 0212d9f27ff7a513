import * as z from 'zod'
import { PLAN_ID, int, planId } from './plan-input.js'
import { swarmTool } from './swarm-tool.js'
import { ToolInputError, ok } from './tool-result.js'

/** Long texts in an event body cut to 300 characters, at any depth, so a page stays small. */
function cut(v: unknown): unknown {
  return typeof v === 'string'
    ? v.length > 300
      ? `${v.slice(0, 300)}…`
      : v
    : Array.isArray(v)
      ? v.map(cut)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]))
        : v
}

/** A plan's signed events in stamp order, a page at a time (at most 200), with the offset of the next page. */
export const planEvents = swarmTool({
  name: 'plan_events',
  title: "A plan's events",
  description:
    'The signed events of a plan in stamp order, a page at a time (offset, limit at most 200): ' +
    'type, author, stamp, deps and body (long texts cut to 300 characters).',
  inputSchema: z.object({
    plan: PLAN_ID,
    offset: int('first event to return (default 0)'),
    limit: int('events per page (default 50, at most 200)')
  }),
  annotations: { readOnlyHint: true },
  handle: async ({ view }, { plan, offset, limit }) => {
    const id = planId(plan)
    const events = view.planEvents(id)
    if (events === undefined)
      throw new ToolInputError(`plan ${id.slice(0, 12)} is not held by this node: check the id with plan_list`)
    const from = offset ?? 0
    const n = Math.min(200, Math.max(1, limit ?? 50))
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
  }
})
