/**
 * What every EventStore (src/ports/event-store.ts) must do, as named checks:
 * one rule each, taken from the port's TSDoc and from how the replica
 * (src/runtime/replica.ts) and sync rely on a store. `runEventStoreContract`
 * runs them as a vitest suite, one `it` a check, against a store; and
 * `failingChecks` runs them programmatically, so a test can show that a
 * store broken on purpose fails the check meant to catch it.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { IdSet, START_BOUND } from '../../src/core/id-set.js'
import type { SyncIds } from '../../src/core/id-set.js'
import type { EventRow, EventStore, StoredEvent } from '../../src/ports/event-store.js'
import { idBytesOf } from '../../src/wire/id-bytes.js'

/** A fresh, empty store under test, with how to reopen it and how to clean up. */
export interface StoreSubject {
  readonly store: EventStore
  /**
   * Closes the store and opens it again on the same backing (for SQLite, the
   * same file). Absent for a store that is never reopened: a simulated node
   * restarts on the very memory store object it had.
   */
  readonly reopen?: () => EventStore
  /** Closes whatever store is open (close is idempotent) and frees the backing. */
  teardown(): void
}

export type StoreSetup = () => StoreSubject

/** One rule of the contract. */
export interface EventStoreCheck {
  readonly name: string
  /** Whether the rule concerns this store (some rules are about optional parts of the port). */
  readonly applies?: (subject: StoreSubject) => boolean
  /** Throws when the store breaks the rule. */
  readonly run: (subject: StoreSubject) => void
}

const hex = (label: string): string => createHash('sha256').update(label).digest('hex')

const PLAN_A = hex('contract plan a')
const PLAN_B = hex('contract plan b')
const PLAN_C = hex('contract plan c')

/** An event row: bytes that differ by `n`, so a mixed-up row shows. */
export function rowOf(n: number, plan = PLAN_A): EventRow {
  const bytes = new Uint8Array(40 + (n % 5))
  bytes.fill(n % 251)
  bytes[0] = 1 + (n % 200)
  return { id: hex(`contract event ${n}`), plan, bytes, receivedMs: 1_700_000_000_000 + n }
}

/** `count` rows from `from`, ordered by descending id: insertion order is then never id order. */
function rows(from: number, count: number, planOf: (n: number) => string = () => PLAN_A): EventRow[] {
  const out = Array.from({ length: count }, (_, k) => rowOf(from + k, planOf(from + k)))
  return out.sort((a, b) => (a.id < b.id ? 1 : -1))
}

function loadAll(store: EventStore): StoredEvent[] {
  const out: StoredEvent[] = []
  const counts = store.load(
    r => out.push(r),
    d => {
      throw new Error(`a row this store wrote came back damaged: ${d.problem}`)
    }
  )
  expect(counts).toEqual({ loaded: out.length, damaged: 0 })
  return out
}

function loadPlanIds(store: EventStore, plan: string): string[] {
  const out: string[] = []
  const counts = store.loadPlan(plan, r => out.push(r.id))
  expect(counts).toEqual({ loaded: out.length, damaged: 0 })
  return out
}

const bytesOf = (b: Uint8Array | undefined): Buffer | undefined => (b === undefined ? undefined : Buffer.from(b))
const sorted = (ids: readonly string[]): string[] => [...ids].sort()
const records = (store: EventStore): Array<{ plan: string; json: string }> =>
  [...store.currentRecords()].map(r => ({ plan: r.plan, json: r.json })).sort((a, b) => (a.plan < b.plan ? -1 : 1))

/** The sync id set the replica builds over a store holding no kept plan (src/runtime/replica.ts `load`). */
function reconcileSet(store: EventStore): SyncIds {
  const own = store.syncIds?.()
  if (own !== undefined) return own
  const set = new IdSet()
  set.addBytes(store.idsBytes())
  return set
}

function expectInvalid(fn: () => unknown): void {
  expect(fn).toThrow(expect.objectContaining({ name: 'InvalidEventRowError' }))
}

export const EVENT_STORE_CHECKS: readonly EventStoreCheck[] = [
  {
    name: 'put stores a new event, and has and get return it with its exact bytes',
    run: ({ store }) => {
      const r = rowOf(1)
      expect(store.has(r.id)).toBe(false)
      expect(store.get(r.id)).toBeUndefined()
      expect(store.put(r)).toBe(true)
      expect(store.has(r.id)).toBe(true)
      expect(bytesOf(store.get(r.id))).toEqual(Buffer.from(r.bytes))
      expect(store.has(rowOf(2).id)).toBe(false)
      expect(store.get(rowOf(2).id)).toBeUndefined()
      expect(store.count()).toBe(1)
    }
  },
  {
    name: 'put is idempotent: a known id returns false and changes nothing',
    run: ({ store }) => {
      const r = rowOf(1)
      store.put(r)
      expect(store.put(r)).toBe(false)
      expect(store.put({ ...r, bytes: rowOf(2).bytes, receivedMs: r.receivedMs + 5 })).toBe(false)
      expect(bytesOf(store.get(r.id))).toEqual(Buffer.from(r.bytes))
      expect(store.count()).toBe(1)
      expect(store.countByPlan(PLAN_A)).toBe(1)
      expect(loadAll(store).map(x => x.id)).toEqual([r.id])
      expect(store.ids()).toEqual([r.id])
    }
  },
  {
    name: 'putMany returns how many rows were new, repeats within the batch included',
    run: ({ store }) => {
      store.put(rowOf(0))
      expect(store.putMany([rowOf(0), rowOf(1), rowOf(2), rowOf(1)])).toBe(2)
      expect(store.putMany([])).toBe(0)
      expect(store.count()).toBe(3)
      expect(loadAll(store)).toHaveLength(3)
    }
  },
  {
    name: 'put refuses a row it would call damaged, with InvalidEventRowError, storing nothing',
    run: ({ store }) => {
      const r = rowOf(1)
      expectInvalid(() => store.put({ ...r, id: 'not-hex' }))
      expectInvalid(() => store.put({ ...r, id: r.id.toUpperCase() }))
      expectInvalid(() => store.put({ ...r, bytes: new Uint8Array() }))
      expect(store.count()).toBe(0)
      expect(store.ids()).toEqual([])
    }
  },
  {
    name: 'putMany stores all of its rows or, if one is invalid, none',
    run: ({ store }) => {
      expectInvalid(() => store.putMany([rowOf(5), rowOf(6), { ...rowOf(7), id: 'nope' }]))
      expect(store.count()).toBe(0)
      expect(store.has(rowOf(5).id)).toBe(false)
      expect(store.putMany([rowOf(5), rowOf(6)])).toBe(2)
    }
  },
  {
    name: 'count, countByPlan, plans and planCounts describe the rows held, plans sorted',
    run: ({ store }) => {
      const all = rows(0, 30, n => [PLAN_C, PLAN_A, PLAN_B][n % 3] as string)
      store.putMany(all)
      expect(store.count()).toBe(30)
      for (const p of [PLAN_A, PLAN_B, PLAN_C]) expect(store.countByPlan(p)).toBe(10)
      expect(store.countByPlan(hex('no such plan'))).toBe(0)
      expect(store.plans()).toEqual(sorted([PLAN_A, PLAN_B, PLAN_C]))
      expect(store.planCounts()).toEqual(
        new Map([
          [PLAN_A, 10],
          [PLAN_B, 10],
          [PLAN_C, 10]
        ])
      )
    }
  },
  {
    name: 'load delivers every row once, in insertion order, across pages',
    run: ({ store }) => {
      const all = rows(0, 1_100, n => (n % 3 === 0 ? PLAN_B : PLAN_A))
      store.putMany(all.slice(0, 700))
      for (const r of all.slice(700)) store.put(r)
      const loaded = loadAll(store)
      expect(loaded.map(r => r.id)).toEqual(all.map(r => r.id))
      expect(loaded.map(r => r.plan)).toEqual(all.map(r => r.plan))
      expect(loaded.every((r, i) => Buffer.from(r.bytes).equals(Buffer.from((all[i] as EventRow).bytes)))).toBe(true)
    }
  },
  {
    name: "loadPlan delivers exactly one plan's rows, in insertion order",
    run: ({ store }) => {
      const all = rows(0, 700, n => (n % 4 === 0 ? PLAN_B : PLAN_A))
      store.putMany(all)
      expect(loadPlanIds(store, PLAN_B)).toEqual(all.filter(r => r.plan === PLAN_B).map(r => r.id))
      expect(loadPlanIds(store, PLAN_A)).toEqual(all.filter(r => r.plan === PLAN_A).map(r => r.id))
      expect(loadPlanIds(store, hex('no such plan'))).toEqual([])
    }
  },
  {
    name: 'load callbacks may write to the store',
    run: ({ store }) => {
      store.putMany(rows(0, 600))
      const written: string[] = []
      let n = 10_000
      store.load(
        r => {
          if (r.plan !== PLAN_A) return
          const w = rowOf(n++, PLAN_B)
          expect(store.put(w)).toBe(true)
          written.push(w.id)
        },
        () => {}
      )
      expect(written).toHaveLength(600)
      expect(store.countByPlan(PLAN_B)).toBe(600)
      for (const id of written) expect(store.has(id)).toBe(true)
    }
  },
  {
    name: 'the ids reported for reconciliation are exactly the ids held (ids, idsBytes, the sync id set)',
    run: ({ store }) => {
      expect(store.idsBytes()).toHaveLength(0)
      store.putMany(rows(0, 40, n => (n % 2 === 0 ? PLAN_A : PLAN_B)))
      store.put(rowOf(100, PLAN_C))
      store.expirePlan(PLAN_B, 1_000)
      const held = sorted(loadAll(store).map(r => r.id))
      expect(held).toHaveLength(21)
      expect(store.ids()).toEqual(held)
      for (const id of held) expect(store.has(id)).toBe(true)
      expect(new Uint8Array(store.idsBytes())).toEqual(idBytesOf(held))
      const set = reconcileSet(store)
      expect(set.size).toBe(held.length)
      for (const id of held) expect(set.has(id)).toBe(true)
      expect(set.fingerprint(START_BOUND, null)).toEqual(IdSet.from(held).fingerprint(START_BOUND, null))
    }
  },
  {
    name: 'the sync id set a store keeps leaves kept plans out and follows later puts and expiries',
    applies: ({ store }) => store.syncIds !== undefined,
    run: ({ store }) => {
      const others = rows(0, 30, n => (n % 2 === 0 ? PLAN_A : PLAN_B))
      store.putMany(others)
      const kept = rows(200, 5, () => PLAN_C)
      store.importPlan(PLAN_C, kept, 500)
      loadAll(store)
      const set = store.syncIds?.()
      if (set === undefined) throw new Error('syncIds vanished')
      expect(set.size).toBe(others.length)
      for (const r of kept) expect(set.has(r.id)).toBe(false)
      expect(set.fingerprint(START_BOUND, null)).toEqual(
        IdSet.from(others.map(r => r.id)).fingerprint(START_BOUND, null)
      )
      const later = rowOf(300, PLAN_A)
      store.put(later)
      expect(set.has(later.id)).toBe(true)
      const gone = store.expirePlan(PLAN_B, 1_000)
      for (const id of gone) expect(set.has(id)).toBe(false)
      expect(set.size).toBe(others.length + 1 - gone.length)
    }
  },
  {
    name: 'expirePlan takes the plan out whole, returns its ids sorted and keeps them as tombstones',
    run: ({ store }) => {
      const a = rows(0, 12, () => PLAN_A)
      const b = rows(100, 5, () => PLAN_B)
      store.putMany([...a, ...b])
      store.putRecord(PLAN_A, 12, '{"a":1}')
      const ids = store.expirePlan(PLAN_A, 1_000)
      expect(ids).toEqual(sorted(a.map(r => r.id)))
      for (const r of a) {
        expect(store.has(r.id)).toBe(false)
        expect(store.get(r.id)).toBeUndefined()
        expect(store.isTombstone(r.id)).toBe(true)
      }
      for (const r of b) expect(store.isTombstone(r.id)).toBe(false)
      expect(store.countByPlan(PLAN_A)).toBe(0)
      expect(store.count()).toBe(5)
      expect(store.plans()).toEqual([PLAN_B])
      expect(store.planCounts()).toEqual(new Map([[PLAN_B, 5]]))
      expect(store.ids()).toEqual(sorted(b.map(r => r.id)))
      expect(loadPlanIds(store, PLAN_A)).toEqual([])
      expect(store.record(PLAN_A)).toBeUndefined()
      expect(store.expiredPlans()).toEqual([PLAN_A])
    }
  },
  {
    name: 'purgeExpired forgets plans expired strictly before the bound, with their tombstones',
    run: ({ store }) => {
      store.putMany([rowOf(1, PLAN_A), rowOf(2, PLAN_B)])
      store.expirePlan(PLAN_A, 1_000)
      store.expirePlan(PLAN_B, 2_000)
      // Expired again later: the first expiry time stands.
      store.expirePlan(PLAN_A, 3_000)
      expect(store.expiredPlans()).toEqual(sorted([PLAN_A, PLAN_B]))
      expect(store.purgeExpired(1_000)).toBe(0)
      expect(store.purgeExpired(1_001)).toBe(1)
      expect(store.expiredPlans()).toEqual([PLAN_B])
      expect(store.isTombstone(rowOf(1, PLAN_A).id)).toBe(false)
      expect(store.isTombstone(rowOf(2, PLAN_B).id)).toBe(true)
      expect(store.purgeExpired(10_000)).toBe(1)
      expect(store.expiredPlans()).toEqual([])
      expect(store.isTombstone(rowOf(2, PLAN_B).id)).toBe(false)
    }
  },
  {
    name: 'importPlan stores the rows, keeps the plan and takes it off the expired list',
    run: ({ store }) => {
      const a = rows(0, 6, () => PLAN_A)
      store.putMany(a)
      store.expirePlan(PLAN_A, 1_000)
      expect(store.importPlan(PLAN_A, a, 2_000)).toBe(6)
      const b = [rowOf(50, PLAN_B), rowOf(51, PLAN_B)]
      store.put(b[0] as EventRow)
      expect(store.importPlan(PLAN_B, [...b, b[1] as EventRow], 2_000)).toBe(1)
      expect(store.keptPlans()).toEqual(sorted([PLAN_A, PLAN_B]))
      expect(store.expiredPlans()).toEqual([])
      for (const r of a) {
        expect(store.isTombstone(r.id)).toBe(false)
        expect(store.has(r.id)).toBe(true)
      }
      expect(store.countByPlan(PLAN_A)).toBe(6)
    }
  },
  {
    name: 'importPlan lands whole or not at all',
    run: ({ store }) => {
      store.put(rowOf(1, PLAN_A))
      store.expirePlan(PLAN_A, 1_000)
      expectInvalid(() => store.importPlan(PLAN_A, [rowOf(1, PLAN_A), { ...rowOf(2, PLAN_A), id: 'nope' }], 2_000))
      expect(store.countByPlan(PLAN_A)).toBe(0)
      expect(store.keptPlans()).toEqual([])
      expect(store.expiredPlans()).toEqual([PLAN_A])
      expect(store.isTombstone(rowOf(1, PLAN_A).id)).toBe(true)
    }
  },
  {
    name: 'putRecord keeps the latest record of a plan, and record reads it back',
    run: ({ store }) => {
      expect(store.record(PLAN_A)).toBeUndefined()
      store.putRecord(PLAN_A, 0, '{"v":1}')
      store.putRecord(PLAN_A, 0, '{"v":2}')
      store.putRecord(PLAN_B, 0, '{"w":1}')
      expect(store.record(PLAN_A)).toBe('{"v":2}')
      expect(store.record(PLAN_B)).toBe('{"w":1}')
    }
  },
  {
    name: 'currentRecords lists only records made from exactly the events their plan holds',
    run: ({ store }) => {
      store.putMany([rowOf(1, PLAN_A), rowOf(2, PLAN_A), rowOf(3, PLAN_B)])
      store.putRecord(PLAN_A, 2, '{"a":1}')
      store.putRecord(PLAN_B, 5, '{"b":1}')
      expect(records(store)).toEqual([{ plan: PLAN_A, json: '{"a":1}' }])
      store.put(rowOf(4, PLAN_A))
      expect(records(store)).toEqual([])
      store.putRecord(PLAN_A, 3, '{"a":2}')
      expect(records(store)).toEqual([{ plan: PLAN_A, json: '{"a":2}' }])
    }
  },
  {
    name: 'reopen keeps everything: rows in order, ids, records, expiries, tombstones, kept plans',
    applies: ({ reopen }) => reopen !== undefined,
    run: ({ store, reopen }) => {
      const all = rows(0, 600, n => (n % 3 === 0 ? PLAN_B : PLAN_A))
      store.putMany(all.slice(0, 500))
      for (const r of all.slice(500)) store.put(r)
      const c = rowOf(900, PLAN_C)
      store.put(c)
      store.expirePlan(PLAN_C, 1_000)
      store.importPlan(PLAN_C, [rowOf(901, PLAN_C)], 2_000)
      const d = hex('contract plan d')
      store.put(rowOf(902, d))
      store.expirePlan(d, 3_000)
      store.putRecord(PLAN_A, 400, '{"a":1}')
      const last = rowOf(999, PLAN_B)
      store.put(last)
      const before = {
        loaded: loadAll(store).map(r => [r.id, r.plan, Buffer.from(r.bytes).toString('hex')]),
        ids: store.ids(),
        planCounts: store.planCounts(),
        records: records(store)
      }
      const again = (reopen as () => EventStore)()
      expect(loadAll(again).map(r => [r.id, r.plan, Buffer.from(r.bytes).toString('hex')])).toEqual(before.loaded)
      expect(again.has(last.id)).toBe(true)
      expect(again.count()).toBe(before.loaded.length)
      expect(again.ids()).toEqual(before.ids)
      expect(again.planCounts()).toEqual(before.planCounts)
      expect(records(again)).toEqual(before.records)
      expect(again.record(PLAN_A)).toBe('{"a":1}')
      expect(again.expiredPlans()).toEqual([d])
      expect(again.isTombstone(rowOf(902, d).id)).toBe(true)
      expect(again.keptPlans()).toEqual([PLAN_C])
      expect(again.put(all[0] as EventRow)).toBe(false)
    }
  },
  {
    name: 'close is idempotent, and any other call afterwards throws',
    run: ({ store }) => {
      store.put(rowOf(1))
      store.close()
      store.close()
      expect(() => store.has(rowOf(1).id)).toThrow()
      expect(() => store.put(rowOf(2))).toThrow()
      expect(() => store.count()).toThrow()
      expect(() => store.ids()).toThrow()
    }
  }
]

/** Runs one check on a fresh store: `'passed'`, `'skipped'` (it does not apply), or the error it threw. */
export function runCheck(check: EventStoreCheck, setup: StoreSetup): 'passed' | 'skipped' | { error: unknown } {
  const subject = setup()
  try {
    if (check.applies !== undefined && !check.applies(subject)) return 'skipped'
    check.run(subject)
    return 'passed'
  } catch (error) {
    return { error }
  } finally {
    subject.teardown()
  }
}

/** The names of the checks a store fails. */
export function failingChecks(setup: StoreSetup): string[] {
  return EVENT_STORE_CHECKS.filter(c => typeof runCheck(c, setup) === 'object').map(c => c.name)
}

/** The contract as a vitest suite: one `it` a check, each on a fresh store from `setup`. */
export function runEventStoreContract(name: string, setup: StoreSetup): void {
  describe(`EventStore contract: ${name}`, () => {
    for (const check of EVENT_STORE_CHECKS) {
      it(check.name, ctx => {
        const result = runCheck(check, setup)
        if (result === 'skipped') ctx.skip()
        else if (result !== 'passed') throw result.error
      })
    }
  })
}
