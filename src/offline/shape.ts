/**
 * Plan shapes: for each kind of goal, the parts a plan of that kind has (each
 * with the steps it splits into next) and five views that pick and order
 * parts, one per decomposer angle. The data lives in kinds/*.ts and the types
 * in parts.ts; this file holds the instantiation for one goal and the lookup
 * by title.
 *
 * The offline decomposer is stateless: at the root it takes the view of its
 * angle, and below the root it finds the node's title among the shape's
 * parts (rebuilt from the plan's goal) and proposes that part's steps. The
 * same goal gives the same shape on every node.
 */
import { normalizeTitle } from '../wire/shape.js'
import { ANGLES, type KnownAngle } from '../llm/types.js'
import { recognizeKind, type GoalKind, type KindReading } from './kind.js'
import { EVENT } from './kinds/event.js'
import { GENERIC } from './kinds/generic.js'
import { LEARNING } from './kinds/learning.js'
import { MOVE } from './kinds/move.js'
import { PURCHASE } from './kinds/purchase.js'
import { RESEARCH } from './kinds/research.js'
import { SOFTWARE } from './kinds/software.js'
import { namesKnownCountry, tripShape } from './kinds/trip.js'
import { WRITING } from './kinds/writing.js'
import { PADDING_PARTS, viewOf, type KindTable, type PartSpec, type Shape, type ShapeView } from './parts.js'
import { cleanTitle, contentWords, safeSlice, topicWords, words } from './text.js'

const TABLES: Readonly<Record<Exclude<GoalKind, 'trip'>, KindTable>> = {
  event: EVENT,
  move: MOVE,
  purchase: PURCHASE,
  learning: LEARNING,
  software: SOFTWARE,
  writing: WRITING,
  research: RESEARCH,
  generic: GENERIC
}

/** The kinds with a data table (every kind but the trip, whose shape is built from the destination). */
export function kindTables(): readonly KindTable[] {
  return Object.values(TABLES)
}

/** The goal, short enough to quote in a done text. */
export function goalPhrase(goal: string): string {
  const g = goal
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!?]+$/, '')
  if (g.length <= 80) return g
  const cut = safeSlice(g, 77)
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), 40))}...`
}

/** The phrase for the thing ("the grant proposal"): the goal's own word unless that word is the whole goal. */
function thingFor(table: KindTable, reading: KindReading, goal: string): string {
  const goalWords = words(goal).join(' ')
  const ownWord = reading.noun === null ? null : `the ${reading.noun}`
  const candidates = [ownWord, table.thing, table.alt].filter((c): c is string => c !== null)
  return candidates.find(c => !words(c).join(' ').includes(goalWords)) ?? table.alt
}

function fill(text: string, thing: string, goal: string): string {
  return text.replaceAll('{thing}', thing).replaceAll('{goal}', goal)
}

export function instantiate(table: KindTable, reading: KindReading, goal: string): Shape {
  const thing = thingFor(table, reading, goal)
  const g = goalPhrase(goal)
  const parts = table.parts.map(p => ({
    ...p,
    title: fill(p.title, thing, g),
    done: fill(p.done, thing, g),
    steps: p.steps.map(s => ({ ...s, title: fill(s.title, thing, g), done: fill(s.done, thing, g) }))
  }))
  const byKey = new Map(parts.map(p => [p.key, p]))
  const views = Object.fromEntries(ANGLES.map(a => [a, viewOf(table.views[a], byKey)])) as Record<KnownAngle, ShapeView>
  return { kind: table.kind, label: table.label, reading, views, parts: [...parts, ...PADDING_PARTS] }
}

/** The plan shape for a goal: its kind, and that kind's parts and views filled in for it. */
export function shapeFor(goal: string): Shape {
  const reading = recognizeKind(goal)
  if (reading.kind === 'trip' || (reading.kind === 'generic' && namesKnownCountry(goal)))
    return tripShape(goal, reading)
  return instantiate(TABLES[reading.kind], reading, goal)
}

/**
 * The parts a node stands for: the part with the node's title, or, for a
 * node that merges several parts ("A; B", or a shortened title with one
 * "A: ..." line per part in its detail), each of them; null when the node is
 * not made of the shape's parts.
 */
export function findParts(shape: Shape, node: { title: string; detail: string }): PartSpec[] | null {
  // Keyed by the title as written and as the decomposer cleans it (a long {thing} can be cut).
  const byTitle = new Map(
    shape.parts.flatMap(
      p =>
        [
          [normalizeTitle(cleanTitle(p.title)), p],
          [normalizeTitle(p.title), p]
        ] as const
    )
  )
  const one = byTitle.get(normalizeTitle(node.title))
  if (one !== undefined) return [one]
  const lookup = (titles: readonly string[]): PartSpec[] | null => {
    const found = titles.map(t => byTitle.get(normalizeTitle(t)))
    return found.length >= 2 && found.every(p => p !== undefined) ? (found as PartSpec[]) : null
  }
  return lookup(node.title.split('; ')) ?? lookup(node.detail.split('\n').map(l => l.split(': ')[0] ?? ''))
}

/** The words a split of this shape's kind talks about (its titles' topic words and the goal's cues), for the scorer's kind-fit measure. */
export function vocabularyOf(shape: Shape): Set<string> {
  const titles = shape.parts.flatMap(p => [p.title, ...p.steps.map(s => s.title)])
  return new Set([...titles.flatMap(topicWords), ...contentWords(shape.reading.cues.join(' '))])
}
