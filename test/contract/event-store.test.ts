/**
 * The EventStore contract (event-store-contract.ts) against both stores: the
 * SQLite store on a file in a temp dir, reopened on the same file, and the
 * memory store every simulated node keeps.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openEventStore } from '../../src/store/event-store.js'
import { createMemoryStore } from '../../src/store/memory-store.js'
import type { EventStore } from '../../src/ports/event-store.js'
import { runEventStoreContract } from './event-store-contract.js'
import type { StoreSubject } from './event-store-contract.js'

function sqliteOnDisk(): StoreSubject {
  const dir = mkdtempSync(join(tmpdir(), 'plan-swarm-contract-'))
  const opened: EventStore[] = [openEventStore({ dir })]
  const closeAll = (): void => {
    for (const s of opened) s.close()
  }
  return {
    store: opened[0] as EventStore,
    reopen: () => {
      closeAll()
      const again = openEventStore({ dir })
      opened.push(again)
      return again
    },
    teardown: () => {
      closeAll()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

function memory(): StoreSubject {
  const store = createMemoryStore()
  return { store, teardown: () => store.close() }
}

runEventStoreContract('SQLite on disk', sqliteOnDisk)
runEventStoreContract('memory', memory)
