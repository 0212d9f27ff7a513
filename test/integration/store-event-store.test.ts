import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { EVENTS_FILE, openEventStore } from '../../src/store/event-store.js'
import type { DamagedRow, EventRow, EventStore, StoredEvent } from '../../src/store/event-store.js'
import { removeTempDirs, tempDir, writerId } from '../helpers/store-temp.js'
import { idBytesOf } from '../../src/wire/id-bytes.js'

const PLAN_A = writerId('plan', 1)
const PLAN_B = writerId('plan', 2)

function row(n: number, plan = PLAN_A): EventRow {
  const bytes = new Uint8Array(100 + (n % 7))
  bytes.fill(n % 256)
  bytes[0] = 1
  return { id: writerId('event', n), plan, bytes, receivedMs: 1_700_000_000_000 + n }
}

function collect(store: EventStore): { rows: StoredEvent[]; damaged: DamagedRow[] } {
  const rows: StoredEvent[] = []
  const damaged: DamagedRow[] = []
  store.load(
    r => rows.push(r),
    d => damaged.push(d)
  )
  return { rows, damaged }
}

const open: EventStore[] = []
function track(store: EventStore): EventStore {
  open.push(store)
  return store
}

afterEach(() => {
  for (const s of open.splice(0)) s.close()
  removeTempDirs()
})

describe('event store', () => {
  it('puts idempotently and reads back the exact bytes', () => {
    const store = track(openEventStore({ dir: tempDir('store') }))
    const r = row(1)
    expect(store.put(r)).toBe(true)
    expect(store.put(r)).toBe(false)
    expect(store.put({ ...r, receivedMs: r.receivedMs + 5 })).toBe(false)
    expect(store.has(r.id)).toBe(true)
    expect(store.has(writerId('event', 2))).toBe(false)
    expect(Buffer.from(store.get(r.id) ?? new Uint8Array())).toEqual(Buffer.from(r.bytes))
    expect(store.get(writerId('event', 2))).toBeUndefined()
    expect(store.count()).toBe(1)
  })

  it('putMany counts only new rows, including repeats inside the batch', () => {
    const store = track(openEventStore({ memory: true }))
    store.put(row(0))
    expect(store.putMany([row(0), row(1), row(2), row(1)])).toBe(2)
    expect(store.putMany([])).toBe(0)
    expect(store.count()).toBe(3)
  })

  it('rejects an invalid row before writing anything, and putMany is all or nothing', () => {
    const store = track(openEventStore({ memory: true }))
    const bad: EventRow[] = [
      { ...row(1), id: 'not-hex' },
      { ...row(1), id: row(1).id.toUpperCase() },
      { ...row(1), bytes: new Uint8Array() },
      { ...row(1), receivedMs: 1.5 }
    ]
    for (const b of bad) {
      expect(() => store.put(b)).toThrow(expect.objectContaining({ name: 'InvalidEventRowError' }))
    }
    expect(() => store.putMany([row(5), row(6), bad[0] as EventRow])).toThrow(
      expect.objectContaining({ name: 'InvalidEventRowError' })
    )
    expect(store.count()).toBe(0)
    expect(store.has(row(5).id)).toBe(false)
  })

  it('keeps everything across a reopen, and lists ids and plans sorted', () => {
    const dir = tempDir('store')
    const rows = Array.from({ length: 1_300 }, (_, n) => row(n, n % 3 === 0 ? PLAN_B : PLAN_A))
    const first = openEventStore({ dir })
    expect(first.putMany(rows)).toBe(rows.length)
    first.close()
    first.close()

    const again = track(openEventStore({ dir }))
    expect(again.path).toBe(join(dir, EVENTS_FILE))
    const { rows: loaded, damaged } = collect(again)
    expect(damaged).toEqual([])
    // Insertion order, across several pages.
    expect(loaded.map(r => r.id)).toEqual(rows.map(r => r.id))
    expect(loaded.map(r => r.plan)).toEqual(rows.map(r => r.plan))
    expect(loaded.every((r, i) => Buffer.from(r.bytes).equals(Buffer.from((rows[i] as EventRow).bytes)))).toBe(true)
    expect(again.ids()).toEqual(rows.map(r => r.id).sort())
    expect(again.plans()).toEqual([PLAN_A, PLAN_B].sort())
    expect(again.count()).toBe(rows.length)
  })

  it('loads one plan on demand', () => {
    const store = track(openEventStore({ dir: tempDir('store') }))
    const rows = Array.from({ length: 1_100 }, (_, n) => row(n, n % 4 === 0 ? PLAN_B : PLAN_A))
    store.putMany(rows)
    const got: StoredEvent[] = []
    const counts = store.loadPlan(PLAN_B, r => got.push(r))
    const want = rows.filter(r => r.plan === PLAN_B)
    expect(counts).toEqual({ loaded: want.length, damaged: 0 })
    expect(got.map(r => r.id)).toEqual(want.map(r => r.id))
    expect(store.countByPlan(PLAN_B)).toBe(want.length)
    expect(store.countByPlan(PLAN_A)).toBe(rows.length - want.length)
    expect(
      store.loadPlan(writerId('plan', 99), () => {
        throw new Error('no rows expected')
      })
    ).toEqual({ loaded: 0, damaged: 0 })
  })

  it('lets load callbacks write to the store', () => {
    const store = track(openEventStore({ memory: true }))
    store.putMany(Array.from({ length: 600 }, (_, n) => row(n)))
    let n = 10_000
    const counts = store.load(
      r => {
        if (r.plan === PLAN_A) store.put(row(n++, PLAN_B))
      },
      () => {}
    )
    expect(store.countByPlan(PLAN_B)).toBe(600)
    // Rows added during the load may be visited; these all were, being later pages.
    expect(counts).toEqual({ loaded: 1_200, damaged: 0 })
  })

  it('reports and skips damaged rows, and a later put repairs one', () => {
    const dir = tempDir('store')
    const store = openEventStore({ dir })
    store.putMany([row(1), row(2), row(3)])
    store.close()

    // Damage the file the way another tool could: constraints switched off.
    const textBytesId = writerId('event', 50)
    const raw = new Database(join(dir, EVENTS_FILE))
    raw.pragma('ignore_check_constraints = ON')
    const ins = raw.prepare('INSERT INTO events (id, plan, bytes, received_ms) VALUES (?, ?, ?, 0)')
    ins.run('not an id', PLAN_A, Buffer.from([1]))
    ins.run(writerId('event', 51).toUpperCase(), PLAN_A, Buffer.from([1]))
    ins.run(Buffer.from(writerId('event', 52)), PLAN_A, Buffer.from([1]))
    ins.run(textBytesId, PLAN_A, 'text, not a blob')
    ins.run(writerId('event', 53), PLAN_A, Buffer.alloc(0))
    ins.run(writerId('event', 54), Buffer.from(PLAN_A), Buffer.from([1]))
    ins.run(writerId('event', 55), PLAN_A, 42)
    raw.close()

    const reopened = track(openEventStore({ dir }))
    // A damaged id is no id: the bytes of the ids leave it out even before load moves it aside.
    expect(new Uint8Array(reopened.idsBytes())).toEqual(idBytesOf(reopened.ids()))
    // Before any load, one-row lookups already treat damage as absence...
    expect(reopened.has(textBytesId)).toBe(false)
    expect(reopened.get(textBytesId)).toBeUndefined()
    // ...and a put of that id (sync fetching it again) repairs the row in place.
    const numberBytesId = writerId('event', 55)
    expect(reopened.put({ ...row(55), id: numberBytesId })).toBe(true)
    expect(reopened.put({ ...row(55), id: numberBytesId })).toBe(false)
    expect(reopened.has(numberBytesId)).toBe(true)

    const { rows, damaged } = collect(reopened)
    expect(rows.map(r => r.id)).toEqual([row(1).id, row(2).id, row(3).id, numberBytesId])
    expect(damaged.map(d => d.problem)).toEqual([
      'id is not 64 lowercase hex characters',
      'id is not 64 lowercase hex characters',
      'id is a blob, not text',
      'bytes is a string, not a blob',
      'bytes is an empty blob',
      'plan is a blob, not text'
    ])
    expect(damaged[0]).toMatchObject({ id: 'not an id' })
    expect(damaged.every(d => Number.isInteger(d.rowid) && d.rowid > 3)).toBe(true)

    // Damaged rows were moved aside, so the fast whole-table queries agree with load.
    expect(reopened.count()).toBe(4)
    expect(reopened.countByPlan(PLAN_A)).toBe(4)
    expect(reopened.ids()).toEqual([row(1).id, row(2).id, row(3).id, numberBytesId].sort())
    expect(new Uint8Array(reopened.idsBytes())).toEqual(
      idBytesOf([row(1).id, row(2).id, row(3).id, numberBytesId].sort())
    )
    expect(reopened.plans()).toEqual([PLAN_A])
    expect(collect(reopened).damaged).toEqual([])
    const check = new Database(join(dir, EVENTS_FILE), { readonly: true })
    const aside = check.prepare('SELECT rowid_was, id, problem FROM damaged_events ORDER BY rowid_was').all() as Array<{
      rowid_was: number
      id: unknown
      problem: string
    }>
    check.close()
    expect(aside.map(a => a.problem)).toEqual(damaged.map(d => d.problem))
    expect(aside.map(a => a.rowid_was)).toEqual(damaged.map(d => d.rowid))
    expect(aside[0]?.id).toBe('not an id')

    // The id is free again: sync can store the event afresh.
    const fresh = { ...row(50), id: textBytesId }
    expect(reopened.put(fresh)).toBe(true)
    expect(reopened.put(fresh)).toBe(false)
    expect(reopened.has(textBytesId)).toBe(true)
    expect(collect(reopened).rows.map(r => r.id)).toContain(textBytesId)
  })

  it('reports NULLs in a file written with a looser schema', () => {
    const dir = tempDir('store')
    const raw = new Database(join(dir, EVENTS_FILE))
    raw.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schema_version', '1');
      CREATE TABLE events (id TEXT PRIMARY KEY, plan TEXT, bytes BLOB, received_ms INTEGER);
    `)
    const ins = raw.prepare('INSERT INTO events (id, plan, bytes, received_ms) VALUES (?, ?, ?, NULL)')
    ins.run(writerId('event', 1), PLAN_A, Buffer.from([1, 2]))
    ins.run(null, PLAN_A, Buffer.from([1]))
    ins.run(writerId('event', 2), null, Buffer.from([1]))
    ins.run(writerId('event', 3), PLAN_A, null)
    raw.close()

    const store = track(openEventStore({ dir }))
    const planDamage: DamagedRow[] = []
    const planRows: StoredEvent[] = []
    expect(
      store.loadPlan(
        PLAN_A,
        r => planRows.push(r),
        d => planDamage.push(d)
      )
    ).toEqual({ loaded: 1, damaged: 2 })
    expect(planRows.map(r => r.id)).toEqual([writerId('event', 1)])
    expect(planDamage.map(d => d.problem)).toEqual(['id is NULL, not text', 'bytes is NULL, not a blob'])
    const { rows, damaged } = collect(store)
    expect(rows.map(r => r.id)).toEqual([writerId('event', 1)])
    expect(damaged.map(d => d.problem)).toEqual(['plan is NULL, not text'])
    expect(store.count()).toBe(1)
  })

  it('keeps memory mode off the disk', () => {
    const dir = tempDir('store')
    const store = track(openEventStore({ memory: true }))
    expect(store.path).toBe(':memory:')
    expect(store.put(row(1))).toBe(true)
    expect(store.put(row(1))).toBe(false)
    expect(collect(store).rows).toHaveLength(1)
    expect(existsSync(join(dir, EVENTS_FILE))).toBe(false)
    expect(existsSync(EVENTS_FILE)).toBe(false)
  })

  it('refuses files it cannot trust, saying what to do', () => {
    const notDb = tempDir('store')
    writeFileSync(
      join(notDb, EVENTS_FILE),
      'this is not a database, just some text that is long enough to have a header'
    )
    expect(() => openEventStore({ dir: notDb })).toThrow(
      expect.objectContaining({ name: 'EventStoreFileError', message: expect.stringMatching(/move it aside/) })
    )

    const foreign = tempDir('store')
    const f = new Database(join(foreign, EVENTS_FILE))
    f.exec('CREATE TABLE something (x)')
    f.close()
    expect(() => openEventStore({ dir: foreign })).toThrow(
      expect.objectContaining({
        name: 'EventStoreFileError',
        message: expect.stringMatching(/not a plan-swarm event store/)
      })
    )

    const newer = tempDir('store')
    openEventStore({ dir: newer }).close()
    const n = new Database(join(newer, EVENTS_FILE))
    n.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run()
    n.close()
    expect(() => openEventStore({ dir: newer })).toThrow(
      expect.objectContaining({
        name: 'EventStoreFileError',
        message: expect.stringMatching(/newer plan-swarm.*upgrade/)
      })
    )
  })

  it('uses WAL and synchronous=NORMAL on disk', () => {
    const dir = tempDir('store')
    track(openEventStore({ dir })).put(row(1))
    const raw = new Database(join(dir, EVENTS_FILE), { readonly: true })
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok')
    raw.close()
  })

  it('migrates a schema 1 store to schema 2 with nothing lost, and expires and imports in one transaction each', () => {
    const dir = tempDir('store')
    // Schema 1 exactly as 0.3.0 created it.
    const raw = new Database(join(dir, EVENTS_FILE))
    raw.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
      CREATE TABLE events (
        id TEXT PRIMARY KEY NOT NULL CHECK (typeof(id) = 'text' AND length(id) = 64 AND NOT id GLOB '*[^0-9a-f]*'),
        plan TEXT NOT NULL CHECK (typeof(plan) = 'text'),
        bytes BLOB NOT NULL CHECK (typeof(bytes) = 'blob' AND length(bytes) > 0),
        received_ms INTEGER NOT NULL
      );
      CREATE INDEX events_plan ON events (plan);
      INSERT INTO meta VALUES ('schema_version', '1');
    `)
    const ins = raw.prepare('INSERT INTO events (id, plan, bytes, received_ms) VALUES (?, ?, ?, ?)')
    const rows = [row(1), row(2), row(3, PLAN_B)]
    for (const r of rows) ins.run(r.id, r.plan, Buffer.from(r.bytes), r.receivedMs)
    raw.close()

    const store = track(openEventStore({ dir }))
    expect(collect(store).rows.map(r => r.id)).toStrictEqual(rows.map(r => r.id))
    const check = new Database(join(dir, EVENTS_FILE), { readonly: true })
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()).toBe('2')
    check.close()
    expect(store.planCounts()).toStrictEqual(
      new Map([
        [PLAN_A, 2],
        [PLAN_B, 1]
      ])
    )

    store.putRecord(PLAN_A, 2, '{"x":1}')
    // A record made from other than the events its plan holds now is left out: that plan folds instead.
    store.putRecord(PLAN_B, 5, '{"x":2}')
    expect([...store.currentRecords()]).toStrictEqual([{ plan: PLAN_A, json: '{"x":1}' }])
    expect(store.expirePlan(PLAN_A, 5_000)).toStrictEqual([row(1).id, row(2).id].sort())
    expect(store.countByPlan(PLAN_A)).toBe(0)
    expect(store.count()).toBe(1)
    expect([...store.currentRecords()]).toStrictEqual([])
    expect(store.expiredPlans()).toStrictEqual([PLAN_A])
    expect(store.isTombstone(row(1).id)).toBe(true)
    expect(store.isTombstone(row(3, PLAN_B).id)).toBe(false)
    // An import that fails part-way stores nothing and keeps the plan expired.
    expect(() => store.importPlan(PLAN_A, [row(1), { ...row(2), id: 'nope' }], 6_000)).toThrow()
    expect(store.countByPlan(PLAN_A)).toBe(0)
    expect(store.expiredPlans()).toStrictEqual([PLAN_A])
    expect(store.importPlan(PLAN_A, [row(1), row(2)], 6_000)).toBe(2)
    expect(store.keptPlans()).toStrictEqual([PLAN_A])
    expect(store.expiredPlans()).toStrictEqual([])
    expect(store.isTombstone(row(1).id)).toBe(false)
    store.expirePlan(PLAN_B, 7_000)
    expect(store.purgeExpired(7_000)).toBe(0)
    expect(store.purgeExpired(7_001)).toBe(1)
    expect(store.expiredPlans()).toStrictEqual([])
  })

  it('gives the ids as bytes, in id order', () => {
    const store = track(openEventStore({ dir: tempDir('ids-bytes') }))
    const rows = [row(7), row(8), row(9, PLAN_B)]
    for (const r of rows) store.put(r)
    expect(new Uint8Array(store.idsBytes())).toEqual(idBytesOf(rows.map(r => r.id).sort()))
    expect(track(openEventStore({ memory: true })).idsBytes()).toEqual(new Uint8Array(0))
  })
})
