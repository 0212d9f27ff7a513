import { seededRandom } from '../../ports/scheduler.js'
import { World } from '../world.js'
import { Agenda, drawSchedule } from './appointments.js'
import { BoundCheck } from './check.js'
import { checkEnd } from './end-check.js'
import { Fleet } from './fleet.js'
import { Ledger } from './ledger.js'
import { Problems, dayText } from './problems.js'
import { dayLine, longRunReport } from './report.js'
import { Skipper } from './skipper.js'
import { formingMs } from './timing.js'
import { IdleMeter } from './traffic.js'
import type { Appointment } from './appointments.js'
import type { LongRunOptions } from './options.js'
import type { LongRunReport, RunState } from './report.js'

/**
 * Run one long run to its last day and check it. The run draws everything
 * from its seed: the world from its own streams, the schedule and which
 * node crashes from `seed ^ 0x10e6`, so the same options give the same run.
 */
export async function runLong(opts: LongRunOptions): Promise<LongRunReport> {
  const t0 = performance.now()
  const days = opts.days
  const rnd = seededRandom(opts.seed ^ 0x10e6)
  const restarts = opts.restarts ?? Math.max(1, Math.round(days / 3))
  const joins = opts.joins ?? Math.max(1, Math.round(days / 10))
  const initial = Math.max(4, opts.nodes)
  const problems = new Problems(opts.trace)
  const ledger = new Ledger(problems)

  const world = await World.create({
    seed: opts.seed,
    nodes: initial,
    faults: [],
    plans: Math.max(2, opts.plans),
    joins,
    maxDepth: opts.maxDepth ?? 1,
    topology: 'neighbours',
    until: 'plan',
    wrapStore: (index, store) => ledger.watch(index, store),
    ...(opts.llmLatencyMs === undefined ? {} : { llmLatencyMs: opts.llmLatencyMs }),
    ...(opts.llmLatency === undefined ? {} : { llmLatency: opts.llmLatency }),
    ...(opts.linkMs === undefined ? {} : { linkMs: opts.linkMs }),
    ...(opts.maxPeers === undefined ? {} : { maxPeers: opts.maxPeers })
  })
  ledger.attach(world.time)
  const time = world.time
  const nodes = world.nodes

  const formedAt = formingMs(world.presenceIntervalMs)
  const { appointments, retainOf } = drawSchedule(rnd, {
    days,
    plans: opts.plans,
    restarts,
    joins,
    initial,
    shortShare: opts.shortShare ?? 0.25,
    shortRetainDays: opts.shortRetainDays ?? [1, 7],
    formedAt
  })
  const agenda = new Agenda(appointments)
  const fleet = new Fleet(world, ledger, problems, initial)
  const check = new BoundCheck(world, ledger, problems, fleet.startedAt)
  const idle = new IdleMeter(world, days)
  const skipper = new Skipper(world, agenda, fleet, ledger, check, idle, problems, formedAt, opts.linkMs?.maxMs ?? 5)
  const state: RunState = { opts, world, initial, joins, restarts, ledger, problems, fleet, check, idle, skipper, t0 }
  const nowDay = (): string => dayText(time.elapsed)

  const perform = async (a: Appointment): Promise<void> => {
    switch (a.kind) {
      case 'goal': {
        fleet.submit(a.k, retainOf[a.k] ?? null)
        return
      }
      case 'crash': {
        const i = fleet.crash(rnd)
        if (i === undefined) return
        a.slot.node = i
        opts.trace?.(`day ${nowDay()}: node ${i} crashes${a.long ? ', down for more than a week' : ''}`)
        return
      }
      case 'restart': {
        const i = a.slot.node
        if (i === undefined) return
        const held = nodes[i]?.store.count() ?? 0
        await fleet.start(i)
        opts.trace?.(
          `day ${nowDay()}: node ${i} restarts on its store (${held} events, ${nodes[i]?.store.count()} after expiry)`
        )
        return
      }
      case 'join': {
        await fleet.start(a.node)
        opts.trace?.(`day ${nowDay()}: node ${a.node} joins on an empty store`)
        return
      }
      case 'check': {
        await opts.onDay?.(a.day, world)
        check.run()
        idle.dayChecked(a.day)
        opts.trace?.(dayLine(state, a.day))
        return
      }
      default: {
        const never: never = a
        throw new Error(`unknown appointment ${JSON.stringify(never)}`)
      }
    }
  }

  let outcomeProblem: string | undefined
  try {
    for (let i = 0; i < initial; i++) await fleet.start(i)
    world.network.changed()
    skipper.watch()
    while (!agenda.done) {
      const a = agenda.next as Appointment
      skipper.clear()
      const outcome = await time.run(a.at, () => skipper.decided)
      if (outcome === 'done') {
        skipper.carryOut()
        continue
      }
      if (outcome === 'idle') {
        outcomeProblem = `the run ran out of timers at day ${nowDay()}`
        break
      }
      await perform(a)
      agenda.advance()
    }
  } finally {
    fleet.downAll()
  }
  if (outcomeProblem !== undefined) problems.add(outcomeProblem)

  checkEnd(world, ledger, opts.plans, problems)
  await world.stop()
  return longRunReport(state)
}
