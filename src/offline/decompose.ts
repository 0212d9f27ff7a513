/**
 * Offline decomposition. At the root: the goal's own steps when it lists
 * actions ("book a venue, arrange travel; then send invitations"), else the
 * plan shape of the goal's kind (shape.ts) in the view of the decomposer's
 * angle. Below the root: the steps of the shape's part the node stands for,
 * else the node's own listed actions, else the steps its leading verb calls
 * for (guides.ts). Deterministic: the same input gives the same split, everywhere.
 */
import type { Subgoal } from '../core/events.js'
import {
  MAX_DETAIL_CHARS,
  MAX_NEEDS,
  MAX_RATIONALE_CHARS,
  MAX_SUBGOALS,
  MAX_TITLE_CHARS,
  MIN_SUBGOALS
} from '../core/limits.js'
import { normalizeTitle } from '../wire/shape.js'
import { ANGLES, type DecomposeInput, type KnownAngle } from '../llm/types.js'
import { GENERAL_GUIDE, GUIDES, guideFor, PADDING_STEPS, type Guide } from './guides.js'
import { PADDING_PARTS, type PartSpec, type ShapeView, type StepRow } from './parts.js'
import { findParts, shapeFor } from './shape.js'
import {
  capitalize,
  cleanTitle,
  fnv1a,
  laysOutSteps,
  safeSlice,
  splitStructure,
  startsWithAction,
  TITLE_TARGET_CHARS,
  type Structure
} from './text.js'

/** A step with at most this many words that starts with an action verb is small enough to be a leaf. */
export const LEAF_MAX_WORDS = 12

/** Map any angle string onto a known one ("by geography" -> "by place"); unknown ones by hash. */
export function knownAngle(angle: string): KnownAngle {
  const a = angle.toLowerCase()
  if (/place|geograph|where|location|region|city/.test(a)) return 'by place'
  if (/activit|kind|type|task|function/.test(a)) return 'by activity'
  if (/time|day|date|schedule|chrono|week/.test(a)) return 'by time'
  if (/phase|stage|step|sequence|milestone/.test(a)) return 'by phase'
  if (/resource|budget|cost|money|people/.test(a)) return 'by resource'
  return ANGLES[fnv1a(a) % ANGLES.length] as KnownAngle
}

function rotate(angle: KnownAngle, by: number): KnownAngle {
  return ANGLES[(ANGLES.indexOf(angle) + by) % ANGLES.length] as KnownAngle
}

function wordCount(text: string): number {
  return text.split(/\s+/).filter(w => w !== '').length
}

/** Concrete and short: starts with an action verb, at most LEAF_MAX_WORDS words, and its detail lays out no steps. */
export function looksLikeLeaf(title: string, detail: string): boolean {
  return startsWithAction(title) && wordCount(title) <= LEAF_MAX_WORDS && !laysOutSteps(detail)
}

/** A title from any text: cleaned and short; the raw text (cut) if cleaning would leave nothing. */
function titleOf(text: string): string {
  const t = cleanTitle(text)
  return normalizeTitle(t) === '' ? safeSlice(text.trim(), TITLE_TARGET_CHARS) : t
}

function fitDetail(text: string, fallback: string): string {
  return text.length <= MAX_DETAIL_CHARS ? text : safeSlice(fallback, MAX_DETAIL_CHARS)
}

const doneLine = (done: string): string => `Done when ${done}.`

interface Draft {
  readonly title: string
  readonly detail: string
  readonly leaf: boolean
  readonly dependsOn: readonly number[]
}

/**
 * Bring a list of steps to min..max: consecutive steps are merged into groups
 * when there are too many (a group depends on what its members depended on),
 * padding steps are appended when there are too few. Nothing is dropped.
 */
export function fitCount(drafts: readonly Draft[], min: number, max: number, pad: readonly Draft[]): Draft[] {
  if (drafts.length > max) {
    const n = drafts.length
    const groupOf = drafts.map((_d, i) => Math.floor((i * max) / n))
    const groups: Draft[] = []
    for (let g = 0; g < max; g++) {
      const members = drafts.map((d, i) => ({ d, i })).filter(x => groupOf[x.i] === g)
      const deps = new Set<number>()
      for (const { d } of members) for (const j of d.dependsOn) if (groupOf[j] !== g) deps.add(groupOf[j] as number)
      const titles = members.map(x => x.d.title)
      const joined = titles.join('; ')
      const title =
        joined.length <= MAX_TITLE_CHARS
          ? joined
          : `${safeSlice(titles[0] ?? '', MAX_TITLE_CHARS - 30)} and ${titles.length - 1} more steps`
      const detail = fitDetail(
        members.map(x => `${x.d.title}: ${x.d.detail}`).join('\n'),
        members.map(x => `${x.d.title}:`).join('\n')
      )
      groups.push({ title, detail, leaf: members.every(x => x.d.leaf), dependsOn: [...deps].sort((a, b) => a - b) })
    }
    return groups
  }
  const out = [...drafts]
  const taken = new Set(out.map(d => normalizeTitle(d.title)))
  for (const p of pad) {
    if (out.length >= min) break
    if (taken.has(normalizeTitle(p.title))) continue
    taken.add(normalizeTitle(p.title))
    out.push(p)
  }
  return out
}

/** The steps a text lists itself, when they are worth following: bullet or numbered lines, or clauses that are all actions. */
function ownSteps(text: string): Structure | null {
  const s = splitStructure(text)
  if (s === null) return null
  if (s.kind === 'bullets' || s.kind === 'numbered list') return s
  return s.clauses.every(c => startsWithAction(c.text)) ? s : null
}

function fromStructure(structure: Structure, leafHint: boolean): Draft[] {
  return structure.clauses.map(c => {
    const text = startsWithAction(c.text) ? c.text : `Sort out ${c.text}`
    const title = titleOf(text)
    const done = doneLine(guideFor(text).done)
    const detail = title === capitalize(text.trim()) ? done : fitDetail(`${capitalize(text.trim())}. ${done}`, done)
    return { title, detail, leaf: leafHint || looksLikeLeaf(text, ''), dependsOn: c.dependsOn }
  })
}

function fromView(view: ShapeView, leafHint: boolean): Draft[] {
  return view.parts.map((p, i) => ({
    title: titleOf(p.title),
    detail: doneLine(p.done),
    leaf: leafHint,
    dependsOn: view.deps[i] ?? []
  }))
}

/** The steps of one or more parts, in order; a part that needs an earlier one starts after that part's last step. */
function fromParts(parts: readonly PartSpec[]): Draft[] {
  const out: Draft[] = []
  const lastOf: number[] = []
  parts.forEach((p, m) => {
    const offset = out.length
    const needs = parts.flatMap((q, j) => (j < m && p.after.includes(q.key) ? [lastOf[j] as number] : []))
    p.steps.forEach(s => {
      const deps = s.after.length > 0 ? s.after.map(a => a + offset) : needs
      out.push({
        title: titleOf(s.title),
        detail: doneLine(s.done),
        leaf: true,
        dependsOn: [...new Set(deps)].sort((a, b) => a - b)
      })
    })
    lastOf.push(out.length - 1)
  })
  return out
}

function fromRows(rows: readonly StepRow[], context: string): Draft[] {
  return rows.map(([title, done, after]) => ({
    title: titleOf(title),
    detail: `${context}${doneLine(done)}`,
    leaf: true,
    dependsOn: after ?? []
  }))
}

/** Titles must differ (as the wire compares them); a repeat gets a number. */
function uniqueTitles(drafts: readonly Draft[]): Draft[] {
  const seen = new Set<string>()
  return drafts.map(d => {
    let title = d.title
    for (let n = 2; seen.has(normalizeTitle(title)); n++) title = `${safeSlice(d.title, TITLE_TARGET_CHARS - 5)} (${n})`
    seen.add(normalizeTitle(title))
    return title === d.title ? d : { ...d, title }
  })
}

export interface OfflineSplit {
  readonly subgoals: Subgoal[]
  readonly rationale: string
}

const ARRANGING = GUIDES.find(g => g.name === 'arranging') ?? GENERAL_GUIDE

export function decomposeOffline(input: DecomposeInput): OfflineSplit {
  const min = Math.min(Math.max(input.minChildren, MIN_SUBGOALS), MAX_SUBGOALS)
  const max = Math.max(min, Math.min(input.maxChildren, MAX_SUBGOALS))
  const angle = knownAngle(input.angle)
  const retry = input.notes.length > 0
  // A failed attempt: propose something else. Own steps give way to the shape, the shape to another view or to the verb's steps.
  const useAngle = retry ? rotate(angle, 1 + (fnv1a(input.notes.join('\n')) % (ANGLES.length - 1))) : angle
  const shape = shapeFor(input.goal)
  const root = input.path.length === 0
  const quoted = `"${safeSlice(input.node.title, TITLE_TARGET_CHARS)}${input.node.title.length > TITLE_TARGET_CHARS ? '...' : ''}"`
  const own = retry ? null : (ownSteps(input.node.detail) ?? ownSteps(input.node.title))
  const parts = root ? null : findParts(shape, input.node)

  let drafts: Draft[]
  let how: string
  let leafLevel: boolean
  if (!root && parts !== null && !retry) {
    drafts = fromParts(parts)
    leafLevel = true
    how =
      `the node is ${parts.length === 1 ? 'the part' : `${parts.length} merged parts`} ${quoted} ` +
      `of the offline shape for ${shape.label}, so it splits ` +
      `into ${parts.length === 1 ? "that part's" : 'their'} steps, each small enough to carry out`
  } else if (own !== null) {
    drafts = fromStructure(own, input.leafHint)
    leafLevel = false
    const deps =
      own.kind === 'sequence' || own.kind === 'numbered list'
        ? '; a step after "then" or a number depends on the step(s) before it'
        : ''
    how = `the node's text lists its own steps, so it is split at its ${own.kind} (${own.clauses.length} steps)${deps}`
  } else if (root) {
    const view = shape.views[useAngle]
    drafts = fromView(view, input.leafHint)
    leafLevel = false
    const cues =
      shape.reading.cues.length === 0
        ? 'no cue words of a known kind, so the general project shape'
        : `cue words: ${shape.reading.cues.slice(0, 6).join(', ')}`
    how =
      `the goal reads as ${shape.label} (${cues}), so it follows the offline shape ` +
      `"${shape.kind} ${view.name}" (the swarm's angle "${useAngle}"): ${view.why}`
    if (retry)
      how +=
        `; the committee rejected the previous attempt (${input.notes.length} notes), so this ` +
        `attempt takes the angle "${useAngle}" instead of "${angle}"`
  } else {
    let guide: Guide = guideFor(input.node.title)
    if (retry && parts === null) guide = guide === GENERAL_GUIDE ? ARRANGING : GENERAL_GUIDE
    drafts = fromRows(guide.steps, `For ${quoted}. `)
    leafLevel = true
    how =
      (parts === null
        ? `the node ${quoted} is not a part of the offline shape for ${shape.label}`
        : `the committee rejected the part's own steps (${input.notes.length} notes)`) +
      ', ' +
      `so it splits into the steps of ${guide.name}`
  }
  const pad: Draft[] = leafLevel
    ? fromRows(PADDING_STEPS, '')
    : PADDING_PARTS.map(p => ({ title: p.title, detail: doneLine(p.done), leaf: input.leafHint, dependsOn: [] }))
  const fitted = fitCount(drafts, min, max, pad)
  const subgoals: Subgoal[] = uniqueTitles(fitted).map(d => ({
    title: d.title,
    detail: d.detail,
    leaf: input.leafHint || d.leaf,
    dependsOn: [...d.dependsOn]
  }))
  const marked = markNeeds(subgoals, input)
  const leaves = subgoals.filter(s => s.leaf).length
  const rationale =
    `Offline heuristics, not a language model: ${how}. ` +
    `${subgoals.length} subgoals, ${leaves} marked leaf${input.leafHint ? ' (the next level is the maximum depth)' : ''}.` +
    (fitted.length !== drafts.length ? ` Fitted ${drafts.length} steps to the plan's ${min}..${max} children.` : '')
  return { subgoals: marked, rationale: safeSlice(rationale, MAX_RATIONALE_CHARS) }
}

/**
 * The offline planner's needs (protocol 3): a subgoal whose title or detail
 * names an offered tag or server (as a word, any case) needs it; when no
 * subgoal does but the goal or the node names one, the first subgoal needs
 * it, so a goal about "the notes" sends at least one task to the executor
 * with the notes.
 */
export function markNeeds(subgoals: readonly Subgoal[], input: DecomposeInput): Subgoal[] {
  const names = (input.tools ?? []).filter(t => !t.includes('/'))
  if (names.length === 0) return [...subgoals]
  const mentions = (text: string): string[] => {
    const words = new Set(
      text
        .toLowerCase()
        .split(/[^a-z0-9._-]+/)
        .map(w => w.replace(/[._-]+$/, ''))
    )
    return names.filter(n => words.has(n.toLowerCase()))
  }
  const own = subgoals.map(s => mentions(`${s.title} ${s.detail}`))
  const context = mentions(`${input.goal} ${input.node.title} ${input.node.detail}`)
  if (own.every(m => m.length === 0) && context.length > 0) own[0] = context
  return subgoals.map((s, i) => {
    const needs = [...new Set(own[i] ?? [])].sort().slice(0, MAX_NEEDS)
    return needs.length === 0 ? s : { ...s, needs }
  })
}
