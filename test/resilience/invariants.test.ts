/**
 * The invariant checker must be able to fail: a stored event with a bad
 * signature, one whose deps are not in its store, one that breaks a dep rule,
 * an event lost since a snapshot, and a task with two accepted results are
 * each reported. A clean store is not.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PARAMS, PROTOCOL_VERSION } from '../../src/core/events.js'
import { openEventStore } from '../../src/store/event-store.js'
import { signEvent } from '../../src/wire/sign.js'
import { makePeers } from '../helpers/plan-builder.js'
import { removeTempDirs, tempDir } from '../helpers/cli-process.js'
import { checkInvariants, checkStore, multipleAccepted, readStoreRows, snapshotIds } from '../helpers/invariants.js'
import type { PrivateKey } from '@libp2p/interface'
import type { Bodies, EventId, EventType, PeerIdString, PlanEvent } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const SWARM = 'inv-test'
let author: { id: PeerIdString; key: PrivateKey }
let goal: { event: PlanEvent; bytes: Uint8Array }

async function signed<T extends EventType>(
  type: T,
  plan: string,
  deps: readonly EventId[],
  body: Bodies[T],
  ms: number
): Promise<{ event: PlanEvent; bytes: Uint8Array }> {
  return await signEvent(
    {
      v: PROTOCOL_VERSION,
      swarm: SWARM,
      type,
      plan,
      author: author.id,
      hlc: { ms, c: 0 },
      deps: [...deps].sort(),
      body
    },
    author.key
  )
}

function storeWith(label: string, events: ReadonlyArray<{ event: PlanEvent; bytes: Uint8Array }>): string {
  const dir = join(tempDir('inv'), label)
  mkdirSync(dir, { recursive: true })
  const store = openEventStore({ dir })
  for (const e of events)
    store.put({
      id: e.event.id,
      plan: e.event.env.type === 'goal-submitted' ? e.event.id : e.event.env.plan,
      bytes: e.bytes,
      receivedMs: 0
    })
  store.close()
  return dir
}

beforeAll(async () => {
  ;[author] = (await makePeers(1)) as [{ id: PeerIdString; key: PrivateKey }]
  goal = await signed(
    'goal-submitted',
    '',
    [],
    { text: 'plan a test', params: { ...DEFAULT_PARAMS, committee: [author.id], quorum: 1 } },
    1_000
  )
})

afterAll(() => {
  removeTempDirs()
})

describe('resilience invariants: the checker reports what is wrong', () => {
  it('a clean store has no problems', async () => {
    const cancel = await signed('goal-cancelled', goal.event.id, [goal.event.id], { reason: 'done' }, 2_000)
    const dir = storeWith('clean', [goal, cancel])
    expect(checkStore(readStoreRows(dir), SWARM).problems).toEqual([])
  })

  it('a row whose signature does not verify', () => {
    const bad = new Uint8Array(goal.bytes)
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1
    const dir = storeWith('bad-sig', [{ event: { ...goal.event, id: 'f'.repeat(64) as EventId }, bytes: bad }])
    expect(checkStore(readStoreRows(dir), SWARM).problems.join('\n')).toMatch(/bad-signature/)
  })

  it('an event whose deps are missing from its store', async () => {
    const cancel = await signed('goal-cancelled', goal.event.id, [goal.event.id], { reason: 'orphan' }, 2_000)
    const dir = storeWith('orphan', [cancel])
    expect(checkStore(readStoreRows(dir), SWARM).problems.join('\n')).toMatch(/cannot fold: missing-deps/)
  })

  it('an event that breaks a dep rule (stamped before its dep)', async () => {
    const early = await signed('goal-cancelled', goal.event.id, [goal.event.id], { reason: 'early' }, 500)
    const dir = storeWith('early', [goal, early])
    expect(checkStore(readStoreRows(dir), SWARM).problems.join('\n')).toMatch(/stamp-not-after-dep/)
  })

  it('an event lost since a snapshot, and a missing tree on a live node', async () => {
    const dir = storeWith('lost', [goal])
    const snap = snapshotIds(dir)
    snap.add('e'.repeat(64))
    const report = await checkInvariants({
      swarm: SWARM,
      stores: [{ name: 'n', dataDir: dir, live: true }],
      live: [],
      snapshots: [{ dataDir: dir, ids: snap, label: 'before' }],
      convergeTimeoutMs: 0
    })
    expect(report.failures.join('\n')).toMatch(/1 of 2 events held before are gone/)
  })

  it('a task with two accepted results', () => {
    const tree = {
      plan: 'p'.repeat(64),
      tasks: [{ id: 't'.repeat(64), results: [{ accepted: true }, { accepted: true }] }]
    } as unknown as PlanTree
    expect(multipleAccepted(tree)).toHaveLength(1)
  })
})
