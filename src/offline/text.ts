/**
 * Small, deterministic text heuristics for the offline provider: words,
 * content words, action verbs, and splitting a text at its own structure
 * (bullet lists, semicolons, "then", lists joined by commas and "and").
 */
import { normalizeTitle } from '../wire/shape.js'

const STOPWORDS = new Set(
  (
    'a an the and or but if then else of to in on at by for from with without into onto over under ' +
    'about after before between during through across around up down out off as is are was were be been being ' +
    "this that these those it its it's their there them they we our you your i me my he she his her us " +
    'do does did done can could should would will shall may might must not no yes so than too very just ' +
    'each every all any some more most other such own same only also both either neither one per via ' +
    'what which who whom whose when where why how get got make made plan planned planning step steps part ' +
    'e g etc eg ie'
  ).split(' ')
)

export function isStopword(word: string): boolean {
  return STOPWORDS.has(word.toLowerCase())
}

/** Imperative verbs that mark a step as an action someone can take. */
export const ACTION_VERBS = new Set(
  (
    'add adjust agree allocate analyse analyze announce answer apply arrange ask assemble assess assign attach audit ' +
    ('automate block book brainstorm break brief budget build buy calculate call cancel carry ' +
      'celebrate check choose clean clear close collect compare ') +
    ('compile complete confirm consult contact coordinate copy create cut debug decide ' +
      'declutter define deliver demo deploy design develop document ') +
    ('draft draw drop edit email enrol enroll estimate explore fill find finish fix fly follow ' +
      'format frame gather give host hire identify ') +
    'implement include install interview invite involve keep label launch learn list load map measure meet move negotiate note notify ' +
    ('open order organise organize outline pack pay pick pilot plan post practice practise ' +
      'prepare price print promote proofread protect publish ') +
    ('purchase put raise rank rate read record recruit recycle register rehearse release remind ' +
      'renovate rent repair repeat reply request research reserve ') +
    ('return review revise run save schedule score search secure see select sell send set ' +
      'settle share ship shortlist sign sketch sort spend split start state study ') +
    ('submit summarise summarize supervise survey tag take talk teach tell test thank track ' +
      'train transfer travel triage try unpack update ') +
    'unload upload use value verify view visit weight work write'
  ).split(' ')
)

/**
 * Lowercase word tokens (letters, digits, inner hyphens and apostrophes).
 * The typographic apostrophe (and the bullet below) are written as escapes:
 * esbuild prints a regular expression's characters as they are, and one
 * outside ASCII makes V8 hold the whole bundle file at two bytes a
 * character (scripts/bundle-options.ts, oneByteText).
 */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+(?:['\u2019-][\p{L}\p{N}]+)*/gu) ?? []
}

/** A crude stem: plural and possessive endings off, so "hotels" meets "hotel". */
export function stem(word: string): string {
  let w = word.replace(/['\u2019]s$/, '')
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`
  else if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us')) w = w.slice(0, -1)
  return w
}

/** The distinct stems of a text's content words, in order of first appearance. */
export function contentWords(text: string): string[] {
  const out = new Set<string>()
  for (const w of words(text)) {
    if (w.length < 2 || STOPWORDS.has(w)) continue
    out.add(stem(w))
  }
  return [...out]
}

/** What a title is about: its content words without the leading verb ("Define the brief" -> brief). */
export function topicWords(title: string): string[] {
  const first = words(title)[0]
  const verb = first === undefined ? '' : stem(first)
  return contentWords(title).filter((w, i) => i > 0 || w !== verb)
}

export function startsWithAction(text: string): boolean {
  const first = words(text)[0]
  return first !== undefined && ACTION_VERBS.has(first)
}

/** Words with a capital not at the start of the text: place and product names, a sign of concreteness. */
export function properNouns(text: string): string[] {
  const tokens = text.split(/\s+/).filter(t => t !== '')
  return tokens
    .slice(1)
    .filter(t => /^[A-Z][\p{L}'\u2019-]+/u.test(t))
    .map(t => t.replace(/[^\p{L}'\u2019-]+$/u, ''))
}

export function hasNumber(text: string): boolean {
  return (
    /\d/.test(text) ||
    /\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen|twenty|thirty)\b/i.test(text)
  )
}

/** Upper-case the first letter. */
export function capitalize(text: string): string {
  return text.length === 0 ? text : text.charAt(0).toUpperCase() + text.slice(1)
}

/** A step found in a text, and the earlier steps the text says it comes after. */
export interface Clause {
  readonly text: string
  readonly dependsOn: readonly number[]
}

export type StructureKind = 'bullets' | 'numbered list' | 'clauses' | 'sequence' | 'list'

export interface Structure {
  readonly kind: StructureKind
  readonly clauses: readonly Clause[]
}

const BULLET = /^\s*(?:[-*\u2022+]|(\d+)[.)])\s+(.+?)\s*$/
const PREPOSITION_END = /\b(?:to|from|in|on|at|for|with|between|of|into|by)$/i
const CLAUSE_SEPARATOR = /\s*;\s*|(?<=[a-z0-9)])\.\s+(?=[A-Z])|\s*,?\s+then\s+/gi
const LIST_SEPARATOR = /\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+/i

function clean(s: string): string {
  return s
    .trim()
    .replace(/^(?:and|first|firstly|finally|also)\s+/i, '')
    .replace(/[.;:,]+$/, '')
    .trim()
}

/**
 * Collects steps in groups: a group that comes "after" depends on every step
 * of the group before it. A repeated step is kept once (later groups depend on
 * its first occurrence); steps with no words are dropped.
 */
class ClauseBuilder {
  readonly clauses: Clause[] = []
  private readonly index = new Map<string, number>()
  private previous: number[] = []

  group(texts: readonly string[], after: boolean): void {
    const deps = after ? [...this.previous] : []
    const members: number[] = []
    for (const raw of texts) {
      const text = clean(raw)
      const key = normalizeTitle(text)
      if (key.length < 2) continue
      const seen = this.index.get(key)
      if (seen !== undefined) {
        members.push(seen)
        continue
      }
      const i = this.clauses.length
      this.index.set(key, i)
      this.clauses.push({ text, dependsOn: deps.filter(d => d !== i) })
      members.push(i)
    }
    if (members.length > 0) this.previous = members
  }
}

/**
 * The steps a text lays out itself, or null when it has no structure: bullet
 * or numbered lines; else clauses separated by ";", sentence ends or "then"
 * (a "then" makes the next step depend on the one before), where a clause
 * that is itself a list of actions ("book a venue, arrange travel and plan the
 * agenda") becomes one step per action; else a list joined by commas and
 * "and", where a shared leading verb is carried over to short items ("book
 * flights and hotels" -> "book flights", "book hotels"). A leading heading
 * ("organise the offsite: ...") gives way to the steps after its colon.
 */
export function splitStructure(text: string): Structure | null {
  const lines = text.split(/\r?\n/)
  const bullets = lines.map(l => BULLET.exec(l)).filter((m): m is RegExpExecArray => m !== null)
  if (bullets.length >= 2) {
    const numbered = bullets.every(m => m[1] !== undefined)
    const b = new ClauseBuilder()
    bullets.forEach((m, i) => b.group([m[2] ?? ''], numbered && i > 0))
    if (b.clauses.length >= 2) return { kind: numbered ? 'numbered list' : 'bullets', clauses: b.clauses }
  }
  const flat = text.replace(/\s+/g, ' ').trim()
  const heading = /^([^:;]{3,120}):\s+(.+)$/.exec(flat)
  if (heading !== null) {
    const inner = splitFlat(heading[2] as string)
    if (inner !== null) return inner
  }
  return splitFlat(flat)
}

function splitFlat(flat: string): Structure | null {
  const parts = flat.split(CLAUSE_SEPARATOR)
  const seps = [...flat.matchAll(CLAUSE_SEPARATOR)].map(m => m[0])
  if (parts.length >= 2) {
    const b = new ClauseBuilder()
    let sequence = false
    parts.forEach((p, i) => {
      let t = p.trim()
      let after = i > 0 && /then/i.test(seps[i - 1] ?? '')
      if (/^then\s+/i.test(t)) {
        after = i > 0
        t = t.replace(/^then\s+/i, '')
      }
      if (after) sequence = true
      // Only a list of whole actions becomes several steps; "reserve tickets and tours" stays one.
      const list = splitList(t)
      const actions = list !== null && !list.distributed && list.items.every(startsWithAction) ? list.items : [t]
      b.group(actions, after)
    })
    if (b.clauses.length >= 2) return { kind: sequence ? 'sequence' : 'clauses', clauses: b.clauses }
  }
  const list = splitList(flat)
  if (list === null) return null
  const b = new ClauseBuilder()
  b.group(list.items, false)
  return b.clauses.length >= 2 ? { kind: 'list', clauses: b.clauses } : null
}

/** The items of a list joined by commas, "and" and "or" (`distributed` when a shared head was carried over), or null. */
function splitList(flat: string): { items: string[]; distributed: boolean } | null {
  // Split at commas and at " and " / " or ", except where "and" joins "to and from".
  const items: string[] = []
  let rest = flat
  for (;;) {
    const m = LIST_SEPARATOR.exec(rest)
    if (m === null) break
    const left = rest.slice(0, m.index)
    if (PREPOSITION_END.test(left) && !m[0].includes(',')) {
      // "travel to and from Japan": not a list separator; look further on.
      const further = LIST_SEPARATOR.exec(rest.slice(m.index + m[0].length))
      if (further === null) break
      const cut = m.index + m[0].length + further.index
      items.push(rest.slice(0, cut))
      rest = rest.slice(cut + further[0].length)
      continue
    }
    items.push(left)
    rest = rest.slice(m.index + m[0].length)
  }
  items.push(rest)
  const cleaned = items.map(clean).filter(s => s !== '')
  if (cleaned.length < 2) return null
  const wc = cleaned.map(s => s.split(' ').length)
  const first = cleaned[0] as string
  if (wc.every(n => n >= 2)) return { items: cleaned, distributed: false }
  const head = first.split(' ').slice(0, -1).join(' ')
  // "between Tokyo, Kyoto and Osaka" relates the items: it is not a list of separate steps.
  if ((wc[0] ?? 0) >= 2 && wc.slice(1).every(n => n <= 3) && !/\b(?:between|among|amongst|and|or)$/i.test(head)) {
    return { items: [first, ...cleaned.slice(1).map(s => `${head} ${s}`)], distributed: true }
  }
  return null
}

/** The first `n` UTF-16 units of a text, one fewer if that would split a surrogate pair. */
export function safeSlice(text: string, n: number): string {
  if (text.length <= n) return text
  const code = text.charCodeAt(n - 1)
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n)
}

/** A deterministic 32-bit FNV-1a hash of a string. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/**
 * Whether a text lays out steps of its own: bullets, numbers, ";", "then" or
 * sentences. A plain list joined by commas and "and" does not count: in a
 * "done when" line it names what is done, not steps to take.
 */
export function laysOutSteps(text: string): boolean {
  const s = splitStructure(text)
  return s !== null && s.kind !== 'list'
}

/** Offline titles stay this short, well under the wire's MAX_TITLE_CHARS: a title is a short imperative. */
export const TITLE_TARGET_CHARS = 80

/**
 * A text made fit to be a title: one line, no trailing punctuation, no word
 * twice in a row (a repeated proper noun, "Bora Bora", stays), cut at a word
 * boundary to `max` characters, first letter upper-case.
 */
export function cleanTitle(text: string, max = TITLE_TARGET_CHARS): string {
  const tokens = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[\s.;:,!]+$/u, '')
    .split(' ')
  const kept: string[] = []
  for (const t of tokens) {
    const prev = kept[kept.length - 1]
    if (prev !== undefined && prev.toLowerCase() === t.toLowerCase() && t === t.toLowerCase()) continue
    kept.push(t)
  }
  let out = kept.join(' ')
  if (out.length > max) {
    const cut = safeSlice(out, max)
    const space = cut.lastIndexOf(' ')
    out = (space >= max / 2 ? cut.slice(0, space) : cut).replace(/[\s.;:,!-]+$/u, '')
  }
  return capitalize(out)
}
