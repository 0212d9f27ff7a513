/**
 * The offline provider plans any goal sensibly: a table of varied
 * goals, every kind and odd inputs among them, grown into trees the way the
 * swarm's decomposers grow them (every angle, several child bounds), with
 * the checks a newcomer would notice applied at every level; and golden
 * trees for a few goals, so that a change to the heuristics shows in review.
 */
import { describe, expect, it } from 'vitest'
import { MAX_TITLE_CHARS } from '../../src/core/limits.js'
import { ANGLES, type KnownAngle } from '../../src/llm/index.js'
import { createOfflineProvider } from '../../src/offline/index.js'
import type { GoalKind } from '../../src/offline/kind.js'
import { shapeFor } from '../../src/offline/shape.js'
import { startsWithAction, TITLE_TARGET_CHARS, words } from '../../src/offline/text.js'
import { checkSplit } from '../../src/llm/validate.js'
import { findCycle, normalizeTitle } from '../../src/wire/shape.js'

const p = createOfflineProvider()

/** Goals as newcomers type them, with the kind each should read as. */
const GOALS: ReadonlyArray<readonly [string, GoalKind]> = [
  ['plan a two-week trip to Japan', 'trip'],
  ['backpacking through Thailand for a month', 'trip'],
  ['organise a neighbourhood book swap', 'event'],
  ['host a 40th birthday party for my sister', 'event'],
  ['wedding', 'event'],
  ['write a grant proposal for a community solar project', 'writing'],
  ['write a 2000-word article on urban beekeeping for a local magazine', 'writing'],
  ['draft the quarterly sales report', 'writing'],
  ['launch a small open-source library', 'software'],
  ['build a mobile app that tracks household chores', 'software'],
  ['migrate our customer database from MySQL to PostgreSQL', 'software'],
  ['Should we switch our office to a four-day week?', 'research'],
  ['decide between two job offers', 'research'],
  ['research the best CRM for a small charity', 'research'],
  ['Is it worth installing a heat pump?', 'research'],
  ['buy a reliable used car for under 8000 euros', 'purchase'],
  ['Which laptop should I buy for video editing?', 'purchase'],
  ['move a family of four to another city', 'move'],
  ['relocate from London to Berlin for a new job', 'move'],
  ['learn Spanish well enough to hold a conversation by summer', 'learning'],
  ['train for my first marathon', 'learning'],
  ['How do I get better at public speaking?', 'learning'],
  ['renovate the kitchen', 'generic'],
  ['Plan', 'generic'],
  ['organiser un mariage à Lyon pour 80 invités', 'event'],
  ['reparar la bicicleta antes del verano', 'generic'],
  ['日本で桜を見る旅行の計画を立てる', 'generic'],
  ['🎉🎉', 'generic'],
  [
    'Plan a community garden on the empty lot behind the library with raised beds for the ' +
      'school, a tool shed, a rota of volunteers for watering in the summer holidays, a small ' +
      'budget from the council and a harvest festival at the end of the first season so that ' +
      'neighbours who have never met get to know each other',
    'generic'
  ]
]

interface Node {
  readonly title: string
  readonly detail: string
  readonly leaf: boolean
  readonly dependsOn: readonly number[]
  readonly children: Node[]
}

interface Bounds {
  readonly minChildren: number
  readonly maxChildren: number
  readonly maxDepth: number
}

const DEFAULT: Bounds = { minChildren: 2, maxChildren: 7, maxDepth: 2 }

/** Grow the tree as roles/decomposer.ts does: each non-leaf child is decomposed with its path, down to maxDepth. */
async function grow(goal: string, angle: KnownAngle, b: Bounds = DEFAULT): Promise<Node> {
  const expand = async (node: { title: string; detail: string }, path: string[], depth: number): Promise<Node[]> => {
    const leafHint = depth + 1 >= b.maxDepth
    const split = await p.decompose({
      goal,
      path,
      node,
      angle,
      minChildren: b.minChildren,
      maxChildren: b.maxChildren,
      leafHint,
      notes: []
    })
    const checked = checkSplit(split, b.minChildren, b.maxChildren)
    expect(checked.ok ? 'ok' : checked.problem, `${goal} / ${[...path, node.title].join(' > ')}`).toBe('ok')
    return await Promise.all(
      split.subgoals.map(async s => ({
        ...s,
        children: s.leaf || leafHint ? [] : await expand(s, [...path, node.title], depth + 1)
      }))
    )
  }
  return {
    title: goal,
    detail: '',
    leaf: false,
    dependsOn: [],
    children: await expand({ title: goal, detail: '' }, [], 0)
  }
}

function depthOf(n: Node): number {
  return n.children.length === 0 ? 0 : 1 + Math.max(...n.children.map(depthOf))
}

const norm = (text: string): string => words(text).join(' ')

/** Every problem a reader would see in a tree, with the path where it is. */
function problems(goal: string, root: Node, titleCap: number): string[] {
  const out: string[] = []
  const g = norm(goal)
  const visit = (n: Node, ancestors: readonly string[]): void => {
    const kids = n.children
    const where = [...ancestors, n.title].join(' > ')
    const seen = new Set<string>()
    if (kids.length > 0 && findCycle(kids.map(k => k.dependsOn)) !== null) out.push(`${where}: dependsOn has a cycle`)
    for (const k of kids) {
      const t = norm(k.title)
      const at = `${where} > ${k.title}`
      if (k.title.length > titleCap) out.push(`${at}: ${k.title.length} characters, cap ${titleCap}`)
      if (g.includes(' ') ? t.includes(g) : t === g) out.push(`${at}: repeats the goal`)
      for (const a of [...ancestors.slice(1), n.title])
        if (a !== goal && t.includes(norm(a))) out.push(`${at}: repeats the ancestor "${a}"`)
      const ws = k.title.toLowerCase().split(/\s+/)
      if (ws.some((w, i) => i > 0 && w === ws[i - 1])) out.push(`${at}: a word twice in a row`)
      if (/\(step \d+ of \d+|\(part \d+\)|Nex…/.test(k.title)) out.push(`${at}: an internal label`)
      if (seen.has(normalizeTitle(k.title))) out.push(`${at}: a sibling has the same title`)
      seen.add(normalizeTitle(k.title))
      for (const s of kids)
        if (s !== k && t.includes(norm(s.title)) && norm(s.title) !== '')
          out.push(`${at}: contains the sibling "${s.title}"`)
      if (k.children.length === 0 && !startsWithAction(k.title)) out.push(`${at}: a leaf without a concrete verb`)
      if (!/^Done when /m.test(k.detail) && !/Done when /.test(k.detail))
        out.push(`${at}: the detail does not say what done looks like`)
      visit(k, [...ancestors, n.title])
    }
  }
  visit(root, [])
  return out
}

describe('the offline plan for any goal', () => {
  it.each(GOALS)('reads "%s" as %s', (goal, kind) => {
    expect(shapeFor(goal).kind).toBe(kind)
  })

  it.each(GOALS)('plans "%s" sensibly from every angle', async goal => {
    for (const angle of ANGLES) {
      const tree = await grow(goal, angle)
      expect(depthOf(tree), `${goal} ${angle}`).toBeGreaterThanOrEqual(2)
      expect(problems(goal, tree, TITLE_TARGET_CHARS), `${goal} ${angle}`).toEqual([])
    }
    // Deeper plans stop where the steps are leaf-sized; tight and wide child bounds merge and pad without breaking the rules.
    for (const b of [
      { ...DEFAULT, maxDepth: 3 },
      { minChildren: 2, maxChildren: 3, maxDepth: 2 },
      { minChildren: 7, maxChildren: 7, maxDepth: 2 }
    ]) {
      const tree = await grow(goal, 'by phase', b)
      expect(depthOf(tree)).toBeGreaterThanOrEqual(2)
      expect(
        problems(goal, tree, b.maxChildren < 7 ? MAX_TITLE_CHARS : TITLE_TARGET_CHARS),
        `${goal} ${JSON.stringify(b)}`
      ).toEqual([])
    }
  })

  it.each(GOALS)(
    'gives "%s" different proposals from different angles, and the offline scorer accepts one',
    async goal => {
      const splits = await Promise.all(
        ANGLES.map(async (a, i) => ({
          id: String(i).repeat(64),
          ...(await p.decompose({
            goal,
            path: [],
            node: { title: goal, detail: '' },
            angle: a,
            minChildren: 2,
            maxChildren: 7,
            leafHint: false,
            notes: []
          }))
        }))
      )
      expect(new Set(splits.map(s => JSON.stringify(s.subgoals.map(x => x.title)))).size).toBeGreaterThanOrEqual(4)
      const ballot = await p.score({ goal, path: [], node: { title: goal, detail: '' }, proposals: splits })
      expect(ballot.choice, ballot.scores.map(s => s.notes).join('\n')).not.toBeNull()
      // The level below: every part's own split is accepted too, so an offline plan never stalls on a vote.
      const chosen = splits.find(s => s.id === ballot.choice)
      for (const sub of chosen?.subgoals ?? []) {
        const split = await p.decompose({
          goal,
          path: [goal],
          node: sub,
          angle: 'by time',
          minChildren: 2,
          maxChildren: 7,
          leafHint: true,
          notes: []
        })
        const vote = await p.score({ goal, path: [goal], node: sub, proposals: [{ id: 'a'.repeat(64), ...split }] })
        expect(vote.choice, `${sub.title}: ${vote.scores[0]?.notes ?? ''}`).not.toBeNull()
      }
    }
  )
})

/** A tree as a reviewer reads it: titles, dependencies as "after", and what done looks like. */
function render(n: Node, indent = ''): string {
  return n.children
    .map((c, i) => {
      const after = c.dependsOn.length === 0 ? '' : ` (after ${c.dependsOn.map(d => d + 1).join(', ')})`
      return `${indent}${i + 1}. ${c.title}${after}\n${indent}   ${c.detail.replace(/\n/g, ' | ')}\n${render(c, `${indent}   `)}`
    })
    .join('')
}

describe('golden offline plans', () => {
  const golden: ReadonlyArray<readonly [string, string, KnownAngle]> = [
    ['grant-proposal', 'write a grant proposal for a community solar project', 'by phase'],
    ['book-swap', 'organise a neighbourhood book swap', 'by time'],
    ['open-source-library', 'launch a small open-source library', 'by place'],
    ['four-day-week', 'Should we switch our office to a four-day week?', 'by activity'],
    ['kitchen', 'renovate the kitchen', 'by resource']
  ]
  it.each(golden)('%s', async (name, goal, angle) => {
    const tree = await grow(goal, angle)
    await expect(`goal: ${goal}\nangle: ${angle}\n\n${render(tree)}`).toMatchFileSnapshot(
      `../fixtures/offline/${name}.txt`
    )
  })
})
