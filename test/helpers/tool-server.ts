/**
 * A stand-in MCP server for the tool host's tests: real child processes,
 * with tools that answer, hang, crash, fail or flood on purpose.
 *
 *   node --import tsx test/helpers/tool-server.ts              (stdio)
 *   node --import tsx test/helpers/tool-server.ts --http 0     (Streamable HTTP on 127.0.0.1; the URL is
 *                                                               stdout's first line)
 *
 * Tools: `echo` {text}, `add` {a, b}, `slow` {ms} (a cancelled call is
 * recorded as `slow-cancelled`), `crash` {} (the process exits mid-call),
 * `huge` {bytes}, `fail` {} (an isError result).
 *
 * Env switches: TOOL_SERVER_BAD_SCHEMA=1 also lists a tool `broken` whose
 * inputSchema is not an object schema (the SDK's registerTool cannot make
 * one, so tools/list is answered by hand); TOOL_SERVER_EXIT_AT_START=1 exits
 * before initializing; TOOL_SERVER_TAG is written to stderr at start;
 * TOOL_SERVER_CALLS_FILE=path gets one JSON line per call {tool, args, pid, at}.
 */
import { appendFileSync } from 'node:fs'
import { createServer } from 'node:http'
import * as z from 'zod'
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { toNodeHandler } from '@modelcontextprotocol/node'
import type { CallToolResult } from '@modelcontextprotocol/server'

const env = process.env
process.stderr.write(`tool-server ${process.pid} starting${env.TOOL_SERVER_TAG ? ` (${env.TOOL_SERVER_TAG})` : ''}\n`)
if (env.TOOL_SERVER_EXIT_AT_START === '1') {
  process.stderr.write('tool-server: exiting at start as TOOL_SERVER_EXIT_AT_START asks\n')
  process.exit(3)
}

function record(tool: string, args: unknown): void {
  const file = env.TOOL_SERVER_CALLS_FILE
  if (file !== undefined && file !== '')
    appendFileSync(file, JSON.stringify({ tool, args, pid: process.pid, at: Date.now() }) + '\n')
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] })

function build(): McpServer {
  const server = new McpServer({ name: 'tool-server', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.registerTool(
    'echo',
    { description: 'Answers with the text it is given.', inputSchema: z.object({ text: z.string() }) },
    a => {
      record('echo', a)
      return text(a.text)
    }
  )
  server.registerTool(
    'add',
    { description: 'Adds two numbers.', inputSchema: z.object({ a: z.number(), b: z.number() }) },
    a => {
      record('add', a)
      return text(String(a.a + a.b))
    }
  )
  server.registerTool(
    'slow',
    { description: 'Waits ms milliseconds, then answers.', inputSchema: z.object({ ms: z.number().int().min(0) }) },
    async (a, ctx) => {
      record('slow', a)
      const signal = ctx.mcpReq.signal
      const done = await new Promise<boolean>(resolve => {
        const timer = setTimeout(() => resolve(true), a.ms)
        signal.addEventListener('abort', () => {
          clearTimeout(timer)
          resolve(false)
        })
      })
      if (!done) record('slow-cancelled', a)
      return text(done ? `waited ${a.ms} ms` : 'cancelled')
    }
  )
  server.registerTool('crash', { description: 'Exits the process mid-call.', inputSchema: z.object({}) }, a => {
    record('crash', a)
    process.stderr.write('tool-server: crashing on purpose\n')
    process.exit(1)
  })
  server.registerTool(
    'huge',
    {
      description: 'Answers with a text of that many bytes.',
      inputSchema: z.object({ bytes: z.number().int().min(0) })
    },
    a => {
      record('huge', a)
      return text('x'.repeat(a.bytes))
    }
  )
  server.registerTool('fail', { description: 'Fails on purpose.', inputSchema: z.object({}) }, a => {
    record('fail', a)
    return { isError: true, content: [{ type: 'text', text: 'it failed on purpose' }] }
  })
  if (env.TOOL_SERVER_BAD_SCHEMA === '1') {
    // The high-level API builds only valid schemas: answer tools/list by hand, with the real tools plus one whose
    // inputSchema is a string schema (not type "object").
    server.server.setRequestHandler('tools/list', () => ({
      tools: [
        { name: 'echo', description: 'Answers with the text it is given.', inputSchema: { type: 'object' } },
        // The cast is the point: the SDK's types (and its registerTool) allow only object schemas.
        {
          name: 'broken',
          description: 'A malformed schema.',
          inputSchema: { type: 'string' } as unknown as { type: 'object' }
        }
      ]
    }))
  }
  return server
}

const at = process.argv.indexOf('--http')
if (at < 0) {
  serveStdio(() => build(), {
    onerror: err => {
      process.stderr.write(`tool-server: protocol error: ${err.message}\n`)
    }
  })
} else {
  const node = toNodeHandler(createMcpHandler(() => build(), { legacy: 'stateless' }))
  const http = createServer((req, res) => {
    Promise.resolve(node(req, res)).catch((err: Error) => {
      res.statusCode = 500
      res.end(err.message)
    })
  })
  http.listen(Number(process.argv[at + 1] ?? '0'), '127.0.0.1', () => {
    const addr = http.address()
    const port = typeof addr === 'object' && addr !== null ? addr.port : 0
    process.stdout.write(`http://127.0.0.1:${port}/mcp\n`)
  })
  process.on('SIGTERM', () => {
    http.closeAllConnections()
    http.close()
    process.exit(0)
  })
}
