/**
 * Keeps BENCHMARKS.md the page of current figures it says it is: small
 * enough to read (at most 16 KiB), one row per figure with its value, goal,
 * verdict, date, commit and command, and no history in the cells (that goes
 * to docs/benchmarks-history.md).
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const PAGE = readFileSync(new URL('../../BENCHMARKS.md', import.meta.url), 'utf8')
const MAX_BYTES = 16 * 1024
const HEADER = ['figure', 'value', 'goal', 'met', 'date', 'commit', 'command']

/** The cells of a markdown table row, trimmed; a `|` inside backticks stays in its cell. */
function cells(line: string): string[] {
  const out: string[] = []
  let cell = ''
  let code = false
  for (const ch of line.trim().slice(1, -1)) {
    if (ch === '`') code = !code
    if (ch === '|' && !code) {
      out.push(cell.trim())
      cell = ''
    } else cell += ch
  }
  out.push(cell.trim())
  return out
}

const rows = PAGE.split('\n')
  .filter(l => l.startsWith('| '))
  .map(cells)

describe('BENCHMARKS.md', () => {
  it(`is at most ${MAX_BYTES} bytes`, () => {
    expect(Buffer.byteLength(PAGE, 'utf8')).toBeLessThanOrEqual(MAX_BYTES)
  })

  it('has one table whose header names the seven columns', () => {
    expect(rows[0]).toEqual(HEADER)
  })

  it('gives every figure a verdict, a date, a commit and a command', () => {
    const figures = rows.slice(2)
    expect(figures.length).toBeGreaterThan(20)
    for (const row of figures) {
      const [figure, value, goal, met, date, commit, command] = row
      const where = `row "${figure}"`
      expect(row, where).toHaveLength(HEADER.length)
      expect(value, where).not.toBe('')
      // A figure with a goal says whether it met it; one without a goal (none) may leave it empty.
      if (goal !== 'none') expect(met, where).toMatch(/^(met|\*\*missed\*\*|done)( |$)/)
      expect(date, where).toMatch(/^\d{4}-\d{2}-\d{2}$/)
      expect(commit, where).toMatch(/^[0-9a-f]{7,40}\b/)
      expect(command, where).not.toBe('')
    }
  })

  it('keeps history and bookkeeping out of the cells', () => {
    for (const row of rows) {
      const text = row.join(' | ')
      expect(text, text).not.toMatch(/\bbefore:|\bissue \d|#\d{2}\b|\bmachine [AB]\b/i)
    }
  })
})
