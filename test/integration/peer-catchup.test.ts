import { afterEach, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { foldAll } from '../../src/core/fold.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { openEventStore } from '../../src/store/event-store.js'
import { PeerFleet, loadEvents } from '../helpers/peers.js'
import { waitUntil } from '../helpers/wait.js'
import type { PlanEvent } from '../../src/core/events.js'

/** Fold the union of the stores in `dirs`, as an outside referee would. */
function foldStores(dirs: readonly string[]): string {
  const events = new Map<string, PlanEvent>()
  for (const dir of dirs) {
    const store = openEventStore({ dir })
    store.load(
      row => {
        const d = decodeEvent(row.bytes, { swarm: 'test' })
        if (d.kind === 'event') events.set(d.event.id, d.event)
      },
      () => {}
    )
    store.close()
  }
  return foldAll(events.values()).swarmHash()
}

describe('peers catch up through sync', () => {
  let fleet: PeerFleet
  afterEach(async () => {
    await fleet.stopAll()
  })

  it(
    'a late joiner gets all 10k events and the same treeHash; a restarted node reloads and catches up',
    { timeout: 240_000 },
    async () => {
      fleet = new PeerFleet()
      const { events, peers } = await generatePlan({
        fanout: 5,
        depth: 4,
        renewals: 12,
        startMs: Date.now() - 3_600_000
      })
      expect(events.length).toBeGreaterThan(9_000)
      const keys = new Map(peers.map(p => [p.id as string, p.key]))
      const a = await fleet.start('a')
      const half = Math.floor(events.length / 2)
      await loadEvents(a, events.slice(0, half), keys)

      const b = await fleet.start('b', ['--bootstrap', a.node.addresses()[0] as string])
      await waitUntil('b to hold the first half', () => b.replica.ids.size === half, 120_000)
      expect(b.replica.fold.swarmHash()).toBe(a.replica.fold.swarmHash())

      // b goes away; a learns the rest; b comes back on its data dir with the same peer id.
      const bId = b.node.peerId
      const bDir = b.dataDir
      await fleet.stop(b)
      await loadEvents(a, events.slice(half), keys)
      const b2 = await fleet.start('b2', ['--bootstrap', a.node.addresses()[0] as string], { dataDir: bDir })
      expect(b2.node.peerId).toBe(bId)
      expect(b2.replica.ids.size).toBe(half)
      await waitUntil('the restarted node to catch up', () => b2.replica.ids.size === events.length, 120_000)

      const plan = a.replica.fold.plans()[0]
      expect(plan).toBeDefined()
      expect(a.replica.fold.tree(plan!)?.status).toBe('completed')
      expect(b2.replica.fold.treeHash(plan!)).toBe(a.replica.fold.treeHash(plan!))
      expect(foldStores([a.dataDir, bDir])).toBe(a.replica.fold.swarmHash())
    }
  )
})
