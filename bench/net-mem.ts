/**
 * A child's answer to the footprint benchmark's `mem` command (bench/net-child.ts,
 * bench/net-cli.ts): this process's heap, optionally after a full collection.
 *
 * A process run through tsx (`npm start` is) has two V8 heaps: the main
 * thread's and that of the module-loader thread tsx's hooks run on. Each
 * gives the memory start-up grew back only when its own memory reducer runs,
 * 1-3 minutes after start (a drop of 15-45 MB and of 15-20 MB in RSS). The
 * collection here is of both, the same in every kind of child, so the
 * benchmark can start every process's window from the state it settles in
 * anyway, instead of from wherever each of its two collectors happens to be.
 */
import { register } from 'node:module'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { MessageChannel } from 'node:worker_threads'
import type { MessagePort } from 'node:worker_threads'

/** A full collection of this thread's heap, without starting the process with --expose-gc. */
export function forceGc (): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

/** Loaded on the module-loader thread: collects that thread's heap when asked. */
const LOADER_GC = 'data:text/javascript,' + encodeURIComponent(`
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

// Registered at start-up in every child alike (tsx has started the loader thread already).
const loader: MessagePort = (() => {
  const { port1, port2 } = new MessageChannel()
  register(LOADER_GC, import.meta.url, { data: { port: port2 }, transferList: [port2] })
  port1.unref()
  return port1
})()

async function collectLoaderThread (): Promise<boolean> {
  return await new Promise<boolean>(resolve => {
    const timer = setTimeout(() => { resolve(false) }, 10_000)
    loader.once('message', () => { clearTimeout(timer); resolve(true) })
    loader.postMessage('gc')
  })
}

const mb = (x: number): number => Math.round(x / 1048576 * 10) / 10

/** Main-thread heap figures in MiB, after collecting both heaps when `gc`. */
export async function memReport (gc: boolean): Promise<Record<string, number | boolean>> {
  let loaderCollected = false
  if (gc) {
    forceGc()
    loaderCollected = await collectLoaderThread()
    forceGc()
  }
  const m = process.memoryUsage()
  const h = getHeapStatistics()
  return { rssMb: mb(m.rss), heapTotalMb: mb(m.heapTotal), heapUsedMb: mb(m.heapUsed), externalMb: mb(m.external), mallocedMb: mb(h.malloced_memory), loaderCollected }
}
