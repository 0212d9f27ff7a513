import { rolesFor } from '../swarm-shape.js'
import type { SimRole } from '../swarm-shape.js'

/** What a dishonest member does (docs/simulator.md, "Dishonest members"). */
export const BYZ_MODES = [
  'backdate',
  'hoard',
  'late-rewrite',
  'not-held',
  'junk',
  'equivocate-early',
  'equivocate-late',
  'stuff',
  'budget-drain',
  'sybil',
  'twins'
] as const
export type ByzMode = (typeof BYZ_MODES)[number]

/** The role a mode's members have: what they attack. Twins pair with executors and decomposers (scorers too from 4). */
export const MODE_ROLE: Readonly<Record<ByzMode, 'executor' | 'decomposer' | 'twin'>> = {
  backdate: 'executor',
  hoard: 'executor',
  'late-rewrite': 'executor',
  'not-held': 'executor',
  junk: 'executor',
  sybil: 'executor',
  'equivocate-early': 'decomposer',
  'equivocate-late': 'decomposer',
  stuff: 'decomposer',
  'budget-drain': 'decomposer',
  twins: 'twin'
}

/** Modes that attack only once a plan has completed: the run waits until they have. */
export const LATE_MODES: ReadonlySet<ByzMode> = new Set(['late-rewrite', 'equivocate-late'])

/** Identities one sybil node signs as (its own and this many less one more). */
export const SYBIL_IDENTITIES = 3

/** Parse `--byzantine a,b` (`all` for every mode). */
export function parseModes(raw: string): ByzMode[] {
  if (raw === 'all') return [...BYZ_MODES]
  const modes = raw
    .split(',')
    .map(s => s.trim())
    .filter(Boolean)
  const bad = modes.find(m => !(BYZ_MODES as readonly string[]).includes(m))
  if (bad !== undefined)
    throw new Error(
      `--byzantine: unknown mode ${JSON.stringify(bad)}; use all or a comma list of ${BYZ_MODES.join(', ')}`
    )
  return modes as ByzMode[]
}

/** The most dishonest members a swarm of n tolerates by the usual bound: floor((n - 1) / 3). */
export function maxFaulty(n: number): number {
  return Math.floor((n - 1) / 3)
}

/** Whom a run of `mode` with f dishonest members makes dishonest (node indexes), and the twins it adds. */
export interface Cast {
  /** Dishonest nodes (for twins: the originals, whose twins are added after the others). */
  readonly members: readonly number[]
  readonly twinsOf: readonly number[]
  /** How many honest nodes of the attacked role stay (at least one, or the mode is not run at this size). */
  readonly honestLeft: number
  /** Nodes of the attacked role in all (the fair share's denominator for executor modes). */
  readonly ofRole: number
}

/**
 * The cast of a run: f members of the mode's role, the last of them (node 0 is the client and never one), and at
 * least one honest member of that role left; f is cut to fit. Twins pair with executors and decomposers in turn
 * (and scorers where there are 4 or more, so that one twin leaves a quorum).
 */
export function castFor(mode: ByzMode, n: number, f: number): Cast {
  const roles = rolesFor(n)
  const of = (r: SimRole): number[] => roles.flatMap((x, i) => (x === r ? [i] : []))
  if (MODE_ROLE[mode] === 'twin') {
    const pools = [of('executor'), of('decomposer'), of('scorer').length >= 4 ? of('scorer') : []].map(p =>
      p.slice(1).reverse()
    )
    const picked: number[] = []
    for (let k = 0; picked.length < f && pools.some(p => p.length > 0); k++) {
      const next = pools[k % pools.length]?.shift()
      if (next !== undefined) picked.push(next)
    }
    return { members: picked, twinsOf: picked, honestLeft: n - picked.length, ofRole: n }
  }
  const pool = of(MODE_ROLE[mode])
  const k = Math.max(0, Math.min(f, pool.length - 1))
  return { members: pool.slice(pool.length - k), twinsOf: [], honestLeft: pool.length - k, ofRole: pool.length }
}
