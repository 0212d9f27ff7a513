/**
 * The offline plan shape for a trip. Unlike the other kinds it is built from
 * the goal: a tiny gazetteer turns "a trip to Japan" into stays in Tokyo,
 * Kyoto and Osaka, and "two weeks" into nights per stay. Each part's steps are
 * written as a sentence ("book flights; then book hotels") and split by the
 * same clause splitting a user's own goal gets, so "then" orders them.
 */
import type { KnownAngle } from '../../llm/types.js'
import { guideFor } from '../guides.js'
import type { KindReading } from '../kind.js'
import { viewOf, PADDING_PARTS, type PartSpec, type Shape, type ShapeView } from '../parts.js'
import { cleanTitle, splitStructure } from '../text.js'

const GAZETTEER: Readonly<Record<string, { cities: readonly string[]; side: readonly string[] }>> = {
  japan: { cities: ['Tokyo', 'Kyoto', 'Osaka'], side: ['Nara', 'Hiroshima', 'Nikko'] },
  italy: { cities: ['Rome', 'Florence', 'Venice'], side: ['Pisa', 'Siena', 'the Cinque Terre'] },
  france: { cities: ['Paris', 'Lyon', 'Nice'], side: ['Versailles', 'Avignon', 'Monaco'] },
  spain: { cities: ['Madrid', 'Barcelona', 'Seville'], side: ['Toledo', 'Granada', 'Cordoba'] },
  portugal: { cities: ['Lisbon', 'Porto', 'Lagos'], side: ['Sintra', 'Coimbra', 'Evora'] },
  germany: { cities: ['Berlin', 'Munich', 'Hamburg'], side: ['Potsdam', 'Neuschwanstein', 'Lubeck'] },
  'the uk': { cities: ['London', 'Edinburgh', 'York'], side: ['Oxford', 'Bath', 'the Lake District'] },
  thailand: { cities: ['Bangkok', 'Chiang Mai', 'Phuket'], side: ['Ayutthaya', 'Chiang Rai', 'Krabi'] },
  china: { cities: ['Beijing', "Xi'an", 'Shanghai'], side: ['the Great Wall', 'Hangzhou', 'Suzhou'] }
}

const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  a: 1
}

function parseDays(text: string): number | null {
  const m = /\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|a)[- ](day|night|week|month)s?\b/i.exec(text)
  if (m === null) return /\bweekend\b/i.test(text) ? 2 : null
  const n = /^\d+$/.test(m[1] as string) ? Number(m[1]) : (NUMBER_WORDS[(m[1] as string).toLowerCase()] ?? 1)
  const unit = (m[2] as string).toLowerCase()
  const days = unit === 'week' ? n * 7 : unit === 'month' ? n * 30 : unit === 'night' ? n + 1 : n
  return days >= 2 && days <= 365 ? days : null
}

function parsePlace(text: string): string | null {
  const m =
    /\b(?:to|in|around|across|through|visit|visiting|of)\s+((?:the\s+)?[A-Z][\p{L}'\u2019-]*(?:\s+[A-Z][\p{L}'\u2019-]*)*)/u.exec(
      text
    )
  return m === null ? null : (m[1] as string)
}

function known(place: string | null): { cities: readonly string[]; side: readonly string[] } | undefined {
  return place === null ? undefined : (GAZETTEER[place.toLowerCase()] ?? GAZETTEER[`the ${place.toLowerCase()}`])
}

/** Whether the goal names a country the gazetteer knows ("two weeks in Japan" is a trip without saying so). */
export function namesKnownCountry(goal: string): boolean {
  return known(parsePlace(goal)) !== undefined
}

/** Split `nights` over `n` stays as evenly as possible, earlier stays first. */
export function splitNights(nights: number, n: number): number[] {
  const base = Math.floor(nights / n)
  return Array.from({ length: n }, (_v, i) => base + (i < nights % n ? 1 : 0))
}

function nightsText(n: number): string {
  return `${n} ${n === 1 ? 'night' : 'nights'}`
}

function listWords(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? ''
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1] as string}`
}

/** A part whose steps are given as one sentence of clauses; `deps` are indexes of earlier parts of its view. */
interface Item {
  readonly title: string
  readonly done: string
  readonly steps: string
  readonly deps: readonly number[]
}

function item(title: string, done: string, steps: string, deps: readonly number[] = []): Item {
  return { title, done, steps, deps }
}

function toPart(it: Item, key: string): PartSpec {
  const clauses = splitStructure(it.steps)?.clauses ?? [{ text: it.steps, dependsOn: [] }]
  const steps = clauses.map(c => ({ title: cleanTitle(c.text), done: guideFor(c.text).done, after: c.dependsOn }))
  return { key, title: it.title, done: it.done, after: [], steps }
}

interface TripView {
  readonly name: string
  readonly why: string
  readonly items: readonly Item[]
}

function tripViews(goal: string): Record<KnownAngle, TripView> {
  const place = parsePlace(goal)
  const days = parseDays(goal)
  const k = known(place)
  const where = place ?? 'the destination'
  const stays = k?.cities.slice(0, 3) ?? [where]
  const at = (c: string): string => (c === 'the destination' ? 'at the destination' : `in ${c}`)
  const nights = days === null ? null : Math.max(stays.length, days - 1)
  const perStay = nights === null ? null : splitNights(nights, stays.length)
  const forDays = days === null ? '' : ` for the ${days} days`
  const stayList = listWords(stays)
  const between = stays.length >= 2 ? `between ${stayList}` : `around ${where}`
  const sides =
    (k?.side.length ?? 0) > 0 ? `such as ${listWords(k?.side.slice(0, 2) ?? [])}` : `within reach of ${stayList}`
  const timeItems: Item[] = [
    item(
      'Prepare before departure',
      'dates, flights, hotels and insurance are fixed before leaving',
      'Fix the travel dates; then book flights; then book hotels; then buy travel insurance'
    )
  ]
  let day = 1
  stays.forEach((c, i) => {
    const n = perStay?.[i] ?? null
    const label =
      n === null
        ? stays.length === 1
          ? 'Spend the stay'
          : `Spend stay ${i + 1}`
        : n === 1
          ? `Spend day ${day}`
          : `Spend days ${day}-${day + n - 1}`
    if (n !== null) day += n
    timeItems.push(
      item(
        `${label} ${at(c)}`,
        `the days ${at(c)} have a plan for the sights, the travel and one evening out`,
        `Travel to ${c}; see the main sights of ${c}; plan one evening out ${at(c)}`,
        [i]
      )
    )
  })
  timeItems.push(
    item(
      days === null ? 'Return home on the last day' : `Return home on day ${days}`,
      'the way home is booked and timed',
      'Pack and check out; then travel to the airport; then fly home',
      [stays.length]
    )
  )
  return {
    'by place': {
      name: 'by place',
      why: `one subgoal per base (${stayList}), after getting to and from ${where}, and day trips last`,
      items: [
        item(
          `Arrange travel to and from ${where}`,
          `return travel to ${where} is booked and the route ${between} is chosen`,
          `Fix the travel dates${forDays}; then book return flights to ${where}; then choose how to travel ${between}`
        ),
        ...stays.map((c, i) =>
          item(
            `Plan the stay ${at(c)}${perStay === null ? '' : ` (${nightsText(perStay[i] ?? 1)})`}`,
            `a hotel ${at(c)} is booked and the sights and bookings there are listed`,
            `Book a hotel ${at(c)}${perStay === null ? '' : ` for ${nightsText(perStay[i] ?? 1)}`}; ` +
              `list the sights and neighbourhoods to see ${at(c)}; reserve tours or restaurants ${at(c)} ` +
              `that need booking`,
            [0]
          )
        ),
        item(
          `Plan day trips from the ${stays.length === 1 ? 'base' : 'bases'}`,
          'each day trip has its travel time and cost',
          `Choose day trips ${sides}; then check travel times and costs from ${stays.length === 1 ? 'the base' : 'each base'}`,
          stays.map((_c, i) => i + 1)
        )
      ]
    },
    'by activity': {
      name: 'by kind of booking',
      why:
        'one subgoal per kind of work (flights, hotels, transport, sightseeing, food, documents); ' +
        'hotels and transport wait for the flight dates',
      items: [
        item(
          `Book flights to ${where}`,
          'return flights are booked for the travel dates',
          `Compare fares for the travel dates${forDays}; then book return flights to ${where}`
        ),
        item(
          'Arrange the accommodation',
          `every night has a hotel ${stays.length >= 2 ? `in ${stayList}` : at(where)}`,
          `Choose an area to stay ${stays.length >= 2 ? `in ${stayList}` : at(where)}; then book ` +
            `hotels${nights === null ? '' : ` for the ${nightsText(nights)}`} to match the flight dates`,
          [0]
        ),
        item(
          `Arrange transport within ${where}`,
          `the trains or transport ${between} are booked or their tickets are known`,
          `Compare a rail pass with single tickets for the route; then book the long-distance trains ${between}`,
          [0]
        ),
        item(
          'Plan sightseeing',
          'the must-see sights are listed and the timed tickets reserved',
          `List the must-see sights ${stays.length >= 2 ? `in ${stayList}` : at(where)}; then reserve timed tickets and tours`,
          [1]
        ),
        item(
          'Plan food and dining',
          'the dishes to try and the restaurants to book are listed',
          'Note the local dishes to try in each city; reserve the restaurants that need booking'
        ),
        item(
          'Prepare documents and money',
          'passport, visa, insurance and money are sorted',
          `Check passport validity and the visa rules for ${where}; buy travel insurance; arrange cards and cash`
        )
      ]
    },
    'by time': {
      name: 'by time',
      why: 'in the order the days happen: before departure, each stretch of days, the way home; each part follows the one before',
      items: timeItems
    },
    'by phase': {
      name: 'by phase',
      why: 'in planning phases: research, core bookings, itinerary, departure preparations, the final plan',
      items: [
        item(
          'Research the trip and set the budget',
          'the season, the places and a total budget are chosen',
          `Choose the season and the cities to visit; set a total budget${forDays}; list the must-see places in ${where}`
        ),
        item(
          'Book the core travel',
          'flights, hotels and the rail pass are booked',
          'Book flights; then book hotels; then reserve the rail pass',
          [0]
        ),
        item(
          'Build the day-by-day itinerary',
          'every day has its places, bookings and travel times',
          `Allocate the days ${stays.length >= 2 ? `between ${stayList}` : at(where)}; then plan the ` +
            `sights for each day; then add the bookings and the travel times to each day`,
          [1]
        ),
        item(
          'Prepare for departure',
          'documents, insurance, money, data and luggage are ready',
          `Check the passport and the visa rules for ${where}; buy travel insurance; arrange money ` +
            `and a mobile data plan; pack for the season`,
          [1]
        ),
        item(
          'Assemble the final trip plan',
          'one document holds the bookings, the itinerary and the checklist, shared with everyone travelling',
          'Collect the bookings, itinerary and checklist into one document; then share it with everyone travelling',
          [2, 3]
        )
      ]
    },
    'by resource': {
      name: 'by resource',
      why: 'by what the trip consumes: money, time, bookings, documents and gear; bookings wait for the budget and the dates',
      items: [
        item(
          'Set the money plan',
          'a total budget and a daily limit are set, with cards and cash arranged',
          `Estimate the costs of flights, hotels, transport and food; then set a daily spending limit${forDays}; arrange cards and cash`
        ),
        item(
          'Plan the time',
          'the dates are fixed and the nights are shared between the stays',
          `Pick the travel dates; then allocate the nights ${stays.length >= 2 ? `between ${stayList}` : at(where)}`
        ),
        item(
          'Complete the bookings',
          'flights, hotels, trains and timed tickets are booked',
          'Book flights; then book hotels; then reserve trains and timed tickets',
          [0, 1]
        ),
        item(
          'Sort documents and gear',
          'documents, insurance and luggage are ready',
          `Check the passport and the visa rules for ${where}; buy travel insurance; pack for the season and the activities`
        )
      ]
    }
  }
}

export function tripShape(goal: string, reading: KindReading): Shape {
  const views = tripViews(goal)
  const all: PartSpec[] = []
  const out = {} as Record<KnownAngle, ShapeView>
  for (const [angle, v] of Object.entries(views) as Array<[KnownAngle, TripView]>) {
    const parts = v.items.map((it, i) => toPart(it, `${angle}:${i}`))
    const view = viewOf({ name: v.name, why: v.why, parts: parts.map(p => p.key) }, new Map(parts.map(p => [p.key, p])))
    out[angle] = { ...view, deps: v.items.map(it => [...it.deps]) }
    all.push(...parts)
  }
  return {
    kind: 'trip',
    label: 'a trip',
    reading: { ...reading, kind: 'trip' },
    views: out,
    parts: [...all, ...PADDING_PARTS]
  }
}
