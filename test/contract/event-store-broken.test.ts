/**
 * The contract's checks can fail: memory stores broken on purpose, one way
 * each, fail the check written to catch that way, while the same stores
 * unbroken pass every check.
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../src/store/memory-store.js'
import type { EventRow, EventStore, StoredEvent } from '../../src/ports/event-store.js'
import { idBytesOf } from '../../src/wire/id-bytes.js'
import { EVENT_STORE_CHECKS, failingChecks, runCheck } from './event-store-contract.js'
import type { StoreSetup, StoreSubject } from './event-store-contract.js'

function subject(store: EventStore, reopen?: () => EventStore): StoreSubject {
  return { store, reopen, teardown: () => store.close() }
}

/** Answers true to a put of an id it holds, and keeps the row again: load hands it out twice. */
const duplicating: StoreSetup = () => {
  const inner = createMemoryStore()
  const again: StoredEvent[] = []
  return subject({
    ...inner,
    put: row => {
      if (!inner.put(row)) again.push({ id: row.id, plan: row.plan, bytes: row.bytes })
      return true
    },
    count: () => inner.count() + again.length,
    load: (onRow, onDamaged) => {
      const counts = inner.load(onRow, onDamaged)
      for (const r of again) onRow(r)
      return { loaded: counts.loaded + again.length, damaged: counts.damaged }
    }
  })
}

/** Forgets to take an expired plan's ids out of those it reports for reconciliation. */
const staleIds: StoreSetup = () => {
  const inner = createMemoryStore()
  const expired = new Set<string>()
  const ids = (): string[] => [...new Set([...inner.ids(), ...expired])].sort()
  return subject({
    ...inner,
    expirePlan: (plan, nowMs) => {
      const gone = inner.expirePlan(plan, nowMs)
      for (const id of gone) expired.add(id)
      return gone
    },
    ids,
    idsBytes: () => idBytesOf(ids())
  })
}

/**
 * A memory store that journals its writes and, when reopened, replays them
 * into a new one: faithfully, or losing the last row it acknowledged (a
 * write that never reached the disk).
 */
function journaled(loseLastWrite: boolean): StoreSetup {
  return () => {
    const inner = createMemoryStore()
    const journal: Array<(s: EventStore, keep: (r: EventRow) => boolean) => void> = []
    let last: string | undefined
    const store: EventStore = {
      ...inner,
      put: row => {
        const added = inner.put(row)
        journal.push((s, keep) => keep(row) && s.put(row))
        if (added) last = row.id
        return added
      },
      putMany: many => {
        const list = [...many]
        const added = inner.putMany(list)
        journal.push((s, keep) => s.putMany(list.filter(keep)))
        if (added > 0) last = list.at(-1)?.id
        return added
      },
      expirePlan: (plan, nowMs) => {
        const ids = inner.expirePlan(plan, nowMs)
        journal.push(s => s.expirePlan(plan, nowMs))
        return ids
      },
      purgeExpired: beforeMs => {
        const n = inner.purgeExpired(beforeMs)
        journal.push(s => s.purgeExpired(beforeMs))
        return n
      },
      putRecord: (plan, events, json) => {
        inner.putRecord(plan, events, json)
        journal.push(s => s.putRecord(plan, events, json))
      },
      importPlan: (plan, rows, nowMs) => {
        const added = inner.importPlan(plan, rows, nowMs)
        journal.push((s, keep) => s.importPlan(plan, rows.filter(keep), nowMs))
        if (added > 0) last = rows.at(-1)?.id
        return added
      }
    }
    let opened = [inner]
    const reopen = (): EventStore => {
      for (const s of opened) s.close()
      const lost = loseLastWrite ? last : undefined
      const fresh = createMemoryStore()
      for (const replay of journal) replay(fresh, r => r.id !== lost)
      opened = [...opened, fresh]
      return fresh
    }
    return {
      store,
      reopen,
      teardown: () => {
        for (const s of opened) s.close()
      }
    }
  }
}

const REOPEN = 'reopen keeps everything: rows in order, ids, records, expiries, tombstones, kept plans'

const BROKEN: ReadonlyArray<{ name: string; setup: StoreSetup; fails: string }> = [
  {
    name: 'a store that stores duplicates',
    setup: duplicating,
    fails: 'put is idempotent: a known id returns false and changes nothing'
  },
  {
    name: 'a store that keeps reporting expired ids',
    setup: staleIds,
    fails: 'the ids reported for reconciliation are exactly the ids held (ids, idsBytes, the sync id set)'
  },
  { name: 'a store that loses its last write on reopen', setup: journaled(true), fails: REOPEN }
]

describe('the EventStore contract catches broken stores', () => {
  it('passes a sound memory store, and one reopened by replaying its journal, on every check that applies', () => {
    expect(failingChecks(() => subject(createMemoryStore()))).toEqual([])
    expect(failingChecks(journaled(false))).toEqual([])
    const reopen = EVENT_STORE_CHECKS.find(c => c.name === REOPEN)
    if (reopen === undefined) throw new Error(`no check named "${REOPEN}"`)
    expect(runCheck(reopen, journaled(false))).toBe('passed')
  })

  for (const b of BROKEN) {
    it(`fails ${b.name} on "${b.fails}"`, () => {
      expect(failingChecks(b.setup)).toContain(b.fails)
    })
  }
})
