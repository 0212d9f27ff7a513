/**
 * A server's tools, listed and checked. The listing is read with a loose
 * schema (not the SDK's listTools, whose strict check rejects the whole list
 * without naming the tool), so a malformed tool can be named in the
 * message, and only the tools the operator allows are offered.
 */
import * as z from 'zod'
import { MAX_TOOL_NAME_CHARS, NEED_PATTERN } from '../core/limits.js'
import type { Client } from '@modelcontextprotocol/client'
import type { ServerConfig } from './config.js'
import type { ToolDef } from '../llm/types.js'

const PAGE = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() })
const MAX_PAGES = 64

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Whether `name` can be the tool part of a `server/tool` capability. */
export function isToolName(name: string): boolean {
  return name.length <= MAX_TOOL_NAME_CHARS && !name.includes('/') && NEED_PATTERN.test(name)
}

/**
 * The tools `config` offers from `client`'s server (all it lists, or those
 * in `allow`). Throws an Error naming the tool and the fix when the listing
 * fails, a tool is malformed, or `allow` names a tool the server lacks.
 */
export async function listServerTools(client: Client, config: ServerConfig, timeoutMs: number): Promise<ToolDef[]> {
  if (client.getServerCapabilities()?.tools === undefined)
    throw new Error(
      'the server offers no tools (it does not declare the tools capability): check that it is the right server'
    )
  const raw: unknown[] = []
  let cursor: string | undefined
  for (let page = 0; ; page++) {
    if (page === MAX_PAGES) throw new Error(`tools/list did not end after ${MAX_PAGES} pages`)
    let answer: z.infer<typeof PAGE>
    try {
      answer = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, PAGE, {
        timeout: timeoutMs
      })
    } catch (err) {
      throw new Error(`tools/list failed: ${err instanceof Error ? err.message : String(err)}`)
    }
    raw.push(...answer.tools)
    cursor = answer.nextCursor
    if (cursor === undefined) break
  }

  const byName = new Map<string, Record<string, unknown>>()
  for (const t of raw) {
    if (!isRecord(t) || typeof t.name !== 'string')
      throw new Error('tools/list gave a tool without a name: fix the server')
    if (byName.has(t.name)) throw new Error(`tools/list gives the tool "${t.name}" twice: fix the server`)
    byName.set(t.name, t)
  }
  if (byName.size === 0) throw new Error('the server lists no tools: check that it is the right server')
  const have = [...byName.keys()].sort().join(', ')
  const missing = (config.allow ?? []).filter(n => !byName.has(n))
  if (missing.length > 0)
    throw new Error(
      `"allow" names ${missing.map(n => `"${n}"`).join(', ')}, which the server does not have; it has: ${have}`
    )
  const offered = config.allow ?? [...byName.keys()]
  return offered.map(name => {
    const t = byName.get(name) as Record<string, unknown>
    const hint = config.allow === null ? ', or leave it out with "allow"' : ''
    if (!isToolName(name))
      throw new Error(
        `the tool name ${JSON.stringify(name)} is not usable (tool names are letters, digits, ".", "_" and "-", ` +
          `starting with a letter or digit, at most ${MAX_TOOL_NAME_CHARS} characters): rename it in the server${hint}`
      )
    const schema = t.inputSchema
    if (!isRecord(schema) || schema.type !== 'object')
      throw new Error(
        `the tool "${name}" has an inputSchema that is not a JSON Schema object with "type": "object" ` +
          `(it is ${JSON.stringify(schema)?.slice(0, 100)}): fix the server${hint}`
      )
    const description = typeof t.description === 'string' ? t.description : typeof t.title === 'string' ? t.title : ''
    return { server: config.name, name, description, schema }
  })
}
