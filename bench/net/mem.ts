/**
 * A child's answer to the footprint benchmark's `mem` command (bench/net/child.ts,
 * bench/net/cli-mem.ts): this process's heap, optionally after a full collection.
 *
 * A process run through tsx (`npm start` is) has two V8 heaps: the main
 * thread's and that of the module-loader thread tsx's hooks run on. Each
 * gives the memory start-up grew back only when its own memory reducer runs,
 * 1-3 minutes after start (a drop of 15-45 MB and of 15-20 MB in RSS). The
 * collection here is of both, the same in every kind of child, so the
 * benchmark can start every process's window from the state it settles in
 * anyway, instead of from wherever each of its two collectors happens to be.
 * A process started without module hooks (the bundled CLI, a bundled child)
 * has no loader thread, and gets none from here: `register` would start one.
 */
import { register } from 'node:module'
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { MessageChannel } from 'node:worker_threads'
import type { MessagePort } from 'node:worker_threads'

/** A full collection of this thread's heap, without starting the process with --expose-gc. */
export function forceGc(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

/** Loaded on the module-loader thread: collects that thread's heap when asked. */
const LOADER_GC =
  'data:text/javascript,' +
  encodeURIComponent(`
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
export function initialize ({ port }) {
  port.on('message', () => {
    setFlagsFromString('--expose-gc')
    runInNewContext('gc')()
    port.postMessage('collected')
  })
  port.unref()
}`)

/** Whether this process was started with module hooks (`--import tsx`, `--loader`), and so has a loader thread. */
function startedWithHooks(): boolean {
  const a = process.execArgv
  return a.some(
    (x, i) => (x === 'tsx' && a[i - 1] === '--import') || x === '--import=tsx' || /^--(experimental-)?loader\b/.test(x)
  )
}

export const HAS_LOADER_THREAD = startedWithHooks()

// Registered at start-up in every child with hooks alike (tsx has started the loader thread already).
const loader: MessagePort | undefined = !HAS_LOADER_THREAD
  ? undefined
  : (() => {
      const { port1, port2 } = new MessageChannel()
      register(LOADER_GC, import.meta.url, { data: { port: port2 }, transferList: [port2] })
      port1.unref()
      return port1
    })()

async function collectLoaderThread(port: MessagePort): Promise<boolean> {
  return await new Promise<boolean>(resolve => {
    const timer = setTimeout(() => {
      resolve(false)
    }, 10_000)
    port.once('message', () => {
      clearTimeout(timer)
      resolve(true)
    })
    port.postMessage('gc')
  })
}

const mb = (x: number): number => Math.round((x / 1048576) * 10) / 10

/**
 * Main-thread heap figures in MiB (totals, and what each V8 space holds in
 * use: old_space holds the bytecode, code_space the compiled code), after
 * collecting both heaps when `gc`.
 */
export async function memReport(gc: boolean): Promise<Record<string, unknown>> {
  let loaderCollected = false
  if (gc) {
    forceGc()
    if (loader !== undefined) loaderCollected = await collectLoaderThread(loader)
    forceGc()
  }
  const m = process.memoryUsage()
  const h = getHeapStatistics()
  const spacesUsedMb = Object.fromEntries(getHeapSpaceStatistics().map(s => [s.space_name, mb(s.space_used_size)]))
  return {
    rssMb: mb(m.rss),
    heapTotalMb: mb(m.heapTotal),
    heapUsedMb: mb(m.heapUsed),
    externalMb: mb(m.external),
    arrayBuffersMb: mb(m.arrayBuffers),
    mallocedMb: mb(h.malloced_memory),
    spacesUsedMb,
    loaderThread: HAS_LOADER_THREAD,
    loaderCollected
  }
}
