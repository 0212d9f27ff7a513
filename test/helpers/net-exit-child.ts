/**
 * A child process for the lifecycle test: starts three swarm nodes over TCP
 * on 127.0.0.1, gossips one event, stops them and then simply returns. It
 * never calls process.exit, so it ends only if stop() left no socket, timer
 * or handle behind. Prints `delivered`, then `stopped`.
 * Run as `node --import tsx test/helpers/net-exit-child.ts [--mdns]`.
 */
import '../../src/polyfill.js'
import { createSwarmNode } from '../../src/net/node.js'
import type { SwarmNode } from '../../src/net/node.js'
import { fakeEvent, idOf, newKey } from './net-nodes.js'
import { waitUntil } from './wait.js'

async function main(mdns: boolean): Promise<void> {
  const seen = new Set<string>()
  const start = async (bootstrap: string[]): Promise<SwarmNode> =>
    createSwarmNode({
      privateKey: await newKey(),
      swarm: 'exit-test',
      listen: ['/ip4/127.0.0.1/tcp/0'],
      bootstrap,
      mdns,
      presence: { role: 'observer', capabilities: [], load: 0, version: 'test' },
      eventValidator: bytes => {
        seen.add(idOf(bytes))
        return 'accept'
      }
    })
  const a = await start([])
  const b = await start([a.addresses()[0] as string])
  const c = await start([a.addresses()[0] as string])
  await waitUntil('subscriptions', () => a.eventTopicPeers().length === 2, 15_000)
  const ev = fakeEvent('exit')
  await b.publishEvent(ev.id, ev.bytes)
  await waitUntil('delivery', () => seen.has(ev.id), 15_000)
  process.stdout.write('delivered\n')
  await Promise.all([a.stop(), b.stop(), c.stop()])
  process.stdout.write('stopped\n')
}

main(process.argv.includes('--mdns')).catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
})
