import * as z from 'zod'
import { ToolInputError } from './tool-result.js'
import type { NodeView } from '../../ports/node-view.js'
import type { PlanId } from '../../core/events.js'
import type { PlanTree } from '../../core/tree.js'

/** The `plan` argument of every tool that acts on one plan, described once so all list it alike. */
export const PLAN_ID = z.string().describe('a plan id: 64 hex digits, as plan_submit or plan_list return it')

/** An optional whole number of at least 0, with what it means. */
export const int = (what: string): z.ZodOptional<z.ZodNumber> =>
  z.number().int().nonnegative().optional().describe(what)

/** A plan id the caller sent, refused with a tool error unless it is 64 lower-case hex digits. */
export function planId(raw: string): PlanId {
  if (!/^[0-9a-f]{64}$/.test(raw))
    throw new ToolInputError(
      `${JSON.stringify(raw.slice(0, 80))} is not a plan id (64 hex digits): list the plans with plan_list`
    )
  return raw as PlanId
}

/** The tree of a plan this node holds; a tool error (not a crash) when it holds none by that id. */
export function treeOf(view: NodeView, raw: string): PlanTree {
  const id = planId(raw)
  const tree = view.loadTree(id)
  if (tree === undefined)
    throw new ToolInputError(
      `plan ${id.slice(0, 12)} is not held by this node: check the id with plan_list (a plan ` +
        `just submitted elsewhere arrives within seconds)`
    )
  return tree
}
