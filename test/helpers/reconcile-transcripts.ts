/**
 * Whole reconciliation exchanges over fixed, seeded sets, each reduced to one
 * digest of every message sent (in order) and of what each side learnt. The
 * digests of protocol-1 nodes are written down in test/unit/reconcile.test.ts:
 * a node must send the same bytes for the same sets, whatever its id set
 * keeps in memory, since old and new nodes share the wire.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { IdSet } from '../../src/core/id-set.js'
import { createReconcileSession } from '../../src/sync/reconcile/index.js'
import type { ReconcileOptions } from '../../src/sync/reconcile/index.js'
import { seededWords } from './random.js'

export interface TranscriptCase {
  readonly name: string
  readonly seed: number
  /** Most ids share a long prefix with a few base ids: long bounds, ties in the first 32 bits. */
  readonly clustered: boolean
  readonly common: number
  readonly onlyA: number
  readonly onlyB: number
  readonly options: ReconcileOptions
  readonly aFirst: boolean
}

const BASES = ['0'.repeat(64), 'f'.repeat(64), '7f'.repeat(32), '80'.repeat(32)]

function ids(seed: number, clustered: boolean, count: number): string[] {
  const next = seededWords(seed)
  const out = new Set<string>()
  while (out.size < count) {
    let id = ''
    for (let w = 0; w < 8; w++) id += next().toString(16).padStart(8, '0')
    if (clustered && next() % 4 !== 0) {
      const base = BASES[next() % BASES.length] as string
      const shared = next() % 65
      id = base.slice(0, shared) + id.slice(shared)
    }
    out.add(id)
  }
  return [...out]
}

const SMALL = { branching: 3, maxIdsPerLeaf: 2, maxMessageBytes: 600 }
const TIGHT = { maxMessageBytes: 4_096 }

/** The cases: small and medium sets, one side empty (a newcomer), tight budgets that cut replies short. */
export const TRANSCRIPT_CASES: readonly TranscriptCase[] = [
  { name: 'equal sets', seed: 1, clustered: false, common: 5_000, onlyA: 0, onlyB: 0, options: {}, aFirst: true },
  { name: 'few differences', seed: 2, clustered: false, common: 5_000, onlyA: 7, onlyB: 3, options: {}, aFirst: true },
  { name: 'clustered', seed: 3, clustered: true, common: 2_000, onlyA: 40, onlyB: 60, options: {}, aFirst: false },
  { name: 'small shaping', seed: 4, clustered: true, common: 300, onlyA: 30, onlyB: 30, options: SMALL, aFirst: true },
  {
    name: 'newcomer, tight',
    seed: 5,
    clustered: false,
    common: 0,
    onlyA: 0,
    onlyB: 6_000,
    options: TIGHT,
    aFirst: true
  },
  {
    name: 'newcomer answers',
    seed: 6,
    clustered: false,
    common: 0,
    onlyA: 4_000,
    onlyB: 0,
    options: TIGHT,
    aFirst: true
  },
  {
    name: 'disjoint, tight',
    seed: 7,
    clustered: true,
    common: 0,
    onlyA: 900,
    onlyB: 700,
    options: TIGHT,
    aFirst: false
  },
  { name: 'tiny', seed: 8, clustered: false, common: 3, onlyA: 1, onlyB: 2, options: SMALL, aFirst: true }
]

/** Runs the case and returns the hex SHA-256 of its transcript (every message, then each side's need and offer). */
export function transcriptDigest(c: TranscriptCase): string {
  const all = ids(c.seed, c.clustered, c.common + c.onlyA + c.onlyB)
  const common = all.slice(0, c.common)
  const setA = new IdSet()
  const setB = new IdSet()
  for (const id of [...common, ...all.slice(c.common, c.common + c.onlyA)]) setA.add(id)
  for (const id of [...common, ...all.slice(c.common + c.onlyA)]) setB.add(id)
  const a = createReconcileSession(setA, c.options)
  const b = createReconcileSession(setB, c.options)
  const learnt = {
    a: { need: [] as string[], offer: [] as string[] },
    b: { need: [] as string[], offer: [] as string[] }
  }
  const parts: string[] = []
  let turn: 'a' | 'b' = c.aFirst ? 'b' : 'a'
  let message: Uint8Array | null = (c.aFirst ? a : b).initiate()
  while (message !== null) {
    parts.push(bytesToHex(message))
    const step = (turn === 'a' ? a : b).receive(message)
    if ('error' in step) throw new Error(`${c.name}: ${turn}: ${step.error}`)
    learnt[turn].need.push(...step.need)
    learnt[turn].offer.push(...step.offer)
    message = step.reply
    turn = turn === 'a' ? 'b' : 'a'
  }
  parts.push(JSON.stringify(learnt))
  return bytesToHex(sha256(new TextEncoder().encode(parts.join('\n'))))
}
