/**
 * Plans expire by their own rule, and nothing comes back (ADR-0040).
 *
 * A replica on a real SQLite store holds two finished plans: one whose goal
 * keeps it 1 day (protocol 4), one with the default 30 days. As the
 * replica's clock passes each expiry, the retention pass archives the plan
 * and takes it out of the store, the fold and the sync id set, and only
 * that plan: a late event of it is refused and counted, its ids count as
 * held (so sync never asks for them), and a restart on the same store does
 * not bring it back. The archive imports into another data dir whole, as a
 * plan kept there and never offered to peers; a damaged archive imports
 * nothing and says which line. A restarted replica knows an evicted plan
 * from its record without folding it, with the same treeHash.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePlan } from '../../bench/common/gen-plan.js'
import { DAY_MS } from '../../src/core/retention.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { retentionPass } from '../../src/runtime/retention.js'
import { openEventStore } from '../../src/store/event-store.js'
import { archivePath, readArchive } from '../../src/store/archive.js'
import { signEvent } from '../../src/wire/sign.js'
import { cliEnv, removeTempDirs, runCli, tempDir } from '../helpers/cli-process.js'
import type { PrivateKey } from '@libp2p/interface'
import type { PeerIdString, PlanEvent, PlanId } from '../../src/core/events.js'
import type { EventStore } from '../../src/ports/event-store.js'

interface Plan {
  readonly plan: PlanId
  readonly events: PlanEvent[]
  readonly wire: Uint8Array[]
  readonly key: PrivateKey
  readonly author: PeerIdString
}

let short: Plan
let long: Plan

async function makePlan(params: { retainDays?: number }): Promise<Plan> {
  const { events, peers, builder } = await generatePlan({ fanout: 2, depth: 1, renewals: 1, params })
  const keys = new Map(peers.map(p => [p.id as string, p.key]))
  const wire = await Promise.all(
    events.map(async e => (await signEvent(e.env, keys.get(e.env.author) as PrivateKey)).bytes)
  )
  return { plan: builder.plan, events, wire, key: peers[0]?.key as PrivateKey, author: peers[0]?.id as PeerIdString }
}

beforeAll(async () => {
  short = await makePlan({ retainDays: 1 })
  long = await makePlan({})
})

afterAll(() => {
  removeTempDirs()
})

function replicaOn(store: EventStore, clock: { ms: number }): Replica {
  return new Replica({
    swarm: 'test',
    key: short.key,
    peerId: short.author,
    store,
    metrics: new NodeMetrics(),
    now: () => clock.ms,
    inlineVerify: true
  })
}

describe('retention', () => {
  it('expires each plan at its own time, archives it, and lets nothing of it back in', async () => {
    const dir = tempDir('retention')
    const store = openEventStore({ dir })
    const clock = { ms: 1_000_000 }
    const r = replicaOn(store, clock)
    r.load()
    await r.ingestMany([...short.wire, ...long.wire], 'sync')
    expect(r.fold.tree(short.plan)?.status).toBe('completed')
    expect(r.fold.tree(long.plan)?.status).toBe('completed')
    const held = r.ids.size

    // Not yet: a day has not passed since the short plan's last event.
    expect(retentionPass(r, clock.ms, { dataDir: dir })).toBe(0)
    expect(r.fold.plans()).toHaveLength(2)

    clock.ms += DAY_MS
    retentionPass(r, clock.ms, { dataDir: dir })
    expect(r.fold.plans()).toStrictEqual([long.plan])
    expect(store.countByPlan(short.plan)).toBe(0)
    expect(store.countByPlan(long.plan)).toBe(long.wire.length)
    expect(r.ids.size).toBe(held - short.wire.length)
    expect(store.expiredPlans()).toStrictEqual([short.plan])
    // Sync does not ask for its ids again, and a late copy of any of its events is refused.
    for (const e of short.events) expect(r.has(e.id)).toBe(true)
    const late = r.ingest(short.wire[3] as Uint8Array, 'gossip')
    expect(late).toMatchObject({ verdict: 'reject', why: 'expired' })
    const lateBatch = await r.ingestMany(short.wire.slice(0, 5), 'sync')
    expect(lateBatch.every(x => x.why === 'expired')).toBe(true)
    expect(r.retention).toMatchObject({ expired: 1, refused: 6 })
    expect(store.countByPlan(short.plan)).toBe(0)

    // The archive holds every event, signed, under the header that names the plan.
    const archive = readArchive(archivePath(dir, short.plan))
    expect(archive.header).toMatchObject({ plan: short.plan, swarm: 'test', events: short.wire.length, retainDays: 1 })
    expect(archive.rows.map(x => x.id).sort()).toStrictEqual(short.events.map(e => e.id).sort())

    // A restart on the same store: the expired plan stays out; the other expires at 30 days.
    r.flush()
    const again = replicaOn(store, clock)
    again.load()
    expect(again.fold.plans()).toStrictEqual([long.plan])
    expect(again.ingest(short.wire[0] as Uint8Array, 'gossip').why).toBe('expired')
    clock.ms += 29 * DAY_MS
    retentionPass(again, clock.ms, { dataDir: dir })
    expect(again.fold.plans()).toStrictEqual([])
    expect(store.count()).toBe(0)
    expect(again.ids.size).toBe(0)
    // Tombstones are forgotten a week after expiry; the plans are not offered by anyone by then.
    clock.ms += 8 * DAY_MS
    retentionPass(again, clock.ms, { dataDir: dir })
    expect(store.expiredPlans()).toStrictEqual([])
    store.close()
  })

  it('imports an archive whole into a stopped node, kept there and out of sync; a damaged one imports nothing', async () => {
    const dir = tempDir('retention-src')
    const store = openEventStore({ dir })
    const clock = { ms: 1_000_000 + 2 * DAY_MS }
    const r = replicaOn(store, clock)
    r.load()
    await r.ingestMany(short.wire, 'sync')
    const hash = r.fold.treeHash(short.plan)
    retentionPass(r, clock.ms, { dataDir: dir })
    r.flush()
    store.close()
    const file = archivePath(dir, short.plan)

    const target = tempDir('retention-dst')
    const ok = await runCli(['import', file, '--data-dir', target, '--swarm', 'test'], { env: cliEnv(target) })
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout).toContain(`imported plan ${short.plan}`)
    expect(ok.stdout).toContain(`${short.wire.length} new`)
    const imported = openEventStore({ dir: target })
    expect(imported.keptPlans()).toStrictEqual([short.plan])
    const kept = replicaOn(imported, { ms: Date.now() })
    kept.load()
    expect(kept.fold.treeHash(short.plan)).toBe(hash)
    // Kept here, offered to nobody: its ids stay out of the sync id set, and it never expires here.
    expect(kept.ids.size).toBe(0)
    expect(kept.expiredBy(Date.now() + 3650 * DAY_MS)).toStrictEqual([])
    imported.close()

    // Damaged archives: refused with the line and the reason, nothing stored.
    const text = readFileSync(file, 'utf8')
    const lines = text.split('\n')
    const cases: Array<[string, string, RegExp]> = [
      ['truncated', text.slice(0, text.length - 40), /is cut off|truncated/],
      ['a line cut out', [...lines.slice(0, 3), ...lines.slice(4)].join('\n'), /event lines, but the header says/],
      ['not json', [lines[0], '{"id": "nope', ...lines.slice(2)].join('\n'), /line 2: not JSON/],
      [
        'a forged event',
        [
          lines[0],
          lines[1]?.replace(/"bytes":"(.)/, (_m, c: string) => `"bytes":"${c === 'A' ? 'B' : 'A'}`),
          ...lines.slice(2)
        ].join('\n'),
        /line 2: /
      ]
    ]
    for (const [what, body, message] of cases) {
      const bad = `${tempDir('retention-bad')}/bad.jsonl`
      writeFileSync(bad, body)
      const into = tempDir('retention-none')
      const res = await runCli(['import', bad, '--data-dir', into, '--swarm', 'test'], { env: cliEnv(into) })
      expect(res.code, what).toBe(2)
      expect(res.stderr, what).toMatch(message)
      expect(res.stderr, what).toContain('nothing was imported')
      const s = openEventStore({ dir: into })
      expect(s.count(), what).toBe(0)
      s.close()
    }
  })

  it('a restart knows an evicted plan from its record, without folding it', async () => {
    const dir = tempDir('retention-records')
    const store = openEventStore({ dir })
    const clock = { ms: 1_000_000 }
    const r = replicaOn(store, clock)
    r.load()
    await r.ingestMany([...short.wire, ...long.wire], 'sync')
    const hashes = [r.fold.treeHash(short.plan), r.fold.treeHash(long.plan)]
    clock.ms += 120_000
    r.tick()
    expect(r.fold.evictedCount).toBe(2)
    r.flush()
    const again = replicaOn(store, clock)
    const loaded = again.load()
    expect(loaded).toMatchObject({ restored: 2, loaded: 0 })
    expect(again.fold.events.size).toBe(0)
    expect([again.fold.treeHash(short.plan), again.fold.treeHash(long.plan)]).toStrictEqual(hashes)
    expect(again.ids.size).toBe(short.wire.length + long.wire.length)
    // Its tree folds from the store when asked for, to the same hash.
    expect(again.loadTree(short.plan)?.status).toBe('completed')
    expect(again.fold.treeHash(short.plan)).toBe(hashes[0])
    store.close()
  })
})
