/**
 * An example MCP server an executor can use as a tool: a folder of Markdown
 * notes, served on stdio. Four tools: list_notes, read_note, search_notes
 * (read only) and add_note (it writes a file). examples/tools.json starts it
 * and offers only the first three.
 *
 *   node --import tsx examples/notes-server.ts --dir examples/notes
 *
 * The folder is `--dir DIR`, else $NOTES_DIR, else ./notes (relative to the
 * working directory). A note is a `.md` file in it; its name is the file
 * name without `.md`. Names are plain file names: no folders, no `..`.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import * as z from 'zod'
import { McpServer } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import type { CallToolResult } from '@modelcontextprotocol/server'

const at = process.argv.indexOf('--dir')
const DIR = resolve(at >= 0 ? (process.argv[at + 1] ?? '') : (process.env.NOTES_DIR ?? 'notes'))

/** A note's name: letters, digits, spaces, ".", "_" and "-", starting with a letter or digit; never a path. */
const NAME = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$/, 'a note name is letters, digits, spaces, ".", "_" and "-" (no folders)')
  .refine(n => !n.includes('..'), 'a note name may not contain ".."')
  .describe('the note, e.g. "team-meeting" (with or without .md)')

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] })
const failure = (t: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text: t }] })
const bare = (name: string): string => name.replace(/\.md$/i, '')

/** The notes' names, sorted; none when the folder does not exist yet. */
function noteNames(): string[] {
  try {
    return readdirSync(DIR, { withFileTypes: true })
      .filter(e => e.isFile() && e.name.endsWith('.md'))
      .map(e => bare(e.name))
      .sort()
  } catch {
    return []
  }
}

const read = (name: string): string | undefined => {
  try {
    return readFileSync(join(DIR, `${bare(name)}.md`), 'utf8')
  } catch {
    return undefined
  }
}

function build(): McpServer {
  const server = new McpServer({ name: 'notes', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.registerTool(
    'list_notes',
    {
      description: 'Lists the notes: each name with its first line.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true }
    },
    () => {
      const names = noteNames()
      if (names.length === 0) return text(`there are no notes in ${DIR}`)
      return text(names.map(n => `${n}: ${(read(n) ?? '').split('\n', 1)[0]?.trim() ?? ''}`).join('\n'))
    }
  )
  server.registerTool(
    'read_note',
    {
      description: 'Reads one note whole.',
      inputSchema: z.object({ name: NAME }),
      annotations: { readOnlyHint: true }
    },
    a => {
      const body = read(a.name)
      if (body === undefined)
        return failure(`there is no note "${bare(a.name)}"; the notes are: ${noteNames().join(', ')}`)
      return text(body)
    }
  )
  server.registerTool(
    'search_notes',
    {
      description:
        'Finds the lines of every note that contain the query (ignoring case), with the note and line number.',
      inputSchema: z.object({ query: z.string().min(1).describe('the text to look for') }),
      annotations: { readOnlyHint: true }
    },
    a => {
      const q = a.query.toLowerCase()
      const hits = noteNames().flatMap(n =>
        (read(n) ?? '')
          .split('\n')
          .flatMap((line, i) => (line.toLowerCase().includes(q) ? [`${n}:${i + 1}: ${line.trim()}`] : []))
      )
      return text(hits.length === 0 ? `no note mentions "${a.query}"` : hits.join('\n'))
    }
  )
  server.registerTool(
    'add_note',
    {
      description: 'Writes a new note (it never overwrites one).',
      inputSchema: z.object({ name: NAME, text: z.string().describe('the Markdown text of the note') }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false }
    },
    a => {
      const name = bare(a.name)
      mkdirSync(DIR, { recursive: true })
      try {
        writeFileSync(join(DIR, `${name}.md`), a.text.endsWith('\n') ? a.text : `${a.text}\n`, { flag: 'wx' })
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        return failure(code === 'EEXIST' ? `a note "${name}" exists already: choose another name` : String(err))
      }
      return text(`added the note "${name}"`)
    }
  )
  return server
}

process.stderr.write(`notes server: serving ${DIR} on stdio\n`)
serveStdio(() => build(), {
  onerror: err => {
    process.stderr.write(`notes server: protocol error: ${err.message}\n`)
  }
})
