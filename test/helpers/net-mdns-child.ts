/**
 * A child process for the mDNS tests: one swarm node with mDNS on and no
 * bootstrap, reporting what it is connected to as JSON lines:
 *
 *   {"event":"ready","tag":"h1","peerId":"12D3...","addresses":[...]}
 *   {"event":"peers","tag":"h1","peerId":"12D3...","peers":["12D3...", ...]}   (on every change)
 *   {"event":"stopped","tag":"h1"}
 *
 * Run as `node --import tsx test/helpers/net-mdns-child.ts --tag h1
 * [--swarm NAME] [--listen MULTIADDR] [--interval MS] [--parent PID]`.
 * It stops its node and exits when stdin closes, on SIGTERM/SIGINT, or when
 * the --parent process is gone, so no node outlives the test run.
 */
import '../../src/polyfill.js'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { createSwarmNode } from '../../src/net/node.js'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback
}

function print(obj: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`)
}

async function main(): Promise<void> {
  const tag = arg('tag', String(process.pid))
  const parent = Number(arg('parent', '0'))
  const node = await createSwarmNode({
    privateKey: await generateKeyPair('Ed25519'),
    swarm: arg('swarm', 'mdns-test'),
    listen: [arg('listen', '/ip4/0.0.0.0/tcp/0')],
    bootstrap: [],
    mdns: true,
    mdnsIntervalMs: Number(arg('interval', '1000')),
    eventValidator: () => 'accept'
  })
  const report = (): void => {
    print({ event: 'peers', tag, peerId: node.peerId, peers: node.connectedPeers().sort() })
  }
  node.onPeerConnected(report)
  node.onPeerDisconnected(report)
  print({ event: 'ready', tag, peerId: node.peerId, addresses: node.addresses() })

  let stopping = false
  const watchdog = setInterval(() => {
    if (parent > 0) {
      try {
        process.kill(parent, 0)
      } catch {
        void stop()
      }
    }
  }, 1_000)
  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    clearInterval(watchdog)
    await node.stop()
    print({ event: 'stopped', tag })
    process.stdin.pause()
    process.stdin.destroy()
  }
  process.stdin.on('end', () => {
    void stop()
  })
  process.stdin.on('error', () => {
    void stop()
  })
  process.stdin.resume()
  process.once('SIGTERM', () => {
    void stop()
  })
  process.once('SIGINT', () => {
    void stop()
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
