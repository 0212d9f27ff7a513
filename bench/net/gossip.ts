/**
 * Gossip latency (publish -> folded on every peer) between local processes,
 * full peers against bare gossipsub, and bare gossipsub's StrictSign against
 * StrictNoSign (latency at a fixed rate, and throughput).
 */
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { cpuSeconds, log, sleep, spawnChild, stopChildren, tempDir, waitAll } from './harness.js'
import type { Child } from './harness.js'
import { median, percentile, r1, r2 } from '../common/util.js'
import type { RenewalSet } from './events.js'

export type Kind = 'peer' | 'bare'
export type Policy = 'StrictSign' | 'StrictNoSign'

/** A set of processes, all connected to each other, publishing from process 0. */
export interface Swarm {
  readonly kind: Kind
  readonly policy: Policy
  readonly n: number
  readonly children: Child[]
  readonly label: string
  /** Whether every process saw every other as an events-topic subscriber before publishing (and if not, what it saw). */
  topology?: Record<string, unknown>
}

export interface RunResult {
  readonly kind: Kind
  readonly policy: Policy
  readonly n: number
  /** Post-warmup (event, receiver) latencies in ms. */
  readonly lat: number[]
  readonly published: number
  readonly deliveredPairs: number
  readonly expectedPairs: number
  /** Wall ms from the first publish until every receiver held every event (null: the drain gave up). */
  readonly allDeliveredMs: number | null
  /** CPU seconds this swarm's processes used from the first publish to the end of the drain. */
  readonly cpuSec: number
  readonly windowSec: number
  readonly loadavg: number[]
}

export interface BlastResult {
  readonly events: number
  /** Events per second the publisher got out. */
  readonly publishPerSec: number
  /** Events per second fully delivered: events / (last delivery on any receiver - first publish). */
  readonly deliveredPerSec: number
  readonly delivered: number
  readonly spanMs: number
  readonly loadavg: number[]
}

const la = (): number[] => loadavg().map(x => Math.round(x * 100) / 100)

/**
 * Start `n` processes of one kind, load the plan skeleton into full peers,
 * connect them in a full mesh (each dials every earlier one; full peers also
 * bootstrap to the first, as the CLI would) and wait until every process sees
 * every other as an events-topic subscriber.
 */
export async function startSwarm(kind: Kind, n: number, policy: Policy, set: RenewalSet): Promise<Swarm> {
  const root = tempDir('plan-swarm-net-gossip-')
  const label = `${kind === 'peer' ? 'full peers' : `bare gossipsub ${policy}`} x${n}`
  const t0 = Date.now()
  const cfg = (i: number, bootstrap?: string) => ({
    swarm: 'test',
    listen: '/ip4/127.0.0.1/tcp/0',
    ...(kind === 'peer' ? { dataDir: join(root, `p${i}`) } : { policy }),
    ...(bootstrap !== undefined ? { bootstrap: [bootstrap] } : {})
  })
  const first = await spawnChild(`${kind}-0`, kind, cfg(0))
  const children = [first]
  const rest = await Promise.allSettled(
    Array.from(
      { length: n - 1 },
      async (_, i) =>
        await spawnChild(`${kind}-${i + 1}`, kind, cfg(i + 1, kind === 'peer' ? first.addrs[0] : undefined))
    )
  )
  for (const r of rest) if (r.status === 'fulfilled') children.push(r.value)
  const sw: Swarm = { kind, policy, n, children, label }
  try {
    const failed = rest.find(r => r.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    if (kind === 'peer') {
      const loaded = await Promise.all(
        children.map(async c => await c.request({ cmd: 'load', file: set.skeletonFile }))
      )
      if (loaded.some(l => l.accepted !== set.skeletonCount || l.hash !== loaded[0]?.hash))
        throw new Error(`skeleton not loaded alike: ${JSON.stringify(loaded.map(l => [l.accepted, l.hash]))}`)
    }
    // Bare nodes: each dials every earlier one (a full mesh). Full peers find each other as the
    // product does: bootstrap to the first, then dial whoever their presence announcements name.
    if (kind === 'bare') {
      await Promise.all(
        children.map(async (c, i) => {
          if (i > 0) await c.request({ cmd: 'dial', addrs: children.slice(0, i).map(p => p.addrs[0]) })
        })
      )
    }
    const meshWait = Number(process.env.NET_MESH_WAIT_MS ?? 90_000)
    const m0 = Date.now()
    try {
      await waitAll(
        `a full mesh of ${label}`,
        children,
        s => (s.topicPeers as number) >= n - 1 && (s.connected as number) >= n - 1,
        meshWait
      )
      sw.topology = { full: true, ms: Date.now() - m0 }
    } catch {
      const states = await Promise.all(children.map(async c => await c.request({ cmd: 'state' })))
      sw.topology = {
        full: false,
        ms: Date.now() - m0,
        self: states.map(x => x.self),
        connected: states.map(x => x.connected),
        connections: states.map(x => x.connections),
        topicPeers: states.map(x => x.topicPeers),
        noTopic: states.map(x => x.noTopic)
      }
      log(
        `  WARNING ${label}: no full mesh of event-topic subscribers after ${meshWait} ms; going on with ${JSON.stringify(sw.topology)}`
      )
    }
    await sleep(2_500) // two gossipsub heartbeats: grafts settle
  } catch (err) {
    await stopChildren(children)
    throw err
  }
  log(
    `  ${label}: up in ${Date.now() - t0} ms (full mesh of topic subscribers: ${sw.topology?.full === true ? 'yes' : 'NO'})`
  )
  return sw
}

export async function stopSwarm(sw: Swarm | undefined): Promise<void> {
  if (sw !== undefined) await stopChildren(sw.children)
}

/** Every receiver's state until each holds `count` events (recv), or `ms` pass without progress. */
async function drain(receivers: readonly Child[], count: number, ms: number): Promise<number | null> {
  let last = -1
  let lastChange = Date.now()
  for (;;) {
    const states = await Promise.all(receivers.map(async c => await c.request({ cmd: 'state' })))
    const total = states.reduce((s, x) => s + (x.recv as number), 0)
    if (states.every(s => (s.recv as number) >= count)) return Date.now()
    if (total !== last) {
      last = total
      lastChange = Date.now()
    }
    if (Date.now() - lastChange > ms) return null
    await sleep(100)
  }
}

/** Process 0 publishes renewals [from, to) at `rate`; latency of each (event, receiver) pair after the first `warmup` events. */
export async function latencyWindow(
  sw: Swarm,
  set: RenewalSet,
  o: { from: number; to: number; rate: number; warmup: number; drainMs: number }
): Promise<RunResult> {
  const publisher = sw.children[0] as Child
  const receivers = sw.children.slice(1)
  await Promise.all(sw.children.map(async c => await c.request({ cmd: 'clear' })))
  const count = o.to - o.from
  const pids = sw.children.map(c => c.pid)
  const cpu0 = pids.map(cpuSeconds)
  const w0 = Date.now()
  const pub = await publisher.request(
    { cmd: 'publish', file: set.renewalFile, from: o.from, to: o.to, rate: o.rate },
    (count / o.rate) * 1000 + 120_000
  )
  const times = pub.times as number[]
  const doneAt = await drain(receivers, count, o.drainMs)
  const cpu1 = pids.map(cpuSeconds)
  const w1 = Date.now()
  const maps = await Promise.all(
    receivers.map(async c => (await c.request({ cmd: 'recv' })).recv as Record<string, number>)
  )
  const lat: number[] = []
  let deliveredPairs = 0
  for (let k = 0; k < count; k++) {
    const id = set.renewalIds[o.from + k] as string
    const tp = times[k] as number
    for (const m of maps) {
      const tr = m[id]
      if (tr === undefined) continue
      deliveredPairs++
      if (k >= o.warmup) lat.push(tr - tp)
    }
  }
  return {
    kind: sw.kind,
    policy: sw.policy,
    n: sw.n,
    lat,
    published: count,
    deliveredPairs,
    expectedPairs: count * receivers.length,
    allDeliveredMs: doneAt === null ? null : Math.round(doneAt - (times[0] as number)),
    cpuSec: cpu1.reduce((s, x, i) => s + x - (cpu0[i] as number), 0),
    windowSec: (w1 - w0) / 1000,
    loadavg: la()
  }
}

/** Process 0 publishes renewals [from, to) as fast as it can; events per second fully delivered. */
export async function blastWindow(sw: Swarm, set: RenewalSet, b: { from: number; to: number }): Promise<BlastResult> {
  const publisher = sw.children[0] as Child
  const receivers = sw.children.slice(1)
  const count = b.to - b.from
  await Promise.all(receivers.map(async c => await c.request({ cmd: 'clear' })))
  const pub = await publisher.request({ cmd: 'blast', file: set.renewalFile, from: b.from, to: b.to }, 300_000)
  const times = pub.times as number[]
  await drain(receivers, count, 5_000)
  const maps = await Promise.all(
    receivers.map(async c => (await c.request({ cmd: 'recv' })).recv as Record<string, number>)
  )
  let lastRecv = 0
  let delivered = 0
  for (let k = b.from; k < b.to; k++) {
    const id = set.renewalIds[k] as string
    for (const m of maps) {
      const t = m[id]
      if (t !== undefined) {
        delivered++
        lastRecv = Math.max(lastRecv, t)
      }
    }
  }
  const first = times[0] as number
  const lastPub = times[times.length - 1] as number
  return {
    events: count,
    publishPerSec: Math.round(count / Math.max(1e-3, (lastPub - first) / 1000)),
    deliveredPerSec: Math.round(count / Math.max(1e-3, (lastRecv - first) / 1000)),
    delivered: delivered / (count * receivers.length),
    spanMs: Math.round(lastRecv - first),
    loadavg: la()
  }
}

export interface LatencySummary {
  p50: number
  p99: number
  mean: number
  max: number
  pairs: number
  delivered: number
  cpuSecPerWindow: number
  windows: Array<{
    p50: number
    p99: number
    delivered: number
    cpuSec: number
    allDeliveredMs: number | null
    loadavg: number[]
  }>
}

export function summarise(runs: readonly RunResult[]): LatencySummary {
  const all = runs.flatMap(r => r.lat)
  const dp = runs.reduce((s, r) => s + r.deliveredPairs, 0)
  const ep = runs.reduce((s, r) => s + r.expectedPairs, 0)
  return {
    p50: r1(median(all)),
    p99: r1(percentile(all, 0.99)),
    mean: r1(all.reduce((s, x) => s + x, 0) / Math.max(1, all.length)),
    max: r1(Math.max(...all)),
    pairs: all.length,
    delivered: ep === 0 ? NaN : dp / ep,
    cpuSecPerWindow: r1(runs.reduce((s, r) => s + r.cpuSec, 0) / Math.max(1, runs.length)),
    windows: runs.map(r => ({
      p50: r1(median(r.lat)),
      p99: r1(percentile(r.lat, 0.99)),
      delivered: r.deliveredPairs / r.expectedPairs,
      cpuSec: r1(r.cpuSec),
      allDeliveredMs: r.allDeliveredMs,
      loadavg: r.loadavg
    }))
  }
}

export interface GossipParams {
  readonly sizes: number[]
  /** Publishing windows per kind; kinds alternate window by window (ABBA...). */
  readonly windows: number
  /** Total publishing seconds per kind, split evenly over the windows. */
  readonly seconds: number
  readonly rate: number
  /** Events of the first window's first seconds are left out of latency (JIT warm-up), not out of delivery. */
  readonly warmupSeconds: number
  readonly drainMs: number
}

/** Windows [0, windows) of `per` events each: window k publishes renewals [k * per, (k + 1) * per). */
function windowRanges(p: GossipParams): Array<{ from: number; to: number }> {
  const per = Math.max(1, Math.round((p.rate * p.seconds) / p.windows))
  return Array.from({ length: p.windows }, (_, k) => ({ from: k * per, to: (k + 1) * per }))
}

export function eventsNeeded(p: GossipParams): number {
  return Math.max(1, Math.round((p.rate * p.seconds) / p.windows)) * p.windows
}

/**
 * Run the same windows on two swarms, alternating which goes first (A B, B A,
 * A B, ...), so slow drifts of the machine's load fall on both alike. Only
 * the swarm publishing is busy; the other sits idle, connected.
 */
async function alternate(
  a: Swarm,
  b: Swarm,
  set: RenewalSet,
  p: GossipParams,
  what: string
): Promise<[RunResult[], RunResult[]]> {
  const ra: RunResult[] = []
  const rb: RunResult[] = []
  const ranges = windowRanges(p)
  const warmup = Math.round(p.rate * p.warmupSeconds)
  for (const [k, range] of ranges.entries()) {
    const order: Array<[Swarm, RunResult[]]> =
      k % 2 === 0
        ? [
            [a, ra],
            [b, rb]
          ]
        : [
            [b, rb],
            [a, ra]
          ]
    for (const [sw, into] of order) {
      const res = await latencyWindow(sw, set, {
        ...range,
        rate: p.rate,
        warmup: k === 0 ? warmup : 0,
        drainMs: p.drainMs
      })
      into.push(res)
      log(
        `${what} window ${k + 1}/${ranges.length} ${sw.label}: p50 ${median(res.lat).toFixed(1)} ` +
          `ms, p99 ${percentile(res.lat, 0.99).toFixed(1)} ms, ` +
          `delivered ${((res.deliveredPairs / res.expectedPairs) * 100).toFixed(2)}%, ` +
          `cpu ${res.cpuSec.toFixed(2)} s, load ${res.loadavg[0] ?? '?'}`
      )
      await sleep(300)
    }
  }
  return [ra, rb]
}

function pairedRatios(num: readonly RunResult[], den: readonly RunResult[], f: (xs: number[]) => number): number[] {
  const out: number[] = []
  num.forEach((r, i) => {
    const d = den[i] as RunResult
    if (r.lat.length > 0 && d.lat.length > 0) out.push(r2(f(r.lat) / f(d.lat)))
  })
  return out
}

/** Part 1: full peers against bare gossipsub (StrictNoSign, the swarm's policy) at each size, both swarms up at once. */
export async function benchGossip(set: RenewalSet, p: GossipParams): Promise<Record<string, unknown>> {
  if (eventsNeeded(p) > set.renewalIds.length)
    throw new Error(`need ${eventsNeeded(p)} events, the set has ${set.renewalIds.length}`)
  const out: Record<string, unknown> = {}
  for (const n of p.sizes) {
    let bare: Swarm | undefined
    let ours: Swarm | undefined
    try {
      log(`gossip n=${n}: starting ${n} bare gossipsub and ${n} full peer processes`)
      bare = await startSwarm('bare', n, 'StrictNoSign', set)
      ours = await startSwarm('peer', n, 'StrictNoSign', set)
      const [rb, ro] = await alternate(bare, ours, set, p, `gossip n=${n}`)
      const so = summarise(ro)
      const sb = summarise(rb)
      const p99 = (xs: number[]): number => percentile(xs, 0.99)
      out[`n${n}`] = {
        topology: { ours: ours.topology, bare: bare.topology },
        ours: so,
        bare: sb,
        p50Ratio: r2(so.p50 / sb.p50),
        p99Ratio: r2(so.p99 / sb.p99),
        cpuRatio: r2(so.cpuSecPerWindow / sb.cpuSecPerWindow),
        windowP50Ratios: pairedRatios(ro, rb, median),
        windowP99Ratios: pairedRatios(ro, rb, p99),
        medianWindowP50Ratio: r2(median(pairedRatios(ro, rb, median))),
        medianWindowP99Ratio: r2(median(pairedRatios(ro, rb, p99)))
      }
      log(
        `gossip n=${n}: ours p50 ${so.p50} / p99 ${so.p99} ms, bare p50 ${sb.p50} / p99 ${sb.p99} ` +
          `ms; delivered ${so.delivered} (bare ${sb.delivered})`
      )
    } finally {
      await stopSwarm(ours)
      await stopSwarm(bare)
    }
  }
  const used = set.renewalBytes.slice(0, eventsNeeded(p))
  return {
    rate: p.rate,
    windows: p.windows,
    eventsPerKind: eventsNeeded(p),
    warmupEvents: Math.round(p.rate * p.warmupSeconds),
    eventBytes: { median: median(used), min: Math.min(...used), max: Math.max(...used) },
    ...out
  }
}

/** Part 5: bare gossipsub StrictNoSign against StrictSign at `n` processes: latency at `rate`, then throughput. */
export async function benchPolicy(
  set: RenewalSet,
  p: GossipParams & { n: number; blastEvents: number; blasts: number }
): Promise<Record<string, unknown>> {
  const base = eventsNeeded(p)
  if (base + p.blasts * p.blastEvents > set.renewalIds.length) throw new Error('not enough events for the policy part')
  let noSign: Swarm | undefined
  let sign: Swarm | undefined
  try {
    log(`policy n=${p.n}: starting bare gossipsub StrictNoSign and StrictSign`)
    noSign = await startSwarm('bare', p.n, 'StrictNoSign', set)
    sign = await startSwarm('bare', p.n, 'StrictSign', set)
    const [rn, rs] = await alternate(noSign, sign, set, p, `policy n=${p.n}`)
    const bn: BlastResult[] = []
    const bs: BlastResult[] = []
    for (let k = 0; k < p.blasts; k++) {
      const range = { from: base + k * p.blastEvents, to: base + (k + 1) * p.blastEvents }
      const order: Array<[Swarm, BlastResult[]]> =
        k % 2 === 0
          ? [
              [noSign, bn],
              [sign, bs]
            ]
          : [
              [sign, bs],
              [noSign, bn]
            ]
      for (const [sw, into] of order) {
        const x = await blastWindow(sw, set, range)
        into.push(x)
        log(
          `policy blast ${k + 1}/${p.blasts} ${sw.label}: ${x.deliveredPerSec} events/s delivered ` +
            `(${(x.delivered * 100).toFixed(1)}%), publisher ${x.publishPerSec}/s, ` +
            `load ${x.loadavg[0] ?? '?'}`
        )
        await sleep(1_000)
      }
    }
    const side = (runs: RunResult[], blasts: BlastResult[]): Record<string, unknown> => ({
      latency: summarise(runs),
      deliveredPerSec: median(blasts.map(b => b.deliveredPerSec)),
      publishPerSec: median(blasts.map(b => b.publishPerSec)),
      blastDelivered: Math.min(...blasts.map(b => b.delivered)),
      blasts
    })
    const a = side(rn, bn)
    const b = side(rs, bs)
    return {
      n: p.n,
      rate: p.rate,
      blastEvents: p.blastEvents,
      StrictNoSign: a,
      StrictSign: b,
      throughputRatio: r2((a.deliveredPerSec as number) / (b.deliveredPerSec as number)),
      windowThroughputRatios: bn.map((x, i) => r2(x.deliveredPerSec / (bs[i] as BlastResult).deliveredPerSec)),
      p50Ratio: r2((a.latency as LatencySummary).p50 / (b.latency as LatencySummary).p50),
      p99Ratio: r2((a.latency as LatencySummary).p99 / (b.latency as LatencySummary).p99)
    }
  } finally {
    await stopSwarm(sign)
    await stopSwarm(noSign)
  }
}
