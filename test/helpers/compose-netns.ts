/**
 * A compose network without Docker: one network namespace per container,
 * each with an `eth0` veth whose other end sits on a bridge `br0` in a hub
 * namespace, addresses from one /24, and a multicast route so mDNS works
 * between them (a bare namespace has no default route). Nothing touches the
 * host's own network namespace.
 *
 * Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'

export interface Host {
  /** Namespace name (`ip netns exec <ns> ...`). */
  readonly ns: string
  readonly ip: string
  readonly label: string
}

export interface BridgeNet {
  readonly id: string
  readonly hub: string
  readonly hosts: Host[]
  /** Adds a host on the bridge. */
  addHost (label: string): Host
  /** Deletes every namespace (processes inside keep running: stop them first). */
  destroy (): void
}

/** Why the namespace tests cannot run here, or undefined when they can. */
export function netnsUnavailable (): string | undefined {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'not root (network namespaces need CAP_NET_ADMIN): run the tests as root'
  const r = spawnSync('ip', ['-V'], { stdio: 'ignore' })
  if (r.error !== undefined || r.status !== 0) return '`ip` not found: install iproute2'
  return undefined
}

function ip (...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr || r.error?.message}`)
}

/** Creates the hub namespace and its bridge; hosts come with addHost. */
export function createBridgeNet (prefix = 'psc'): BridgeNet {
  const id = randomBytes(3).toString('hex')
  const hub = `${prefix}-${id}-hub`
  // 10.215.<random>.0/24: a subnet of our own, inside our own namespaces only.
  const subnet = `10.215.${parseInt(id.slice(0, 2), 16)}`
  const made: string[] = []
  const hosts: Host[] = []
  ip('netns', 'add', hub)
  made.push(hub)
  try {
    ip('-n', hub, 'link', 'set', 'lo', 'up')
    ip('-n', hub, 'link', 'add', 'br0', 'type', 'bridge')
    ip('-n', hub, 'link', 'set', 'br0', 'up')
  } catch (err) {
    for (const ns of made) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    throw err
  }
  return {
    id,
    hub,
    hosts,
    addHost (label) {
      const n = hosts.length + 1
      if (n > 250) throw new Error('at most 250 hosts on one bridge')
      const ns = `${prefix}-${id}-${n}`
      const host: Host = { ns, ip: `${subnet}.${n}`, label }
      ip('netns', 'add', ns)
      made.push(ns)
      ip('-n', hub, 'link', 'add', `v${n}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
      ip('-n', hub, 'link', 'set', `v${n}`, 'master', 'br0')
      ip('-n', hub, 'link', 'set', `v${n}`, 'up')
      ip('-n', ns, 'link', 'set', 'lo', 'up')
      ip('-n', ns, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0')
      ip('-n', ns, 'link', 'set', 'eth0', 'up')
      ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', 'eth0')
      hosts.push(host)
      return host
    },
    destroy () {
      for (const ns of made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    }
  }
}

/** The argv prefix that runs a command inside `host`'s namespace. */
export function inHost (host: Host): string[] {
  return ['ip', 'netns', 'exec', host.ns]
}
