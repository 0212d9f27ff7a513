import type * as z from 'zod'
import type { CallToolResult, ServerContext, ToolAnnotations } from '@modelcontextprotocol/server'
import type { NodeView } from '../../ports/node-view.js'
import type { OutsideExecutor } from '../../../roles/outside-executor.js'
import type { GoalRate } from '../../author/goal-rate.js'

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

/**
 * One MCP tool: what a client lists (name, title, description, input schema,
 * annotations) and the handler that answers a call. The handler may throw a
 * `ToolInputError` for a mistake of the caller; registration turns any throw
 * into a tool error, so a handler never has to catch.
 */
export interface SwarmTool<S extends z.ZodObject = z.ZodObject> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly inputSchema: S
  readonly annotations?: ToolAnnotations
  handle(tools: SwarmTools, args: z.output<S>, ctx: ServerContext): Promise<CallToolResult>
}

/** A tool as written, its handler's arguments typed from its schema. */
export function swarmTool<S extends z.ZodObject>(tool: SwarmTool<S>): SwarmTool<S> {
  return tool
}
