/**
 * The offline plan shapes: the kind tables are well formed
 * (every title a short imperative, views that exist and differ), the kind of
 * a goal is read from its words, dependencies follow the kind (draft before
 * review, book before travel), the scorer prefers the split that fits the
 * kind, and the executor's output is an honest checklist, not an echo.
 */
import { describe, expect, it } from 'vitest'
import { MAX_SUBGOALS, MIN_SUBGOALS } from '../../src/core/limits.js'
import type { Subgoal } from '../../src/core/events.js'
import { ANGLES, type DecomposeInput } from '../../src/llm/index.js'
import { createOfflineProvider, OFFLINE_OUTPUT_PREFIX } from '../../src/offline/index.js'
import { GENERAL_GUIDE, GUIDES, PADDING_STEPS } from '../../src/offline/guides.js'
import { recognizeKind } from '../../src/offline/kind.js'
import { PADDING_PARTS, type PartSpec, type Shape } from '../../src/offline/parts.js'
import { instantiate, kindTables, shapeFor } from '../../src/offline/shape.js'
import { startsWithAction, TITLE_TARGET_CHARS, words } from '../../src/offline/text.js'
import { normalizeTitle } from '../../src/wire/shape.js'

const p = createOfflineProvider()

function titleProblems(title: string): string[] {
  const out: string[] = []
  if (!startsWithAction(title)) out.push(`"${title}" does not start with an action verb`)
  if (title.length > TITLE_TARGET_CHARS) out.push(`"${title}" is longer than ${TITLE_TARGET_CHARS}`)
  const ws = words(title)
  if (ws.some((w, i) => i > 0 && w === ws[i - 1])) out.push(`"${title}" has a word twice in a row`)
  if (/[{}]/.test(title)) out.push(`"${title}" has a placeholder left`)
  return out
}

function partProblems(parts: readonly PartSpec[]): string[] {
  const out: string[] = []
  const titles = new Set<string>()
  for (const part of parts) {
    out.push(...titleProblems(part.title))
    if (titles.has(normalizeTitle(part.title))) out.push(`two parts are called "${part.title}"`)
    titles.add(normalizeTitle(part.title))
    if (part.done === '' || /[.{}]$/.test(part.done)) out.push(`"${part.title}": the done text must be a bare clause`)
    if (part.steps.length < 2) out.push(`"${part.title}" has fewer than 2 steps`)
    const steps = new Set<string>()
    part.steps.forEach((s, i) => {
      out.push(...titleProblems(s.title))
      if (steps.has(normalizeTitle(s.title))) out.push(`"${part.title}" has the step "${s.title}" twice`)
      steps.add(normalizeTitle(s.title))
      if (words(s.title).join(' ').includes(words(part.title).join(' ')))
        out.push(`"${s.title}" repeats its part "${part.title}"`)
      if (s.after.some(a => a >= i)) out.push(`"${s.title}" depends on a later step`)
      if (s.done === '' || /[.{}]$/.test(s.done)) out.push(`"${s.title}": the done text must be a bare clause`)
    })
  }
  return out
}

function shapeProblems(shape: Shape): string[] {
  const out = partProblems(shape.parts)
  const views = ANGLES.map(a => shape.views[a])
  for (const v of views) {
    if (v.parts.length < MIN_SUBGOALS + 1 || v.parts.length > MAX_SUBGOALS)
      out.push(`view "${v.name}" has ${v.parts.length} parts`)
    if (new Set(v.parts.map(x => x.title)).size !== v.parts.length) out.push(`view "${v.name}" repeats a part`)
  }
  if (new Set(views.map(v => v.parts.map(x => x.title).join('|'))).size !== views.length)
    out.push('two views pick the same parts')
  if (new Set(views.map(v => v.name)).size < 4) out.push('the views are not named for the kind')
  return out
}

describe('the kind tables', () => {
  it.each(kindTables().map(t => [t.kind, t] as const))('%s is well formed', (_kind, table) => {
    // Filled in for a goal that names the thing, and for one that does not.
    for (const noun of ['garden shed', null]) {
      expect(
        shapeProblems(instantiate(table, { kind: table.kind, cues: [], noun }, 'something for the neighbourhood')),
        String(noun)
      ).toEqual([])
    }
  })

  it('the trip shape is well formed, with and without a known destination', () => {
    for (const goal of ['plan a two-week trip to Japan', 'a weekend trip to Ghent', 'trip', 'a road trip']) {
      const shape = shapeFor(goal)
      expect(shape.kind, goal).toBe('trip')
      expect(shapeProblems(shape), goal).toEqual([])
    }
  })

  it('padding parts, padding steps and guides are short imperatives', () => {
    expect(partProblems(PADDING_PARTS)).toEqual([])
    const rows = [...PADDING_STEPS, ...[...GUIDES, GENERAL_GUIDE].flatMap(g => g.steps)]
    expect(rows.flatMap(([t]) => titleProblems(t))).toEqual([])
    for (const g of [...GUIDES, GENERAL_GUIDE]) expect(g.checklist.length, g.name).toBeGreaterThanOrEqual(3)
  })

  it('every data kind has a table, and every shape checks out for the views of its own goal', () => {
    const kinds = new Set(kindTables().map(t => t.kind))
    expect([...kinds].sort()).toEqual([
      'event',
      'generic',
      'learning',
      'move',
      'purchase',
      'research',
      'software',
      'writing'
    ])
    for (const t of kindTables())
      for (const a of ANGLES) expect(t.views[a].parts.length, `${t.kind} ${a}`).toBeGreaterThanOrEqual(4)
  })
})

describe('reading the kind of a goal', () => {
  it.each([
    ['book flights to Rome', 'trip'],
    ['two weeks in Italy', 'trip'],
    ['write a book', 'writing'],
    ['start a book club', 'event'],
    ['move our servers to AWS', 'software'],
    ['buy a house', 'purchase'],
    ['study for the bar exam', 'learning'],
    ['a study of remote work', 'research'],
    ['launch a podcast', 'generic'],
    ['', 'generic']
  ] as const)('"%s" reads as %s', (goal, kind) => {
    expect(shapeFor(goal).kind).toBe(kind)
  })

  it('names the thing as the goal does, unless the goal is only that word', () => {
    expect(recognizeKind('write a grant proposal for a community solar project').noun).toBe('grant proposal')
    expect(recognizeKind('host a 40th birthday party').noun).toBe('birthday party')
    const titles = shapeFor('wedding').parts.map(x => x.title)
    expect(titles.some(t => /wedding/i.test(t))).toBe(false)
    expect(titles).toContain('Promote the event')
  })
})

const root = (goal: string, angle: string, over: Partial<DecomposeInput> = {}): DecomposeInput => ({
  goal,
  path: [],
  node: { title: goal, detail: '' },
  angle,
  minChildren: 2,
  maxChildren: 7,
  leafHint: false,
  notes: [],
  ...over
})

/** Whether subgoal `a` comes (transitively) before subgoal `b`. */
function before(subgoals: readonly Subgoal[], a: string, b: string): boolean {
  const ia = subgoals.findIndex(s => s.title === a)
  const seen = new Set<number>()
  const walk = (i: number): boolean =>
    i === ia || (subgoals[i]?.dependsOn ?? []).some(d => !seen.has(d) && (seen.add(d), walk(d)))
  const ib = subgoals.findIndex(s => s.title === b)
  return ia >= 0 && ib >= 0 && ib !== ia && walk(ib)
}

describe('dependencies follow the kind of goal', () => {
  it.each([
    [
      'write a grant proposal for a community solar project',
      'by phase',
      'Draft the grant proposal',
      'Collect feedback on the draft'
    ],
    [
      'write a grant proposal for a community solar project',
      'by time',
      'Draft the grant proposal',
      'Submit the grant proposal'
    ],
    ['organise a neighbourhood book swap', 'by phase', 'Book the venue', 'Run the day'],
    ['move a family of four to another city', 'by phase', 'Book the movers', 'Run moving day'],
    ['launch a small open-source library', 'by phase', 'Build the core features', 'Release the first version'],
    ['Should we switch our office to a four-day week?', 'by phase', 'Compare the options', 'Decide and record why'],
    ['buy a reliable used car for under 8000 euros', 'by phase', 'Try the top choice', 'Buy the used car'],
    ['plan a two-week trip to Japan', 'by time', 'Prepare before departure', 'Spend days 1-5 in Tokyo']
  ])('%s (%s): "%s" before "%s"', async (goal, angle, a, b) => {
    const out = await p.decompose(root(goal, angle))
    expect(
      before(out.subgoals, a, b),
      out.subgoals.map(s => `${s.title} ${JSON.stringify(s.dependsOn)}`).join('\n')
    ).toBe(true)
  })

  it('books before travelling, within a part', async () => {
    const goal = 'plan a two-week trip to Japan'
    const prep = (await p.decompose(root(goal, 'by time'))).subgoals[0] as Subgoal
    const steps = (await p.decompose({ ...root(goal, 'by time'), path: [goal], node: prep })).subgoals
    expect(before(steps, 'Book flights', 'Book hotels')).toBe(true)
    expect(before(steps, 'Fix the travel dates', 'Buy travel insurance')).toBe(true)
  })

  it('a rejected part gets other steps on the next attempt', async () => {
    const goal = 'organise a neighbourhood book swap'
    const venue = (await p.decompose(root(goal, 'by phase'))).subgoals.find(
      s => s.title === 'Book the venue'
    ) as Subgoal
    const first = await p.decompose({ ...root(goal, 'by phase'), path: [goal], node: venue })
    const second = await p.decompose({ ...root(goal, 'by phase'), path: [goal], node: venue, notes: ['too vague'] })
    expect(second.subgoals.map(s => s.title)).not.toEqual(first.subgoals.map(s => s.title))
    expect(second.subgoals.every(s => startsWithAction(s.title))).toBe(true)
    expect(second.rationale).toMatch(/rejected the part's own steps/)
  })
})

describe('the offline scorer prefers the split that fits the kind', () => {
  const goal = 'write a grant proposal for a community solar project'
  const node = { title: goal, detail: '' }
  const sub = (title: string, detail = ''): Subgoal => ({ title, detail, leaf: false, dependsOn: [] })

  it('a writing split beats the old place-shaped split and a trip-shaped one', async () => {
    const writing = await p.decompose(root(goal, 'by phase'))
    const oldPlace = [
      sub(`Choose where it happens: ${goal}`, 'List candidate locations; then compare them on access, cost and fit'),
      sub(`Arrange the main location: ${goal}`, 'Book the location; then confirm access and facilities'),
      sub(`Organise travel between places: ${goal}`, 'Plan the routes; then book the transport'),
      sub(`Handle the remote parts: ${goal}`, 'List what can be done remotely; then set up the tools for it')
    ]
    const trip = (await p.decompose(root('plan a two-week trip to Japan', 'by activity'))).subgoals
    const out = await p.score({
      goal,
      path: [],
      node,
      proposals: [
        { id: '1'.repeat(64), subgoals: oldPlace, rationale: '' },
        { id: '2'.repeat(64), subgoals: trip, rationale: '' },
        { id: '3'.repeat(64), ...writing }
      ]
    })
    expect(out.choice).toBe('3'.repeat(64))
    const [a, b, c] = out.scores.map(s => s.score) as [number, number, number]
    expect(c).toBeGreaterThan(a)
    expect(c).toBeGreaterThan(b)
    expect(out.scores[2]?.notes, out.scores.map(x => x.notes).join('\n')).toMatch(
      /kind fit 1\.00 \(5\/5 titles use the words of a piece of writing\)/
    )
    expect(out.scores[1]?.notes).toMatch(/kind fit 0\.\d\d/)
  })
})

describe('the offline executor', () => {
  const goal = 'organise a neighbourhood book swap'
  const run = async (title: string, detail: string, kind: 'leaf' | 'rollup' = 'leaf'): Promise<string> =>
    (
      await p.execute({
        goal,
        path: [goal, 'Book the venue'],
        task: { title, detail },
        kind,
        inputs:
          kind === 'rollup'
            ? [
                { title: 'List venues', output: 'x' },
                { title: 'Visit', output: 'y' }
              ]
            : []
      })
    ).output

  it('says no model ran and gives a checklist that fits the step', async () => {
    const book = await run('Sign the booking and pay the deposit', 'Done when the booking confirmation is saved.')
    expect(book.startsWith(`${OFFLINE_OUTPUT_PREFIX} planned step "Sign the booking and pay the deposit"`)).toBe(true)
    expect(book).toContain('Nothing was researched, booked, bought or carried out.')
    expect(book).toContain('Done when: the booking confirmation is saved.')
    const write = await run('Draft the invitation', 'Done when the text gives the date, place, time and how to reply.')
    const box = (text: string): string[] => text.split('\n').filter(l => l.startsWith('- [ ] '))
    expect(box(book).length).toBeGreaterThanOrEqual(3)
    expect(box(write).length).toBeGreaterThanOrEqual(3)
    expect(box(write)).not.toEqual(box(book))
    expect(write).toMatch(/Checklist \(writing; an offline template/)
  })

  it('rolls up with a checklist for combining the results', async () => {
    const out = await run('Book the venue', 'Done when a venue is booked.', 'rollup')
    expect(out.startsWith(`${OFFLINE_OUTPUT_PREFIX} rolled up 2 results`)).toBe(true)
    expect(out).toContain('- [ ] Read the 2 results and note what each decided')
    expect(out).toContain('Done when: a venue is booked.')
  })
})
