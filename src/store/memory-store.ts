import { InvalidEventRowError } from './errors.js'
import { idBytesOf } from '../wire/id-bytes.js'
import type { DamagedRow, EventRow, EventStore, LoadCounts, StoredEvent } from '../ports/event-store.js'

const HEX_ID = /^[0-9a-f]{64}$/

/**
 * An EventStore in memory, with the SQLite store's contract (insert if
 * absent, rows in insertion order, ids sorted): what a simulated node keeps,
 * and what survives its simulated crash and restart. Nothing is ever
 * damaged here, so `onDamaged` is never called.
 */
export function createMemoryStore(): EventStore {
  const rows = new Map<string, StoredEvent>()
  const byPlan = new Map<string, string[]>()
  const records = new Map<string, { plan: string; events: number; json: string }>()
  /** Expired plans: when, and their tombstones. */
  const expired = new Map<string, { ms: number; ids: readonly string[] }>()
  const tombstones = new Set<string>()
  const kept = new Set<string>()
  const unlist = (plan: string): void => {
    for (const id of expired.get(plan)?.ids ?? []) tombstones.delete(id)
    expired.delete(plan)
  }
  let closed = false
  const open = (): void => {
    if (closed) throw new Error('the memory store is closed')
  }
  const check = (row: EventRow): void => {
    if (typeof row.id !== 'string' || !HEX_ID.test(row.id))
      throw new InvalidEventRowError(`id ${JSON.stringify(row.id)} is not 64 lowercase hex characters`)
    if (typeof row.plan !== 'string') throw new InvalidEventRowError(`plan of ${row.id} is not a string`)
    if (!(row.bytes instanceof Uint8Array) || row.bytes.byteLength === 0)
      throw new InvalidEventRowError(`bytes of ${row.id} must be a non-empty Uint8Array`)
  }
  const put = (row: EventRow): boolean => {
    if (rows.has(row.id)) return false
    rows.set(row.id, { id: row.id, plan: row.plan, bytes: row.bytes })
    let list = byPlan.get(row.plan)
    if (list === undefined) {
      list = []
      byPlan.set(row.plan, list)
    }
    list.push(row.id)
    return true
  }
  return {
    path: ':memory:',
    put: row => {
      open()
      check(row)
      return put(row)
    },
    putMany: many => {
      open()
      const list = [...many]
      for (const r of list) check(r)
      let n = 0
      for (const r of list) if (put(r)) n++
      return n
    },
    has: id => {
      open()
      return rows.has(id)
    },
    get: id => {
      open()
      return rows.get(id)?.bytes
    },
    count: () => {
      open()
      return rows.size
    },
    countByPlan: plan => {
      open()
      return byPlan.get(plan)?.length ?? 0
    },
    load: (onRow: (row: StoredEvent) => void, _onDamaged: (info: DamagedRow) => void): LoadCounts => {
      open()
      let loaded = 0
      for (const r of [...rows.values()]) {
        onRow(r)
        loaded++
      }
      return { loaded, damaged: 0 }
    },
    loadPlan: (plan, onRow) => {
      open()
      let loaded = 0
      for (const id of [...(byPlan.get(plan) ?? [])]) {
        onRow(rows.get(id) as StoredEvent)
        loaded++
      }
      return { loaded, damaged: 0 }
    },
    ids: () => {
      open()
      return [...rows.keys()].sort()
    },
    idsBytes: () => {
      open()
      return idBytesOf([...rows.keys()].sort())
    },
    plans: () => {
      open()
      return [...byPlan.keys()].sort()
    },
    planCounts: () => {
      open()
      return new Map([...byPlan].map(([p, ids]) => [p, ids.length]))
    },
    expirePlan: (plan, nowMs) => {
      open()
      const ids = [...(byPlan.get(plan) ?? [])].sort()
      for (const id of ids) {
        rows.delete(id)
        tombstones.add(id)
      }
      byPlan.delete(plan)
      records.delete(plan)
      if (!expired.has(plan)) expired.set(plan, { ms: nowMs, ids })
      return ids
    },
    expiredPlans: () => {
      open()
      return [...expired.keys()].sort()
    },
    isTombstone: id => {
      open()
      return tombstones.has(id)
    },
    purgeExpired: beforeMs => {
      open()
      const old = [...expired].filter(([, e]) => e.ms < beforeMs).map(([p]) => p)
      for (const p of old) unlist(p)
      return old.length
    },
    putRecord: (plan, events, json) => {
      open()
      records.set(plan, { plan, events, json })
    },
    record: plan => {
      open()
      return records.get(plan)?.json
    },
    currentRecords: () => {
      open()
      return [...records.values()].filter(r => (byPlan.get(r.plan)?.length ?? 0) === r.events)
    },
    importPlan: (plan, many, _nowMs) => {
      open()
      for (const r of many) check(r)
      let n = 0
      for (const r of many) if (put(r)) n++
      kept.add(plan)
      unlist(plan)
      return n
    },
    keptPlans: () => {
      open()
      return [...kept].sort()
    },
    close: () => {
      closed = true
    }
  }
}
