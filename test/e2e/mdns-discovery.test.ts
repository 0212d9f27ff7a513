/**
 * mDNS discovery between real processes, with no bootstrap address at all,
 * inside private network namespaces (so the test neither sees nor disturbs
 * the host's LAN):
 *   (a) two processes in one `unshare -n` namespace, on loopback;
 *   (b) three "hosts" (namespaces) joined by veth pairs to a bridge in a
 *       fourth namespace, each listening on every interface, as compose
 *       containers do.
 * Needs root, iproute2 and util-linux (`unshare`); skipped, saying why,
 * elsewhere.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { helperPath, spawnNetChild, stopNetChildren } from '../helpers/net-child.js'
import { NetnsGroup, ip, netnsSkip } from '../helpers/netns.js'
import { waitUntil } from '../helpers/wait.js'
import type { NetChild } from '../helpers/net-child.js'

const why = netnsSkip('the mDNS namespace tests', ['unshare'])

const CHILD = helperPath('net-mdns-child.ts')
const DISCOVERY_DEADLINE_MS = 40_000

interface Report {
  event: string
  tag: string
  peerId?: string
  peers?: string[]
}

function reports(child: NetChild): Report[] {
  return child.lines.flatMap(l => {
    try {
      return [JSON.parse(l) as Report]
    } catch {
      return []
    }
  })
}

/** The peer ids each tag reported last, by tag. */
function lastPeers(child: NetChild): Map<string, { peerId: string; peers: string[] }> {
  const out = new Map<string, { peerId: string; peers: string[] }>()
  for (const r of reports(child)) {
    if ((r.event === 'ready' || r.event === 'peers') && r.peerId !== undefined) {
      out.set(r.tag, { peerId: r.peerId, peers: r.peers ?? out.get(r.tag)?.peers ?? [] })
    }
  }
  return out
}

/** Waits until every tag in `tags` is connected to every other, as reported on the children's stdout. */
async function fullMesh(children: NetChild[], tags: string[]): Promise<void> {
  await waitUntil(
    `a full mesh of ${tags.join(',')} by mDNS`,
    () => {
      const state = new Map<string, { peerId: string; peers: string[] }>()
      for (const c of children) for (const [tag, s] of lastPeers(c)) state.set(tag, s)
      const ids = tags.map(t => state.get(t)?.peerId)
      const done =
        ids.every(id => id !== undefined) &&
        tags.every(t => {
          const mine = state.get(t)
          return mine !== undefined && ids.every(id => id === mine.peerId || mine.peers.includes(id as string))
        })
      if (!done) throw new Error(`peers so far: ${JSON.stringify([...state])}`)
      return true
    },
    DISCOVERY_DEADLINE_MS
  ).catch((err: Error) => {
    const stderr = children.map(c => c.stderr().slice(-1000)).join(' | ')
    throw new Error(`${err.message}; stderr: ${stderr}`)
  })
}

function childCommand(tag: string, extra: string[] = []): string[] {
  return [
    process.execPath,
    '--import',
    'tsx',
    CHILD,
    '--tag',
    tag,
    '--interval',
    '1000',
    '--parent',
    String(process.pid),
    ...extra
  ]
}

function sh(argv: string[]): string {
  return argv.map(a => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
}

afterEach(async () => {
  await stopNetChildren()
})

describe.skipIf(why !== undefined)('mDNS discovery in network namespaces', () => {
  it('(a) two processes in one namespace find each other on loopback', async () => {
    // Background jobs of a non-interactive shell get /dev/null as stdin unless
    // told otherwise: hand them the shell's stdin (fd 3), so closing it stops them.
    const script = [
      'ip link set lo up',
      'ip link set lo multicast on',
      '(ip route add 224.0.0.0/4 dev lo 2>/dev/null || true)',
      'exec 3<&0',
      `{ ${sh(childCommand('a'))} <&3 & ${sh(childCommand('b'))} <&3 & wait; }`
    ].join(' && ')
    const ns = spawnNetChild('unshare', ['-n', 'sh', '-c', script])
    await fullMesh([ns], ['a', 'b'])
    const exit = await ns.stop(10_000)
    expect(
      reports(ns)
        .filter(r => r.event === 'stopped')
        .map(r => r.tag)
        .sort()
    ).toEqual(['a', 'b'])
    expect(exit.code).toBe(0)
  })

  describe('(b) three hosts on a bridge', () => {
    const group = new NetnsGroup('psm')
    const hosts: Array<{ tag: string; ns: string; ip: string }> = []
    let prefix = ''

    beforeAll(() => {
      const subnet = group.subnet()
      prefix = `/ip4/${subnet.prefix}.`
      const bridgeNs = group.add('br')
      group.bridge(bridgeNs, 'br0')
      for (const i of [1, 2, 3]) {
        const h = { tag: `h${i}`, ns: group.add(`h${i}`), ip: subnet.host(i) }
        group.plug(bridgeNs, 'br0', `v${i}`, h.ns, 'eth0', `${h.ip}/24`)
        // No default route in a bare namespace: multicast needs its own.
        ip('-n', h.ns, 'route', 'add', '224.0.0.0/4', 'dev', 'eth0')
        hosts.push(h)
      }
    })

    afterAll(async () => {
      await stopNetChildren()
      group.destroy()
    })

    it('discover each other by mDNS alone and connect over the bridge', async () => {
      const children = hosts.map(h =>
        spawnNetChild('ip', ['netns', 'exec', h.ns, ...childCommand(h.tag, ['--listen', '/ip4/0.0.0.0/tcp/4001'])])
      )
      await fullMesh(
        children,
        hosts.map(h => h.tag)
      )
      // Everyone listens on the same port, as compose services do: the dials went over the bridge, not to our own loopback.
      for (const c of children) {
        const ready = reports(c).find(r => r.event === 'ready') as Report & { addresses: string[] }
        expect(ready.addresses.some(a => a.startsWith(prefix))).toBe(true)
      }
      const exits = await Promise.all(children.map(async c => c.stop(10_000)))
      expect(exits.map(e => e.code)).toEqual([0, 0, 0])
    })
  })
})
