/**
 * The quick benchmark reads its goals and last figures from BENCHMARKS.md: every row it names is there, and a goal
 * written as the table writes them (`≤ 1.3 / ≤ 1.5`, `≥ 200k/s`, `none`) is judged as the row means it.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { QUICK_ROWS, bookRow, goalMet } from '../../bench/quick/book.js'
import { REPO_ROOT } from '../helpers/cli-process.js'

const BOOK = readFileSync(join(REPO_ROOT, 'BENCHMARKS.md'), 'utf8')

describe('BENCHMARKS.md rows for bench quick', () => {
  it('finds a row for every figure quick prints', () => {
    for (const [name, prefixes] of Object.entries(QUICK_ROWS)) {
      const row = bookRow(BOOK, prefixes)
      expect(row, name).toBeDefined()
      expect(row?.date, name).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    }
  })

  it('takes the first prefix any row starts with, and the cells in order', () => {
    const book = [
      '| figure | value | goal | | date | commit | command |',
      '| --- | --- | --- | --- | --- | --- | --- |',
      '| a: at 40 | 46.9 s | ≤ 30 s | **missed** | 2026-12-01 | afe8f7e | `x` |',
      '| a: at 24 | 20.1 s | ≤ 30 s | met | 2026-12-07 | 1234567 | `y` |'
    ].join('\n')
    expect(bookRow(book, ['a: at 24', 'a: at 40'])?.value).toBe('20.1 s')
    expect(bookRow(book, ['a: at 10', 'a: at 40'])).toMatchObject({
      value: '46.9 s',
      goal: '≤ 30 s',
      commit: 'afe8f7e'
    })
    expect(bookRow(book, ['b:'])).toBeUndefined()
  })
})

describe('goalMet', () => {
  it('judges bounds, one per figure', () => {
    expect(goalMet('≥ 200k/s', [212_778])).toBe(true)
    expect(goalMet('≥ 200k/s', [97_790])).toBe(false)
    expect(goalMet('≤ 1.3 / ≤ 1.5', [1.44, 0.26])).toBe(false)
    expect(goalMet('≤ 1.3 / ≤ 1.5', [1.2, 1.5])).toBe(true)
    expect(goalMet('≤ 30 s', [46.9])).toBe(false)
    expect(goalMet('≤ 1,500 ms', [1499])).toBe(true)
  })

  it('judges a bound said to be of the p99 by the second of a p50 / p99 pair', () => {
    expect(goalMet('≤ 0.25 s (p99)', [0.088, 0.896])).toBe(false)
    expect(goalMet('≤ 0.25 s (p99)', [0.05, 0.2])).toBe(true)
  })

  it('has no verdict without a bound or a figure', () => {
    expect(goalMet('none', [1.6, 5.1])).toBeNull()
    expect(goalMet(undefined, [1])).toBeNull()
    expect(goalMet('≤ 1.3 / ≤ 1.5', [1.2])).toBeNull()
    expect(goalMet('≤ 1.3', [null])).toBeNull()
  })
})
