/**
 * A task run with tools, offline: no model chooses anything, so the calls
 * are fixed. For each server the executor offers (in the order listed), the
 * first tool that needs no arguments (its schema requires none: a list or
 * status tool) is called with `{}`, at most three calls in all. The output is
 * the offline execute output plus a section quoting what the tools returned,
 * which is how an offline run shows a tool's result in its deliverable.
 */
import { MAX_OUTPUT_CHARS } from '../core/limits.js'
import type { ToolCallRecord } from '../core/events.js'
import type { ToolDef, ToolLoopOptions, ToolLoopOutput } from '../llm/types.js'
import { runToolCall } from '../llm/agent-loop.js'
import { LlmAbortedError } from '../llm/errors.js'
import { ZERO_USAGE, type ExecuteInput } from '../llm/types.js'
import { executeOffline, TOOLS_HEADER } from './execute.js'
import { safeSlice } from './text.js'

/** Calls one offline task makes at most. */
export const MAX_OFFLINE_TOOL_CALLS = 3
/** Characters of each tool result the offline output quotes. */
export const OFFLINE_TOOL_QUOTE_CHARS = 300

/** A tool whose input schema requires no property, so `{}` is a valid call. */
export function needsNoArgs(def: ToolDef): boolean {
  const required = def.schema.required
  return required === undefined || (Array.isArray(required) && required.length === 0)
}

/** The tools the offline provider calls: per server, its first tool that needs no arguments; at most three. */
export function offlineToolChoice(defs: readonly ToolDef[]): ToolDef[] {
  const seen = new Set<string>()
  const out: ToolDef[] = []
  for (const def of defs) {
    if (seen.has(def.server) || !needsNoArgs(def)) continue
    seen.add(def.server)
    out.push(def)
    if (out.length === MAX_OFFLINE_TOOL_CALLS) break
  }
  return out
}

/** The offline tool run (without the model label, which the provider adds). */
export async function executeWithToolsOffline(
  input: ExecuteInput,
  opts: ToolLoopOptions
): Promise<Omit<ToolLoopOutput, 'model'>> {
  if (opts.signal?.aborted === true) throw new LlmAbortedError(ZERO_USAGE)
  const calls: ToolCallRecord[] = []
  const lines: string[] = []
  for (const def of offlineToolChoice(opts.tools.list())) {
    const r = await runToolCall(opts.tools, def, {}, { limits: opts.limits, signal: opts.signal, usage: ZERO_USAGE })
    calls.push(r.record)
    const quoted = JSON.stringify(safeSlice(r.text, OFFLINE_TOOL_QUOTE_CHARS))
    const cut =
      r.text.length > OFFLINE_TOOL_QUOTE_CHARS
        ? ` (first ${OFFLINE_TOOL_QUOTE_CHARS} of ${r.text.length} characters)`
        : ''
    lines.push(`- ${def.server}/${def.name} ${r.ok ? 'returned' : 'failed'}${cut}: ${quoted}`)
  }
  const section = [
    TOOLS_HEADER,
    ...(lines.length === 0 ? ['- none (no tool that needs no arguments is offered)'] : lines)
  ]
  const base = executeOffline(input)
  // Before the outline: a later roll-up reads the outline's lines back (execute.ts).
  const at = base.indexOf('\nOutline:\n')
  const head = at < 0 ? base : base.slice(0, at)
  const tail = at < 0 ? '' : base.slice(at)
  const middle = `\n${section.join('\n')}`
  const room = MAX_OUTPUT_CHARS - head.length - middle.length
  const output = room >= 0 ? head + middle + safeSlice(tail, room) : safeSlice(head + middle, MAX_OUTPUT_CHARS)
  return { output, usage: ZERO_USAGE, source: 'offline', calls, steps: 0, cache: { readTokens: 0, writeTokens: 0 } }
}
