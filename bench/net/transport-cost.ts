/**
 * CPU per event of libp2p's transport (TCP, noise, yamux, gossipsub), and
 * what each frame of it is: N processes on this machine, each a libp2p node
 * with the swarm's stack (coalescedTcp, noise, yamux, gossipsub with
 * gossipOptions: mesh D = 3, flood publish, IDONTWANT), all connected to all,
 * publishing events of a given size in turn at a fixed total rate. No
 * replica: the events-topic validator accepts, so the CPU is the transport's
 * and gossipsub's alone.
 *
 * Every variant (a transport option changed) runs in turn, round by round,
 * so the ratios to `base` are of runs next to each other. Per process and
 * event it holds, each reports: CPU (user + system), socket writes, noise
 * frames sealed and opened, yamux frames sent and received (data, window
 * updates), gossipsub RPCs sent, copies of a message sent and received,
 * IDONTWANT and IHAVE/IWANT ids sent, and the publish-to-delivery latency.
 *
 * `node --import tsx bench/net/transport-cost.ts` with TC_N (10 processes),
 * TC_RATE (100 events/s over the swarm), TC_SECONDS (15), TC_SIZE (700 bytes
 * an event), TC_ROUNDS (3), TC_VARIANTS (base,...; see VARIANTS).
 */
import '../../src/polyfill.js'
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { Socket } from 'node:net'
import { loadavg } from 'node:os'
import { noise } from '@chainsafe/libp2p-noise'
import type { ICryptoInterface } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { gossipsub, TopicValidatorResult } from '@libp2p/gossipsub'
import type { GossipSub, GossipsubOpts } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { defaultCrypto, nodeCrypto } from '../../node_modules/@chainsafe/libp2p-noise/dist/src/crypto/index.js'
import { YamuxMuxer } from '../../node_modules/@chainsafe/libp2p-yamux/dist/src/muxer.js'
import { coalescedTcp } from '../../src/net/coalesced-tcp.js'
import { gossipOptions } from '../../src/net/gossip-config.js'
import { swarmYamux } from '../../src/net/swarm-yamux.js'
import { median, percentile, r2 } from '../common/util.js'

/** What a variant changes: the muxer, noise's ChaCha20-Poly1305, gossipsub options. */
interface Variant {
  readonly muxer?: 'yamux' | 'half' | 'frames' | 'both'
  readonly crypto?: 'default' | 'node'
  readonly gossip?: Partial<GossipsubOpts>
}

/** gossipsub's own IDONTWANT threshold, which a swarm node used before IDONTWANT_MIN_DATA_BYTES. */
const OLD_IDONTWANT = { idontwantMinDataSize: 512 }

const VARIANTS: Record<string, Variant> = {
  // As a swarm node was before: stock yamux, IDONTWANT from 512 bytes.
  base: { gossip: OLD_IDONTWANT },
  half: { muxer: 'half', gossip: OLD_IDONTWANT },
  frames: { muxer: 'frames', gossip: OLD_IDONTWANT },
  both: { muxer: 'both', gossip: OLD_IDONTWANT },
  nodecrypto: { crypto: 'node', gossip: OLD_IDONTWANT },
  noidontwant: { gossip: { idontwantMinDataSize: 1e9 } },
  noflood: { gossip: { ...OLD_IDONTWANT, floodPublish: false } },
  // As gossipOptions has it now: IDONTWANT from IDONTWANT_MIN_DATA_BYTES.
  now: {},
  'now+half': { muxer: 'half' },
  'now+both': { muxer: 'both' },
  'now+noflood': { gossip: { floodPublish: false } }
}

const TOPIC = 'tc-events'

type Counts = Record<string, number>

async function child(variant: Variant, index: number, n: number): Promise<void> {
  const counts: Counts = {}
  const add = (k: string, v = 1): void => {
    counts[k] = (counts[k] ?? 0) + v
  }
  const lat: number[] = []

  // Socket writes (each write or writev is a system call).
  const proto = Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown }
  const writeGeneric = proto._writeGeneric
  proto._writeGeneric = function (this: Socket, ...args: unknown[]) {
    add('socketWrites')
    return writeGeneric.apply(this, args)
  }
  // yamux frames, by type (0 data, 1 window update, 2 ping, 3 go away).
  const mux = YamuxMuxer.prototype as unknown as {
    sendFrame: (h: { type: number }, d?: unknown) => boolean
    handleFrame: (f: { header: { type: number } }) => void
  }
  const sendFrame = mux.sendFrame
  mux.sendFrame = function (this: unknown, h, d) {
    add(h.type === 0 ? 'yamuxDataOut' : h.type === 1 ? 'yamuxWindowOut' : 'yamuxOtherOut')
    return sendFrame.call(this, h, d)
  }
  const handleFrame = mux.handleFrame
  mux.handleFrame = function (this: unknown, f) {
    const t = f.header.type
    add(t === 0 ? 'yamuxDataIn' : t === 1 ? 'yamuxWindowIn' : 'yamuxOtherIn')
    handleFrame.call(this, f)
  }
  // noise frames: one seal, one open each.
  const base: ICryptoInterface = variant.crypto === 'node' ? { ...defaultCrypto, ...nodeCrypto } : defaultCrypto
  const crypto: ICryptoInterface = {
    ...base,
    chaCha20Poly1305Encrypt(plaintext, nonce, ad, k) {
      add('noiseSealed')
      add('noiseSealedBytes', plaintext.byteLength)
      return base.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k)
    },
    chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst) {
      add('noiseOpened')
      return base.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst)
    }
  }
  const m = variant.muxer ?? 'yamux'
  const muxer =
    m === 'yamux'
      ? yamux()
      : swarmYamux(
          {},
          { halfWindowUpdates: m === 'half' || m === 'both', coalesceFrames: m === 'frames' || m === 'both' }
        )

  const libp2p = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [coalescedTcp()],
    connectionEncrypters: [noise({ crypto })],
    streamMuxers: [muxer],
    connectionManager: { dialTimeout: 10_000, inboundUpgradeTimeout: 10_000, inboundConnectionThreshold: 100 },
    connectionMonitor: { abortConnectionOnPingFailure: false },
    services: {
      identify: identify(),
      ping: ping(),
      pubsub: gossipsub({ ...gossipOptions([TOPIC], 'StrictNoSign'), ...variant.gossip })
    }
  })
  const pubsub = libp2p.services.pubsub as GossipSub
  pubsub.topicValidators.set(TOPIC, () => TopicValidatorResult.Accept)
  pubsub.subscribe(TOPIC)

  interface Rpc {
    messages?: unknown[]
    control?: {
      idontwant?: { messageIDs?: unknown[] }[]
      ihave?: { messageIDs?: unknown[] }[]
      iwant?: { messageIDs?: unknown[] }[]
    }
  }
  const ids = (xs: { messageIDs?: unknown[] }[] | undefined): number =>
    (xs ?? []).reduce((s, x) => s + (x.messageIDs?.length ?? 0), 0)
  const countOut = (rpc: Rpc, peers: number): void => {
    add('rpcsOut', peers)
    add('copiesOut', (rpc.messages?.length ?? 0) * peers)
    add('idontwantOut', ids(rpc.control?.idontwant) * peers)
    add('ihaveOut', ids(rpc.control?.ihave) * peers)
    add('iwantOut', ids(rpc.control?.iwant) * peers)
  }
  const inside = pubsub as unknown as {
    sendRpc: (id: string, rpc: Rpc) => boolean
    sendRpcInBatch: (tosend: Set<string>, rpc: Rpc) => void
    handleReceivedRpc: (from: unknown, rpc: Rpc) => Promise<void>
  }
  const sendRpc = inside.sendRpc.bind(pubsub)
  inside.sendRpc = (id, rpc) => {
    const sent = sendRpc(id, rpc)
    if (sent) countOut(rpc, 1)
    return sent
  }
  const sendRpcInBatch = inside.sendRpcInBatch.bind(pubsub)
  inside.sendRpcInBatch = (tosend, rpc) => {
    sendRpcInBatch(tosend, rpc)
    countOut(rpc, tosend.size)
  }
  const handleReceivedRpc = inside.handleReceivedRpc.bind(pubsub)
  inside.handleReceivedRpc = async (from, rpc) => {
    add('rpcsIn')
    add('copiesIn', rpc.messages?.length ?? 0)
    add('idontwantIn', ids(rpc.control?.idontwant))
    await handleReceivedRpc(from, rpc)
  }
  pubsub.addEventListener('message', evt => {
    if (evt.detail.topic !== TOPIC) return
    add('delivered')
    const d = evt.detail.data
    lat.push(Date.now() - new DataView(d.buffer, d.byteOffset, 8).getFloat64(0))
  })

  const send = (msg: Record<string, unknown>): void => {
    process.send?.(msg)
  }
  let cpu0 = process.cpuUsage()
  process.on('message', (msg: Record<string, unknown>) => {
    void (async () => {
      if (msg.cmd === 'dial') {
        for (const a of msg.addrs as string[]) await libp2p.dial(multiaddr(a)).catch(() => undefined)
        send({ cmd: 'dialed' })
      } else if (msg.cmd === 'state') {
        send({
          cmd: 'state',
          topicPeers: pubsub.getSubscribers(TOPIC).length,
          mesh: (pubsub as unknown as { getMeshPeers(t: string): string[] }).getMeshPeers(TOPIC).length
        })
      } else if (msg.cmd === 'go') {
        for (const k of Object.keys(counts)) delete counts[k]
        lat.length = 0
        cpu0 = process.cpuUsage()
        const { rate, seconds, size } = msg as unknown as { rate: number; seconds: number; size: number }
        // This process publishes every n-th event of the swarm's sequence, at the swarm's rate.
        const total = Math.round(rate * seconds)
        const t0 = Date.now()
        for (let i = index; i < total; i += n) {
          const wait = t0 + (i * 1000) / rate - Date.now()
          if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
          const data = new Uint8Array(size)
          globalThis.crypto.getRandomValues(data.subarray(8))
          new DataView(data.buffer).setFloat64(0, Date.now())
          await pubsub.publish(TOPIC, data)
          add('published')
        }
        send({ cmd: 'published' })
      } else if (msg.cmd === 'report') {
        const c = process.cpuUsage(cpu0)
        send({ cmd: 'report', counts: { ...counts }, cpuMs: (c.user + c.system) / 1000, lat: [...lat] })
      } else if (msg.cmd === 'stop') {
        await libp2p.stop()
        process.exit(0)
      }
    })()
  })
  send({ cmd: 'ready', addrs: libp2p.getMultiaddrs().map(a => a.toString()) })
}

interface Kid {
  readonly proc: ChildProcess
  readonly addrs: string[]
  next(cmd: string): Promise<Record<string, unknown>>
}

async function spawnKid(name: string, index: number, n: number): Promise<Kid> {
  const proc = fork(import.meta.filename, ['child', name, String(index), String(n)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  const queue: Record<string, unknown>[] = []
  const waiting: ((m: Record<string, unknown>) => void)[] = []
  proc.on('message', (m: Record<string, unknown>) => {
    const w = waiting.findIndex(() => true)
    if (w >= 0) waiting.splice(w, 1)[0]?.(m)
    else queue.push(m)
  })
  const next = async (cmd: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const m = queue.shift() ?? (await new Promise<Record<string, unknown>>(resolve => waiting.push(resolve)))
      if (m.cmd === cmd) return m
    }
  }
  const ready = await next('ready')
  return { proc, addrs: ready.addrs as string[], next }
}

const env = (k: string, d: number): number => (process.env[k] === undefined ? d : Number(process.env[k]))

/** One variant's run: start, connect all to all, wait for the mesh, publish, drain, read the counts. */
async function runVariant(name: string, n: number, rate: number, seconds: number, size: number) {
  const kids = await Promise.all(Array.from({ length: n }, async (_, i) => await spawnKid(name, i, n)))
  for (let i = 1; i < n; i++) {
    const k = kids[i] as Kid
    k.proc.send({ cmd: 'dial', addrs: kids.slice(0, i).map(x => x.addrs[0]) })
    await k.next('dialed')
  }
  const deadline = Date.now() + 30_000
  let states: Record<string, unknown>[] = []
  for (;;) {
    await new Promise(resolve => setTimeout(resolve, 1000))
    states = await Promise.all(
      kids.map(async k => {
        k.proc.send({ cmd: 'state' })
        return await k.next('state')
      })
    )
    if (states.every(s => s.topicPeers === n - 1 && (s.mesh as number) >= 2) || Date.now() > deadline) break
  }
  // Let the mesh settle past a heartbeat or two.
  await new Promise(resolve => setTimeout(resolve, 3000))
  const la0 = loadavg()[0] ?? 0
  for (const k of kids) k.proc.send({ cmd: 'go', rate, seconds, size })
  await Promise.all(kids.map(async k => await k.next('published')))
  await new Promise(resolve => setTimeout(resolve, 3000))
  const reports = await Promise.all(
    kids.map(async k => {
      k.proc.send({ cmd: 'report' })
      return await k.next('report')
    })
  )
  for (const k of kids) k.proc.send({ cmd: 'stop' })
  await Promise.all(kids.map(async k => await new Promise(resolve => k.proc.once('exit', resolve))))
  const events = Math.round(rate * seconds)
  const per = (r: Record<string, unknown>, k: string): number => ((r.counts as Counts)[k] ?? 0) / events
  const keys = [
    'socketWrites',
    'noiseSealed',
    'noiseOpened',
    'yamuxDataOut',
    'yamuxWindowOut',
    'yamuxDataIn',
    'yamuxWindowIn',
    'rpcsOut',
    'rpcsIn',
    'copiesOut',
    'copiesIn',
    'idontwantOut',
    'ihaveOut',
    'iwantOut'
  ]
  const perEvent: Record<string, number> = {}
  for (const k of keys) perEvent[k] = r2(median(reports.map(r => per(r, k))))
  const held = reports.map(r => ((r.counts as Counts).delivered ?? 0) + ((r.counts as Counts).published ?? 0))
  const lat = reports.flatMap(r => r.lat as number[])
  return {
    variant: name,
    mesh: states.map(s => s.mesh),
    delivered: `${held.reduce((a, b) => a + b, 0)} of ${events * n}`,
    cpuMsPerEventHeld: r2(median(reports.map((r, i) => (r.cpuMs as number) / Math.max(1, held[i] ?? 0)))),
    perEventPerProcess: perEvent,
    noiseBytesPerSeal: r2(median(reports.map(r => per(r, 'noiseSealedBytes') / Math.max(1e-9, per(r, 'noiseSealed'))))),
    latencyMs: { p50: median(lat), p99: percentile(lat, 99) },
    load: [r2(la0), r2(loadavg()[0] ?? 0)]
  }
}

async function main(): Promise<void> {
  const n = env('TC_N', 10)
  const rate = env('TC_RATE', 100)
  const seconds = env('TC_SECONDS', 15)
  const size = env('TC_SIZE', 700)
  const rounds = env('TC_ROUNDS', 3)
  const names = (process.env.TC_VARIANTS ?? 'base,half,frames,both').split(',').filter(Boolean)
  for (const v of names) if (VARIANTS[v] === undefined) throw new Error(`unknown variant ${v}`)
  const results: Awaited<ReturnType<typeof runVariant>>[] = []
  for (let r = 0; r < rounds; r++) {
    for (const v of names) {
      const res = await runVariant(v, n, rate, seconds, size)
      console.log(JSON.stringify({ round: r + 1, ...res }))
      results.push(res)
    }
  }
  const cpu = (v: string): number => median(results.filter(x => x.variant === v).map(x => x.cpuMsPerEventHeld))
  const lat = (v: string): number => median(results.filter(x => x.variant === v).map(x => x.latencyMs.p50))
  const summary = names.map(v => ({
    variant: v,
    cpuMsPerEventHeld: r2(cpu(v)),
    ratioToBase: names.includes('base') ? r2(cpu(v) / cpu('base')) : null,
    latencyP50Ms: r2(lat(v))
  }))
  console.log(JSON.stringify({ n, rate, seconds, size, rounds, summary }))
}

if (process.argv[2] === 'child') {
  const [name, index, n] = process.argv.slice(3)
  await child(VARIANTS[name ?? 'base'] ?? {}, Number(index), Number(n))
} else {
  await main()
}
