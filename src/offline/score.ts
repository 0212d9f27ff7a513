/**
 * Offline scoring with measures a reader can check by hand:
 * - coverage: the share of the node's content words that the subgoals mention;
 * - overlap: the mean pairwise Jaccard overlap of the subgoal titles' words;
 * - concreteness: the share of subgoals with an action verb, a number or a
 *   name (a title that repeats the node's whole title does not count);
 * - leaf size: the share of subgoals marked leaf that are short and concrete;
 * - kind fit: the share of subgoal titles that use the words of the goal's
 *   kind (kind.ts): a grant proposal's split should talk about drafts and
 *   reviewers, not flights and venues.
 * The notes give each number and the arithmetic; the choice is the best score
 * at or above ACCEPT_SCORE, ties to the smallest proposal id, so every offline
 * scorer that sees the same proposals chooses the same one.
 */
import { MAX_NOTES_CHARS } from '../core/limits.js'
import type { Subgoal } from '../core/events.js'
import type { ScoreInput } from '../llm/types.js'
import { looksLikeLeaf } from './decompose.js'
import { shapeFor, vocabularyOf } from './shape.js'
import { contentWords, hasNumber, properNouns, safeSlice, startsWithAction, topicWords, words } from './text.js'

/** The lowest score a proposal needs to be chosen. */
export const ACCEPT_SCORE = 50

export const WEIGHTS = Object.freeze({ coverage: 0.3, distinct: 0.2, concrete: 0.2, leaves: 0.1, fit: 0.2 })

export interface Measures {
  readonly coverage: number
  readonly covered: number
  readonly parentWords: number
  readonly missing: readonly string[]
  readonly overlap: number
  readonly concrete: number
  readonly concreteCount: number
  readonly leafOk: number
  readonly leafCount: number
  readonly leafOkCount: number
  readonly fit: number
  readonly fitCount: number
  /** Subgoals whose title repeats the node's whole title. */
  readonly echoCount: number
  /** What the fit was measured against: "a piece of writing". */
  readonly kindLabel: string
  readonly score: number
}

/** The words of a kind, for the fit measure: what its titles talk about, without the verbs every kind shares. */
export interface KindWords {
  readonly label: string
  readonly words: ReadonlySet<string>
}

export function kindWordsOf(goal: string): KindWords {
  const shape = shapeFor(goal)
  return { label: shape.label, words: vocabularyOf(shape) }
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 0
  let both = 0
  for (const w of a) if (b.has(w)) both++
  return both / (a.size + b.size - both)
}

export function measure(
  parent: { title: string; detail: string },
  subgoals: readonly Subgoal[],
  kind: KindWords
): Measures {
  const parentWords = contentWords(`${parent.title} ${parent.detail}`)
  const childWords = new Set(contentWords(subgoals.map(s => `${s.title} ${s.detail}`).join(' ')))
  const missing = parentWords.filter(w => !childWords.has(w))
  const covered = parentWords.length - missing.length
  const coverage = parentWords.length === 0 ? 1 : covered / parentWords.length

  const titleSets = subgoals.map(s => new Set(contentWords(s.title)))
  let pairs = 0
  let sum = 0
  for (let i = 0; i < titleSets.length; i++) {
    for (let j = i + 1; j < titleSets.length; j++) {
      sum += jaccard(titleSets[i] as Set<string>, titleSets[j] as Set<string>)
      pairs++
    }
  }
  const overlap = pairs === 0 ? 0 : sum / pairs

  // A title that repeats the node's whole title splits nothing: it counts as neither concrete nor fitting.
  const parentTitle = words(parent.title).join(' ')
  const echoes = (s: Subgoal): boolean => parentTitle.includes(' ') && words(s.title).join(' ').includes(parentTitle)
  const fresh = subgoals.filter(s => !echoes(s))
  const concreteCount = fresh.filter(
    s => startsWithAction(s.title) || hasNumber(s.title) || properNouns(s.title).length > 0
  ).length
  const concrete = subgoals.length === 0 ? 0 : concreteCount / subgoals.length

  const leaves = subgoals.filter(s => s.leaf)
  const leafOkCount = leaves.filter(s => looksLikeLeaf(s.title, s.detail)).length
  const leafOk = leaves.length === 0 ? 1 : leafOkCount / leaves.length

  const fitCount = fresh.filter(s => topicWords(s.title).some(w => kind.words.has(w))).length
  const fit = subgoals.length === 0 ? 0 : fitCount / subgoals.length

  const raw =
    WEIGHTS.coverage * coverage +
    WEIGHTS.distinct * (1 - overlap) +
    WEIGHTS.concrete * concrete +
    WEIGHTS.leaves * leafOk +
    WEIGHTS.fit * fit
  const score = Math.max(0, Math.min(100, Math.round(100 * raw)))
  return {
    coverage,
    covered,
    parentWords: parentWords.length,
    missing,
    overlap,
    concrete,
    concreteCount,
    leafOk,
    leafCount: leaves.length,
    leafOkCount,
    fit,
    fitCount,
    echoCount: subgoals.length - fresh.length,
    kindLabel: kind.label,
    score
  }
}

const f2 = (x: number): string => x.toFixed(2)

export function explain(m: Measures, n: number): string {
  const missing =
    m.missing.length === 0
      ? ''
      : `; not mentioned: ${m.missing.slice(0, 8).join(', ')}${m.missing.length > 8 ? ', ...' : ''}`
  const text =
    `offline measures, not a model: coverage ${f2(m.coverage)} (${m.covered}/${m.parentWords} of the node's content words${missing}); ` +
    `overlap ${f2(m.overlap)} (mean pairwise title-word Jaccard); ` +
    (`concreteness ${f2(m.concrete)} (${m.concreteCount}/${n} titles with an action verb, a ` +
      `number or a name${m.echoCount > 0 ? `; ${m.echoCount} repeat the node's title and count for nothing` : ''}); `) +
    `leaf size ${f2(m.leafOk)} (${m.leafOkCount}/${m.leafCount} leaves short and concrete); ` +
    `kind fit ${f2(m.fit)} (${m.fitCount}/${n} titles use the words of ${m.kindLabel}). ` +
    (`Score = 100 x (${WEIGHTS.coverage} x ${f2(m.coverage)} + ${WEIGHTS.distinct} ` +
      `x ${f2(1 - m.overlap)} + ${WEIGHTS.concrete} x ${f2(m.concrete)} + ${WEIGHTS.leaves} ` +
      `x ${f2(m.leafOk)} + ${WEIGHTS.fit} x ${f2(m.fit)}) = ${m.score}.`)
  return safeSlice(text, MAX_NOTES_CHARS)
}

export interface OfflineScores {
  readonly scores: Array<{ proposal: string; score: number; notes: string }>
  readonly choice: string | null
  readonly notes: string
}

export function scoreOffline(input: ScoreInput): OfflineScores {
  const kind = kindWordsOf(input.goal)
  const scores = input.proposals.map(p => {
    const m = measure(input.node, p.subgoals, kind)
    return { proposal: p.id, score: m.score, notes: explain(m, p.subgoals.length) }
  })
  let best: { proposal: string; score: number } | null = null
  for (const s of scores) {
    if (s.score < ACCEPT_SCORE) continue
    if (best === null || s.score > best.score || (s.score === best.score && s.proposal < best.proposal)) best = s
  }
  const notes =
    best === null
      ? `Offline heuristics: no proposal reached ${ACCEPT_SCORE}; a better split covers more of ` +
        `the node's words with concrete, non-overlapping subgoals that fit ${kind.label}.`
      : `Offline heuristics: chose ${best.proposal} with ${best.score}, the highest score at or ` +
        `above ${ACCEPT_SCORE} (ties go to the smallest id).`
  return { scores, choice: best === null ? null : best.proposal, notes }
}
