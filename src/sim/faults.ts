import type { LinkFaults } from './network.js'

/** The kinds of fault a run can draw; `--faults` names a subset. */
export const FAULT_KINDS = ['links', 'partition', 'crash', 'pause', 'skew'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export type PartitionShape = 'halves' | 'minority' | 'bridge'

/** One scheduled fault, at a virtual time (ms since the run started). */
export type FaultStep =
  | { readonly at: number; readonly kind: 'partition'; readonly shape: PartitionShape; readonly forMs: number }
  | { readonly at: number; readonly kind: 'crash'; readonly node: number; readonly downMs: number }
  | { readonly at: number; readonly kind: 'pause'; readonly node: number; readonly forMs: number }

/** What a seed decided a run's faults are: drawn once, before the run, so they can be printed and replayed. */
export interface FaultPlan {
  readonly kinds: readonly FaultKind[]
  /** Link faults while faults are on (clean links after). */
  readonly links: LinkFaults
  /** Per-node clock skew (ms), for the whole run. */
  readonly skewMs: readonly number[]
  readonly steps: readonly FaultStep[]
  /** Every fault is over by then (ms since start): links clean, partitions healed, nodes back. */
  readonly endMs: number
}

/** Parse `--faults a,b,c` ('all', 'none', or kinds). */
export function parseFaultKinds(raw: string): FaultKind[] {
  if (raw === 'all') return [...FAULT_KINDS]
  if (raw === 'none' || raw === '') return []
  const kinds = raw
    .split(',')
    .map(s => s.trim())
    .filter(Boolean)
  const bad = kinds.find(k => !(FAULT_KINDS as readonly string[]).includes(k))
  if (bad !== undefined)
    throw new Error(
      `--faults: unknown fault ${JSON.stringify(bad)}; use all, none, or a comma list of ${FAULT_KINDS.join(', ')}`
    )
  return kinds as FaultKind[]
}

/**
 * Draw a run's faults from its random stream: during [startMs, endMs) links
 * are slow, lossy and duplicating, partitions of several shapes come and go,
 * nodes crash (and restart on the same store) or freeze and resume; clocks
 * are skewed for the whole run. Node 0 (the goal's author) is never crashed,
 * so that the goal is published.
 */
export function drawFaults(
  random: () => number,
  nodes: number,
  kinds: readonly FaultKind[],
  startMs: number,
  spanMs: number
): FaultPlan {
  const has = (k: FaultKind): boolean => kinds.includes(k)
  const pick = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1))
  const endMs = startMs + spanMs
  const links: LinkFaults = has('links')
    ? { delayMs: pick(5, 60), jitterMs: pick(5, 120), loss: pick(0, 15) / 100, duplicate: pick(0, 10) / 100 }
    : { delayMs: 2, jitterMs: 3, loss: 0, duplicate: 0 }
  const skewMs = Array.from({ length: nodes }, () => (has('skew') ? pick(-400, 400) : 0))
  const steps: FaultStep[] = []
  const when = (): number => startMs + pick(0, Math.max(0, spanMs - 1_000))
  if (has('partition')) {
    const shapes: PartitionShape[] = ['halves', 'minority', 'bridge']
    for (let i = pick(1, 2); i > 0; i--) {
      const at = when()
      steps.push({
        at,
        kind: 'partition',
        shape: shapes[pick(0, 2)] as PartitionShape,
        forMs: Math.min(pick(1_000, Math.max(2_000, spanMs / 2)), endMs - at)
      })
    }
  }
  if (has('crash') && nodes > 1) {
    for (let i = pick(1, Math.max(1, Math.floor(nodes / 5))); i > 0; i--) {
      const at = when()
      steps.push({
        at,
        kind: 'crash',
        node: pick(1, nodes - 1),
        downMs: Math.min(pick(500, Math.max(1_000, spanMs / 2)), endMs - at)
      })
    }
  }
  if (has('pause') && nodes > 1) {
    const at = when()
    steps.push({
      at,
      kind: 'pause',
      node: pick(1, nodes - 1),
      forMs: Math.min(pick(500, Math.max(1_000, spanMs / 2)), endMs - at)
    })
  }
  steps.sort((a, b) => a.at - b.at)
  return { kinds, links, skewMs, steps, endMs }
}
