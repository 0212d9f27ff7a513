/**
 * Built-in planning templates for the offline provider: what it proposes when
 * a node's text has no structure of its own. One family per angle (place,
 * activity, time, phase, resource), for trips (with a tiny gazetteer, so a
 * trip to Japan is split into Tokyo, Kyoto and Osaka) and for anything else.
 *
 * Template subgoals that need their own split carry their steps in `detail`
 * ("book flights; then book hotels"), so the next level grows from that text
 * by the same clause splitting a user's own goal gets: the tree has real
 * depth, and "then" gives dependencies between siblings.
 */
import type { KnownAngle } from '../types.js'
import { ACTION_VERBS, capitalize, safeSlice, words } from './text.js'

export interface TemplateItem {
  readonly title: string
  readonly detail: string
  readonly leaf: boolean
  readonly dependsOn: readonly number[]
}

export interface Template {
  /** e.g. "trip by place". */
  readonly name: string
  /** One sentence on how the template splits, for the rationale. */
  readonly why: string
  readonly items: readonly TemplateItem[]
}

/** What the templates need to know about the thing being planned. */
export interface Subject {
  readonly domain: 'trip' | 'generic'
  /** The goal or node text with a leading planning verb removed ("a two-week trip to Japan"). */
  readonly phrase: string
  readonly place: string | null
  readonly cities: readonly string[]
  readonly sideTrips: readonly string[]
  readonly days: number | null
}

const GAZETTEER: Readonly<Record<string, { cities: readonly string[], side: readonly string[] }>> = {
  japan: { cities: ['Tokyo', 'Kyoto', 'Osaka'], side: ['Nara', 'Hiroshima', 'Nikko'] },
  italy: { cities: ['Rome', 'Florence', 'Venice'], side: ['Pisa', 'Siena', 'the Cinque Terre'] },
  france: { cities: ['Paris', 'Lyon', 'Nice'], side: ['Versailles', 'Avignon', 'Monaco'] },
  spain: { cities: ['Madrid', 'Barcelona', 'Seville'], side: ['Toledo', 'Granada', 'Cordoba'] },
  portugal: { cities: ['Lisbon', 'Porto', 'Lagos'], side: ['Sintra', 'Coimbra', 'Evora'] },
  germany: { cities: ['Berlin', 'Munich', 'Hamburg'], side: ['Potsdam', 'Neuschwanstein', 'Lubeck'] },
  'the uk': { cities: ['London', 'Edinburgh', 'York'], side: ['Oxford', 'Bath', 'the Lake District'] },
  thailand: { cities: ['Bangkok', 'Chiang Mai', 'Phuket'], side: ['Ayutthaya', 'Chiang Rai', 'Krabi'] },
  china: { cities: ['Beijing', 'Xi\'an', 'Shanghai'], side: ['the Great Wall', 'Hangzhou', 'Suzhou'] }
}

const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, a: 1
}

const TRIP_WORDS = /\b(trip|travel|travels|vacation|holiday|holidays|journey|tour|itinerary|honeymoon|getaway|backpacking)\b/i
const PLANNING_VERBS = /^(?:plan|organise|organize|arrange|prepare|design|work out)\s+/i

function parseDays (text: string): number | null {
  const m = /\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|a)[- ](day|night|week|month)s?\b/i.exec(text)
  if (m === null) return /\bweekend\b/i.test(text) ? 2 : null
  const n = /^\d+$/.test(m[1] as string) ? Number(m[1]) : NUMBER_WORDS[(m[1] as string).toLowerCase()] ?? 1
  const unit = (m[2] as string).toLowerCase()
  const days = unit === 'week' ? n * 7 : unit === 'month' ? n * 30 : unit === 'night' ? n + 1 : n
  return days >= 2 && days <= 365 ? days : null
}

function parsePlace (text: string): string | null {
  const m = /\b(?:to|in|around|across|through|visit|visiting|of)\s+((?:the\s+)?[A-Z][\p{L}'’-]*(?:\s+[A-Z][\p{L}'’-]*)*)/u.exec(text)
  return m === null ? null : (m[1] as string)
}

export function subjectOf (text: string): Subject {
  const phrase = text.trim().replace(PLANNING_VERBS, '').replace(/[.!]+$/, '')
  const place = parsePlace(text)
  const known = place === null ? undefined : GAZETTEER[place.toLowerCase()] ?? GAZETTEER[`the ${place.toLowerCase()}`]
  return {
    domain: TRIP_WORDS.test(text) ? 'trip' : 'generic',
    phrase: phrase === '' ? text.trim() : phrase,
    place,
    cities: known?.cities ?? (place === null ? [] : [place]),
    sideTrips: known?.side ?? [],
    days: parseDays(text)
  }
}

/** Split `nights` over `n` stays as evenly as possible, earlier stays first. */
export function splitNights (nights: number, n: number): number[] {
  const base = Math.floor(nights / n)
  return Array.from({ length: n }, (_v, i) => base + (i < nights % n ? 1 : 0))
}

function listWords (items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? ''
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1] as string}`
}

function item (title: string, detail: string, dependsOn: readonly number[] = [], leaf = false): TemplateItem {
  return { title, detail, leaf, dependsOn }
}

function tripTemplate (angle: KnownAngle, s: Subject): Template {
  const where = s.place ?? 'the destination'
  const stays = s.cities.length >= 2 ? s.cities.slice(0, 3) : s.place !== null ? [`central ${s.place}`, `a second base in ${s.place}`] : ['the first base', 'the second base']
  const nights = s.days === null ? null : Math.max(stays.length, s.days - 1)
  const perStay = nights === null ? null : splitNights(nights, stays.length)
  const forDays = s.days === null ? '' : ` for the ${s.days} days`
  const stayList = listWords(stays)
  const sides = s.sideTrips.length > 0 ? `such as ${listWords(s.sideTrips.slice(0, 2))}` : 'within reach of each base'
  switch (angle) {
    case 'by place':
      return {
        name: 'trip by place',
        why: `one subgoal per base (${stayList}), after getting to and from ${where}, and day trips last`,
        items: [
          item(`Arrange travel to and from ${where}`, `Fix the travel dates${forDays}; then book return flights to ${where}; then choose how to travel between ${stayList}`),
          ...stays.map((c, i) => item(
            `Plan the stay in ${c}${perStay === null ? '' : ` (${perStay[i] ?? 1} nights)`}`,
            `Book a hotel in ${c}${perStay === null ? '' : ` for ${perStay[i] ?? 1} nights`}; list the sights and neighbourhoods to see in ${c}; reserve tours or restaurants in ${c} that need booking`,
            [0])),
          item('Plan day trips from the bases', `Choose day trips ${sides}; then check travel times and costs from each base`, stays.map((_c, i) => i + 1))
        ]
      }
    case 'by activity':
      return {
        name: 'trip by activity',
        why: 'one subgoal per kind of work (flights, hotels, transport, sightseeing, food, documents); hotels and transport wait for the flight dates',
        items: [
          item(`Book flights to ${where}`, `Compare fares for the travel dates${forDays}; then book return flights to ${where}`),
          item('Book hotels', `Choose an area to stay in ${stayList}; then book hotels${nights === null ? '' : ` for the ${nights} nights`} to match the flight dates`, [0]),
          item(`Arrange transport within ${where}`, `Compare a rail pass with single tickets for the route; then book the long-distance trains between ${stayList}`, [0]),
          item('Plan sightseeing', `List the must-see sights in ${stayList}; then reserve timed tickets and tours`, [1]),
          item('Plan food and dining', 'Note the local dishes to try in each city; reserve the restaurants that need booking'),
          item('Prepare documents and money', `Check passport validity and the visa rules for ${where}; buy travel insurance; arrange cards and cash`)
        ]
      }
    case 'by time': {
      const items: TemplateItem[] = [item('Prepare before departure', `Fix the travel dates; then book flights; then book hotels; then buy travel insurance`)]
      let day = 1
      stays.forEach((c, i) => {
        const n = perStay?.[i] ?? null
        const label = n === null ? `Part ${i + 1}` : n === 1 ? `Day ${day}` : `Days ${day}-${day + n - 1}`
        if (n !== null) day += n
        items.push(item(`${label}: ${c}`, `Travel to ${c}; see the main sights of ${c}; plan one evening out in ${c}`, [i]))
      })
      items.push(item(s.days === null ? 'Last day: return home' : `Day ${s.days}: return home`, 'Pack and check out; then travel to the airport; then fly home', [stays.length]))
      return { name: 'trip by time', why: 'in the order the days happen: before departure, each stretch of days, the way home; each part follows the one before', items }
    }
    case 'by phase':
      return {
        name: 'trip by phase',
        why: 'in planning phases: research, core bookings, itinerary, departure preparations, the final plan',
        items: [
          item('Research the trip and set the budget', `Choose the season and the cities to visit; set a total budget${forDays}; list the must-see places in ${where}`),
          item('Book the core travel', 'Book flights; then book hotels; then reserve the rail pass', [0]),
          item('Build the day-by-day itinerary', `Allocate the days between ${stayList}; then plan the sights for each day; then add the bookings and the travel times to each day`, [1]),
          item('Prepare for departure', `Check the passport and the visa rules for ${where}; buy travel insurance; arrange money and a mobile data plan; pack for the season`, [1]),
          item('Assemble the final trip plan', 'Collect the bookings, itinerary and checklist into one document; then share it with everyone travelling', [2, 3])
        ]
      }
    case 'by resource':
      return {
        name: 'trip by resource',
        why: 'by what the trip consumes: money, time, bookings, documents and gear; bookings wait for the budget and the dates',
        items: [
          item('Set the money plan', `Estimate the costs of flights, hotels, transport and food; then set a daily spending limit${forDays}; arrange cards and cash`),
          item('Plan the time', `Pick the travel dates; then allocate the nights between ${stayList}`),
          item('Make the bookings', 'Book flights; then book hotels; then reserve trains and timed tickets', [0, 1]),
          item('Sort documents and gear', `Check the passport and the visa rules for ${where}; buy travel insurance; pack for the season and the activities`)
        ]
      }
  }
}

/** "X for S", or "X: S" when S is itself an action ("launch a website"). */
function about (what: string, s: Subject): string {
  const phrase = s.phrase.length > 80 ? `${safeSlice(s.phrase, 77).trimEnd()}...` : s.phrase
  const first = words(phrase)[0]
  return first !== undefined && ACTION_VERBS.has(first) ? `${what}: ${phrase}` : `${what} for ${phrase}`
}

function genericTemplate (angle: KnownAngle, s: Subject): Template {
  const p = s.phrase
  switch (angle) {
    case 'by phase':
      return {
        name: 'generic by phase',
        why: 'in phases of work: scope, options, decision, the work itself, review; each phase needs the one before',
        items: [
          item(about('Define the scope', s), `Write down what "${p}" must achieve; list the constraints (budget, deadline, people); agree how success will be judged`),
          item(about('Research the options', s), 'List the possible approaches; then compare them on cost, time and risk', [0]),
          item(about('Decide the approach', s), 'Pick one option and record why; then set milestones and owners', [1]),
          item(about('Carry out the main work', s), 'Break the chosen approach into tasks; then do the tasks in order; track progress against the milestones', [2]),
          item(about('Review the result', s), 'Check the result against the success criteria; then list the follow-ups', [3])
        ]
      }
    case 'by activity':
      return {
        name: 'generic by activity',
        why: 'by kind of work: information, arrangements, people, materials, communication',
        items: [
          item(about('Gather information', s), 'Collect the requirements; research similar examples; note the open questions'),
          item(about('Make the arrangements', s), 'Book or buy what is needed; then confirm dates and suppliers', [0]),
          item(about('Coordinate the people', s), 'List who is involved; assign responsibilities; agree how to keep in touch'),
          item(about('Prepare the materials', s), 'List the materials and documents needed; then prepare them', [0]),
          item(about('Communicate', s), 'Draft the key messages; then send them to the people concerned', [1, 2])
        ]
      }
    case 'by time':
      return {
        name: 'generic by time',
        why: 'in the order things happen: set-up, the bulk of the work, the final stretch, the wrap-up',
        items: [
          item(about('Start now: set up', s), 'Agree the goal and the deadline; then list the first tasks'),
          item(about('Next weeks: do the bulk', s), 'Work through the main tasks; check progress every week', [0]),
          item(about('Final stretch: finish', s), 'Close the open tasks; then check that everything is ready', [1]),
          item(about('Afterwards: wrap up', s), 'Review what went well; then record the lessons', [2])
        ]
      }
    case 'by place':
      return {
        name: 'generic by place',
        why: 'by where the work happens: choosing the location, the main site, moving between places, remote parts',
        items: [
          item(about('Choose where it happens', s), 'List candidate locations; then compare them on access, cost and fit'),
          item(about('Arrange the main location', s), 'Book the location; then confirm access and facilities', [0]),
          item(about('Organise travel between places', s), 'Plan the routes; then book the transport', [0]),
          item(about('Handle the remote parts', s), 'List what can be done remotely; then set up the tools for it')
        ]
      }
    case 'by resource':
      return {
        name: 'generic by resource',
        why: 'by resource: money, people, time, materials; materials wait for the budget',
        items: [
          item(about('Budget', s), 'Estimate the costs; then set the budget and a reserve'),
          item(about('People', s), 'List the roles needed; then find and brief the people'),
          item(about('Time', s), 'Set the deadline; then schedule the main milestones'),
          item(about('Materials and tools', s), 'List what is needed; then buy or borrow it', [0])
        ]
      }
  }
}

export function templateFor (angle: KnownAngle, subject: Subject): Template {
  return subject.domain === 'trip' ? tripTemplate(angle, subject) : genericTemplate(angle, subject)
}

/** Extra subgoals for when a plan asks for more children than a template has. */
export function paddingItems (subject: Subject): TemplateItem[] {
  return [
    item(about('Record the decisions', subject), 'Write down each decision and why it was taken; then share the record', [], false),
    item(about('Prepare a fallback', subject), 'List what could go wrong; then note a fallback for each', [], false),
    item(about('Check against the goal', subject), 'Compare the plan with the goal; then list the gaps', [], false),
    item(about('Confirm with the people involved', subject), 'Share the plan; then collect and apply their corrections', [], false),
    item(about('Set the checkpoints', subject), 'Pick the dates to check progress; then note what to check each time', [], false),
    item(about('Collect the documents', subject), 'Gather the confirmations and documents; then keep them in one place', [], false)
  ].map(t => ({ ...t, title: capitalize(t.title) }))
}
