/**
 * Native socket writes per gossip message, with @libp2p/tcp as it is and with
 * coalescedTcp (src/net/coalesced-tcp.ts): four gossipsub nodes over TCP,
 * noise and yamux in one process, fully connected, publishing 600 messages
 * of 400 bytes in turn. Counts the socket's write and writev requests (each a
 * system call) and the process's CPU per message, for the mode named.
 *
 * `node --import tsx bench/net/writes.ts plain|coalesced`
 */
import '../../src/polyfill.js'
import { Socket } from 'node:net'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { gossipsub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { tcp } from '@libp2p/tcp'
import { createLibp2p } from 'libp2p'
import { coalescedTcp } from '../../src/net/coalesced-tcp.js'

const MESSAGES = 600
const mode = process.argv[2] === 'coalesced' ? 'coalesced' : 'plain'
let writes = 0
const proto = Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown }
const inner = proto._writeGeneric
proto._writeGeneric = function (this: Socket, ...args: unknown[]) {
  writes++
  return inner.apply(this, args)
}
async function createNode() {
  return await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [mode === 'plain' ? tcp() : coalescedTcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: { identify: identify(), pubsub: gossipsub({ allowPublishToZeroTopicPeers: true }) }
  })
}
const nodes = await Promise.all([createNode(), createNode(), createNode(), createNode()])
for (const a of nodes) for (const b of nodes) if (a !== b) await a.dial(b.getMultiaddrs()).catch(() => undefined)
let got = 0
for (const n of nodes) {
  n.services.pubsub.subscribe('t')
  n.services.pubsub.addEventListener('message', () => got++)
}
await new Promise(resolve => setTimeout(resolve, 3000))
const w0 = writes
const t0 = process.cpuUsage()
for (let i = 0; i < MESSAGES; i++) {
  const data = new Uint8Array(400)
  data[0] = i & 255
  data[1] = i >> 8
  await (nodes[i % nodes.length] as (typeof nodes)[number]).services.pubsub.publish('t', data)
  if (i % 3 === 0) await new Promise(resolve => setImmediate(resolve))
}
const deadline = Date.now() + 20_000
while (got < MESSAGES * 3 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 50))
const cpu = process.cpuUsage(t0)
console.log(
  JSON.stringify({
    mode,
    delivered: `${got} of ${MESSAGES * 3}`,
    writesPerMessage: Math.round(((writes - w0) / MESSAGES) * 10) / 10,
    cpuMsPerMessage: Math.round(((cpu.user + cpu.system) / 1000 / MESSAGES) * 100) / 100
  })
)
await Promise.all(nodes.map(async n => await n.stop()))
