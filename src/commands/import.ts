import { foldAll } from '../core/fold.js'
import { planOf } from '../core/event-set.js'
import { isExpired } from '../core/retention.js'
import { nativeSha256HexOfText } from '../sync/native-hash.js'
import { decodeEvent } from '../wire/decode.js'
import { createNativeVerifier } from '../runtime/verify.js'
import { ConfigError, parseClientArgs } from '../runtime/config.js'
import { lockDataDir } from '../store/data-dir.js'
import { openEventStore } from '../store/event-store.js'
import { ArchiveError, readArchive } from '../store/archive.js'
import type { EventRow } from '../ports/event-store.js'
import type { PlanEvent, PlanId } from '../core/events.js'

/**
 * `import FILE --data-dir DIR`: put an expired plan's archive back into a
 * stopped node's store. Every event is checked as sync checks it (its
 * encoding, its swarm, its signature, its id), the events must fold to the
 * treeHash the archive was written with, and only then is anything stored,
 * in one transaction. A plan that has expired under its own retention is
 * kept on this node only: it is never expired here again, and never offered
 * to peers (they let it go too).
 */
export function importArchive(argv: readonly string[]): number {
  const { config, positionals } = parseClientArgs(argv)
  const file = positionals[0]
  if (file === undefined || positionals.length > 1)
    throw new ConfigError(
      'import takes one archive file; use: npm start -- import <data-dir>/archive/<plan>.jsonl --data-dir DIR'
    )
  if (config.dataDir === undefined)
    throw new ConfigError('import needs --data-dir DIR: the data dir of the (stopped) node to import into')
  let archive: ReturnType<typeof readArchive>
  try {
    archive = readArchive(file)
  } catch (err) {
    if (err instanceof ArchiveError) throw new ConfigError(err.message)
    throw err
  }
  const { header, rows } = archive
  if (header.swarm !== config.swarm)
    throw new ConfigError(
      `${file} is an archive of swarm ${JSON.stringify(header.swarm)}; pass --swarm ${header.swarm} (nothing was imported)`
    )
  const verifier = createNativeVerifier()
  const events: PlanEvent[] = []
  const stored: EventRow[] = []
  const now = Date.now()
  rows.forEach((row, i) => {
    const line = i + 2
    const d = decodeEvent(row.bytes, { swarm: header.swarm, verify: true, verifier })
    const wrong = (why: string): never => {
      throw new ConfigError(`${file}: line ${line}: ${why}; nothing was imported`)
    }
    if (d.kind === 'rejected') wrong(`the event is refused (${d.reason}: ${d.detail})`)
    if (d.kind !== 'event') return wrong('the event is of a protocol version this build does not fold')
    if (d.event.id !== row.id) wrong(`the event's id is ${d.event.id}, not ${row.id}`)
    if (planOf(d.event) !== header.plan) wrong(`the event belongs to plan ${planOf(d.event)}, not ${header.plan}`)
    events.push(d.event)
    stored.push({ id: row.id, plan: header.plan, bytes: row.bytes, receivedMs: now })
  })
  const fold = foldAll(events, { hashText: nativeSha256HexOfText })
  const plan = header.plan as PlanId
  const hash = fold.treeHash(plan)
  if (hash !== header.treeHash)
    throw new ConfigError(
      `${file}: its events fold to treeHash ${hash ?? '(no plan)'}, not the ${header.treeHash} it was archived with: ` +
        'events are missing or foreign; nothing was imported'
    )
  const record = fold.record(plan)
  const expired = record !== undefined && isExpired(record, now)
  const lock = lockDataDir(config.dataDir)
  try {
    const store = openEventStore({ dir: config.dataDir })
    try {
      const added = expired ? store.importPlan(plan, stored, now) : store.putMany(stored)
      console.log(`imported plan ${plan} ("${header.goal}"): ${rows.length} events, ${added} new, treeHash ${hash}`)
      console.error(
        expired
          ? 'it has expired under its retention, so this node keeps it for itself: it never expires here again and is not offered to peers'
          : 'it has not expired yet: the node folds it and shares it with its peers like any other plan'
      )
    } finally {
      store.close()
    }
  } finally {
    lock.release()
  }
  return 0
}
