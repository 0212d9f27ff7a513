/**
 * Late-joiner catch-up: a full peer process holds a ~10k-event plan; a fresh
 * full peer process joins with --bootstrap to it; time from the joiner's first
 * connection to holding every event with the same hash. Baseline, in this
 * (parent) process between trials: one core decoding and verifying the same
 * wire bytes (decodeEvent, verify: true, with the node's native verifier), nothing else.
 *
 * Each trial also reads the CPU the joiner (main thread, and every other
 * thread: signature workers, V8's compiler and GC helpers) and the holder
 * used meanwhile; `cpuRatio` is their sum over the baseline's CPU. On an
 * otherwise idle machine of c cores (where the baseline's time is its CPU),
 * the catch-up takes at least cpuRatio / c of the baseline's time, however
 * the work is spread.
 */
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { decodeEvent } from '../../src/wire/decode.js'
import { createNativeVerifier } from '../../src/runtime/verify.js'
import { readFileSync } from 'node:fs'
import { cpuSeconds, log, spawnChild, stopChildren, tempDir } from './harness.js'
import type { Child } from './harness.js'
import { makeWholePlan } from './events.js'
import { median } from '../common/util.js'

/** The node's own signature check (src/runtime/replica.ts): native, keeping each author's key object. */
const verifier = createNativeVerifier()

/** CPU ms of the baseline runs (wall time is what the ratio uses; CPU says how loaded the machine was). */
const verifyCpuMs: number[] = []

function verifyAll(bytes: readonly Uint8Array[]): number {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  for (const b of bytes) {
    if (decodeEvent(b, { swarm: 'test', verify: true, verifier }).kind !== 'event')
      throw new Error('baseline: an event did not verify')
  }
  const ms = performance.now() - t0
  const c = process.cpuUsage(c0)
  verifyCpuMs.push(Math.round((c.user + c.system) / 1000))
  return ms
}

/** Clock ticks (utime + stime) of a /proc stat file. */
function statTicks(path: string): number {
  const stat = readFileSync(path, 'utf8')
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(rest[11]) + Number(rest[12])
}

/** CPU seconds of a process, all threads, and of its main thread (whose tid is the pid). */
function threadCpu(pid: number): { main: number; all: number } {
  const all = cpuSeconds(pid)
  const share = statTicks(`/proc/${pid}/task/${pid}/stat`) / Math.max(1, statTicks(`/proc/${pid}/stat`))
  return { main: all * share, all }
}

export async function benchCatchup(p: {
  trials: number
  fanout: number
  depth: number
  renewals: number
}): Promise<Record<string, unknown>> {
  const root = tempDir('plan-swarm-net-catchup-')
  log(`catch-up: generating and signing a plan (fanout ${p.fanout}, depth ${p.depth}, renewals ${p.renewals})...`)
  const plan = await makeWholePlan(root, p)
  const n = plan.bytes.length
  const verifyMs: number[] = []
  verifyAll(plan.bytes.slice(0, 1_000)) // warm the JIT
  verifyCpuMs.length = 0
  verifyMs.push(verifyAll(plan.bytes))
  log(`catch-up: ${n} events; verifying them on one core took ${verifyMs.map(x => x.toFixed(0)).join(', ')} ms`)

  const children: Child[] = []
  try {
    const holder = await spawnChild('holder', 'peer', {
      swarm: 'test',
      listen: '/ip4/127.0.0.1/tcp/0',
      dataDir: join(root, 'holder')
    })
    children.push(holder)
    const loaded = await holder.request({ cmd: 'load', file: plan.file }, 600_000)
    if (loaded.accepted !== n) throw new Error(`holder folded ${String(loaded.accepted)} of ${n} events`)
    const hash = loaded.hash as string
    log(`catch-up: holder loaded ${n} events in ${(loaded.ms as number).toFixed(0)} ms (verify + fold + store)`)
    const trials: Array<Record<string, unknown>> = []
    for (let t = 0; t < p.trials; t++) {
      const holderCpu0 = cpuSeconds(holder.pid)
      const joiner = await spawnChild(`joiner-${t}`, 'peer', {
        swarm: 'test',
        listen: '/ip4/127.0.0.1/tcp/0',
        dataDir: join(root, `joiner-${t}`),
        bootstrap: [holder.addrs[0] as string],
        expect: n
      })
      children.push(joiner)
      const joinerCpu0 = threadCpu(joiner.pid)
      const caught = await joiner.waitLine(l => l.ev === 'caught', 600_000)
      const joinerCpu1 = threadCpu(joiner.pid)
      const holderCpuMs = Math.round((cpuSeconds(holder.pid) - holderCpu0) * 1000)
      const ms = (caught.tDone as number) - (caught.tConn as number)
      const same = caught.hash === hash
      trials.push({
        catchupMs: ms,
        verifyBeforeMs: Math.round(verifyMs[verifyMs.length - 1] as number),
        sameHash: same,
        held: caught.held,
        // CPU from the joiner's ready line (about its first connection) to the parent reading its caught line.
        joinerMainCpuMs: Math.round((joinerCpu1.main - joinerCpu0.main) * 1000),
        joinerOtherCpuMs: Math.round((joinerCpu1.all - joinerCpu0.all - (joinerCpu1.main - joinerCpu0.main)) * 1000),
        holderCpuMs,
        sync: (caught.state as { sync?: unknown }).sync,
        loadavg: loadavg().map(x => Math.round(x * 100) / 100)
      })
      log(`catch-up trial ${t + 1}/${p.trials}: ${n} events in ${ms} ms from first connection, same hash: ${same}`)
      if (!same) throw new Error(`joiner's hash ${String(caught.hash)} differs from the holder's ${hash}`)
      await joiner.stop()
      children.pop()
      verifyMs.push(verifyAll(plan.bytes))
      const after = verifyMs[verifyMs.length - 1] as number
      const tr = trials[trials.length - 1] as Record<string, unknown>
      tr.verifyAfterMs = Math.round(after)
      tr.ratio = Math.round((ms / ((after + (tr.verifyBeforeMs as number)) / 2)) * 100) / 100
      log(
        `  baseline verify after it: ${after.toFixed(0)} ms; this trial's ratio to the verify runs either side: ${String(tr.ratio)}`
      )
    }
    const catchupMs = median(trials.map(x => x.catchupMs as number))
    const vMs = median(verifyMs)
    return {
      events: n,
      catchupMs: Math.round(catchupMs),
      verifyMs: Math.round(vMs),
      catchupRatio: Math.round((catchupMs / vMs) * 100) / 100,
      medianTrialRatio: median(trials.map(x => x.ratio as number)),
      holderLoadMs: Math.round(loaded.ms as number),
      verifyRuns: verifyMs.map(Math.round),
      verifyCpuRuns: [...verifyCpuMs],
      cpuRatio:
        Math.round(
          (median(
            trials.map(x => (x.joinerMainCpuMs as number) + (x.joinerOtherCpuMs as number) + (x.holderCpuMs as number))
          ) /
            median(verifyCpuMs)) *
            100
        ) / 100,
      trials
    }
  } finally {
    await stopChildren(children)
  }
}
