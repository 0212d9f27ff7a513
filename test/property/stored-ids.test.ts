/**
 * The sync id set a SQLite store keeps (src/store/stored-ids.ts) against the
 * same model as the in-memory one: random adds (their rows written at once,
 * later, as the replica's write queue does, or before the add), removals (rows deleted with them, or later, as for a plan that
 * expired while the node was down), views, and restarts that build the set
 * again from the rows. Every view
 * must read as the model did when it was taken, or, if rows were deleted
 * under it since, refuse with IdRangesChanged: never answer wrongly. And a
 * session over the stored set reconciles with one over the in-memory set.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { openEventStore } from '../../src/store/event-store.js'
import { IdSet } from '../../src/core/id-set.js'
import {
  IdRangesChanged,
  START_BOUND,
  createReconcileSession,
  reconcileInMemory
} from '../../src/sync/reconcile/index.js'
import type { IdRanges, SyncIds } from '../../src/sync/reconcile/index.js'
import type { EventStore } from '../../src/ports/event-store.js'
import { seededWords } from '../helpers/random.js'
import { Model, expectRanges, fingerprintOf, isId, pool } from '../helpers/id-model.js'

const PLANS = 4
const planOf = (id: string): string => `plan-${parseInt(id.slice(-1), 16) % PLANS}`
const rowOf = (id: string): { id: string; plan: string; bytes: Uint8Array; receivedMs: number } => ({
  id,
  plan: planOf(id),
  bytes: new Uint8Array([1]),
  receivedMs: 0
})

const open: EventStore[] = []
afterEach(() => {
  for (const s of open.splice(0)) s.close()
})

/**
 * The SQLite store on a `:memory:` database: it keeps its sync id set
 * (StoredIds), which is what these properties test. The simulator's memory
 * store (src/store/memory-store.ts) keeps none, so it cannot stand in.
 */
function sqliteInMemory(): EventStore {
  const store = openEventStore({ memory: true })
  open.push(store)
  return store
}

function stored(store: EventStore): SyncIds {
  const set = store.syncIds?.()
  if (set === undefined) throw new Error('the SQLite store keeps no sync id set')
  return set
}

/** When an added id's row is written: with the add, later (queued, as the replica does), or before the add. */
type Write = 'now' | 'later' | 'first'
const writeArb = fc.constantFrom<Write>('now', 'later', 'first')

type Op =
  | { readonly kind: 'add'; readonly pick: number; readonly write: Write }
  | { readonly kind: 'adds'; readonly from: number; readonly count: number; readonly write: Write }
  | { readonly kind: 'write' }
  | { readonly kind: 'remove'; readonly plan: number; readonly rowsNow: boolean }
  | { readonly kind: 'deleteRows' }
  | { readonly kind: 'view' }
  | { readonly kind: 'restart' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('add' as const), pick: fc.nat(), write: writeArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('adds' as const),
      from: fc.nat(),
      count: fc.integer({ min: 0, max: 300 }),
      write: writeArb
    })
  },
  fc.record({ kind: fc.constant('write' as const) }),
  fc.record({ kind: fc.constant('remove' as const), plan: fc.nat(PLANS - 1), rowsNow: fc.boolean() }),
  fc.record({ kind: fc.constant('deleteRows' as const) }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('view' as const) }) },
  fc.record({ kind: fc.constant('restart' as const) })
)

describe('StoredIds against the sorted-array model (property)', () => {
  it('agrees on size, has, outcomes, positions, listings and fingerprints, across writes, removals and restarts', () => {
    fc.assert(
      fc.property(fc.integer(), fc.array(opArb, { minLength: 1, maxLength: 20 }), (seed, ops) => {
        const ids = pool(seed, 900)
        const pick = (n: number): string => ids[n % ids.length] as string
        const next = seededWords(seed ^ 0x5bd1e995)
        const store = sqliteInMemory()
        let set = stored(store)
        const model = new Model()
        /** Ids added whose rows are not written yet (the replica's write queue). */
        let queued: string[] = []
        /** Plans taken out of the set whose rows are still on disk. */
        const undeleted = new Set<string>()
        /** Views taken, with the ids they should hold and the rows deleted since. */
        const views: { view: IdRanges; ids: string[]; deletedSince: boolean }[] = []
        const write = (): void => {
          store.putMany(queued.map(rowOf))
          queued = []
        }
        const deleteRows = (): void => {
          for (const plan of undeleted) store.expirePlan(plan, 0)
          undeleted.clear()
          for (const v of views) v.deletedSince = true
        }
        const add = (id: string, when: Write): void => {
          // The replica refuses events of a plan taken out (expired): its rows are about to go.
          if (isId(id) && undeleted.has(planOf(id))) return
          if (when === 'first' && isId(id) && !model.has(id)) {
            // The row lands before the add: the set holds it from then on, and the add finds it there.
            const version = set.version
            store.put(rowOf(id))
            model.add(id)
            expect(set.version > version).toBe(true)
            expect(set.has(id)).toBe(true)
            expect(set.add(id)).toBe('present')
            return
          }
          const version = set.version
          const outcome = set.add(id)
          expect(outcome, `add(${id})`).toBe(model.add(id))
          expect(set.version > version).toBe(outcome === 'added')
          if (outcome === 'added') queued.push(id)
          if (when === 'now') write()
        }
        for (const op of ops) {
          if (op.kind === 'add') add(pick(op.pick), op.write)
          else if (op.kind === 'adds') for (let k = 0; k < op.count; k++) add(pick(op.from + k), op.write)
          else if (op.kind === 'write') write()
          else if (op.kind === 'remove') {
            // What the replica does: the queue is written, the plan's rows read, the ids taken out.
            write()
            const plan = `plan-${op.plan}`
            const rows: string[] = []
            store.loadPlan(plan, r => rows.push(r.id))
            expect(set.removeMany(rows)).toBe(model.removeMany(rows))
            undeleted.add(plan)
            if (op.rowsNow) deleteRows()
          } else if (op.kind === 'deleteRows') deleteRows()
          else if (op.kind === 'view') {
            const view = set.snapshot()
            expectRanges(view, model.ids, next)
            views.push({ view, ids: model.ids, deletedSince: false })
          } else {
            // A restart: queued rows are written (or lost: the model keeps them only if written),
            // plans taken out while down have their rows deleted by a retention pass first.
            write()
            deleteRows()
            set = stored(store)
          }
          expect(set.size).toBe(model.ids.length)
          for (let k = 0; k < 8; k++) {
            const id = pick(next())
            expect(set.has(id), `has(${id})`).toBe(model.has(id))
          }
        }
        expectRanges(set.snapshot(), model.ids, next)
        expect(set.count(START_BOUND, null)).toBe(model.ids.length)
        expect(set.fingerprint(START_BOUND, null)).toEqual(fingerprintOf(model.ids, 0, model.ids.length))
        for (const v of views) {
          try {
            expectRanges(v.view, v.ids, next)
          } catch (err) {
            if (!(err instanceof IdRangesChanged) || !v.deletedSince) throw err
          }
        }
      }),
      { numRuns: 120 }
    )
  })

  it('leaves kept plans (imported archives) out, and so does a restart', () => {
    const ids = pool(7, 400).filter(isId)
    const store = sqliteInMemory()
    const keptPlan = planOf(ids[0] as string)
    const kept = ids.filter(id => planOf(id) === keptPlan)
    const others = ids.filter(id => planOf(id) !== keptPlan)
    store.putMany(others.map(rowOf))
    store.importPlan(keptPlan, kept.map(rowOf), 0)
    const set = stored(store)
    const model = new Model()
    model.addMany(others)
    expect(set.size).toBe(others.length)
    for (const id of kept) expect(set.has(id)).toBe(false)
    expectRanges(set.snapshot(), model.ids, seededWords(1))
  })

  it('reconciles with an in-memory set: each side learns exactly what the other holds and it lacks', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 0, max: 600 }), fc.integer({ min: 0, max: 60 }), (seed, n, d) => {
        const ids = [...new Set(pool(seed, n + 2 * d).filter(isId))]
        const shared = ids.slice(0, n)
        const onlyDisk = ids.slice(n, n + d)
        const onlyMemory = ids.slice(n + d)
        const store = sqliteInMemory()
        store.putMany([...shared, ...onlyDisk].map(rowOf))
        const disk = stored(store)
        const memory = IdSet.from([...shared, ...onlyMemory])
        const out = reconcileInMemory(
          createReconcileSession(disk, { maxIdsPerLeaf: 4, branching: 4 }),
          createReconcileSession(memory, { maxIdsPerLeaf: 4, branching: 4 })
        )
        if ('error' in out) throw new Error(out.error)
        expect(new Set(out.a.need)).toEqual(new Set(onlyMemory))
        expect(new Set(out.b.need)).toEqual(new Set(onlyDisk))
      }),
      { numRuns: 60 }
    )
  })
})
