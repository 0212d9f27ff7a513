import { seededRandom } from '../ports/scheduler.js'
import type { FaultPlan, PartitionShape } from './faults.js'
import type { LinkFaults, SimNetwork } from './network.js'
import type { SimNode } from './sim-node.js'
import type { VirtualTime } from './virtual-time.js'

/** What the faults act on (a World), and how a node crashes and restarts there. */
export interface FaultTargets {
  readonly time: VirtualTime
  readonly network: SimNetwork
  readonly nodes: readonly SimNode[]
  readonly seed: number
  /** Links when no fault is on them: restored when the faults end. */
  readonly baseLinks: LinkFaults
  crash(node: SimNode): void
  restart(node: SimNode): Promise<void>
}

/**
 * The sides of a partition drawn now, from the seed, the swarm's size and
 * the virtual time: `bridge` leaves one node on both sides, `minority`
 * puts about 30 % on one side, otherwise half. True for a pair cut apart.
 */
function partitionOf(t: FaultTargets, shape: PartitionShape): (a: string, b: string) => boolean {
  const side = new Map<string, number>()
  const ids = t.nodes.map(n => n.peerId as string)
  const r = seededRandom(t.seed ^ ids.length ^ t.time.elapsed)
  const bridge = shape === 'bridge' ? ids[1 + Math.floor(r() * (ids.length - 1))] : undefined
  for (const id of ids) side.set(id, shape === 'minority' ? (r() < 0.3 ? 1 : 0) : r() < 0.5 ? 1 : 0)
  return (a, b) => a !== bridge && b !== bridge && side.get(a) !== side.get(b)
}

/**
 * Put a run's faults on its timeline: faulty links from 2 s, each
 * partition, crash (and its restart) and pause at its step, and at the end
 * of the faults clean links, no partition and every clock running. A run
 * without faults schedules nothing.
 */
export function scheduleFaults(f: FaultPlan, t: FaultTargets): void {
  if (f.kinds.length === 0) return
  const { time, network, nodes } = t
  time.schedule(2_000, () => {
    network.faults = f.links
  })
  for (const step of f.steps) {
    time.schedule(step.at, () => {
      switch (step.kind) {
        case 'partition': {
          network.setPartition(partitionOf(t, step.shape))
          for (const n of nodes) n.transport?.cutUnreachable()
          time.schedule(step.forMs, () => {
            network.setPartition(null)
          })
          return
        }
        case 'crash': {
          const node = nodes[step.node]
          if (node === undefined || node.runtime === undefined) return
          t.crash(node)
          time.schedule(step.downMs, () => {
            void t.restart(node)
          })
          return
        }
        case 'pause': {
          const node = nodes[step.node]
          if (node === undefined || node.runtime === undefined) return
          node.clock.pause()
          node.transport?.cutStreams()
          time.schedule(step.forMs, () => {
            node.clock.resume()
            node.resumedAt = time.elapsed
          })
          return
        }
        default: {
          const never: never = step
          throw new Error(`unknown fault ${JSON.stringify(never)}`)
        }
      }
    })
  }
  time.schedule(f.endMs, () => {
    network.faults = t.baseLinks
    network.setPartition(null)
    for (const n of nodes) {
      if (n.clock.isPaused) n.resumedAt = time.elapsed
      n.clock.resume()
    }
  })
}
