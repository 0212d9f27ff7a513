/**
 * mDNS discovery between real processes, with no bootstrap address at all,
 * inside private network namespaces (so the test neither sees nor disturbs
 * the host's LAN):
 *   (a) two processes in one `unshare -n` namespace, on loopback;
 *   (b) three "hosts" (namespaces) joined by veth pairs to a bridge in a
 *       fourth namespace, each listening on every interface, as compose
 *       containers do.
 * Needs root (or CAP_NET_ADMIN) and iproute2 + util-linux; skipped, with a
 * message, only when `ip` or `unshare` is missing.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { helperPath, spawnNetChild, stopNetChildren } from '../helpers/net-child.js'
import { waitUntil } from '../helpers/wait.js'
import type { NetChild } from '../helpers/net-child.js'

function hasTool (cmd: string, arg: string): boolean {
  const r = spawnSync(cmd, [arg], { stdio: 'ignore' })
  return r.error === undefined && r.status === 0
}

const missing = [['ip', '-V'], ['unshare', '--version']].filter(([cmd, arg]) => !hasTool(cmd as string, arg as string)).map(([cmd]) => cmd)
if (missing.length > 0) {
  console.warn(`skipping the mDNS namespace tests: ${missing.join(' and ')} not found (install iproute2 and util-linux, run as root)`)
}

const CHILD = helperPath('net-mdns-child.ts')
const DISCOVERY_DEADLINE_MS = 40_000

interface Report { event: string, tag: string, peerId?: string, peers?: string[] }

function reports (child: NetChild): Report[] {
  return child.lines.flatMap((l) => {
    try { return [JSON.parse(l) as Report] } catch { return [] }
  })
}

/** The peer ids each tag reported last, by tag. */
function lastPeers (child: NetChild): Map<string, { peerId: string, peers: string[] }> {
  const out = new Map<string, { peerId: string, peers: string[] }>()
  for (const r of reports(child)) {
    if ((r.event === 'ready' || r.event === 'peers') && r.peerId !== undefined) {
      out.set(r.tag, { peerId: r.peerId, peers: r.peers ?? out.get(r.tag)?.peers ?? [] })
    }
  }
  return out
}

/** Waits until every tag in `tags` is connected to every other, as reported on the children's stdout. */
async function fullMesh (children: NetChild[], tags: string[]): Promise<void> {
  await waitUntil(`a full mesh of ${tags.join(',')} by mDNS`, () => {
    const state = new Map<string, { peerId: string, peers: string[] }>()
    for (const c of children) for (const [tag, s] of lastPeers(c)) state.set(tag, s)
    const ids = tags.map((t) => state.get(t)?.peerId)
    const done = ids.every((id) => id !== undefined) && tags.every((t) => {
      const mine = state.get(t)
      return mine !== undefined && ids.every((id) => id === mine.peerId || mine.peers.includes(id as string))
    })
    if (!done) throw new Error(`peers so far: ${JSON.stringify([...state])}`)
    return true
  }, DISCOVERY_DEADLINE_MS).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${children.map((c) => c.stderr().slice(-1000)).join(' | ')}`)
  })
}

function childCommand (tag: string, extra: string[] = []): string[] {
  return [process.execPath, '--import', 'tsx', CHILD, '--tag', tag, '--interval', '1000', '--parent', String(process.pid), ...extra]
}

function sh (argv: string[]): string {
  return argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
}

afterEach(async () => { await stopNetChildren() })

describe.skipIf(missing.length > 0)('mDNS discovery in network namespaces', () => {
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
    expect(reports(ns).filter((r) => r.event === 'stopped').map((r) => r.tag).sort()).toEqual(['a', 'b'])
    expect(exit.code).toBe(0)
  })

  describe('(b) three hosts on a bridge', () => {
    const id = randomBytes(3).toString('hex')
    const bridgeNs = `psm-${id}-br`
    const hosts = [1, 2, 3].map((i) => ({ tag: `h${i}`, ns: `psm-${id}-h${i}`, ip: `10.213.${parseInt(id.slice(0, 2), 16)}.${i}` }))
    const made: string[] = []

    const ip = (...args: string[]): void => {
      const r = spawnSync('ip', args, { encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr}`)
    }

    beforeAll(() => {
      ip('netns', 'add', bridgeNs)
      made.push(bridgeNs)
      ip('-n', bridgeNs, 'link', 'set', 'lo', 'up')
      ip('-n', bridgeNs, 'link', 'add', 'br0', 'type', 'bridge')
      ip('-n', bridgeNs, 'link', 'set', 'br0', 'up')
      hosts.forEach((h, i) => {
        ip('netns', 'add', h.ns)
        made.push(h.ns)
        ip('-n', bridgeNs, 'link', 'add', `v${i + 1}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.ns)
        ip('-n', bridgeNs, 'link', 'set', `v${i + 1}`, 'master', 'br0')
        ip('-n', bridgeNs, 'link', 'set', `v${i + 1}`, 'up')
        ip('-n', h.ns, 'link', 'set', 'lo', 'up')
        ip('-n', h.ns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0')
        ip('-n', h.ns, 'link', 'set', 'eth0', 'up')
        // No default route in a bare namespace: multicast needs its own.
        ip('-n', h.ns, 'route', 'add', '224.0.0.0/4', 'dev', 'eth0')
      })
    })

    afterAll(async () => {
      await stopNetChildren()
      for (const ns of made.reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    })

    it('discover each other by mDNS alone and connect over the bridge', async () => {
      const children = hosts.map((h) => spawnNetChild('ip', ['netns', 'exec', h.ns, ...childCommand(h.tag, ['--listen', '/ip4/0.0.0.0/tcp/4001'])]))
      await fullMesh(children, hosts.map((h) => h.tag))
      // Everyone listens on the same port, as compose services do: the dials went over the bridge, not to our own loopback.
      for (const c of children) {
        const ready = reports(c).find((r) => r.event === 'ready') as Report & { addresses: string[] }
        expect(ready.addresses.some((a) => a.startsWith('/ip4/10.213.'))).toBe(true)
      }
      const exits = await Promise.all(children.map(async (c) => c.stop(10_000)))
      expect(exits.map((e) => e.code)).toEqual([0, 0, 0])
    })
  })
})
