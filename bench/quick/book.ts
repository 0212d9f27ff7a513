/**
 * The rows of BENCHMARKS.md as a benchmark reads them: the last figure recorded and its goal, so a quick run can
 * print its own beside them without a copy of either that would go stale.
 */

/** The rows quick's figures are readings of, by the start of their figure cell: the first found is used. */
export const QUICK_ROWS = {
  fold: ['fold: 99,999 events as one batch'],
  net3: ['net: the same, 3 processes'],
  net10: ['net: publish → folded over bare libp2p, 10 processes'],
  tax10: ['e2e: leaderless tax, 10 processes'],
  rosters24: ['scale: every roster full, 24 processes', 'scale: every roster full, 40 processes'],
  status: ['load: `/status` while']
} as const

/** One row of the table: `| figure | value | goal | verdict | date | commit | command |`. */
export interface BookRow {
  readonly figure: string
  readonly value: string
  readonly goal: string
  readonly verdict: string
  readonly date: string
  readonly commit: string
}

/** The first row whose figure starts with the first of `prefixes` that any row starts with. */
export function bookRow(book: string, prefixes: readonly string[]): BookRow | undefined {
  const rows = book
    .split('\n')
    .filter(l => l.startsWith('| ') && !l.startsWith('| ---') && !l.startsWith('| figure |'))
    .map(l =>
      l
        .trim()
        .replace(/^\|/, '')
        .replace(/\|$/, '')
        .split('|')
        .map(c => c.trim())
    )
    .filter(cells => cells.length >= 6)
    .map(([figure, value, goal, verdict, date, commit]) => ({
      figure: figure as string,
      value: value as string,
      goal: goal as string,
      verdict: verdict as string,
      date: date as string,
      commit: commit as string
    }))
  for (const p of prefixes) {
    const row = rows.find(r => r.figure.startsWith(p))
    if (row !== undefined) return row
  }
  return undefined
}

/**
 * Whether `now` meets a goal written as the table writes them: `≤ 1.3`, `≥ 200k/s`, `≤ 30 s`, or several joined by
 * ` / ` for several figures (`≤ 1.3 / ≤ 1.5`: the first figure against the first bound, and so on). Null when the goal
 * is not such a bound (`none`, `measured`), or a figure is missing.
 */
export function goalMet(goal: string | undefined, now: ReadonlyArray<number | null>): boolean | null {
  if (goal === undefined) return null
  const bounds = goal.split(' / ').map(part => /^(≤|≥)\s*([\d.,]+)\s*(k?)/.exec(part.trim()))
  if (bounds.length === 0 || bounds.some(b => b === null) || now.length < bounds.length) return null
  // One bound said to be of the p99 ("≤ 0.25 s (p99)") judges the last of a p50 / p99 pair.
  const p99Only = bounds.length === 1 && /\(p99\)/.test(goal) && now.length === 2
  let met = true
  for (const [i, b] of bounds.entries()) {
    const [, op, digits, k] = b as RegExpExecArray
    const bound = Number((digits as string).replace(/,/g, '')) * (k === 'k' ? 1000 : 1)
    const x = now[p99Only ? 1 : i]
    if (x === null || x === undefined || !Number.isFinite(x)) return null
    if (op === '≤' ? x > bound : x < bound) met = false
  }
  return met
}
