import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseNodeArgs } from '../../src/runtime/config.js'
import { startPeer } from '../../src/app/peer.js'
import { signEvent } from '../../src/wire/sign.js'
import type { Peer } from '../../src/app/peer.js'
import type { PlanEvent } from '../../src/core/events.js'
import type { PrivateKey } from '@libp2p/interface'

/** In-process peers on 127.0.0.1 with their own temp data dirs; `stopAll` stops them and removes the dirs. */
export class PeerFleet {
  readonly peers: Peer[] = []
  private readonly dirs: string[] = []
  readonly root = mkdtempSync(join(tmpdir(), 'plan-swarm-peers-'))

  async start(
    name: string,
    args: string[] = [],
    opts: { dataDir?: string; syncIntervalMs?: number } = {}
  ): Promise<Peer> {
    const dir = opts.dataDir ?? join(this.root, name)
    this.dirs.push(dir)
    const config = parseNodeArgs(
      [
        '--role',
        'observer',
        '--swarm',
        'test',
        '--no-mdns',
        '--listen',
        '/ip4/127.0.0.1/tcp/0',
        '--data-dir',
        dir,
        ...args
      ],
      {}
    )
    const peer = await startPeer(config, { syncIntervalMs: opts.syncIntervalMs ?? 2_000, presenceIntervalMs: 1_000 })
    this.peers.push(peer)
    return peer
  }

  async stop(peer: Peer): Promise<void> {
    const i = this.peers.indexOf(peer)
    if (i >= 0) this.peers.splice(i, 1)
    await peer.stop()
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.peers.splice(0).map(async p => {
        await p.stop()
      })
    )
    rmSync(this.root, { recursive: true, force: true })
  }
}

/** Sign test events with their authors' keys and fold them into a peer as if they had arrived. */
export async function loadEvents(
  peer: Peer,
  events: readonly PlanEvent[],
  keys: ReadonlyMap<string, PrivateKey>
): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  for (const e of events) {
    const signed = await signEvent(e.env, keys.get(e.env.author) as PrivateKey)
    const r = peer.replica.ingest(signed.bytes, 'local')
    if (r.verdict !== 'accept') throw new Error(`test event not folded: ${r.why ?? ''} ${r.detail ?? ''}`)
    out.push(signed.bytes)
  }
  return out
}
