/**
 * The five invariants every resilience scenario checks at its end,
 * read from the nodes' own SQLite stores and their `--http` endpoints:
 *
 *   (a) no stored event lost: every id a store held at a snapshot is still in it;
 *   (b) every live node reports the same treeHash for every plan, equal to the
 *       fold of the union of all stores (polled until it holds, or the deadline);
 *   (c) at most one accepted result per task (in the fold of the union);
 *   (d) no invalid event folded: every stored row decodes, verifies (signature
 *       checked again, as for gossip) and, folded with the rest of its own
 *       store, passes the dep rules: nothing rejected, nothing left parked
 *       (a node stores only what it folded, so its store is closed under deps);
 *   (e) memory bounded: the RSS of every live node process is below a cap.
 *
 * Events that only the stores of killed nodes hold (signed and stored, then
 * SIGKILLed before gossip carried them) cannot reach the swarm until that
 * node comes back: they are counted (`deadOnly`) and excluded from the union
 * the live nodes must match, and the caller bounds how many it accepts.
 *
 * No test-framework imports: scenarios decide what to assert on the report.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Fold, NO_CLOCK } from '../../src/core/fold.js'
import { sortEvents } from '../../src/core/order.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { EVENTS_FILE } from '../../src/store/event-store.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

/** Default RSS cap of one node process (a bare libp2p node idles near 100 MB; tsx and the fold add some). */
export const DEFAULT_RSS_CAP_BYTES = 600 * 1024 * 1024

export interface StoreRow {
  readonly id: string
  readonly plan: string
  readonly bytes: Uint8Array
}

/** Every row of the events table of a data dir (none if the store was never created). Read-only; safe while the node runs. */
export function readStoreRows(dataDir: string): StoreRow[] {
  const path = join(dataDir, EVENTS_FILE)
  if (!existsSync(path)) return []
  let db: Database.Database
  try {
    db = new Database(path, { readonly: true, fileMustExist: true })
  } catch {
    // A store left by a SIGKILLed process may need its WAL recovered, which a read-only handle cannot do.
    db = new Database(path, { fileMustExist: true })
  }
  db.pragma('busy_timeout = 5000')
  try {
    return db.prepare('SELECT id, plan, bytes FROM events').all() as StoreRow[]
  } finally {
    db.close()
  }
}

/** The ids a data dir's store holds now: a snapshot for invariant (a). */
export function snapshotIds(dataDir: string): Set<string> {
  return new Set(readStoreRows(dataDir).map(r => r.id))
}

export interface Snapshot {
  readonly dataDir: string
  readonly ids: ReadonlySet<string>
  /** What the snapshot was taken at, for messages (e.g. 'before kill'). */
  readonly label?: string
}

export interface StoreInput {
  readonly name: string
  readonly dataDir: string
  /** The node that owns this store is running (its events must be in the union the live nodes match). */
  readonly live: boolean
}

export interface LiveNode {
  readonly name: string
  /** `http://host:port` of its --http server. */
  readonly http: string
  /** Its process id, for RSS (falls back to /metrics when /proc is not readable). */
  readonly pid?: number
}

export interface InvariantInput {
  readonly swarm: string
  readonly stores: readonly StoreInput[]
  readonly live: readonly LiveNode[]
  readonly snapshots?: readonly Snapshot[]
  /** Plans to compare; default: every plan in the union. */
  readonly plans?: readonly string[]
  readonly rssCapBytes?: number
  /** How long to poll for (b) before reporting the difference. */
  readonly convergeTimeoutMs?: number
  /** Most events allowed in dead stores only (see the file comment); default 10. */
  readonly maxDeadOnly?: number
}

export interface PlanReport {
  readonly id: string
  readonly status: string
  readonly treeHash: string
  readonly nodes: number
  readonly tasks: number
  /** Results beyond the accepted ones: duplicate executions. */
  readonly duplicates: number
  readonly ignoredClaims: number
  readonly equivocations: number
}

export interface InvariantReport {
  readonly failures: string[]
  readonly unionEvents: number
  readonly storeEvents: Record<string, number>
  readonly deadOnly: number
  readonly plans: PlanReport[]
  readonly rssBytes: Record<string, number>
  /** From the start of the check until (b) held. */
  readonly convergedMs: number | null
}

interface Decoded {
  readonly bytes: Uint8Array
  readonly event?: PlanEvent
  readonly problem?: string
  readonly otherVersion?: boolean
}

/** Decoding with the signature check is the slow part: each distinct (id, bytes) is checked once per process. */
const decodedCache = new Map<string, Decoded>()

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return (
    Buffer.compare(
      Buffer.from(a.buffer, a.byteOffset, a.byteLength),
      Buffer.from(b.buffer, b.byteOffset, b.byteLength)
    ) === 0
  )
}

function planOf(e: PlanEvent): string {
  return e.env.type === 'goal-submitted' ? e.id : e.env.plan
}

/** Decode and verify one stored row exactly as the node does for an event from the network. */
export function checkRow(row: StoreRow, swarm: string): Decoded {
  const cached = decodedCache.get(row.id)
  if (cached !== undefined && sameBytes(cached.bytes, row.bytes)) return cached
  const r = decodeEvent(new Uint8Array(row.bytes), { swarm, verify: true })
  let d: Decoded
  if (r.kind === 'rejected') d = { bytes: row.bytes, problem: `${r.reason}: ${r.detail}` }
  else if (r.kind === 'other-version')
    d =
      r.id === row.id
        ? { bytes: row.bytes, otherVersion: true }
        : { bytes: row.bytes, problem: `stored under ${row.id} but its id is ${r.id}` }
  else if (r.event.id !== row.id)
    d = { bytes: row.bytes, problem: `stored under ${row.id} but its id is ${r.event.id}` }
  else if (planOf(r.event) !== row.plan)
    d = { bytes: row.bytes, problem: `stored under plan ${row.plan} but belongs to ${planOf(r.event)}` }
  else d = { bytes: row.bytes, event: r.event }
  decodedCache.set(row.id, d)
  return d
}

/**
 * Invariant (d) for one store: the problems found (empty when every row is a
 * valid event that folds with the rest of the store), and its events.
 */
export function checkStore(rows: readonly StoreRow[], swarm: string): { problems: string[]; events: PlanEvent[] } {
  const problems: string[] = []
  const events: PlanEvent[] = []
  for (const row of rows) {
    const d = checkRow(row, swarm)
    if (d.problem !== undefined) problems.push(`row ${row.id.slice(0, 12)}: ${d.problem}`)
    else if (d.event !== undefined) events.push(d.event)
  }
  const fold = new Fold({
    onRejected: (id, reason, detail) => {
      problems.push(`event ${id.slice(0, 12)} rejected once its deps folded: ${reason} (${detail})`)
    }
  })
  for (const e of sortEvents(events)) {
    const out = fold.add(e, NO_CLOCK)
    if (out.status === 'rejected')
      problems.push(`event ${e.id.slice(0, 12)} (${e.env.type}) fails the dep rules: ${out.reason} (${out.detail})`)
  }
  for (const p of fold.events.parkedEvents())
    problems.push(
      `event ${p.id.slice(0, 12)} is stored but cannot fold: ${p.why}, ${p.missing} deps missing from this store`
    )
  return { problems, events }
}

/** Invariant (c): tasks of a tree with more than one accepted result. */
export function multipleAccepted(tree: PlanTree): string[] {
  return tree.tasks
    .filter(t => t.results.filter(r => r.accepted).length > 1)
    .map(
      t =>
        `plan ${tree.plan.slice(0, 12)} task ${t.id.slice(0, 12)} has ${t.results.filter(r => r.accepted).length} accepted results`
    )
}

/** Resident set size of a process in bytes, from /proc; undefined when unreadable. */
export function rssOfPid(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? undefined : Number(m[1]) * 1024
  } catch {
    return undefined
  }
}

/** RSS from a node's Prometheus metrics (prom-client's process_resident_memory_bytes). */
export async function rssFromMetrics(http: string): Promise<number | undefined> {
  const text = await (await fetch(`${http}/metrics`)).text()
  const m = /^process_resident_memory_bytes\s+(\d+(?:\.\d+)?(?:e\+?\d+)?)/m.exec(text)
  return m === null ? undefined : Number(m[1])
}

/** `GET /plans` of a live node: plan id -> treeHash. */
export async function liveHashes(http: string): Promise<Map<string, string>> {
  const r = await fetch(`${http}/plans`, { signal: AbortSignal.timeout(10_000) })
  if (!r.ok) throw new Error(`${http}/plans: HTTP ${r.status}`)
  const list = (await r.json()) as Array<{ id: string; treeHash: string }>
  return new Map(list.map(p => [p.id, p.treeHash]))
}

export interface UnionFold {
  readonly fold: Fold
  /** Per store: how many rows, and the problems of (d). */
  readonly stores: Array<{
    name: string
    dataDir: string
    live: boolean
    rows: number
    problems: string[]
    ids: Set<string>
  }>
  readonly deadOnly: string[]
  readonly liveUnion: number
}

/** Read every store, check (d) on each, and fold the union of the live stores plus what dead stores share with them. */
export function foldUnion(swarm: string, stores: readonly StoreInput[]): UnionFold {
  const byId = new Map<string, PlanEvent>()
  const liveIds = new Set<string>()
  const out: UnionFold['stores'] = []
  for (const s of stores) {
    const rows = readStoreRows(s.dataDir)
    const { problems, events } = checkStore(rows, swarm)
    const ids = new Set(rows.map(r => r.id))
    out.push({ name: s.name, dataDir: s.dataDir, live: s.live, rows: rows.length, problems, ids })
    for (const e of events) {
      byId.set(e.id, e)
      if (s.live) liveIds.add(e.id)
    }
  }
  const deadOnly = [...byId.keys()].filter(id => !liveIds.has(id))
  const fold = new Fold()
  for (const e of sortEvents([...byId.values()].filter(e => liveIds.has(e.id)))) fold.add(e, NO_CLOCK)
  return { fold, stores: out, deadOnly, liveUnion: liveIds.size }
}

/**
 * Checks the five invariants; polls (b) until it holds or
 * `convergeTimeoutMs` passes (stores and trees are read again each round).
 * Returns a report whose `failures` is empty when all hold.
 */
export async function checkInvariants(input: InvariantInput): Promise<InvariantReport> {
  const started = Date.now()
  const deadline = started + (input.convergeTimeoutMs ?? 60_000)
  let union: UnionFold
  let divergence: string[] = []
  let convergedMs: number | null = null
  for (;;) {
    union = foldUnion(input.swarm, input.stores)
    divergence = []
    const plans = input.plans ?? union.fold.plans()
    if (plans.length === 0) divergence.push('no plan in the union of the stores')
    for (const node of input.live) {
      let hashes: Map<string, string>
      try {
        hashes = await liveHashes(node.http)
      } catch (err) {
        divergence.push(`${node.name}: ${(err as Error).message}`)
        continue
      }
      for (const p of plans) {
        const want = union.fold.treeHash(p as PlanId)
        const got = hashes.get(p)
        if (got !== want)
          divergence.push(
            `${node.name}: plan ${p.slice(0, 12)} treeHash ${got?.slice(0, 12) ?? '(none)'}, the ` +
              `union's is ${want?.slice(0, 12) ?? '(none)'}`
          )
      }
    }
    if (divergence.length === 0) {
      convergedMs = Date.now() - started
      break
    }
    if (Date.now() > deadline) break
    await new Promise(resolve => setTimeout(resolve, 1_000))
  }

  const failures: string[] = [...divergence]
  // (a)
  for (const snap of input.snapshots ?? []) {
    const store = union.stores.find(s => s.dataDir === snap.dataDir)
    const now = store?.ids ?? snapshotIds(snap.dataDir)
    const lost = [...snap.ids].filter(id => !now.has(id))
    if (lost.length > 0)
      failures.push(
        `${snap.dataDir}: ${lost.length} of ${snap.ids.size} events held ${snap.label ?? 'earlier'} are gone (${lost
          .slice(0, 3)
          .map(i => i.slice(0, 12))
          .join(', ')})`
      )
  }
  // (c)
  const plans: PlanReport[] = []
  for (const p of input.plans ?? union.fold.plans()) {
    const tree = union.fold.tree(p as PlanId)
    if (tree === undefined) continue
    failures.push(...multipleAccepted(tree))
    plans.push({
      id: p,
      status: tree.status,
      treeHash: union.fold.treeHash(p as PlanId) as string,
      nodes: tree.nodes.length,
      tasks: tree.tasks.length,
      duplicates: tree.duplicates,
      ignoredClaims: tree.ignoredClaims,
      equivocations: tree.equivocations.length
    })
  }
  // (d)
  for (const s of union.stores) for (const problem of s.problems) failures.push(`${s.name}: ${problem}`)
  const maxDeadOnly = input.maxDeadOnly ?? 10
  if (union.deadOnly.length > maxDeadOnly)
    failures.push(
      `${union.deadOnly.length} events are only in the stores of stopped nodes (at most ${maxDeadOnly} allowed)`
    )
  // (e)
  const cap = input.rssCapBytes ?? DEFAULT_RSS_CAP_BYTES
  const rssBytes: Record<string, number> = {}
  for (const node of input.live) {
    let rss = node.pid === undefined ? undefined : rssOfPid(node.pid)
    if (rss === undefined) rss = await rssFromMetrics(node.http).catch(() => undefined)
    if (rss === undefined) {
      failures.push(`${node.name}: RSS unknown`)
      continue
    }
    rssBytes[node.name] = rss
    if (rss > cap)
      failures.push(
        `${node.name}: RSS ${(rss / 2 ** 20).toFixed(0)} MB is above the cap of ${(cap / 2 ** 20).toFixed(0)} MB`
      )
  }
  return {
    failures,
    unionEvents: union.liveUnion,
    storeEvents: Object.fromEntries(union.stores.map(s => [s.name, s.rows])),
    deadOnly: union.deadOnly.length,
    plans,
    rssBytes,
    convergedMs
  }
}
