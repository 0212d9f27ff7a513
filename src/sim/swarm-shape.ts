import { presenceIntervalFor } from '../net/presence-interval.js'
import { PRESENCE_JITTER } from '../net/presence-announcer.js'

/**
 * How soon every roster must list every live node (from the start, or from
 * the end of the faults). After a mass start the rosters of a large swarm
 * fill only when every node announces again, one presence interval (n / 2 s)
 * later, and the next once-a-second sample sees it. So the bound is 120 s,
 * or (beyond about 200 nodes) one presence interval, stretched by the
 * announcer's jitter, plus ROSTER_SPREAD_MS. The fill times measured are in
 * BENCHMARKS.md (simulator).
 *
 * Checked in full where a run waits for the rosters (WorldOptions.until
 * `rosters`, the default up to ROSTER_WAIT_MAX_NODES = 200 nodes, where the
 * bound is the flat 120 s): a run that has not filled them by the bound ends
 * there and fails. Beyond (`plan`, the default at 300 and 1000 nodes, where
 * the bound is 175 s and 560 s), a run ends with the plan and the check
 * holds only what it saw: a fill by the end within the bound, or none past
 * it; otherwise the run reports how full the rosters were, unchecked
 * (`npm run sim -- --until rosters` checks it at any size).
 */
export function rosterFullBoundMs(nodes: number): number {
  return Math.max(120_000, Math.ceil(presenceIntervalFor(nodes) * (1 + PRESENCE_JITTER)) + ROSTER_SPREAD_MS)
}
/** Beyond the last periodic announcement, for it to cross the swarm and the next once-a-second sample to see it. */
const ROSTER_SPREAD_MS = 10_000

/**
 * Up to this many nodes a run waits for the rosters by default. Their bound
 * (rosterFullBoundMs) is the flat 120 s up to about 200 nodes; beyond, it is
 * one presence interval (n / 2 s) and more, and a virtual second costs more
 * wall time the larger the swarm: on 2 cores, waiting for the rosters about
 * triples the wall time of a 300-node run, and at 1000 nodes, where the
 * rosters fill only with the periodic announcements 450-550 s virtual after
 * the start, it takes more than 16 minutes (BENCHMARKS.md, simulator).
 */
export const ROSTER_WAIT_MAX_NODES = 200

/** The role a simulated node runs (a client authors goals; an observer only folds). */
export type SimRole = 'client' | 'decomposer' | 'scorer' | 'executor' | 'observer'

/** Bootstrap ("seed") nodes in a swarm of n: nodes 0 .. k-1, one per 50 nodes, so no seed is every newcomer's only way in. */
export function seedsFor(n: number): number {
  return Math.max(1, Math.ceil(n / 50))
}

/** The bootstrap peers of node i (indexes): two seeds (one when there is one), itself left out, as a compose file would give them. */
export function bootstrapOf(i: number, n: number): number[] {
  const k = seedsFor(n)
  return [...new Set([i % k, (i + 1) % k])].filter(j => j !== i)
}

/** What the roles in a swarm of n are: a few decomposers and scorers, executors, the rest observers. */
export function rolesFor(n: number): SimRole[] {
  const rest = n - 1
  const decomposers = Math.max(1, Math.min(5, Math.round(rest * 0.2)))
  const scorers = Math.max(1, Math.min(5, Math.round(rest * 0.2)))
  const executors = Math.max(1, Math.min(60, rest - decomposers - scorers))
  const roles: SimRole[] = ['client']
  for (let i = 0; i < decomposers; i++) roles.push('decomposer')
  for (let i = 0; i < scorers; i++) roles.push('scorer')
  for (let i = 0; i < executors; i++) roles.push('executor')
  while (roles.length < n) roles.push('observer')
  return roles.slice(0, Math.max(n, 4))
}
