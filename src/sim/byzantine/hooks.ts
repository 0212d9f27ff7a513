import type { PlanId, PlanParams } from '../../core/events.js'
import type { LlmProvider } from '../../llm/types.js'
import type { NodeRuntime } from '../../runtime/node-runtime.js'
import type { RoleContext } from '../../../roles/driver.js'
import type { SimNode } from '../sim-node.js'

/** A role as the world runs it: stopped with the node, idle when no act is under way. */
export interface RoleRun {
  readonly stop: () => Promise<void>
  readonly idle: () => boolean
}

/**
 * What a run with dishonest members changes in a World (WorldOptions.dishonest): the seams through which
 * src/sim/byzantine/ puts a policy in place of a node's role, adds Twins and watches the honest nodes. A world
 * without it runs exactly as before (same seeds, same keys, same trees).
 */
export interface Dishonesty {
  /**
   * Extra nodes after the others, one per entry: a Twin of the node at that index, with a network identity of its
   * own but the other's key, so both sign as one member (DiemBFT's Twins: equivocation and lost state for free).
   */
  readonly twinsOf?: readonly number[]
  /** Starts the node's role in place of the honest one; undefined keeps the honest role. */
  readonly start?: (node: SimNode, ctx: RoleContext, runtime: NodeRuntime) => RoleRun | undefined
  /** Told of every (re)started runtime, before its role starts: the verdict watches honest nodes from here. */
  readonly booted?: (node: SimNode, runtime: NodeRuntime) => void
  /** While this holds the run is not settled: an attack is still to be made (a late rewrite, a late proposal). */
  readonly pending?: (plans: readonly PlanId[]) => boolean
  /** What every node's roles call the model through in place of the simulator's stand-in (a reviewer that knows junk). */
  readonly provider?: (provider: LlmProvider) => LlmProvider
  /** Parameters of every goal beyond the world's own (a short maxClaimMs, so a hoarder claims again in a run). */
  readonly params?: Partial<Omit<PlanParams, 'committee' | 'quorum'>>
}
