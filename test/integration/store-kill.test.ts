import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { EVENTS_FILE, openEventStore } from '../../src/store/event-store.js'
import type { StoredEvent } from '../../src/store/event-store.js'
import { BATCH, killChildren, removeTempDirs, spawnStoreChild, tempDir, writerId } from '../helpers/store-temp.js'

afterEach(async () => {
  await killChildren()
  removeTempDirs()
})

/** Rows the writer must have reported before we kill it: enough for WAL checkpoints to happen during the run. */
const MIN_REPORTED_ROWS = 8_000
/** Kill-and-reopen rounds on one store: each kill lands somewhere else. */
const ROUNDS = 3

describe('event store under SIGKILL', () => {
  it('keeps every event whose put returned, and commits a putMany whole or not at all', async () => {
    const dir = tempDir('kill')
    let before = 0
    for (let round = 0; round < ROUNDS; round++) {
      const seed = `kill-test-${round}`
      const writer = spawnStoreChild(['write', dir, seed])
      await writer.waitForLine(l => l === 'ready')
      await writer.waitForLine(l => {
        const m = /^did (\d+) (\d+)$/.exec(l)
        return m !== null && Number(m[1]) + Number(m[2]) >= MIN_REPORTED_ROWS
      })
      // Land the kill at a varying point of whatever the writer is doing.
      await new Promise(resolve => setTimeout(resolve, Math.random() * 20))
      await writer.kill()

      // Every operation the child reported, in order: [first n, count].
      const ops = writer.lines
        .filter(l => l.startsWith('did '))
        .map(l => l.split(' ').slice(1).map(Number) as [number, number])
      const lastOp = ops[ops.length - 1] as [number, number]
      const reported = lastOp[0] + lastOp[1]
      expect(reported).toBeGreaterThanOrEqual(MIN_REPORTED_ROWS)

      // The file is sound after the kill.
      const raw = new Database(join(dir, EVENTS_FILE))
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok')
      raw.close()

      const store = openEventStore({ dir })
      try {
        const loaded: StoredEvent[] = []
        expect(
          store.load(
            () => {},
            () => {}
          ).damaged
        ).toBe(0)
        store.loadPlan(writerId(seed, -1), r => loaded.push(r))

        // The writer stores ids in sequence, so what survived must be exactly
        // the first `stored` of them: every reported one, perhaps a few more
        // (the kill can land between a commit and its report), and never a
        // partial batch.
        const stored = loaded.length
        expect(stored).toBeGreaterThanOrEqual(reported)
        for (let n = 0; n < stored; n++) {
          if ((loaded[n] as StoredEvent).id !== writerId(seed, n)) {
            throw new Error(
              `round ${round}: row ${n} is ${(loaded[n] as StoredEvent).id}, expected the writer's ${n}th id`
            )
          }
        }
        // Ops alternate: 1 row, BATCH rows, 1 row... so committed prefixes end on these boundaries.
        const boundaries = new Set<number>()
        for (let n = 0, single = true; n <= stored; single = !single) {
          boundaries.add(n)
          n += single ? 1 : BATCH
        }
        expect(boundaries.has(stored), `round ${round}: ${stored} rows is not a whole number of operations`).toBe(true)
        expect(store.has(writerId(seed, stored))).toBe(false)
        expect(store.count()).toBe(before + stored)
        before += stored
      } finally {
        store.close()
      }
    }
  })
})
