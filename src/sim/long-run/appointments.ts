import { DAY_MS } from '../../core/retention.js'
import { TOMBSTONE_KEEP_MS } from '../../runtime/retention.js'
import { CHECK_LEAD_MS, WARM_MS } from './timing.js'

/**
 * One thing a long run does at a set virtual time (elapsed ms). A crash's
 * node is picked when it happens (from the nodes up then) and written into
 * the slot its restart shares.
 */
export type Appointment =
  | { readonly at: number; readonly kind: 'goal'; readonly k: number }
  | { readonly at: number; readonly kind: 'crash'; readonly slot: { node: number | undefined }; readonly long: boolean }
  | { readonly at: number; readonly kind: 'restart'; readonly slot: { node: number | undefined } }
  | { readonly at: number; readonly kind: 'join'; readonly node: number }
  | { readonly at: number; readonly kind: 'check'; readonly day: number }

/** What the swarm must be awake for (every roster full, as in a swarm that never stopped): goals, and nodes (re)joining. */
export const needsWarm = (a: Appointment): boolean => a.kind === 'goal' || a.kind === 'restart' || a.kind === 'join'
/** How long before an appointment a skip lands, so the swarm is ready for it. */
export const leadOf = (a: Appointment): number => (needsWarm(a) ? WARM_MS : a.kind === 'check' ? CHECK_LEAD_MS : 0)

/** What the schedule is drawn from. */
export interface ScheduleSpec {
  readonly days: number
  readonly plans: number
  readonly restarts: number
  readonly joins: number
  /** Nodes at the start: newcomers are numbered from here. */
  readonly initial: number
  readonly shortShare: number
  readonly shortRetainDays: readonly [number, number]
  /** Virtual ms (elapsed) the swarm has formed by: no goal before it. */
  readonly formedAt: number
}

/** A long run's schedule, and each goal's `retainDays` (null: the default), by goal index. */
export interface Schedule {
  readonly appointments: Appointment[]
  readonly retainOf: ReadonlyArray<number | null>
}

/**
 * The run's schedule, drawn up front from its own stream `rnd` in a fixed
 * order (goal times, their retention, crashes and their restarts,
 * newcomers), then sorted: the same seed draws the same schedule, and the
 * run goes on drawing from the same stream (which node crashes).
 */
export function drawSchedule(rnd: () => number, s: ScheduleSpec): Schedule {
  const endMs = s.days * DAY_MS
  const appointments: Appointment[] = []
  const tailMs = Math.min(DAY_MS, endMs / 4)
  const firstGoalAt = s.formedAt + WARM_MS
  const spanMs = Math.max(1, endMs - tailMs - firstGoalAt)
  const goalTimes = Array.from({ length: s.plans }, () => firstGoalAt + Math.floor(rnd() * spanMs)).sort(
    (a, b) => a - b
  )
  const [lo, hi] = s.shortRetainDays
  const retainOf = goalTimes.map(() => (rnd() < s.shortShare ? lo + Math.floor(rnd() * (hi - lo + 1)) : null))
  goalTimes.forEach((at, k) => appointments.push({ at, kind: 'goal', k }))
  const lifeFrom = Math.min(DAY_MS / 10, endMs / 10)
  const lifeTo = Math.max(lifeFrom + 1, endMs - Math.min(DAY_MS / 2, endMs / 5))
  const backBy = endMs - Math.min(DAY_MS / 4, endMs / 8)
  for (let i = 0; i < s.restarts; i++) {
    const at = lifeFrom + Math.floor(rnd() * (lifeTo - lifeFrom))
    // Every third down long enough that its peers forgot the tombstones of what expired meanwhile.
    const long = i % 3 === 2
    const down = long
      ? TOMBSTONE_KEEP_MS + DAY_MS + Math.floor(rnd() * 2 * DAY_MS)
      : 60_000 + Math.floor(rnd() * 6 * 3_600_000)
    const slot: { node: number | undefined } = { node: undefined }
    appointments.push({ at, kind: 'crash', slot, long })
    appointments.push({ at: Math.min(backBy, at + down), kind: 'restart', slot })
  }
  for (let j = 0; j < s.joins; j++)
    appointments.push({ at: lifeFrom + Math.floor(rnd() * (lifeTo - lifeFrom)), kind: 'join', node: s.initial + j })
  for (let d = 1; d <= s.days; d++) appointments.push({ at: d * DAY_MS, kind: 'check', day: d })
  // Stable: at one instant, a crash before its restart, a check last.
  const order = { crash: 0, restart: 1, join: 2, goal: 3, check: 4 }
  appointments.sort((a, b) => a.at - b.at || order[a.kind] - order[b.kind])
  return { appointments, retainOf }
}

/** The schedule as the run works through it: the appointments before `next` are done. */
export class Agenda {
  private ptr = 0

  constructor(private readonly list: readonly Appointment[]) {}

  /** The next appointment, or undefined once every one is done. */
  get next(): Appointment | undefined {
    return this.list[this.ptr]
  }

  get done(): boolean {
    return this.ptr >= this.list.length
  }

  advance(): void {
    this.ptr++
  }

  /** When the swarm must next be awake (see needsWarm), or Infinity. */
  nextWarmAt(): number {
    for (let i = this.ptr; i < this.list.length; i++) {
      const a = this.list[i] as Appointment
      if (needsWarm(a)) return a.at
    }
    return Infinity
  }

  /** The next appointment that is not a day's check. */
  nextNotCheck(): Appointment | undefined {
    return this.list.slice(this.ptr).find(a => a.kind !== 'check')
  }
}
