/**
 * The broad kind of a goal, read from its words, so that the offline provider
 * splits a grant proposal like a piece of writing and a book swap like an
 * event, not like a trip. Pure and deterministic: a fixed cue table, word
 * stems, integer weights, ties broken by the order of KINDS.
 */
import { ACTION_VERBS, isStopword, stem, words } from './text.js'

/** The kinds the offline provider has a plan shape for; 'generic' is the fallback. */
export const KINDS = [
  'trip',
  'event',
  'software',
  'move',
  'purchase',
  'learning',
  'writing',
  'research',
  'generic'
] as const
export type GoalKind = (typeof KINDS)[number]

interface Cues {
  /** Verbs that name the kind when they lead the goal ("write ..."): 3 points first, 1 elsewhere. */
  readonly verbs: readonly string[]
  /** Nouns that name the thing itself ("proposal"): 2 points each; they also name the thing in titles. */
  readonly nouns: readonly string[]
  /** Words that hint at the kind ("grant", "guests"): 1 point each. */
  readonly hints: readonly string[]
}

/**
 * What each kind is recognised by. A cue with a hyphen also matches the two
 * words apart ("open source"). A few common words of other languages are
 * cues too; any other text in them reads as 'generic'.
 */
export const CUES: Readonly<Record<Exclude<GoalKind, 'generic'>, Cues>> = {
  trip: {
    verbs: ['travel', 'visit', 'tour', 'backpack', 'explore'],
    nouns: [
      'trip',
      'travel',
      'vacation',
      'holiday',
      'journey',
      'tour',
      'itinerary',
      'honeymoon',
      'getaway',
      'backpacking',
      'cruise',
      'safari',
      'road-trip',
      'flight',
      'voyage',
      'vacances',
      'viaje',
      'vacaciones',
      'reise',
      'urlaub'
    ],
    hints: ['sightseeing', 'abroad', 'hotel', 'weekend', 'destination']
  },
  event: {
    verbs: ['organise', 'organize', 'host', 'throw', 'celebrate', 'hold'],
    nouns: [
      'event',
      'party',
      'wedding',
      'conference',
      'meetup',
      'workshop',
      'festival',
      'gathering',
      'celebration',
      'reunion',
      'fundraiser',
      'gala',
      'swap',
      'fair',
      'concert',
      'dinner',
      'picnic',
      'hackathon',
      'offsite',
      'ceremony',
      'exhibition',
      'webinar',
      'seminar',
      'summit',
      'tournament',
      'barbecue',
      'bbq',
      'meeting',
      'club',
      'retreat',
      'screening',
      'mariage',
      'fête',
      'boda',
      'fiesta',
      'hochzeit',
      'feier'
    ],
    hints: [
      'guest',
      'attendee',
      'venue',
      'rsvp',
      'birthday',
      'anniversary',
      'neighbourhood',
      'neighborhood',
      'community',
      'invitation',
      'speaker'
    ]
  },
  move: {
    verbs: ['move', 'relocate', 'emigrate'],
    nouns: ['moving', 'relocation', 'house-move', 'removal'],
    hints: ['city', 'apartment', 'flat', 'house', 'home', 'family', 'abroad', 'country', 'movers', 'box']
  },
  purchase: {
    verbs: ['buy', 'purchase', 'order', 'lease', 'replace'],
    nouns: [
      'purchase',
      'house',
      'car',
      'laptop',
      'phone',
      'bike',
      'bicycle',
      'sofa',
      'tv',
      'camera',
      'computer',
      'mattress',
      'fridge',
      'dishwasher',
      'washing-machine',
      'e-bike',
      'printer',
      'headphones',
      'tablet',
      'gift',
      'present',
      'van'
    ],
    hints: ['price', 'cheapest', 'deal', 'second-hand', 'used', 'budget', 'warranty', 'model']
  },
  learning: {
    verbs: ['learn', 'study', 'master', 'practise', 'practice', 'train', 'revise', 'apprendre', 'aprender', 'lernen'],
    nouns: [
      'course',
      'language',
      'skill',
      'exam',
      'certification',
      'lesson',
      'curriculum',
      'spanish',
      'french',
      'german',
      'italian',
      'japanese',
      'mandarin',
      'chinese',
      'arabic',
      'portuguese',
      'korean',
      'russian',
      'hindi',
      'guitar',
      'piano',
      'violin',
      'drums',
      'marathon',
      'chess',
      'calculus',
      'statistics',
      'swimming',
      'driving',
      'speaking'
    ],
    hints: [
      'better',
      'improve',
      'beginner',
      'fluent',
      'fluency',
      'habit',
      'daily',
      'tutor',
      'teacher',
      'grade',
      'level',
      'myself'
    ]
  },
  software: {
    verbs: ['build', 'develop', 'code', 'implement', 'deploy', 'ship', 'refactor', 'debug', 'migrate', 'automate'],
    nouns: [
      'app',
      'website',
      'api',
      'package',
      'plugin',
      'extension',
      'script',
      'tool',
      'cli',
      'service',
      'backend',
      'frontend',
      'database',
      'server',
      'bot',
      'game',
      'dashboard',
      'sdk',
      'framework',
      'platform',
      'software',
      'program',
      'codebase',
      'repository',
      'pipeline',
      'prototype',
      'mvp',
      'feature',
      'microservice'
    ],
    hints: [
      'open-source',
      'library',
      'launch',
      'release',
      'bug',
      'mobile',
      'web',
      'python',
      'javascript',
      'typescript',
      'rust',
      'react',
      'github',
      'kubernetes',
      'docker',
      'cloud',
      'ci',
      'aws',
      'npm',
      'android',
      'ios',
      'data',
      'postgresql',
      'sql',
      'user'
    ]
  },
  writing: {
    verbs: ['write', 'draft', 'publish', 'edit', 'author'],
    nouns: [
      'proposal',
      'report',
      'article',
      'essay',
      'paper',
      'thesis',
      'dissertation',
      'book',
      'novel',
      'blog',
      'post',
      'newsletter',
      'letter',
      'speech',
      'cv',
      'resume',
      'manual',
      'guide',
      'documentation',
      'story',
      'chapter',
      'application',
      'brochure',
      'whitepaper',
      'memo',
      'bid',
      'submission',
      'abstract',
      'script'
    ],
    hints: ['grant', 'funder', 'funding', 'editor', 'journal', 'words', 'page', 'deadline', 'reader', 'publication']
  },
  research: {
    verbs: [
      'research',
      'investigate',
      'analyse',
      'analyze',
      'evaluate',
      'assess',
      'compare',
      'decide',
      'choose',
      'determine',
      'explore',
      'understand',
      'find',
      'figure',
      'pick',
      'select',
      'weigh'
    ],
    nouns: [
      'research',
      'study',
      'analysis',
      'decision',
      'comparison',
      'survey',
      'evaluation',
      'investigation',
      'feasibility',
      'question'
    ],
    hints: [
      'option',
      'alternative',
      'pros',
      'cons',
      'switch',
      'between',
      'versus',
      'vs',
      'best',
      'worth',
      'whether',
      'which',
      'or'
    ]
  }
}

export interface KindReading {
  readonly kind: GoalKind
  /** The cue words that matched, in the goal's order (for the rationale). */
  readonly cues: readonly string[]
  /** The goal's word for the thing, when it has one ("proposal"), else null. */
  readonly noun: string | null
}

/** A kind needs at least this many points; below it the goal gets the generic project shape. */
export const MIN_KIND_POINTS = 2

/** Words that lead a goal without saying what it is ("help me plan ...", "how do I ..."). */
const NOT_A_LEAD =
  /^(?:plan|planning|help|me|us|we|i|to|a|an|the|please|let's|lets|want|need|would|like|how|what|which|why|when|where|who|should|could|can|do|does|did|is|are|shall|will|my|our)$/

const ARTICLE = /^(?:a|an|the|my|our|your|their|his|her)$/

/** A goal that asks a question: it ends with "?" or opens with a question word. */
const QUESTION = /^\s*(?:how|what|which|why|when|where|who|should|could|can|do|does|is|are|shall|will|would)\b/i

/** Only the head of a goal says what it is; the rest of a long goal is detail, whose words would mislead. */
export const HEAD_WORDS = 16

/** The head's words as written and as stems, and the stems of adjacent pairs joined by a hyphen ("open source" -> "open-source"). */
function tokens(text: string): { raw: string[]; stems: string[]; pairs: string[] } {
  const raw = words(text).slice(0, HEAD_WORDS)
  const stems = raw.map(w => w.split('-').map(stem).join('-'))
  const pairs = stems.slice(1).map((w, i) => `${stems[i] as string}-${w}`)
  return { raw, stems, pairs }
}

const stemmed = (list: readonly string[]): Set<string> => new Set(list.map(w => w.split('-').map(stem).join('-')))

/** The cue sets in the order of KINDS, which breaks ties. */
const TABLE = KINDS.flatMap(kind => {
  if (kind === 'generic') return []
  const c = CUES[kind]
  return [{ kind, verbs: stemmed(c.verbs), nouns: stemmed(c.nouns), hints: stemmed(c.hints) }]
})

/**
 * The kind of a goal: each kind's cue points summed over the first
 * HEAD_WORDS words of the goal, the highest total at or above MIN_KIND_POINTS
 * wins, ties to the earlier kind in KINDS; else 'generic'. A lead verb counts
 * most; a lead word that is a verb counts as a verb only ("book flights" is
 * not a book), one after an article as a noun only ("a study of ..."). A
 * question counts 2 for research. Text in other languages mostly has no cues
 * and reads as 'generic', which has a shape for anything.
 */
export function recognizeKind(goal: string): KindReading {
  const { raw, stems, pairs } = tokens(goal)
  const leadAt = raw.findIndex(w => !NOT_A_LEAD.test(w))
  // "a study of ...": a lead word after an article is a noun, not an instruction.
  const verbal = leadAt >= 0 && !ARTICLE.test(raw[leadAt - 1] ?? '')
  const leadIsVerb = verbal && ACTION_VERBS.has(raw[leadAt] as string)
  const question = goal.trim().endsWith('?') || QUESTION.test(goal)
  let best: KindReading & { points: number } = { kind: 'generic', cues: [], noun: null, points: 0 }
  for (const k of TABLE) {
    let points = 0
    const cues: string[] = []
    const score = (t: string, at: number): void => {
      let p = 0
      if (k.verbs.has(t)) p += at === leadAt && verbal ? 3 : 1
      if (k.nouns.has(t) && (at !== leadAt || !leadIsVerb)) p += 2
      if (k.hints.has(t)) p += 1
      if (p > 0) {
        points += p
        if (!cues.includes(t)) cues.push(t)
      }
    }
    stems.forEach(score)
    pairs.forEach(t => {
      score(t, -1)
    })
    if (k.kind === 'research' && question) {
      points += 2
      cues.push('a question')
    }
    if (points > best.points)
      best = { kind: k.kind, cues, noun: headNoun(raw, stems, leadIsVerb ? leadAt : -1, k), points }
  }
  if (best.points < MIN_KIND_POINTS) return { kind: 'generic', cues: [], noun: null }
  return { kind: best.kind, cues: best.cues, noun: best.noun }
}

/**
 * The goal's name for the thing: the last noun cue of the first run of them
 * ("birthday party" -> "party"), with the word before it unless that is a
 * stopword or the lead verb ("a neighbourhood book swap" -> "book swap"), or
 * null when the goal names no thing of the kind.
 */
function headNoun(
  raw: readonly string[],
  stems: readonly string[],
  verbAt: number,
  k: (typeof TABLE)[number]
): string | null {
  const isNoun = (i: number): boolean => i !== verbAt && k.nouns.has(stems[i] as string)
  let i = stems.findIndex((_s, j) => isNoun(j))
  if (i < 0) return null
  while (i + 1 < stems.length && isNoun(i + 1)) i++
  const b = i - 1
  const word = raw[b]
  const modifier = word !== undefined && b !== verbAt && !isStopword(word) && !/^\d+$/.test(word) ? `${word} ` : ''
  return `${modifier}${raw[i] as string}`
}
