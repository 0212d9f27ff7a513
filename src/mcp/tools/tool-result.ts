import { ConfigError } from '../../errors.js'
import type { CallToolResult } from '@modelcontextprotocol/server'
import type { SwarmTools } from './swarm-tool.js'

/** A mistake of the caller: its message says what to do (A2A's server answers it as invalid params too). */
export class ToolInputError extends Error {}

/** A tool's answer: the text a person reads and the same facts as structured content. */
export function ok(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured }
}

function fail(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

/** Run a tool body; a mistake of the caller (or anything else) becomes a tool error, never a crash. */
export async function guarded(
  tools: SwarmTools,
  name: string,
  body: () => Promise<CallToolResult>
): Promise<CallToolResult> {
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
