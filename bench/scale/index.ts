/**
 * `npm run bench -- scale [--sizes=5,10,20,40] [--idle-s=20] [--mesh-wait-s=180] [--sim-sizes=100,300,1000]
 * [--sim-seeds=3] [--sim-until=plan|rosters]`
 *
 * The background as the swarm grows. For each size, a swarm of real
 * processes (the built CLI, as e2e runs it) on loopback: the time from the
 * first spawn until every process lists every other in its roster, then,
 * idle, each process's CPU share, RSS and connection count, and the bytes on
 * the wire per node per second (the kernel's TCP counters). Then the
 * deterministic simulator (src/sim) at larger sizes, on connections opened
 * by the real dial policy (src/net/neighbours.ts): virtual time to
 * convergence after the last event, plan bytes per node per event,
 * connections per node and the time until every roster is full, or how
 * full the rosters were when the run ended with the plan (`--sim-until`, as
 * `npm run sim -- --until`: by default a run waits for the rosters up to 200
 * nodes and ends with the plan beyond). `--sizes=` skips the real swarm (and
 * the build it needs). While the rosters fill it also takes the CPU share
 * the swarm used (of all cores: near 1 means the wait was for CPU) and the
 * presence announcements the bootstrap peer took in.
 * Writes bench/results/scale.json; the last line is one JSON object.
 */
import { SS, buildCli, machine, median, report, requireTools, r2, loadNow } from '../common/util.js'
import { startBenchLlm } from '../common/llm.js'
import { BenchSwarm, sampleProc } from '../common/swarm.js'
import { runSeed } from '../../src/sim/run.js'
import { removeTempDirs } from '../../test/helpers/cli-process.js'

const log = (s: string): void => {
  console.error(s)
}

function option(argv: readonly string[], flag: string): string | undefined {
  return argv.find(a => a.startsWith(`${flag}=`))?.slice(flag.length + 1)
}
function list(argv: readonly string[], flag: string, dflt: number[]): number[] {
  return (
    option(argv, flag)
      ?.split(',')
      .map(Number)
      .filter(n => Number.isInteger(n) && n > 0) ?? dflt
  )
}

async function realSwarm(n: number, idleS: number, llmUrl: string, meshS: number): Promise<Record<string, unknown>> {
  log(`scale: ${n} processes`)
  const swarm = await BenchSwarm.start(n, llmUrl, log, 'built', meshS * 1000)
  try {
    // Let start-up work (first syncs, mesh forming) pass before measuring the idle background.
    await new Promise(resolve => setTimeout(resolve, 5_000))
    const before = swarm.pids().map(sampleProc)
    const t0 = performance.now()
    const bytesPerS = await swarm.idleWireBytesPerS(idleS * 1000)
    const sec = (performance.now() - t0) / 1000
    const after = swarm.pids().map(sampleProc)
    const cpu = after
      .map((a, i) =>
        a === null || before[i] === null ? NaN : (a.cpuMs - (before[i] as { cpuMs: number }).cpuMs) / 10 / sec
      )
      .filter(Number.isFinite)
    const rss = after.map(a => a?.rssMb ?? NaN).filter(Number.isFinite)
    const connections: number[] = []
    for (const node of swarm.nodes) {
      try {
        const st = (await (await fetch(`${node.http}/status`, { signal: AbortSignal.timeout(5_000) })).json()) as {
          peers: number
        }
        connections.push(st.peers)
      } catch {
        /* a process that does not answer is left out */
      }
    }
    return {
      processes: n,
      rosterFullS: swarm.rosterFullMs === null ? null : r2(swarm.rosterFullMs / 1000),
      allStartedS: r2(swarm.allStartedMs / 1000),
      rosterFullAfterStartedS:
        swarm.rosterFullMs === null ? null : r2((swarm.rosterFullMs - swarm.allStartedMs) / 1000),
      rosterShare: r2(swarm.rosterShare),
      fillCpuShare: swarm.fillCpuShare === null ? null : r2(swarm.fillCpuShare),
      fillBootstrapCpuShare: swarm.fillBootstrapCpuShare === null ? null : r2(swarm.fillBootstrapCpuShare),
      fillPresenceAccepted: swarm.fillPresenceAccepted,
      idleCpuPctPerNodeMedian: r2(median(cpu)),
      idleRssMbPerNodeMedian: r2(median(rss)),
      idleBytesPerNodePerS: Math.round(bytesPerS / n),
      connectionsMedian: median(connections),
      connectionsMax: Math.max(...connections),
      loadavg: loadNow()
    }
  } finally {
    await swarm.stop()
  }
}

export async function benchScale(argv: readonly string[] = process.argv.slice(2)): Promise<Record<string, unknown>> {
  const sizes = list(argv, '--sizes', [5, 10, 20, 40])
  const idleS = Number(option(argv, '--idle-s') ?? 20)
  // How long to wait for full rosters before measuring anyway (rosterFullS is then null).
  const meshS = Number(option(argv, '--mesh-wait-s') ?? 180)
  const simSizes = list(argv, '--sim-sizes', [100, 300, 1000])
  const simSeeds = Number(option(argv, '--sim-seeds') ?? 3)
  const simUntil = option(argv, '--sim-until')
  if (simUntil !== undefined && simUntil !== 'plan' && simUntil !== 'rosters')
    throw new Error(`--sim-until=${simUntil}: expected plan or rosters`)
  const real: Array<Record<string, unknown>> = []
  if (sizes.length > 0) {
    requireTools('bench scale', [SS])
    log('scale: building the CLI (npm run build)')
    buildCli()
    const llm = await startBenchLlm(300)
    try {
      for (const n of sizes) real.push(await realSwarm(n, idleS, llm.fake.url, meshS))
    } finally {
      await llm.fake.close()
      removeTempDirs()
    }
  }
  const sim: Array<Record<string, unknown>> = []
  for (const n of simSizes) {
    const runs = []
    for (let seed = 1; seed <= simSeeds; seed++) {
      log(`scale: simulator, ${n} nodes, seed ${seed}`)
      const r = await runSeed({ seed, nodes: n, faults: [], ...(simUntil === undefined ? {} : { until: simUntil }) })
      log(
        `scale: simulator, ${n} nodes, seed ${seed}: ${r.ok ? 'ok' : 'FAILED'}, ` +
          `converged ${r.convergenceMs} ms after the last event, wall ${r.wallMs} ms`
      )
      runs.push(r)
    }
    sim.push({
      nodes: n,
      seeds: simSeeds,
      ok: runs.every(r => r.ok),
      convergenceMsMedian: median(runs.map(r => r.convergenceMs)),
      completionMsMedian: median(runs.map(r => r.completionMs ?? NaN)),
      planBytesPerNodePerEventMedian: median(runs.map(r => r.bytesPerNodePerEvent)),
      presenceBytesPerNodeMedian: median(runs.map(r => r.presenceBytesPerNode)),
      connectionsMedian: median(runs.map(r => r.connectionsMedian)),
      connectionsMax: Math.max(...runs.map(r => r.maxConnections)),
      convergenceMsMax: Math.max(...runs.map(r => r.convergenceMs)),
      until: runs[0]?.until,
      rosterFullMsMedian: median(runs.map(r => r.rosterFullMs ?? NaN)),
      rostersFullRuns: runs.filter(r => r.rosterFullMs !== null).length,
      rosterFillEmptiestMedian: r2(median(runs.map(r => r.rosterFill.emptiest))),
      rosterFillMedianMedian: r2(median(runs.map(r => r.rosterFill.median))),
      virtualMsMedian: median(runs.map(r => r.virtualMs)),
      eventsMedian: median(runs.map(r => r.events)),
      wallMsMedian: median(runs.map(r => r.wallMs)),
      heapMbMax: Math.max(...runs.map(r => r.heapMb)),
      rssMbMax: Math.max(...runs.map(r => r.rssMb)),
      peakHeapMbMax: Math.max(...runs.map(r => r.peakHeapMb)),
      peakRssMb: Math.max(...runs.map(r => r.peakRssMb)),
      loadavg: loadNow()
    })
  }
  const at = (n: number): Record<string, unknown> | undefined => real.find(r => r.processes === n)
  const first = real[0]
  const last = real[real.length - 1]
  const ratio = (k: string): number | null =>
    first === undefined || last === undefined ? null : r2(Number(last[k]) / Number(first[k]))
  return report('scale', {
    machine: machine(),
    real,
    sim,
    cpuRatioLargestToSmallest: ratio('idleCpuPctPerNodeMedian'),
    bytesRatioLargestToSmallest: ratio('idleBytesPerNodePerS'),
    rosterFullS40: at(40)?.rosterFullS ?? null,
    loadavg: loadNow()
  })
}
