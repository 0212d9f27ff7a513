import { Worker } from 'node:worker_threads'

/**
 * /status polled from a worker thread: the bench's main thread runs two peers of its own (the client and author B),
 * whose event work would otherwise delay the poll's own timers and its reading of the answers. Posts the latencies
 * (ms) back when told to stop.
 */
const OFF_LOOP_POLLER = `
const { parentPort, workerData } = require('node:worker_threads')
const ms = []
let polling = true
parentPort.on('message', () => { polling = false })
;(async () => {
  let i = 0
  while (polling) {
    const url = workerData.urls[i++ % workerData.urls.length]
    const t = performance.now()
    try {
      await (await fetch(url + '/status', { signal: AbortSignal.timeout(30000) })).json()
      ms.push(performance.now() - t)
    } catch {
      ms.push(30000)
    }
    await new Promise(r => setTimeout(r, 250))
  }
  parentPort.postMessage(ms)
})()
`

/** Starts the worker poller; `stop` resolves to its latencies. */
export function pollOffLoop(urls: readonly string[]): { stop: () => Promise<number[]> } {
  const w = new Worker(OFF_LOOP_POLLER, { eval: true, workerData: { urls } })
  const done = new Promise<number[]>((resolve, reject) => {
    w.once('message', (ms: number[]) => {
      resolve(ms)
    })
    w.once('error', reject)
  })
  return {
    stop: async () => {
      w.postMessage('stop')
      const ms = await done
      await w.terminate()
      return ms
    }
  }
}
