/**
 * `npm run bench -- net`: the network benchmark, between real processes on
 * this machine (children: bench/net/child.ts). Parts, each selectable with
 * NET_PARTS (comma-separated, default all):
 *
 *   gossip     publish -> folded on every peer, full peers vs bare gossipsub,
 *              at NET_SIZES processes (default 3,10; 30 is opt-in)
 *   catchup    a late joiner takes a ~10k-event plan; vs one core verifying it
 *   heal       partition (network namespaces + nftables) and heal, >= 20 trials;
 *              needs root, iproute2 and nftables (installed with apt-get when missing)
 *   footprint  idle RSS and CPU, full node (the real CLI) vs bare libp2p node
 *   policy     bare gossipsub StrictNoSign vs StrictSign: latency and throughput
 *
 * Knobs: NET_SIZES (3,10), NET_RATE (50 events/s), NET_SECONDS (40 s of
 * publishing per kind and size), NET_WINDOWS (10: the seconds are split into
 * windows, and the two kinds compared take turns window by window),
 * NET_WARMUP_S (2), NET_DRAIN_MS (15000), NET_BLAST (2000 events),
 * NET_BLASTS (2), NET_POLICY_N (3),
 * CATCHUP_TRIALS (3), HEAL_TRIALS (20), HEAL_MODES (drop,reset),
 * HEAL_PARTITION_MS (3000), HEAL_EVENTS (5 per side), NET_IDLE_S (60 s
 * idle before one full GC in every process), NET_SAMPLE_S (60 s of RSS
 * samples after it), NET_FP_PAIRS (2 pairs of each kind), NET_FP_ROUNDS (3
 * parts of the window, a ratio each: the spread), NET_FP_CLI (built: the
 * bundled CLI against a bundled bare node; tsx: both through tsx, as
 * `npm start` runs; or --cli=built|tsx), NET_MESH_WAIT_MS (90000),
 * NET_DEBUG (children's stderr to ours), NET_CHILD_PROF=DIR (full peers write V8 CPU profiles there).
 *
 * Every ratio is ours over a baseline measured in the same run. The last
 * stdout line (printed by bench/run.ts) is the JSON returned here, also
 * written to bench/results/net.json.
 */
import { loadavg } from 'node:os'
import { benchCatchup } from './catchup.js'
import { benchFootprint } from './footprint.js'
import { benchGossip, benchPolicy, eventsNeeded } from './gossip.js'
import { benchHeal } from './heal.js'
import type { HealMode } from './heal.js'
import { makeRenewalSet } from './events.js'
import type { RenewalSet } from './events.js'
import { cleanupAll, log, tempDir } from './harness.js'
import { IP, NFT, machine, report, requireTools, r2 } from '../common/util.js'

const PARTS = ['gossip', 'catchup', 'heal', 'footprint', 'policy'] as const
type Part = (typeof PARTS)[number]

function num(name: string, dflt: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return dflt
  const v = Number(raw)
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name}=${raw}: expected a number`)
  return v
}

function list(name: string, dflt: string): string[] {
  return (process.env[name] ?? dflt)
    .split(',')
    .map(s => s.trim())
    .filter(Boolean)
}

export async function benchNet(): Promise<Record<string, unknown>> {
  const parts = list('NET_PARTS', PARTS.join(','))
  for (const p of parts)
    if (!(PARTS as readonly string[]).includes(p))
      throw new Error(`NET_PARTS: unknown part ${p}; choose from ${PARTS.join(', ')}`)
  const want = (p: Part): boolean => parts.includes(p)
  const sizes = list('NET_SIZES', '3,10').map(Number)
  if (sizes.some(n => !(Number.isInteger(n) && n >= 2))) throw new Error('NET_SIZES: integers >= 2')
  const gp = {
    sizes,
    windows: Math.max(1, Math.round(num('NET_WINDOWS', 10))),
    rate: num('NET_RATE', 50),
    seconds: num('NET_SECONDS', 40),
    warmupSeconds: num('NET_WARMUP_S', 2),
    drainMs: num('NET_DRAIN_MS', 15_000)
  }
  const blastEvents = Math.round(num('NET_BLAST', 2_000))
  const blasts = Math.round(num('NET_BLASTS', 2))
  const hp = {
    trials: num('HEAL_TRIALS', 20),
    partitionMs: num('HEAL_PARTITION_MS', 3_000),
    perSide: num('HEAL_EVENTS', 5),
    timeoutMs: num('HEAL_TIMEOUT_MS', 60_000),
    modes: list('HEAL_MODES', 'drop,reset') as HealMode[]
  }
  for (const m of hp.modes) if (m !== 'drop' && m !== 'reset') throw new Error(`HEAL_MODES: unknown mode ${m}`)
  // Before any part runs, so a missing tool is found in a second, not after the gossip part's minutes.
  if (want('heal')) requireTools('bench net (heal part)', [IP, NFT], { root: true })
  const started = Date.now()
  const load0 = loadavg()
  const out: Record<string, unknown> = {}
  try {
    let set: RenewalSet | undefined
    if (want('gossip') || want('policy') || want('heal')) {
      const leaves = 125 // fanout 5, depth 3
      const needed = eventsNeeded(gp) + (want('policy') ? blasts * blastEvents : 0)
      const perLeaf = Math.max(
        Math.ceil(needed / leaves),
        Math.ceil((hp.trials * hp.perSide) / Math.floor(leaves / 2)),
        2
      )
      log(`signing a plan with ${leaves} leaves x ${perLeaf} renewals...`)
      set = await makeRenewalSet(tempDir('plan-swarm-net-events-'), { fanout: 5, depth: 3, renewals: perLeaf })
      log(`skeleton ${set.skeletonCount} events; ${set.renewalIds.length} renewals`)
    }
    if (want('gossip')) out.gossip = await benchGossip(set as RenewalSet, gp)
    if (want('policy'))
      out.policy = await benchPolicy(set as RenewalSet, { ...gp, n: num('NET_POLICY_N', 3), blastEvents, blasts })
    if (want('catchup'))
      out.catchup = await benchCatchup({
        trials: Math.max(1, num('CATCHUP_TRIALS', 3)),
        fanout: 5,
        depth: 4,
        renewals: 12
      })
    if (want('heal')) out.heal = await benchHeal(set as RenewalSet, hp)
    if (want('footprint'))
      out.footprint = await benchFootprint({
        idleS: num('NET_IDLE_S', 60),
        sampleS: Math.max(1, num('NET_SAMPLE_S', 60)),
        pairs: Math.max(1, Math.round(num('NET_FP_PAIRS', 2))),
        rounds: Math.max(1, Math.round(num('NET_FP_ROUNDS', 3)))
      })
  } finally {
    cleanupAll()
  }
  return report('net', {
    ...headline(out, sizes),
    ...out,
    elapsedS: Math.round((Date.now() - started) / 1000),
    loadavg: { start: load0.map(r2), end: loadavg().map(r2) },
    machine: machine()
  })
}

/** The figures scripts read, at the top level (null when their part did not run). */
function headline(out: Record<string, unknown>, sizes: number[]): Record<string, unknown> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const o = out as any
  const at = sizes.includes(10) ? 10 : Math.max(...sizes)
  const g = o.gossip?.[`n${at}`]
  const dels: number[] = o.gossip === undefined ? [] : sizes.map(n => o.gossip[`n${n}`]?.ours?.delivered as number)
  const heal = o.heal?.drop ?? o.heal?.reset
  return {
    ratiosAtProcesses: g === undefined ? null : at,
    p50Ratio: g?.p50Ratio ?? null,
    p99Ratio: g?.p99Ratio ?? null,
    delivered: dels.length === 0 ? null : Math.min(...dels),
    catchupMs: o.catchup?.catchupMs ?? null,
    catchupRatio: o.catchup?.catchupRatio ?? null,
    healP50Ms: heal?.healP50Ms ?? null,
    healMaxMs: heal?.healMaxMs ?? null,
    healMode: heal?.mode ?? null,
    rssRatio: o.footprint?.rssRatio ?? null,
    rssRatioSpread: o.footprint?.rssRatioSpread ?? null,
    idleCpuPct: o.footprint?.peerCpuPct ?? null,
    policyThroughputRatio: o.policy?.throughputRatio ?? null
  }
}
