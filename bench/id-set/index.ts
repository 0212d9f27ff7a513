import '../../src/polyfill.js'
import Database from 'better-sqlite3'
import { pathToFileURL } from 'node:url'
import { seededRandom } from '../../src/ports/scheduler.js'
import { loadNow, machine, median, r1, r2, r3 } from '../common/util.js'

/**
 * The parts of an id set this bench drives. Written against the shape both
 * the current IdSet and an older copy of it have (`ID_SET_MODULE` below), so
 * one run measures the code as it was and another the code as it is.
 */
interface SnapshotLike {
  readonly size: number
  fingerprint(lo: string, hi: string): Uint8Array
}
interface SetLike {
  readonly size: number
  add(id: string): unknown
  has(id: string): boolean
  snapshot(): SnapshotLike
  addMany?(ids: Iterable<string>): unknown
  addConcatenated?(hex: string): unknown
  removeMany?(ids: Iterable<string>): unknown
}
type SetClass = new () => SetLike

/** Heap plus array buffers after full collections (ids live in typed arrays, outside the JS heap). */
function memoryNow(): { heap: number; buffers: number; rss: number } {
  globalThis.gc?.()
  globalThis.gc?.()
  const m = process.memoryUsage()
  return { heap: m.heapUsed, buffers: m.arrayBuffers, rss: m.rss }
}

/** `count` distinct random ids from a seed (64 lowercase hex digits each). */
function randomIds(count: number, seed: number): string[] {
  const random = seededRandom(seed)
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    let id = ''
    for (let w = 0; w < 8; w++)
      id += Math.floor(random() * 2 ** 32)
        .toString(16)
        .padStart(8, '0')
    out.push(id)
  }
  return out
}

/** A canonical bound (1 to 3 random bytes, last one non-zero) for random range fingerprints. */
function randomBound(random: () => number): string {
  const len = 1 + Math.floor(random() * 3)
  let b = ''
  for (let i = 0; i < len; i++) {
    const v = i === len - 1 ? 1 + Math.floor(random() * 255) : Math.floor(random() * 256)
    b += v.toString(16).padStart(2, '0')
  }
  return b
}

/** Wall ms of `f`. */
function time(f: () => void): number {
  const t0 = performance.now()
  f()
  return performance.now() - t0
}

/**
 * CPU ms of `f` (this process, every thread: GC included). Reported beside
 * wall time because the machine this runs on is often busy with other work,
 * which stretches wall time but not the CPU a piece of code needs.
 */
function cpu(f: () => void): number {
  // Start from a collected heap, so that a collection the last step left due is not charged to this one.
  globalThis.gc?.()
  const c0 = process.cpuUsage()
  f()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}

/** Builds a set from the ids as the store hands them over: one bulk call if the set has one, else add by add. */
function load(Set: SetClass, rows: readonly string[]): SetLike {
  const set = new Set()
  if (set.addMany !== undefined) set.addMany(rows)
  else for (const id of rows) set.add(id)
  set.snapshot()
  return set
}

/**
 * `npm run bench -- id-set` (or alone: `node --import tsx --expose-gc
 * bench/id-set/index.ts`): the sync id set at ID_SET_N ids (default 1,000,000),
 * loaded the way a node starting on a long history loads it, from
 * `SELECT id FROM events ORDER BY id` of an in-memory SQLite table (and,
 * where the set has `addConcatenated`, from one `group_concat` string).
 * Reports what the set retains per id once the rows are dropped, the load,
 * single adds and the merge the next snapshot pays, range fingerprints,
 * lookups and (where the set has it) removing a plan's worth of ids.
 *
 * ID_SET_MODULE=path/to/id-set.ts measures another copy of the module (say,
 * the code before a change, copied outside the tree) with the same driver.
 */
export async function benchIdSet(): Promise<Record<string, unknown>> {
  const n = Number(process.env.ID_SET_N ?? 1_000_000)
  const runs = Number(process.env.ID_SET_RUNS ?? 3)
  const modulePath = process.env.ID_SET_MODULE
  const mod = (await import(
    modulePath !== undefined ? pathToFileURL(modulePath).href : '../../src/core/id-set.js'
  )) as {
    IdSet: SetClass
  }
  const IdSet = mod.IdSet

  console.error(`id set: ${n} ids into an in-memory SQLite table...`)
  const db = new Database(':memory:')
  db.exec('CREATE TABLE events (id TEXT PRIMARY KEY NOT NULL)')
  const insert = db.prepare('INSERT INTO events (id) VALUES (?)')
  db.transaction((ids: readonly string[]) => {
    for (const id of ids) insert.run(id)
  })(randomIds(n, 1))
  const select = db.prepare('SELECT id FROM events ORDER BY id').pluck()

  const selectMs: number[] = []
  const loadMs: number[] = []
  const loadCpuMs: number[] = []
  let retained = { heap: 0, buffers: 0, rss: 0 }
  for (let r = 0; r < runs; r++) {
    const before = memoryNow()
    let rows: string[] | null = null
    selectMs.push(
      cpu(() => {
        rows = select.all() as string[]
      })
    )
    let set: SetLike | null = null
    const t0 = performance.now()
    loadCpuMs.push(
      cpu(() => {
        set = load(IdSet, rows as unknown as string[])
      })
    )
    loadMs.push(performance.now() - t0)
    rows = null
    const after = memoryNow()
    if ((set as SetLike | null)?.size !== n) throw new Error('id set lost ids')
    if (r === 0) {
      retained = {
        heap: after.heap - before.heap,
        buffers: after.buffers - before.buffers,
        rss: after.rss - before.rss
      }
    }
    set = null
  }

  // The other way to load, where the set has it: one string of every id back to back from SQLite.
  const concatSelectMs: number[] = []
  const concatLoadMs: number[] = []
  if (new IdSet().addConcatenated !== undefined) {
    const concat = db.prepare("SELECT group_concat(id, '') FROM (SELECT id FROM events ORDER BY id)").pluck()
    for (let r = 0; r < runs; r++) {
      let hex = ''
      concatSelectMs.push(cpu(() => (hex = concat.get() as string)))
      const set = new IdSet()
      concatLoadMs.push(cpu(() => set.addConcatenated?.(hex)))
      if (set.size !== n) throw new Error('addConcatenated lost ids')
    }
  }

  // One set for the rest: lookups, fingerprints, single adds and the merge, removal.
  const set = load(IdSet, select.all() as string[])
  db.close()
  const random = seededRandom(2)
  const present = randomIds(n, 1).filter(() => random() < 100_000 / n)
  const absent = randomIds(100_000, 3)
  const hasPresentUs = (cpu(() => present.forEach(id => set.has(id) || fail('has lost an id'))) * 1000) / present.length
  const hasAbsentUs =
    (cpu(() => absent.forEach(id => set.has(id) && fail('has found a stranger'))) * 1000) / absent.length

  const snap = set.snapshot()
  const wholeFirstUs = time(() => snap.fingerprint('', '~')) * 1000
  const wholeAgainUs = time(() => snap.fingerprint('', '~')) * 1000
  const ranges: [string, string][] = []
  for (let i = 0; i < 10_000; i++) {
    const x = randomBound(random)
    const y = randomBound(random)
    if (x !== y) ranges.push(x < y ? [x, y] : [y, x])
  }
  const rangeUs = (cpu(() => ranges.forEach(([lo, hi]) => snap.fingerprint(lo, hi))) * 1000) / ranges.length

  const fresh = randomIds(100_000, 4)
  const addCpuMs = cpu(() => {
    for (const id of fresh) set.add(id)
  })
  const mergeAfter100kMs = cpu(() => set.snapshot())
  // What a sync session pays to start when a few events arrived since the last one: five times, the median.
  const few = randomIds(50, 5)
  const mergeAfter10Ms: number[] = []
  for (let k = 0; k < 5; k++) {
    for (const id of few.slice(10 * k, 10 * k + 10)) set.add(id)
    mergeAfter10Ms.push(cpu(() => set.snapshot()))
  }
  // An expired plan's few hundred ids, five times, the median.
  const removeMs: number[] = []
  if (set.removeMany !== undefined) {
    const remove = set.removeMany.bind(set)
    for (let k = 0; k < 5; k++) {
      const gone = fresh.slice(300 * k, 300 * k + 300)
      removeMs.push(cpu(() => remove(gone)))
    }
    if (set.size !== n + fresh.length + few.length - 1_500) throw new Error('removeMany miscounted')
  }

  return {
    ids: n,
    module: modulePath ?? 'src/core/id-set.ts',
    measure: 'memory: heapUsed + arrayBuffers after gc, rows dropped; times: CPU ms unless named wall',
    bytesPerId: r1((retained.heap + retained.buffers) / n),
    heapMb: r1(retained.heap / 2 ** 20),
    arrayBuffersMb: r1(retained.buffers / 2 ** 20),
    rssMb: r1(retained.rss / 2 ** 20),
    selectMs: Math.round(median(selectMs)),
    loadMs: Math.round(median(loadCpuMs)),
    loadWallMs: Math.round(median(loadMs)),
    concatSelectMs: concatSelectMs.length === 0 ? null : Math.round(median(concatSelectMs)),
    concatLoadMs: concatLoadMs.length === 0 ? null : Math.round(median(concatLoadMs)),
    addUsPerId: r3((addCpuMs * 1000) / fresh.length),
    mergeAfter100kAddsMs: r1(mergeAfter100kMs),
    mergeAfter10AddsMs: r1(median(mergeAfter10Ms)),
    removeManyOf300Ms: removeMs.length === 0 ? null : r1(median(removeMs)),
    wholeFingerprintFirstWallUs: Math.round(wholeFirstUs),
    wholeFingerprintAgainWallUs: r1(wholeAgainUs),
    rangeFingerprintUs: r2(rangeUs),
    hasPresentUs: r3(hasPresentUs),
    hasAbsentUs: r3(hasAbsentUs),
    runs,
    load: loadNow(),
    machine: machine()
  }
}

function fail(why: string): never {
  throw new Error(why)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchIdSet()))
}
