/**
 * `npm run bench -- e2e [--quick] [--sizes=3,10,30] [--latencies=50,300,2000] [--repeats=N] [--sensitivity-sizes=3,10] [--cli=built|tsx]`
 *
 * A plan run end to end on a local swarm of real processes against a fake
 * Messages API with a fixed latency per call, and in the same run, against
 * the same fake server, the two baselines of bench/e2e/central.ts: an ideal
 * central scheduler (the leaderless tax = swarm makespan / its makespan) and
 * one call at a time (the swarm's speed-up over a single agent). Writes
 * bench/results/e2e.json and bench/results/e2e.svg.
 *
 * --quick: 3 processes at 300 ms only, 3 repeats (about a minute).
 * --cli: how the swarm's processes run: `built` (default; runs `npm run
 * build` first, then `node dist/src/cli.js`, as a deployment would) or `tsx`
 * (`npm start`'s way, from the sources).
 * Bytes on the wire come from the kernel's TCP counters (`ss`, iproute2).
 * E2E_TRACE=/tmp/prefix: also write each plan's events and model requests as
 * a timeline, and the executors' claim decisions (DEBUG plan-swarm:executor;
 * E2E_DEBUG=namespaces sets other DEBUG namespaces for the processes).
 * E2E_CPU_PROF=/tmp/dir: every process writes a V8 CPU profile there when
 * it exits (scale too).
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  SS,
  buildCli,
  cliMode,
  machine,
  median,
  report,
  requireTools,
  resultsDir,
  r1,
  r3,
  loadNow
} from '../common/util.js'
import { startBenchLlm, countCalls, TREE, type CallCounts } from '../common/llm.js'
import { runCentral } from './central.js'
import { BenchSwarm, rolesFor, sampleProc, type CliMode, type PlanRun, type ProcSample } from '../common/swarm.js'
import { e2eSvg } from './svg.js'
import { removeTempDirs } from '../../test/helpers/cli-process.js'

const MAX_DEPTH = 2
const HEADLINE_LATENCY_MS = 300

interface Options {
  sizes: number[]
  latencies: number[]
  repeats: number
  sensitivitySizes: number[]
  cli: CliMode
}

function options(argv: readonly string[]): Options {
  // `--flag=value`: bench/run.ts takes every bare word for a benchmark name.
  const value = (flag: string): string | undefined => argv.find(a => a.startsWith(`${flag}=`))?.slice(flag.length + 1)
  const list = (flag: string, dflt: number[]): number[] =>
    value(flag)
      ?.split(',')
      .map(Number)
      .filter(n => Number.isFinite(n) && n > 0) ?? dflt
  const quick = argv.includes('--quick')
  const sizes = list('--sizes', quick ? [3] : [3, 10, 30])
  return {
    sizes,
    latencies: list('--latencies', quick ? [HEADLINE_LATENCY_MS] : [50, HEADLINE_LATENCY_MS, 2_000]),
    repeats: Number(value('--repeats') ?? (quick ? 3 : 3)),
    // The latency sweep runs at these sizes; the others run at 300 ms only.
    sensitivitySizes: list('--sensitivity-sizes', quick ? sizes : [3, 10]),
    cli: cliMode(value('--cli') ?? 'built')
  }
}

const log = (s: string): void => {
  console.error(s)
}

interface Repeat {
  readonly swarm: PlanRun
  readonly swarmCalls: CallCounts
  readonly centralMs: number
  readonly centralCalls: number
  readonly centralFirstExecuteMs: number
  readonly singleMs: number | null
  readonly tax: number
  readonly loadBefore: number[]
  readonly nodes: Array<{ name: string; cpuPctOfCore: number; rssMb: number }>
}

export async function benchE2e(argv: readonly string[] = process.argv.slice(2)): Promise<Record<string, unknown>> {
  const opts = options(argv)
  requireTools('bench e2e', [SS])
  const started = Date.now()
  if (opts.cli === 'built') {
    log('e2e: npm run build (the swarm runs node dist/src/cli.js; --cli=tsx runs the sources)')
    buildCli()
  }
  const llm = await startBenchLlm(HEADLINE_LATENCY_MS)
  const cells: Array<Record<string, unknown>> = []
  // Plans that did not finish in time: reported, never dropped silently.
  const failures: Array<Record<string, unknown>> = []
  try {
    for (const size of opts.sizes) {
      const roles = rolesFor(size)
      log(
        `e2e: ${size} processes (${roles.decomposer} decomposers, ${roles.scorer} ` +
          `scorers, ${roles.executor} executors), load ${loadNow().join(' ')}`
      )
      const t = Date.now()
      let swarm: BenchSwarm
      try {
        swarm = await BenchSwarm.start(size, llm.fake.url, log, opts.cli)
      } catch (err) {
        log(`  the swarm of ${size} did not come up: ${(err as Error).message.slice(0, 300)}`)
        cells.push({ size, roles, error: `did not mesh: ${(err as Error).message.slice(0, 200)}`, load: loadNow() })
        removeTempDirs()
        continue
      }
      const startupMs = Date.now() - t
      log(
        `  ${swarm.rosterShare >= 1 ? 'meshed' : `rosters ${Math.round(swarm.rosterShare * 100)}% full`} ` +
          `after ${startupMs} ms, load ${loadNow().join(' ')}`
      )
      try {
        const latencies = opts.sensitivitySizes.includes(size) ? opts.latencies : [HEADLINE_LATENCY_MS]
        // One plan and one central run to warm up (JIT, connections), not counted.
        llm.setLatency(HEADLINE_LATENCY_MS)
        try {
          await swarm.runPlan(`warm-up plan ${size}`, HEADLINE_LATENCY_MS, { maxDepth: MAX_DEPTH }, 300_000)
        } catch (err) {
          log(`  warm-up plan: ${(err as Error).message}`)
          failures.push({
            size,
            latencyMs: HEADLINE_LATENCY_MS,
            repeat: 0,
            error: `warm-up: ${(err as Error).message}`,
            load: loadNow()
          })
        }
        await runCentral(`warm-up central ${size}`, {
          baseUrl: llm.fake.url,
          ...counts(roles),
          maxDepth: MAX_DEPTH,
          label: 'warm'
        })
        const idleWireBytesPerS = await swarm.idleWireBytesPerS(5_000)
        log(`  warmed up; idle traffic ${idleWireBytesPerS} B/s among the swarm; load ${loadNow().join(' ')}`)
        for (const latency of latencies) {
          llm.setLatency(latency)
          const repeats: Repeat[] = []
          const n = latency === HEADLINE_LATENCY_MS ? opts.repeats : Math.max(1, Math.ceil(opts.repeats / 2))
          for (let k = 0; k < n; k++) {
            const loadBefore = loadNow()
            const before = new Map(swarm.nodes.map(x => [x.name, sampleProc(x.child.pid)]))
            const from = llm.fake.requests.length
            let run: PlanRun
            try {
              run = await swarm.runPlan(
                `plan e2e ${size}p ${latency}ms #${k + 1} ${Date.now()}`,
                latency,
                { maxDepth: MAX_DEPTH },
                120_000 + 40 * latency
              )
            } catch (err) {
              log(`  ${size}p ${latency} ms #${k + 1}: ${(err as Error).message}`)
              failures.push({
                size,
                latencyMs: latency,
                repeat: k + 1,
                error: (err as Error).message,
                load: loadBefore
              })
              continue
            }
            const swarmCalls = countCalls(llm.fake.requests.slice(from))
            if (process.env.E2E_TRACE !== undefined)
              writeFileSync(
                `${process.env.E2E_TRACE}-${size}p-${latency}ms-${k + 1}.json`,
                JSON.stringify(swarm.trace(run.plan, llm.fake.requests.slice(from)), null, 1)
              )
            const after = new Map(swarm.nodes.map(x => [x.name, sampleProc(x.child.pid)]))
            const nodes = swarm.nodes.map(x => {
              const a = after.get(x.name) as ProcSample | null
              const b = before.get(x.name) as ProcSample | null
              return {
                name: x.name,
                cpuPctOfCore: a === null || b === null ? NaN : r1((100 * (a.cpuMs - b.cpuMs)) / run.makespanMs),
                rssMb: a === null ? NaN : r1(a.rssMb)
              }
            })
            const c0 = llm.fake.requests.length
            const central = await runCentral(`central e2e ${size}p ${latency}ms #${k + 1} ${Date.now()}`, {
              baseUrl: llm.fake.url,
              ...counts(roles),
              maxDepth: MAX_DEPTH,
              label: `c${k}`
            })
            const centralCalls = llm.fake.requests.length - c0
            let singleMs: number | null = null
            if (latency === HEADLINE_LATENCY_MS && k === 0) {
              singleMs = (
                await runCentral(`single e2e ${size}p ${Date.now()}`, {
                  baseUrl: llm.fake.url,
                  ...counts(roles),
                  maxDepth: MAX_DEPTH,
                  globalConcurrency: 1,
                  label: 'single'
                })
              ).makespanMs
            }
            const rep: Repeat = {
              swarm: run,
              swarmCalls,
              centralMs: central.makespanMs,
              centralCalls,
              centralFirstExecuteMs: central.firstExecuteMs,
              singleMs,
              tax: r3(run.makespanMs / central.makespanMs),
              loadBefore,
              nodes
            }
            repeats.push(rep)
            log(
              `  ${size}p ${latency} ms #${k + 1}: swarm ${run.makespanMs} ms (${run.status}), ` +
                `central ${central.makespanMs} ms, ` +
                `tax ${rep.tax}${singleMs === null ? '' : `, single ${singleMs} ms`}; ` +
                (`calls ${swarmCalls.total} (central ${centralCalls}), duplicate ` +
                  `executions ${swarmCalls.duplicateExecutions}, wire ${run.wireBytes} B, first ` +
                  `claim ${run.firstClaimMs} ms, converged +${run.convergenceMs ?? 'never'} ms; `) +
                (`path gaps: propose ${run.criticalPath.proposeMs}, ballot ${run.criticalPath.ballotMs}, ` +
                  `claim ${run.criticalPath.claimMs}, execute ${run.criticalPath.executeMs}, ` +
                  `edges ${run.criticalPath.edgesMs}; load ${loadBefore.join(' ')}`)
            )
          }
          // Written after every cell, so a run cut short keeps what it measured.
          if (repeats.length > 0)
            cells.push({
              ...summarise(size, roles, latency, startupMs, repeats),
              rosterShare: r3(swarm.rosterShare),
              idleWireBytesPerS,
              cli: opts.cli
            })
          report('e2e', { partial: true, cells, failures, machine: machine() })
        }
      } finally {
        await swarm.stop()
        removeTempDirs()
      }
    }
  } finally {
    await llm.fake.close()
  }
  const headline = cells.find(c => c.latencyMs === HEADLINE_LATENCY_MS && c.error === undefined) as
    Record<string, number> | undefined
  const figures = {
    tax: headline?.tax ?? null,
    duplicates: cells.reduce((s, c) => s + ((c.duplicateExecutions as number | undefined) ?? 0), 0),
    speedup: headline?.speedup ?? null,
    makespanMs: headline?.makespanMs ?? null,
    centralMs: headline?.centralMs ?? null,
    singleMs: headline?.singleMs ?? null,
    processes: headline?.size ?? null,
    latencyMs: HEADLINE_LATENCY_MS,
    tree: TREE,
    cells,
    failures,
    machine: machine(),
    loadAtEnd: loadNow(),
    cli: opts.cli,
    command: `npm run bench -- e2e ${argv.filter(a => a !== 'e2e').join(' ')}`.trim(),
    wallS: Math.round((Date.now() - started) / 1000)
  }
  writeFileSync(join(resultsDir(), 'e2e.svg'), e2eSvg(cells, HEADLINE_LATENCY_MS))
  return report('e2e', figures)
}

function counts(roles: Record<string, number>): { decomposers: number; scorers: number; executors: number } {
  return {
    decomposers: roles.decomposer as number,
    scorers: roles.scorer as number,
    executors: roles.executor as number
  }
}

function summarise(
  size: number,
  roles: Record<string, number>,
  latencyMs: number,
  startupMs: number,
  reps: Repeat[]
): Record<string, unknown> {
  const m = (f: (r: Repeat) => number): number => r1(median(reps.map(f)))
  const singles = reps.map(r => r.singleMs).filter((x): x is number => x !== null)
  const makespanMs = m(r => r.swarm.makespanMs)
  const centralMs = m(r => r.centralMs)
  const cp = (k: keyof PlanRun['criticalPath']): number => m(r => r.swarm.criticalPath[k])
  const allNodes = reps.flatMap(r => r.nodes)
  return {
    size,
    roles,
    latencyMs,
    repeats: reps.length,
    startupMs,
    makespanMs,
    centralMs,
    // The median of the per-run ratios: each ratio is taken within one repeat, under one load.
    tax: r3(median(reps.map(r => r.tax))),
    singleMs: singles.length === 0 ? null : median(singles),
    speedup: singles.length === 0 ? null : r3(median(singles) / makespanMs),
    firstClaimMs: m(r => r.swarm.firstClaimMs),
    centralFirstExecuteMs: m(r => r.centralFirstExecuteMs),
    stampMakespanMs: m(r => r.swarm.stampMakespanMs),
    convergenceMs: reps.some(r => r.swarm.convergenceMs === null) ? null : m(r => r.swarm.convergenceMs as number),
    llmCalls: m(r => r.swarmCalls.total),
    llmCallsCentral: m(r => r.centralCalls),
    // One proposal and one ballot per composite node, one call per leaf and roll-up.
    llmCallsMin: TREE.composites * 2 + TREE.leaves + TREE.rollups,
    duplicateExecutions: reps.reduce((s, r) => s + r.swarmCalls.duplicateExecutions, 0),
    duplicateOtherCalls: reps.reduce((s, r) => s + r.swarmCalls.duplicateOther, 0),
    duplicateResults: reps.reduce((s, r) => s + r.swarm.taskDuplicates, 0),
    statuses: reps.map(r => r.swarm.status),
    events: m(r => r.swarm.events),
    eventBytes: m(r => r.swarm.eventBytes),
    wireBytes: m(r => r.swarm.wireBytes),
    wireSocketsClosed: reps.reduce((s, r) => s + r.swarm.wireSocketsClosed, 0),
    eventsByType: reps[0]?.swarm.eventsByType,
    criticalPath: {
      calls: cp('calls'),
      llmMs: cp('llmMs'),
      proposeMs: cp('proposeMs'),
      ballotMs: cp('ballotMs'),
      claimMs: cp('claimMs'),
      executeMs: cp('executeMs'),
      edgesMs: cp('edgesMs')
    },
    cpuPctOfCorePerNode: {
      median: r1(median(allNodes.map(n => n.cpuPctOfCore))),
      max: r1(Math.max(...allNodes.map(n => n.cpuPctOfCore)))
    },
    rssMbPerNode: { median: r1(median(allNodes.map(n => n.rssMb))), max: r1(Math.max(...allNodes.map(n => n.rssMb))) },
    load: reps.map(r => r.loadBefore),
    runs: reps.map(r => ({
      makespanMs: r.swarm.makespanMs,
      centralMs: r.centralMs,
      tax: r.tax,
      singleMs: r.singleMs,
      firstClaimMs: r.swarm.firstClaimMs,
      convergenceMs: r.swarm.convergenceMs,
      calls: r.swarmCalls,
      criticalPath: r.swarm.criticalPath,
      load: r.loadBefore
    }))
  }
}
