/**
 * Offline decomposition: split a node by its own text when the text lays out
 * steps (lists, clauses, "then"), else by the built-in template for the
 * angle. Deterministic: the same input gives the same split, everywhere.
 */
import type { Subgoal } from '../../core/events.js'
import { MAX_DETAIL_CHARS, MAX_SUBGOALS, MAX_TITLE_CHARS, MIN_SUBGOALS } from '../../core/limits.js'
import { normalizeTitle } from '../../wire/shape.js'
import { ANGLES, type DecomposeInput, type KnownAngle } from '../types.js'
import { capitalize, fnv1a, safeSlice, splitStructure, startsWithAction, type Structure } from './text.js'
import { paddingItems, subjectOf, templateFor, type TemplateItem } from './templates.js'

/** A step with at most this many words that starts with an action verb is small enough to be a leaf. */
export const LEAF_MAX_WORDS = 12

/** Map any angle string onto a known one ("by geography" -> "by place"); unknown ones by hash. */
export function knownAngle (angle: string): KnownAngle {
  const a = angle.toLowerCase()
  if (/place|geograph|where|location|region|city/.test(a)) return 'by place'
  if (/activit|kind|type|task|function/.test(a)) return 'by activity'
  if (/time|day|date|schedule|chrono|week/.test(a)) return 'by time'
  if (/phase|stage|step|sequence|milestone/.test(a)) return 'by phase'
  if (/resource|budget|cost|money|people/.test(a)) return 'by resource'
  return ANGLES[fnv1a(a) % ANGLES.length] as KnownAngle
}

function rotate (angle: KnownAngle, by: number): KnownAngle {
  return ANGLES[(ANGLES.indexOf(angle) + by) % ANGLES.length] as KnownAngle
}

function wordCount (text: string): number {
  return text.split(/\s+/).filter(w => w !== '').length
}

/** Concrete and short: starts with an action verb, at most LEAF_MAX_WORDS words, no steps of its own. */
export function looksLikeLeaf (title: string, detail: string): boolean {
  return startsWithAction(title) && wordCount(title) <= LEAF_MAX_WORDS && splitStructure(detail) === null
}

function shortTitle (text: string): string {
  if (text.length <= MAX_TITLE_CHARS) return text
  const cut = safeSlice(text, MAX_TITLE_CHARS - 3)
  const space = cut.lastIndexOf(' ')
  return `${space > 40 ? cut.slice(0, space) : cut}...`
}

function fitDetail (text: string, fallback: string): string {
  return text.length <= MAX_DETAIL_CHARS ? text : safeSlice(fallback, MAX_DETAIL_CHARS)
}

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
export function fitCount (drafts: readonly Draft[], min: number, max: number, pad: readonly TemplateItem[]): Draft[] {
  if (drafts.length > max) {
    const n = drafts.length
    const groupOf = drafts.map((_d, i) => Math.floor(i * max / n))
    const groups: Draft[] = []
    for (let g = 0; g < max; g++) {
      const members = drafts.map((d, i) => ({ d, i })).filter(x => groupOf[x.i] === g)
      const deps = new Set<number>()
      for (const { d } of members) for (const j of d.dependsOn) if (groupOf[j] !== g) deps.add(groupOf[j] as number)
      const titles = members.map(x => x.d.title)
      const joined = titles.join('; ')
      const title = joined.length <= MAX_TITLE_CHARS ? joined : shortTitle(`${titles[0] ?? ''} and ${titles.length - 1} more steps`)
      const detail = fitDetail(members.map(x => `${x.d.title}: ${x.d.detail}`).join('\n'), members.map(x => `- ${x.d.title}`).join('\n'))
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
    out.push({ ...p })
  }
  return out
}

function fromStructure (structure: Structure, parentTitle: string, leafHint: boolean): Draft[] {
  const n = structure.clauses.length
  return structure.clauses.map((c, i) => {
    const title = capitalize(shortTitle(c.text))
    const note = ` (step ${i + 1} of ${n} in "${parentTitle}")`
    const detail = fitDetail(`${capitalize(c.text)}.${note}`, `${capitalize(c.text)}.`)
    return { title, detail, leaf: leafHint || looksLikeLeaf(c.text, ''), dependsOn: c.dependsOn }
  })
}

/** Titles must differ (as the wire compares them); a repeat gets its position appended. */
function uniqueTitles (drafts: readonly Draft[]): Draft[] {
  const seen = new Set<string>()
  return drafts.map((d, i) => {
    let title = d.title
    if (seen.has(normalizeTitle(title))) title = `${safeSlice(title, MAX_TITLE_CHARS - 12)} (part ${i + 1})`
    seen.add(normalizeTitle(title))
    return title === d.title ? d : { ...d, title }
  })
}

export interface OfflineSplit {
  readonly subgoals: Subgoal[]
  readonly rationale: string
}

export function decomposeOffline (input: DecomposeInput): OfflineSplit {
  const min = Math.min(Math.max(input.minChildren, MIN_SUBGOALS), MAX_SUBGOALS)
  const max = Math.max(min, Math.min(input.maxChildren, MAX_SUBGOALS))
  const angle = knownAngle(input.angle)
  const retry = input.notes.length > 0
  // A failed attempt: propose something else. Structure gives way to a template, a template to another angle.
  const useAngle = retry ? rotate(angle, 1 + fnv1a(input.notes.join('\n')) % (ANGLES.length - 1)) : angle
  const subject = subjectOf(`${input.node.title}\n${input.node.detail}`.trim())
  const structure = retry ? null : splitStructure(input.node.detail) ?? splitStructure(input.node.title)

  let drafts: Draft[]
  let how: string
  if (structure !== null) {
    drafts = fromStructure(structure, input.node.title, input.leafHint)
    const deps = structure.kind === 'sequence' || structure.kind === 'numbered list' ? '; a step after "then" or a number depends on the step(s) before it' : ''
    how = `split the node's own text at its ${structure.kind} (${structure.clauses.length} steps)${deps}`
  } else {
    const t = templateFor(useAngle, subjectOf(input.path.length === 0 ? input.goal : `${input.node.title}\n${input.node.detail}`))
    drafts = t.items.map(i => ({ ...i, title: shortTitle(i.title), detail: fitDetail(i.detail, i.title), leaf: input.leafHint || i.leaf || looksLikeLeaf(i.title, i.detail) }))
    how = `the node's text lays out no steps, so it follows the built-in template "${t.name}" (angle "${useAngle}"): ${t.why}`
    if (retry) how += `; the committee rejected the previous attempt (${input.notes.length} notes), so this attempt takes the angle "${useAngle}" instead of "${angle}"`
  }
  const fitted = fitCount(drafts, min, max, paddingItems(subject).map(p => ({ ...p, leaf: input.leafHint || p.leaf })))
  const subgoals: Subgoal[] = uniqueTitles(fitted).map(d => ({ title: d.title, detail: d.detail, leaf: d.leaf, dependsOn: [...d.dependsOn] }))
  const leaves = subgoals.filter(s => s.leaf).length
  const rationale = `Offline heuristics, not a language model: ${how}. ` +
    `${subgoals.length} subgoals, ${leaves} marked leaf (${input.leafHint ? 'the next level is the maximum depth' : `action verb and at most ${LEAF_MAX_WORDS} words, no steps of its own`}).` +
    (fitted.length !== drafts.length ? ` Fitted ${drafts.length} steps to the plan's ${min}..${max} children.` : '')
  return { subgoals, rationale }
}
