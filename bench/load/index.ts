import { availableParallelism, tmpdir } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { BenchSwarm, SWARM, rolesFor, sampleProc } from '../common/swarm.js'
import { startBenchLlm } from '../common/llm.js'
import { buildCli, cliMode, machine, median, percentile, report, resultsDir, r1, r3, loadNow } from '../common/util.js'
import { pollOffLoop } from './off-loop.js'
import { analyseProfiles, monoUs, profileFlags, profileTable, type Window } from './profile.js'
import { startPeer } from '../../src/app/peer.js'
import { parseNodeArgs } from '../../src/runtime/config.js'
import { DEFAULT_PARAMS, majority } from '../../src/core/events.js'
import { planOf } from '../../src/core/event-set.js'
import { isFinished } from '../../src/core/view.js'
import type { Peer } from '../../src/app/peer.js'
import type { PlanId, PlanParams } from '../../src/core/events.js'
import type { CliMode } from '../common/util.js'

/**
 * `npm run bench -- load`: many plans at once on 10 real processes (3
 * decomposers, 3 scorers, 4 executors, every one with the role driver's 4
 * slots) against the stand-in Messages API answering in 0.3 s, max depth 2
 * (each plan 4 splits, 9 leaves, 4 roll-ups: 33 model calls). In turn, on
 * one swarm: author B's 5 goals alone; one goal alone; 100 at once; 1,000 at
 * once; then author A's flood of 500 with B's 5 beside it. Per phase: every
 * plan completes, duplicate executions, makespan against the floor (calls x
 * latency / slots), time to first claim per plan, /status latency while it
 * runs, and per process its CPU per event it holds and its largest RSS.
 *
 * The processes run with --open-plans-per-author 0, so one author's goals
 * are all admitted at once: the flood then measures the role driver's fair
 * shares alone (authors served in turn), not the open-plan limit, which
 * would hold all but 20 of the 500 back (test/e2e/author-limit.test.ts).
 *
 * --profile: the first process of each role runs under V8's CPU profiler,
 * and each phase's CPU is broken down by group at the end
 * (bench/load/profile.ts; docs/performance.md reads one such run).
 */

const LATENCY_MS = 300
const SLOTS_PER_PROCESS = 4
const CALLS_PER_PLAN = 33

export interface LoadOptions {
  /** Goals of the big phase (and a phase of 100 before it when it is bigger). */
  readonly goals: number
  /** The flood's goals; 0 leaves the flood phase out. */
  readonly flood: number
  /** Author B's goals, alone and beside the flood; 0 leaves both phases out. */
  readonly few: number
  readonly cli: CliMode
  /** `--cpu-prof` on one process of each role, and the breakdown of bench/load/profile.ts at the end. */
  readonly profile: boolean
  /** The phase of one goal alone (the CPU per event ratios are over it). */
  readonly one: boolean
  /** Cut every phase after this many seconds, finished or not (`npm run bench -- quick`); default the phase's own. */
  readonly capS?: number
}

function options(argv: readonly string[]): LoadOptions {
  const value = (flag: string): string | undefined => argv.find(a => a.startsWith(`${flag}=`))?.slice(flag.length + 1)
  const whole = (flag: string, dflt: number, min: number): number => {
    const n = Number(value(flag) ?? dflt)
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag}: expected a whole number >= ${min}`)
    return n
  }
  return {
    goals: whole('--goals', 1_000, 1),
    flood: whole('--flood', 500, 0),
    few: whole('--few', 5, 0),
    cli: cliMode(value('--cli') ?? 'built'),
    profile: argv.includes('--profile'),
    one: value('--one') !== '0',
    ...(value('--cap-s') === undefined ? {} : { capS: whole('--cap-s', 60, 1) })
  }
}

const log = (s: string): void => {
  console.error(s)
}

/** What one author peer saw of its plans: when each was published, first claimed, finished. */
class Watch {
  readonly publishedAt = new Map<PlanId, number>()
  readonly goalStamp = new Map<PlanId, number>()
  readonly firstClaimStamp = new Map<PlanId, number>()
  readonly finishedAt = new Map<PlanId, number>()
  readonly status = new Map<PlanId, string>()
  readonly duplicates = new Map<PlanId, number>()
  private waiters: Array<() => void> = []

  constructor(readonly peers: readonly Peer[]) {
    for (const peer of peers)
      peer.replica.onFolded(events => {
        const touched = new Set<PlanId>()
        for (const e of events) {
          const plan = planOf(e)
          if (!this.publishedAt.has(plan)) continue
          touched.add(plan)
          if (e.env.type === 'task-claimed') {
            const was = this.firstClaimStamp.get(plan)
            if (was === undefined || e.env.hlc.ms < was) this.firstClaimStamp.set(plan, e.env.hlc.ms)
          }
        }
        for (const plan of touched) {
          if (this.finishedAt.has(plan)) continue
          const t = peer.replica.tree(plan)
          if (t === undefined || !(isFinished(t) || t.status === 'budget-exhausted')) continue
          this.finishedAt.set(plan, Date.now())
          this.status.set(plan, t.status)
          this.duplicates.set(
            plan,
            t.tasks.reduce((s, x) => s + x.duplicates, 0)
          )
        }
        if (touched.size > 0) for (const w of this.waiters.splice(0)) w()
      })
  }

  async until(plans: readonly PlanId[], timeoutMs: number, say: (done: number) => void): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    let told = Date.now()
    for (;;) {
      const done = plans.filter(p => this.finishedAt.has(p)).length
      if (done === plans.length) return true
      if (Date.now() > deadline) return false
      if (Date.now() - told > 10_000) {
        told = Date.now()
        say(done)
      }
      await new Promise<void>(resolve => {
        this.waiters.push(resolve)
        setTimeout(resolve, 1_000)
      })
    }
  }
}

async function authorPeer(seed: string, dir: string): Promise<Peer> {
  const config = parseNodeArgs(
    ['--role', 'observer', '--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0'].concat([
      '--data-dir',
      dir,
      '--bootstrap',
      seed
    ]),
    {}
  )
  return await startPeer({ ...config, role: 'client' as const })
}

interface Phase {
  readonly name: string
  readonly plans: number
  readonly completed: number
  readonly duplicates: number
  readonly makespanS: number
  readonly floorS: number
  readonly overFloor: number
  readonly calls: number
  readonly maxInFlight: number
  readonly firstClaimP50S: number
  readonly firstClaimP95S: number
  readonly statusP50Ms: number
  readonly statusP99Ms: number
  /** The same requests timed from a worker thread (OFF_LOOP_POLLER): without the bench's own peers' delay. */
  readonly statusOffLoopP50Ms: number
  readonly statusOffLoopP99Ms: number
  /** The bench's main thread's own event-loop delay over the phase (its peers: the client, and author B), ms. */
  readonly benchLoopDelayMs: { p50: number; p99: number; max: number }
  readonly cpuMsPerEvent: Record<string, number>
  /** Events the median process came to hold in the phase, per plan measured. */
  readonly eventsPerPlan: number
  /**
   * CPU seconds over the phase: the ten processes together, and this process (its peers and the stand-in
   * model); `busy` is their sum over the machine's cores x the makespan. Near 1, the phase waited for CPU, not for the
   * model's calls, its slots or the protocol (other jobs on the machine take a share too: see loadBefore).
   */
  readonly cpuS: { nodes: number; bench: number; busy: number }
  /** Signatures a process checked per event it came to hold, lowest and highest of the processes. */
  readonly signatureChecksPerEvent: { min: number; max: number }
  /**
   * Event-loop delay over the phase (prom-client's monitorEventLoopDelay, reset when /metrics is read at the
   * phase's start), ms: the median over the processes of their p50, and the highest p99 and max of any.
   */
  readonly loopDelayMs: { p50: number; p99: number; max: number }
  readonly maxRssMb: Record<string, number>
  readonly loadBefore: number[]
  /** Cut at the cap before every plan finished. */
  readonly cut: boolean
}

interface Counts {
  readonly cpu: number
  readonly held: number
  readonly checks: number
  /** Event-loop delay since /metrics was last read, ms. */
  readonly loop: { p50: number; p99: number; max: number }
}

/** A gauge of a /metrics text, in ms (NaN when it is not there). */
function gaugeMs(text: string, name: string): number {
  const line = text.split('\n').find(l => l.startsWith(`${name} `))
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1)) * 1000
}

/** prom-client's event-loop delay gauges (set from its histogram, which it resets as it reads them). */
function loopIn(text: string): { p50: number; p99: number; max: number } {
  const g = (q: string): number => gaugeMs(text, `plan_swarm_nodejs_eventloop_lag_${q}_seconds`)
  return { p50: g('p50'), p99: g('p99'), max: g('max') }
}

/** The sum of plan_swarm_signature_checks_total over its labels, in a /metrics text. */
function checksIn(text: string): number {
  let sum = 0
  for (const line of text.split('\n'))
    if (line.startsWith('plan_swarm_signature_checks_total')) sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  return sum
}

/** `npm run bench -- load [--goals=1000] [--flood=500] [--few=5] [--cli=built|tsx] [--profile]`. */
export async function benchLoad(argv: readonly string[] = process.argv.slice(2)): Promise<Record<string, unknown>> {
  return await runLoad(options(argv))
}

export async function runLoad(opts: LoadOptions): Promise<Record<string, unknown>> {
  const started = Date.now()
  const profileDir = join(resultsDir(), 'profiles')
  const windows: Window[] = []
  if (opts.cli === 'built') {
    log('load: npm run build (the swarm runs node dist/src/cli.js; --cli=tsx runs the sources)')
    buildCli()
  }
  const llm = await startBenchLlm(LATENCY_MS)
  const roles = rolesFor(10)
  log(`load: 10 processes (${roles.decomposer} decomposers, ${roles.scorer} scorers, ${roles.executor} executors)`)
  const swarm = await BenchSwarm.start(
    10,
    llm.fake.url,
    log,
    opts.cli,
    240_000,
    ['--open-plans-per-author', '0'],
    name => (opts.profile ? profileFlags(profileDir, name) : [])
  )
  const seed = swarm.client.node.addresses()[0] as string
  // Author B's peer runs only for its phases: a full peer more takes its share of the two cores in every phase.
  const authorB = opts.few === 0 ? undefined : await authorPeer(seed, mkdtempSync(join(tmpdir(), 'bench-load-b-')))
  const watch = new Watch(authorB === undefined ? [swarm.client] : [swarm.client, authorB])
  const committee = swarm.nodes
    .filter(n => n.role === 'scorer')
    .map(n => n.peerId)
    .sort()
  const params: PlanParams = { ...DEFAULT_PARAMS, committee, quorum: majority(committee.length), maxDepth: 2 }
  const slots = swarm.nodes.length * SLOTS_PER_PROCESS
  let goalNo = 0
  const submit = async (by: Peer, n: number, what: string): Promise<PlanId[]> => {
    const plans: PlanId[] = []
    for (let i = 0; i < n; i++) {
      goalNo++
      const { event } = await by.publish('goal-submitted', '', [], {
        text: `${what} number ${goalNo}: plan a weekend for a group of friends`,
        params
      })
      const plan = event.id as string as PlanId
      watch.publishedAt.set(plan, Date.now())
      watch.goalStamp.set(plan, event.env.hlc.ms)
      plans.push(plan)
    }
    return plans
  }
  const phases: Phase[] = []
  const statusOf = async (http: string): Promise<{ held: number }> =>
    (
      (await (await fetch(`${http}/status`, { signal: AbortSignal.timeout(30_000) })).json()) as {
        events: { held: number }
      }
    ).events
  /** Events held, and signatures checked (GET /metrics), for the checks per event held. */
  const countsOf = async (n: (typeof swarm.nodes)[number], retry = true): Promise<Counts> => {
    // A kept-alive socket the node closes as it is reused fails the fetch ("other side closed"): ask once more.
    if (retry) return await countsOf(n, false).catch(async () => await countsOf(n, false))
    const text = await (await fetch(`${n.http}/metrics`, { signal: AbortSignal.timeout(30_000) })).text()
    return {
      cpu: sampleProc(n.child.pid)?.cpuMs ?? 0,
      held: (await statusOf(n.http)).held,
      checks: checksIn(text),
      loop: loopIn(text)
    }
  }
  /** Run `go` (which submits) and measure until the plans it returns (or `measured` of them) finish. */
  const phase = async (
    name: string,
    go: () => Promise<{ all: PlanId[]; measured: PlanId[] }>,
    phaseTimeoutMs: number
  ): Promise<Phase> => {
    const timeoutMs = opts.capS === undefined ? phaseTimeoutMs : opts.capS * 1000
    const loadBefore = loadNow()
    log(`load: ${name}, load ${loadBefore.join(' ')}`)
    const before = await Promise.all(swarm.nodes.map(n => countsOf(n)))
    const rss = new Map<string, number>()
    const statusMs: number[] = []
    const offLoop = pollOffLoop(swarm.nodes.map(n => n.http))
    const benchLoop = monitorEventLoopDelay({ resolution: 10 })
    benchLoop.enable()
    let polling = true
    const poll = (async () => {
      let i = 0
      while (polling) {
        const node = swarm.nodes[i++ % swarm.nodes.length]
        if (node === undefined) break
        const t = performance.now()
        try {
          await statusOf(node.http)
          statusMs.push(performance.now() - t)
        } catch {
          statusMs.push(30_000)
        }
        for (const n of swarm.nodes)
          rss.set(n.name, Math.max(rss.get(n.name) ?? 0, sampleProc(n.child.pid)?.rssMb ?? 0))
        await new Promise(resolve => setTimeout(resolve, 250))
      }
    })()
    const calls0 = llm.fake.requests.length
    const benchCpu0 = process.cpuUsage()
    const t0 = Date.now()
    const mono0 = monoUs()
    const { all, measured } = await go()
    const ok = await watch.until(measured, timeoutMs, done =>
      log(
        `  ${Math.round((Date.now() - t0) / 1000)} s: ${done} of ${measured.length} plans finished, load ${loadNow().join(' ')}`
      )
    )
    const t1 = Math.max(...measured.map(p => watch.finishedAt.get(p) ?? Date.now()))
    const mono1 = monoUs() - (Date.now() - t1) * 1000
    const benchCpu = process.cpuUsage(benchCpu0)
    polling = false
    await poll
    const offLoopMs = await offLoop.stop()
    benchLoop.disable()
    const after = await Promise.all(swarm.nodes.map(n => countsOf(n)))
    // Calls of the measured plans alone are not told apart by the stand-in; a flood's count is every call made meanwhile.
    const reqs = llm.fake.requests.slice(calls0).filter(r => r.at <= t1)
    const calls = measured.length === all.length ? reqs.length : measured.length * CALLS_PER_PLAN
    let maxInFlight = 0
    for (let i = 0, j = 0; i < reqs.length; i++) {
      while ((reqs[j]?.at ?? Infinity) <= (reqs[i]?.at ?? 0) - LATENCY_MS) j++
      maxInFlight = Math.max(maxInFlight, i - j + 1)
    }
    const cpuByRole: Record<string, number[]> = {}
    const eventsByNode: Record<string, number> = {}
    const cpuByNode: Record<string, number> = {}
    const checksPerEvent: number[] = []
    swarm.nodes.forEach((n, k) => {
      const b = before[k] as Counts
      const a = after[k] as Counts
      const events = a.held - b.held
      eventsByNode[n.name] = events
      if (events > 0) checksPerEvent.push((a.checks - b.checks) / events)
      cpuByNode[n.name] = a.cpu - b.cpu
      if (events > 0) (cpuByRole[n.role] ??= []).push((a.cpu - b.cpu) / events)
    })
    windows.push({ phase: name, fromUs: mono0, toUs: mono1, events: eventsByNode, cpuMs: cpuByNode })
    const rssByRole: Record<string, number> = {}
    for (const n of swarm.nodes) rssByRole[n.role] = Math.max(rssByRole[n.role] ?? 0, Math.round(rss.get(n.name) ?? 0))
    const firstClaims = measured
      .map(p => ((watch.firstClaimStamp.get(p) ?? NaN) - (watch.goalStamp.get(p) ?? NaN)) / 1000)
      .filter(Number.isFinite)
    const makespanS = (t1 - t0) / 1000
    const floorS = (calls * LATENCY_MS) / slots / 1000
    const nodesCpuS = Object.values(cpuByNode).reduce((a, b) => a + b, 0) / 1000
    const benchCpuS = (benchCpu.user + benchCpu.system) / 1e6
    const p: Phase = {
      name,
      plans: measured.length,
      completed: measured.filter(x => watch.status.get(x) === 'completed').length,
      duplicates: measured.reduce((s, x) => s + (watch.duplicates.get(x) ?? 0), 0),
      makespanS: r1(makespanS),
      floorS: r1(floorS),
      overFloor: r3(makespanS / floorS),
      calls,
      maxInFlight,
      firstClaimP50S: r1(median(firstClaims)),
      firstClaimP95S: r1(percentile(firstClaims, 0.95)),
      statusP50Ms: Math.round(median(statusMs)),
      statusP99Ms: Math.round(percentile(statusMs, 0.99)),
      statusOffLoopP50Ms: Math.round(median(offLoopMs)),
      statusOffLoopP99Ms: Math.round(percentile(offLoopMs, 0.99)),
      benchLoopDelayMs: {
        p50: r1(benchLoop.percentile(50) / 1e6),
        p99: r1(benchLoop.percentile(99) / 1e6),
        max: r1(benchLoop.max / 1e6)
      },
      cpuMsPerEvent: Object.fromEntries(Object.entries(cpuByRole).map(([r, xs]) => [r, r3(median(xs))])),
      eventsPerPlan: r1(median(Object.values(eventsByNode)) / Math.max(1, measured.length)),
      cpuS: {
        nodes: r1(nodesCpuS),
        bench: r1(benchCpuS),
        busy: r3((nodesCpuS + benchCpuS) / (availableParallelism() * makespanS))
      },
      signatureChecksPerEvent: { min: r3(Math.min(...checksPerEvent)), max: r3(Math.max(...checksPerEvent)) },
      loopDelayMs: {
        p50: r1(median(after.map(a => a.loop.p50))),
        p99: r1(Math.max(...after.map(a => a.loop.p99))),
        max: r1(Math.max(...after.map(a => a.loop.max)))
      },
      maxRssMb: rssByRole,
      loadBefore,
      cut: !ok
    }
    if (!ok) log(`  ${name}: not every plan finished within ${timeoutMs / 1000} s`)
    log(`  ${JSON.stringify(p)}`)
    phases.push(p)
    return p
  }
  let flood: Record<string, unknown> = {}
  let floodPlans: PlanId[] = []
  let fewBeside: PlanId[] = []
  const atOnce = async (n: number, what: string, timeoutMs: number): Promise<Phase> =>
    await phase(
      n === 1 ? 'one goal alone' : `${n} goals at once`,
      async () => {
        const plans = await submit(swarm.client, n, what)
        return { all: plans, measured: plans }
      },
      timeoutMs
    )
  try {
    const few =
      authorB === undefined
        ? undefined
        : await phase(
            `author B's ${opts.few} goals alone`,
            async () => {
              const plans = await submit(authorB, opts.few, 'B alone')
              return { all: plans, measured: plans }
            },
            600_000
          )
    if (opts.one) await atOnce(1, 'alone', 600_000)
    if (opts.goals > 100) await atOnce(100, 'hundred', 1_200_000)
    await atOnce(opts.goals, 'thousand', 3_600_000)
    if (few !== undefined && authorB !== undefined && opts.flood > 0) {
      const beside = await phase(
        `author A's flood of ${opts.flood} with author B's ${opts.few} beside it`,
        async () => {
          floodPlans = await submit(swarm.client, opts.flood, 'flood')
          fewBeside = await submit(authorB, opts.few, 'B beside the flood')
          return { all: [...floodPlans, ...fewBeside], measured: fewBeside }
        },
        1_800_000
      )
      flood = {
        fewAloneS: few.makespanS,
        fewBesideFloodS: beside.makespanS,
        ratio: r3(beside.makespanS / few.makespanS),
        goal: 'at most 2',
        floodFinishedWhenFewDid: floodPlans.filter(
          p => (watch.finishedAt.get(p) ?? Infinity) <= Math.max(...fewBeside.map(x => watch.finishedAt.get(x) ?? 0))
        ).length
      }
    }
  } finally {
    await authorB?.stop()
    await swarm.stop()
    await llm.fake.close()
  }
  const byName = (n: string): Phase | undefined => phases.find(p => p.name === n)
  const cpuRatio = (a: Phase | undefined, b: Phase | undefined): Record<string, number> =>
    a === undefined || b === undefined
      ? {}
      : Object.fromEntries(Object.entries(b.cpuMsPerEvent).map(([r, x]) => [r, r3(x / (a.cpuMsPerEvent[r] ?? NaN))]))
  return report('load', {
    machine: machine(),
    date: new Date().toISOString(),
    processes: { ...roles, slots },
    latencyMs: LATENCY_MS,
    phases,
    cpuPerEventRatio: {
      hundredOverOne: cpuRatio(byName('one goal alone'), byName('100 goals at once')),
      thousandOverOne: cpuRatio(byName('one goal alone'), byName(`${opts.goals} goals at once`)),
      goal: 'at most 1.5'
    },
    flood,
    ...(opts.profile ? { profile: profileReport(profileDir, windows) } : {}),
    wallS: Math.round((Date.now() - started) / 1000)
  })
}

/** The breakdown of the profiles the processes wrote as they stopped: a table on stdout, the JSON beside the rest. */
function profileReport(dir: string, windows: readonly Window[]): Record<string, unknown> {
  const rows = analyseProfiles(dir, windows)
  console.log(profileTable(rows))
  const out = { dir, windows, rows }
  report('load-profile', out)
  return { file: 'load-profile.json', processes: [...new Set(rows.map(r => r.name))] }
}
