/**
 * Event sets for the network benchmark, signed once in the parent and written
 * to frame files the children read.
 *
 * The gossip and heal parts publish `claim-renewed` events (about 600 bytes
 * signed) of a generated plan whose skeleton (goal, proposals, ballots, leaf
 * claims: everything that does not depend on a renewal) every full peer
 * loads first, so each published renewal folds on arrival once its
 * predecessor is there. Renewals are ordered round-robin over the leaves, so
 * a renewal's predecessor was published (leaves / rate) seconds earlier.
 */
import { join } from 'node:path'
import { generatePlan } from '../common/gen-plan.js'
import { signEventSync } from '../../src/wire/sign.js'
import { writeFrames } from './proto.js'
import type { PlanEvent } from '../../src/core/events.js'

export interface RenewalSet {
  /** Frame file of the skeleton (load into every full peer first). */
  readonly skeletonFile: string
  readonly skeletonCount: number
  /** Renewals of all leaves, round-robin over leaves. */
  readonly renewalFile: string
  readonly renewalIds: string[]
  readonly renewalBytes: number[]
  /** Renewals of the first half of the leaves / the second half, each round-robin: for two sides of a partition. */
  readonly sideFiles: [string, string]
  readonly sideIds: [string[], string[]]
  readonly leaves: number
}

export async function makeRenewalSet(
  dir: string,
  opts: { fanout: number; depth: number; renewals: number }
): Promise<RenewalSet> {
  const { events, peers } = await generatePlan({ ...opts, startMs: RECENT_MS() })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  const tainted = new Set<string>()
  const skeleton: PlanEvent[] = []
  const chains = new Map<string, PlanEvent[]>()
  for (const e of events) {
    if (e.env.type === 'claim-renewed') {
      tainted.add(e.id)
      const claim = (e.env.body as { claim: string }).claim
      const chain = chains.get(claim) ?? []
      chain.push(e)
      chains.set(claim, chain)
    } else if (e.env.deps.some(d => tainted.has(d))) {
      tainted.add(e.id)
    } else {
      skeleton.push(e)
    }
  }
  const sign = (e: PlanEvent): Uint8Array => signEventSync(e.env, keys.get(e.env.author) as never).bytes
  const roundRobin = (cs: PlanEvent[][]): PlanEvent[] => {
    const out: PlanEvent[] = []
    const longest = Math.max(0, ...cs.map(c => c.length))
    for (let i = 0; i < longest; i++) for (const c of cs) if (i < c.length) out.push(c[i] as PlanEvent)
    return out
  }
  const allChains = [...chains.values()]
  const half = Math.floor(allChains.length / 2)
  const all = roundRobin(allChains)
  const sides = [roundRobin(allChains.slice(0, half)), roundRobin(allChains.slice(half))] as const
  const skeletonFile = join(dir, 'skeleton.frames')
  writeFrames(skeletonFile, skeleton.map(sign))
  const renewalFile = join(dir, 'renewals.frames')
  const allBytes = all.map(sign)
  writeFrames(renewalFile, allBytes)
  const sideFiles: [string, string] = [join(dir, 'side-a.frames'), join(dir, 'side-b.frames')]
  writeFrames(sideFiles[0], sides[0].map(sign))
  writeFrames(sideFiles[1], sides[1].map(sign))
  return {
    skeletonFile,
    skeletonCount: skeleton.length,
    renewalFile,
    renewalIds: all.map(e => e.id),
    renewalBytes: allBytes.map(b => b.length),
    sideFiles,
    sideIds: [sides[0].map(e => e.id), sides[1].map(e => e.id)],
    leaves: allChains.length
  }
}

/** Stamps an hour old: recent enough that no node expires the plan, old enough that none is ahead of a clock. */
const RECENT_MS = (): number => Date.now() - 3_600_000

/** A whole generated plan, signed in generation order (deps first). */
export async function makeWholePlan(
  dir: string,
  opts: { fanout: number; depth: number; renewals: number }
): Promise<{ file: string; bytes: Uint8Array[]; ids: string[] }> {
  const { events, peers } = await generatePlan({ ...opts, startMs: RECENT_MS() })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  const bytes = events.map(e => signEventSync(e.env, keys.get(e.env.author) as never).bytes)
  const file = join(dir, `plan-${opts.fanout}-${opts.depth}-${opts.renewals}.frames`)
  writeFrames(file, bytes)
  return { file, bytes, ids: events.map(e => e.id) }
}
