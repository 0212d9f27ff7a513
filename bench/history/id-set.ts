import '../../src/polyfill.js'
import { execFileSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { openEventStore } from '../../src/store/event-store.js'
import { IdSet } from '../../src/core/id-set.js'
import { REPO } from '../common/util.js'
import { median, r1 } from '../common/util.js'

/**
 * Part of `npm run bench -- history`: the heap (heapUsed + arrayBuffers after
 * full collections) that a sync id set holds for every id of a store, in
 * both forms. In memory (`IdSet`, which the simulator's memory store keeps):
 * each id added, before and after its sorted snapshot (which the first sync
 * session makes). On disk (`StoredIds`, what a SQLite node keeps): the
 * summary built from the store, before and after its first view with a
 * fingerprint of the whole set. Each run is a process of its own with
 * --expose-gc: `node --expose-gc --import tsx bench/history/id-set.ts DIR`
 * prints one run as a JSON line.
 */

/** One run: the heap that IdSet holds for every id of DIR's store; prints one JSON line. */
async function idsetChild(dir: string): Promise<void> {
  const gc = globalThis.gc
  if (gc === undefined) throw new Error('run with --expose-gc')
  const mem = (): number => {
    gc()
    gc()
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const store = openEventStore({ dir })
  const m0 = mem()
  let t = performance.now()
  let ids: string[] | undefined = store.ids()
  const readMs = performance.now() - t
  t = performance.now()
  let set: IdSet | undefined = new IdSet()
  for (const id of ids) set.add(id)
  const addMs = performance.now() - t
  ids = undefined
  const m1 = mem()
  t = performance.now()
  set.snapshot()
  const snapshotMs = performance.now() - t
  const m2 = mem()
  const size = set.size
  set = undefined
  const m3 = mem()
  t = performance.now()
  const stored = store.syncIds?.()
  const storedBuildMs = performance.now() - t
  if (stored === undefined) throw new Error('the SQLite store keeps no sync id set')
  const m4 = mem()
  t = performance.now()
  stored.fingerprint('', null)
  const storedViewMs = performance.now() - t
  const m5 = mem()
  if (stored.size !== size) throw new Error(`the stored set holds ${stored.size} ids, the in-memory one ${size}`)
  store.close()
  console.log(
    JSON.stringify({
      ids: size,
      setBytes: m1 - m0,
      withSnapshotBytes: m2 - m0,
      storedBytes: m4 - m3,
      storedWithViewBytes: m5 - m3,
      storedBuildMs: Math.round(storedBuildMs),
      storedViewMs: Math.round(storedViewMs),
      readIdsMs: Math.round(readMs),
      addMs: Math.round(addMs),
      snapshotMs: Math.round(snapshotMs)
    })
  )
}

/** The median of `runs` runs over the store in `dir` (a copy: opening a store may migrate it). */
export function idsetMeasure(runs: number, dir: string): Record<string, unknown> {
  const each: Array<Record<string, number>> = []
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), dir],
      {
        cwd: REPO,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit']
      }
    )
    each.push(JSON.parse(out.trim().split('\n').pop() as string) as Record<string, number>)
  }
  const med = (k: string): number => median(each.map(r => r[k] as number))
  const ids = each[0]?.ids ?? 0
  return {
    ids,
    setMb: r1(med('setBytes') / 2 ** 20),
    withSnapshotMb: r1(med('withSnapshotBytes') / 2 ** 20),
    bytesPerId: Math.round(med('setBytes') / ids),
    withSnapshotBytesPerId: Math.round(med('withSnapshotBytes') / ids),
    readIdsMs: med('readIdsMs'),
    addMs: med('addMs'),
    snapshotMs: med('snapshotMs'),
    storedMb: r1(med('storedBytes') / 2 ** 20),
    storedWithViewMb: r1(med('storedWithViewBytes') / 2 ** 20),
    storedBuildMs: med('storedBuildMs'),
    storedViewMs: med('storedViewMs'),
    runs: each.length
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await idsetChild(process.argv[2] as string)
}
