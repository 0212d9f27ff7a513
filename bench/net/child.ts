/**
 * One process of the network benchmark:
 *
 *   node --import tsx bench/net/child.ts <peer|bare> '<ChildCfg JSON>'
 *
 * Prints `{"ev":"ready",...}` once listening, then answers JSON-line commands
 * on stdin with JSON lines on stdout (a reply carries the command's `rid`).
 * Every id that becomes available here (folded by a full peer, delivered by
 * bare gossipsub) is stamped with this process's wall clock (hiNow): all processes
 * share one machine's wall clock, so the parent can join these stamps with
 * the publisher's. Exits when stdin closes (so it never outlives the parent).
 */
import '../../src/polyfill.js'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { eventIdHex, hiNow, readFrames } from './proto.js'
import { memReport } from './mem.js'
import type { ChildCfg, NetImpl } from './proto.js'

const [mode, raw] = process.argv.slice(2)
const cfg = JSON.parse(raw ?? '{}') as ChildCfg
const out = (o: Record<string, unknown>): void => {
  process.stdout.write(JSON.stringify(o) + '\n')
}

let impl: NetImpl
if (mode === 'peer') impl = await (await import('./peer.js')).startFullPeer(cfg)
else if (mode === 'bare') impl = await (await import('./bare.js')).startBareNode(cfg)
else throw new Error(`unknown mode ${mode ?? ''}: peer | bare`)

const recv = new Map<string, number>()
let watching = false
let watchQueued = false
let caught = false
const emitHash = (): void => {
  watchQueued = false
  const hash = impl.hash()
  out({ ev: 'hash', t: hiNow(), held: impl.held(), hash })
}
impl.onDeliver(ids => {
  const t = hiNow()
  for (const id of ids) if (!recv.has(id)) recv.set(id, t)
  if (cfg.expect !== undefined && !caught && impl.held() >= cfg.expect) {
    caught = true
    const hash = impl.hash()
    out({ ev: 'caught', tDone: Date.now(), tConn: impl.firstConnOpen(), held: impl.held(), hash, state: impl.state() })
  }
  if (watching && !watchQueued) {
    watchQueued = true
    setImmediate(emitHash)
  }
})

const files = new Map<string, { frames: Uint8Array[]; ids: string[] }>()
function framesOf(file: string): { frames: Uint8Array[]; ids: string[] } {
  let f = files.get(file)
  if (f === undefined) {
    const frames = readFrames(file)
    f = { frames, ids: frames.map(eventIdHex) }
    files.set(file, f)
  }
  return f
}

let stopping = false
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true
    const timer = setTimeout(() => process.exit(code), 3_000)
    try {
      await impl.stop()
    } catch {
      /* exiting anyway */
    }
    clearTimeout(timer)
  }
  process.exit(code)
}

type Cmd = { cmd: string; rid?: number } & Record<string, unknown>

async function handle(c: Cmd): Promise<Record<string, unknown>> {
  switch (c.cmd) {
    case 'state':
      return { ...impl.state(), recv: recv.size, held: impl.held() }
    case 'dial': {
      const addrs = c.addrs as string[]
      const results = await Promise.allSettled(
        addrs.map(async a => {
          await impl.dial(a)
        })
      )
      return {
        failed: results.filter(r => r.status === 'rejected').map(r => String((r as PromiseRejectedResult).reason))
      }
    }
    case 'load': {
      if (impl.load === undefined) throw new Error('this kind of node cannot load events')
      const { frames } = framesOf(c.file as string)
      const t0 = performance.now()
      const r = impl.load(frames)
      return { ...r, ms: performance.now() - t0, hash: impl.hash(), held: impl.held() }
    }
    case 'clear':
      recv.clear()
      return {}
    case 'publish': {
      // Paced on an absolute schedule: event i is due at start + i / rate.
      const { frames, ids } = framesOf(c.file as string)
      const from = (c.from as number | undefined) ?? 0
      const to = (c.to as number | undefined) ?? frames.length
      const rate = c.rate as number
      const times: number[] = []
      const start = Date.now() + 20
      for (let i = from; i < to; i++) {
        const wait = start + ((i - from) * 1000) / rate - Date.now()
        if (wait > 0) await sleep(wait)
        times.push(hiNow())
        await impl.publish(ids[i] as string, frames[i] as Uint8Array)
      }
      return { times }
    }
    case 'blast': {
      // As fast as the publisher can: awaits each publish, yields to I/O every 16 events.
      const { frames, ids } = framesOf(c.file as string)
      const from = (c.from as number | undefined) ?? 0
      const to = (c.to as number | undefined) ?? frames.length
      const times: number[] = []
      for (let i = from; i < to; i++) {
        times.push(hiNow())
        await impl.publish(ids[i] as string, frames[i] as Uint8Array)
        if ((i - from) % 16 === 15) await new Promise(resolve => setImmediate(resolve))
      }
      return { times }
    }
    case 'recv':
      return { recv: Object.fromEntries(recv) }
    case 'mem':
      return await memReport(c.gc === true)
    case 'watch':
      watching = true
      emitHash()
      return {}
    case 'exit':
      void stop(0)
      return {}
    default:
      throw new Error(`unknown command ${c.cmd}`)
  }
}

createInterface({ input: process.stdin })
  .on('line', line => {
    let c: Cmd
    try {
      c = JSON.parse(line) as Cmd
    } catch {
      out({ ev: 'error', error: `bad command line ${line.slice(0, 200)}` })
      return
    }
    handle(c).then(
      r => {
        out({ ev: 'reply', rid: c.rid, ...r })
      },
      (err: Error) => {
        out({ ev: 'reply', rid: c.rid, error: err.stack ?? err.message })
      }
    )
  })
  .on('close', () => {
    void stop(0)
  })
process.on('SIGTERM', () => {
  void stop(0)
})

out({ ev: 'ready', pid: process.pid, peerId: impl.peerId, addrs: impl.addrs() })
