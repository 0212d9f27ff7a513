import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { startRole } from '../../../roles/driver.js'
import { createDecomposer } from '../../../roles/decomposer.js'
import { createScorer } from '../../../roles/scorer.js'
import { createExecutor } from '../../../roles/executor.js'
import { forgerOf, viewAs } from './forge.js'
import { backdate, hoard, lateRewrite, notHeld } from './executor-policies.js'
import { budgetDrain, equivocateEarly, equivocateLate, junkProvider, stuff } from './plan-policies.js'
import { LATE_MODES, SYBIL_IDENTITIES } from './modes.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString, PlanId } from '../../core/events.js'
import type { NodeRuntime } from '../../runtime/node-runtime.js'
import type { RoleContext, RoleHandler } from '../../../roles/driver.js'
import type { SimNode } from '../sim-node.js'
import type { Dishonesty, RoleRun } from './hooks.js'
import type { ByzMode, Cast } from './modes.js'
import type { PolicyCtx } from './executor-policies.js'

/** One sybil node's extra identities: keys drawn from the seed, so a run replays. */
export interface SybilKeys {
  readonly keys: ReadonlyMap<number, ReadonlyArray<{ key: PrivateKey; peerId: PeerIdString }>>
}

/** Draw SYBIL_IDENTITIES - 1 extra identities for each member (sybil mode), from the seed. */
export async function sybilKeys(seed: number, members: readonly number[]): Promise<SybilKeys> {
  const keys = new Map<number, Array<{ key: PrivateKey; peerId: PeerIdString }>>()
  for (const m of members) {
    const list: Array<{ key: PrivateKey; peerId: PeerIdString }> = []
    for (let k = 1; k < SYBIL_IDENTITIES; k++) {
      const bytes = new Uint8Array(32)
      for (let b = 0; b < 32; b++) bytes[b] = (seed * 131 + m * 31 + k * 7 + b * 13) & 0xff
      const key = await generateKeyPairFromSeed('Ed25519', bytes)
      list.push({ key, peerId: peerIdFromPrivateKey(key).toString() as PeerIdString })
    }
    keys.set(m, list)
  }
  return { keys }
}

const HONEST: Record<'decomposer' | 'scorer' | 'executor', (ctx: RoleContext) => RoleHandler> = {
  decomposer: createDecomposer,
  scorer: createScorer,
  executor: createExecutor
}

/** What a dishonest run keeps track of: who is dishonest, and which late attacks are still to be made. */
export interface Members {
  readonly dishonesty: Omit<Dishonesty, 'booted'>
  /** Every identity a dishonest member signs as (sybils' too; for twins the originals'). */
  readonly authors: Set<PeerIdString>
  /** Plans a late attacker has attacked, by node. */
  readonly attacked: Map<number, Set<PlanId>>
}

/**
 * The dishonest members of a run: each runs the real replica, and in place of its honest role the mode's policy
 * (src/sim/byzantine/*-policies.ts), driven by the real role driver. A late attacker must have attacked every plan of
 * the run before the run may end.
 */
export function membersFor(
  mode: ByzMode,
  cast: Cast,
  sybils: SybilKeys | undefined,
  params?: Dishonesty['params']
): Members {
  const dishonest = new Set(cast.members)
  const authors = new Set<PeerIdString>()
  const attacked = new Map<number, Set<PlanId>>()
  for (const m of cast.members) for (const s of sybils?.keys.get(m) ?? []) authors.add(s.peerId)
  const start = (node: SimNode, ctx: RoleContext, runtime: NodeRuntime): RoleRun | undefined => {
    if (!dishonest.has(node.index) || node.twinOf !== undefined || mode === 'twins') return undefined
    authors.add(node.peerId)
    let halted = false
    const p: PolicyCtx = { ctx, forger: forgerOf(runtime, node.key, node.peerId), halted: () => halted }
    const done = (plan: PlanId): void => {
      const set = attacked.get(node.index) ?? new Set<PlanId>()
      set.add(plan)
      attacked.set(node.index, set)
    }
    const role = node.role as 'decomposer' | 'scorer' | 'executor'
    const runs: RoleRun[] = []
    const run = (c: RoleContext, h: RoleHandler, concurrency?: number): void => {
      runs.push(startRole(c, h, concurrency === undefined ? {} : { concurrency }))
    }
    const honestOn = (c: RoleContext): RoleHandler => HONEST[role](c)
    switch (mode) {
      case 'backdate':
        run(ctx, backdate(p), 64)
        break
      case 'hoard':
        run(ctx, hoard(p), 256)
        break
      case 'not-held':
        run(ctx, notHeld(p, honestOn(ctx)), 64)
        break
      case 'late-rewrite':
        run(ctx, lateRewrite(p, honestOn(ctx), done))
        break
      case 'junk':
        run(
          { ...ctx, provider: junkProvider(ctx.provider) },
          honestOn({ ...ctx, provider: junkProvider(ctx.provider) })
        )
        break
      case 'equivocate-early': {
        const c = { ...ctx, view: equivocateEarly(ctx.view) }
        run(c, honestOn(c))
        break
      }
      case 'equivocate-late':
        run(ctx, equivocateLate(p, honestOn(ctx), done))
        break
      case 'stuff': {
        const c = { ...ctx, view: stuff(ctx.view) }
        run(c, honestOn(c))
        break
      }
      case 'budget-drain': {
        const c = { ...ctx, view: budgetDrain(ctx.view) }
        run(c, honestOn(c))
        break
      }
      case 'sybil': {
        run(ctx, honestOn(ctx))
        for (const s of sybils?.keys.get(node.index) ?? []) {
          const c = { ...ctx, view: viewAs(ctx.view, forgerOf(runtime, s.key, s.peerId)) }
          run(c, honestOn(c))
        }
        break
      }
    }
    return {
      stop: async () => {
        halted = true
        await Promise.all(runs.map(r => r.stop()))
      },
      idle: () => runs.every(r => r.idle())
    }
  }
  const late = LATE_MODES.has(mode)
  return {
    authors,
    attacked,
    dishonesty: {
      twinsOf: cast.twinsOf,
      start,
      ...(params === undefined ? {} : { params }),
      pending: plans => late && cast.members.some(m => plans.some(plan => attacked.get(m)?.has(plan) !== true))
    }
  }
}
