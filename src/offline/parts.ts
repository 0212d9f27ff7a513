/**
 * The building blocks of the offline plan shapes (see shape.ts): steps, parts,
 * views and kind tables, the authoring helper the tables in kinds/ use, and
 * the padding parts any kind can take.
 */
import type { KnownAngle } from '../llm/types.js'
import type { GoalKind, KindReading } from './kind.js'

/** A leaf-sized step: a short imperative, what done looks like, and the earlier steps of its part it needs. */
export interface StepSpec {
  readonly title: string
  readonly done: string
  readonly after: readonly number[]
}

/** A part of a plan of some kind, and the steps it splits into at the next level. */
export interface PartSpec {
  readonly key: string
  readonly title: string
  /** Completes "Done when ...". */
  readonly done: string
  /** Keys of the parts this one needs first, when they are in the same split (draft before review). */
  readonly after: readonly string[]
  readonly steps: readonly StepSpec[]
}

/** One way to split the goal: the parts, by key, in order, and the angle's name for this kind. */
export interface ViewSpec {
  readonly name: string
  readonly why: string
  readonly parts: readonly string[]
}

/** The data for one kind. Titles and done texts may say {thing} (the goal's word for it) and done texts {goal}. */
export interface KindTable {
  readonly kind: GoalKind
  /** "a piece of writing", for rationales and outputs. */
  readonly label: string
  /** The thing when the goal does not name it ("the document"), and when the goal is only that word. */
  readonly thing: string
  readonly alt: string
  readonly parts: readonly PartSpec[]
  readonly views: Readonly<Record<KnownAngle, ViewSpec>>
}

/** A view made ready for one goal: its parts and, per part, the earlier parts it depends on. */
export interface ShapeView {
  readonly name: string
  readonly why: string
  readonly parts: readonly PartSpec[]
  readonly deps: ReadonlyArray<readonly number[]>
}

export interface Shape {
  readonly kind: GoalKind
  readonly label: string
  readonly reading: KindReading
  readonly views: Readonly<Record<KnownAngle, ShapeView>>
  /** Every part of the kind and the padding parts, for finding a node by its title. */
  readonly parts: readonly PartSpec[]
}

/** Authoring helper: a step as [title, done] or [title, done, after]. */
export type StepRow = readonly [string, string] | readonly [string, string, readonly number[]]

export function part(
  key: string,
  title: string,
  done: string,
  steps: readonly StepRow[],
  after: readonly string[] = []
): PartSpec {
  return { key, title, done, after, steps: steps.map(([t, d, a]) => ({ title: t, done: d, after: a ?? [] })) }
}

/** Extra parts for a plan that asks for more children than a view has; any kind, no subject in the titles. */
export const PADDING_PARTS: readonly PartSpec[] = [
  part(
    'pad-decisions',
    'Record the decisions',
    'every decision taken so far is written down with its reason and shared',
    [
      ['List the decisions taken', 'each decision is on one list with its date'],
      ['Note the reason for each', 'every decision has one line saying why', [0]],
      ['Share the record', 'everyone involved knows where the record is', [1]]
    ]
  ),
  part('pad-fallback', 'Prepare a fallback', 'each big risk has a fallback that someone owns', [
    ['List what could go wrong', 'the five likeliest problems are listed'],
    ['Note a fallback for each', 'each problem has a fallback written next to it', [0]],
    ['Assign an owner for each fallback', 'each fallback has a named owner', [1]]
  ]),
  part(
    'pad-check',
    'Check the plan against the goal',
    'every part of the goal is covered by a step, and the gaps are listed',
    [
      ['Compare the plan with the goal', 'each sentence of the goal points to a step'],
      ['List the gaps', 'what no step covers is written down', [0]],
      ['Add steps for the gaps', 'each gap has a step and an owner', [1]]
    ]
  ),
  part(
    'pad-confirm',
    'Confirm with the people involved',
    'the people involved have seen the plan and their corrections are in',
    [
      ['Share the plan', 'everyone involved has the plan'],
      ['Collect their corrections', 'every reply is in one list', [0]],
      ['Apply the corrections', 'the plan reflects the agreed corrections', [1]]
    ]
  ),
  part(
    'pad-checkpoints',
    'Set the checkpoints',
    'dates to check progress are in the calendar, each with what to check',
    [
      ['Pick the checkpoint dates', 'two or three dates are chosen'],
      ['Note what to check each time', 'each date has a short checklist', [0]],
      ['Put the dates in the calendar', 'everyone involved has the dates', [1]]
    ]
  ),
  part('pad-documents', 'Collect the documents', 'confirmations, receipts and drafts are in one shared place', [
    ['Gather the confirmations', 'every confirmation and receipt is found'],
    ['Keep them in one place', 'one folder holds all of them', [0]],
    ['Share where they are', 'everyone involved knows the folder', [1]]
  ])
]

/** Turn a view's part keys into parts and dependencies on earlier parts only (so a view can never have a cycle). */
export function viewOf(spec: ViewSpec, parts: ReadonlyMap<string, PartSpec>): ShapeView {
  const list = spec.parts.map(k => {
    const p = parts.get(k)
    if (p === undefined) throw new Error(`offline shape: view "${spec.name}" names the unknown part "${k}"`)
    return p
  })
  const deps = list.map((p, i) => list.flatMap((q, j) => (j < i && p.after.includes(q.key) ? [j] : [])))
  return { name: spec.name, why: spec.why, parts: list, deps }
}
