import { createHash } from 'node:crypto'

/**
 * How long the simulator's model takes for one call (WorldOptions.llmLatency,
 * `npm run sim -- --llm-ms`): a fixed latency, or a log-normal one with a
 * median and a shape (sigma of the underlying normal), drawn from a hash of
 * the run's seed and the call's identity (who calls, for which plan and
 * node, which kind), not from the order of the calls. So the same call takes
 * the same time in every run of the seed, on any node that makes it, and the
 * central scheduler (src/sim/central.ts) replays the swarm's calls with the
 * swarm's latencies.
 */
export type LatencySpec =
  | { readonly kind: 'fixed'; readonly ms: number }
  | { readonly kind: 'lognormal'; readonly medianMs: number; readonly sigma: number }

/** The shape of `lognormal:M` without one: p90 about 2.5 x the median, p99 about 5 x. */
export const DEFAULT_LOGNORMAL_SIGMA = 0.7

/** What a call is, for its latency: the calling role's call kind (a roll-up and a leaf are different calls). */
export type CallKind = 'decompose' | 'score' | 'execute-leaf' | 'execute-rollup' | 'review'

/** `300`, `fixed:300`, `lognormal:4000` or `lognormal:4000:0.7`. */
export function parseLatencySpec(raw: string): LatencySpec {
  const parts = raw.split(':')
  const num = (s: string | undefined, what: string): number => {
    const n = Number(s)
    if (s === undefined || s === '' || !Number.isFinite(n) || n < 0)
      throw new Error(`--llm-ms ${raw}: ${what} must be a number >= 0 (e.g. 300, fixed:300, lognormal:4000:0.7)`)
    return n
  }
  if (parts.length === 1) return { kind: 'fixed', ms: num(parts[0], 'the latency') }
  if (parts[0] === 'fixed' && parts.length === 2) return { kind: 'fixed', ms: num(parts[1], 'the latency') }
  if (parts[0] === 'lognormal' && (parts.length === 2 || parts.length === 3)) {
    const medianMs = num(parts[1], 'the median')
    const sigma = parts.length === 3 ? num(parts[2], 'sigma') : DEFAULT_LOGNORMAL_SIGMA
    return { kind: 'lognormal', medianMs, sigma }
  }
  throw new Error(`--llm-ms ${raw}: expected MS, fixed:MS or lognormal:MEDIAN_MS[:SIGMA]`)
}

/** `20-80` (a message's one-way delay, uniform in ms, `--link-ms`) or `30` (30-30). */
export function parseLinkMs(raw: string): { minMs: number; maxMs: number } {
  const m = /^(\d+)(?:-(\d+))?$/.exec(raw.trim())
  const minMs = Number(m?.[1])
  const maxMs = Number(m?.[2] ?? m?.[1])
  if (m === null) throw new Error(`--link-ms ${raw}: expected MIN-MAX in whole ms, e.g. 20-80 (or one number)`)
  if (maxMs < minMs) throw new Error(`--link-ms ${raw}: the maximum is below the minimum`)
  return { minMs, maxMs }
}

/** The spec as `--llm-ms` takes it. */
export function latencyWords(spec: LatencySpec): string {
  return spec.kind === 'fixed' ? `${spec.ms}` : `lognormal:${spec.medianMs}:${spec.sigma}`
}

/**
 * The identity of one call: its kind, the caller (decompositions and ballots
 * are each role's own call; an execution is the task's, whoever runs it),
 * the goal and the node's path of titles.
 */
export function callKey(kind: CallKind, caller: string | null, goal: string, path: readonly string[]): string {
  return [kind, caller ?? '', goal, ...path].join('\u0000')
}

/** A standard normal from two uniforms in (0, 1) (Box-Muller). */
function normal(u1: number, u2: number): number {
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2)
}

/** The virtual ms one call takes under `spec`, from the seed and the call's identity alone. */
export function latencyOf(spec: LatencySpec, seed: number, key: string): number {
  if (spec.kind === 'fixed') return spec.ms
  const h = createHash('sha256').update(`${seed}\u0000${key}`).digest()
  // Two uniforms in (0, 1) from 48 bits each.
  const u1 = (h.readUIntBE(0, 6) + 0.5) / 2 ** 48
  const u2 = (h.readUIntBE(6, 6) + 0.5) / 2 ** 48
  return Math.max(1, Math.round(spec.medianMs * Math.exp(spec.sigma * normal(u1, u2))))
}
