import { treeOf } from './plan-input.js'
import { confirmHeld } from './readiness.js'
import { ok } from './tool-result.js'
import type * as z from 'zod'
import type { NodeView } from '../../ports/node-view.js'
import type { PlanTree } from '../../core/tree.js'
import type { SwarmTool } from './swarm-tool.js'

/** What an author action refused for a plan of another key tells the caller to do. */
export const HINT = 'use the key of the MCP server that submitted it (its --data-dir)'

/** An author tool as written: its listing and the action it publishes on the plan's tree. */
export type AuthorToolSpec<S extends z.ZodObject<{ plan: z.ZodString }>> = Omit<SwarmTool<S>, 'handle'> & {
  /** Publish the action on a plan this node holds; returns what was done, in words. */
  act(view: NodeView, tree: PlanTree, args: z.output<S>): Promise<string>
}

/**
 * A tool by which the author of a plan (this server's key) acts on it: the
 * plan must be held here, and the answer comes only once another peer holds
 * the action, so a tool that returns never acted on this node alone.
 */
export function authorTool<S extends z.ZodObject<{ plan: z.ZodString }>>(spec: AuthorToolSpec<S>): SwarmTool<S> {
  const { act, ...listing } = spec
  return {
    ...listing,
    handle: async ({ view }, a) => {
      const tree = treeOf(view, a.plan)
      const done = await act(view, tree, a)
      const heldBy = await confirmHeld(view, 30_000)
      return ok(`${done}; held by ${heldBy}`, { plan: tree.plan, done, heldBy })
    }
  }
}
