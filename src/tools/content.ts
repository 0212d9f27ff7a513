/**
 * A tool's answer as the text a model reads. MCP results are lists of
 * content parts (text, images, audio, resources) and maybe structured JSON;
 * the executor's loop gives the model text only, so text parts are kept,
 * binary parts become a one-line placeholder, and the whole is capped so
 * one answer cannot fill the host's memory (the tool loop cuts further).
 */
import type { CallToolResult } from '@modelcontextprotocol/client'
import type { ToolOutcome } from '../llm/types.js'

/** The most of one tool result the host keeps, in UTF-8 bytes. */
export const MAX_KEPT_RESULT_BYTES = 4 * 1024 * 1024

type Part = CallToolResult['content'][number]

/** Bytes of base64 data, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding)
}

function partText(part: Part): string {
  switch (part.type) {
    case 'text':
      return part.text
    case 'image':
    case 'audio':
      return `[${part.type} ${part.mimeType}, ${base64Bytes(part.data)} bytes, not shown]`
    case 'resource': {
      const r = part.resource
      if ('text' in r && typeof r.text === 'string') return r.text
      const size = 'blob' in r && typeof r.blob === 'string' ? `, ${base64Bytes(r.blob)} bytes` : ''
      return `[resource ${r.uri}${r.mimeType === undefined ? '' : ` ${r.mimeType}`}${size}, not shown]`
    }
    case 'resource_link':
      return `[resource link ${part.uri}${part.name === '' ? '' : ` (${part.name})`}]`
    default:
      return `[${(part as { type: string }).type} content, not shown]`
  }
}

/** `text` cut to at most `max` UTF-8 bytes, never inside a character. */
export function cutUtf8(text: string, max: number): string {
  const buf = Buffer.from(text, 'utf8')
  if (buf.length <= max) return text
  let end = max
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--
  return buf.subarray(0, end).toString('utf8')
}

/**
 * The text of a result: its parts joined with blank lines, structured
 * content as JSON when no part is text, cut at `maxBytes` with a note.
 */
export function resultText(result: CallToolResult, maxBytes = MAX_KEPT_RESULT_BYTES): string {
  const content = Array.isArray(result.content) ? result.content : []
  const parts = content.map(partText)
  if (!content.some(p => p.type === 'text') && result.structuredContent !== undefined)
    parts.unshift(JSON.stringify(result.structuredContent))
  const text = parts.join('\n\n')
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes <= maxBytes) return text
  return `${cutUtf8(text, maxBytes)}\n\n[cut: the result had ${bytes} bytes; the first ${maxBytes} are kept]`
}

/** A result as the loop's outcome: `isError` makes it a failure, with the tool's own text. */
export function outcomeOf(result: CallToolResult, maxBytes = MAX_KEPT_RESULT_BYTES): ToolOutcome {
  const text = resultText(result, maxBytes)
  if (result.isError === true)
    return { ok: false, text: text === '' ? 'the tool reported an error without text' : text }
  return { ok: true, text: text === '' ? '(the tool answered with no content)' : text }
}
