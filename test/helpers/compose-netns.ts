/**
 * A compose network without Docker: one network namespace per container,
 * each with an `eth0` veth whose other end sits on a bridge `br0` in a hub
 * namespace, addresses from one /24 of the subnet allocator, and a multicast
 * route so mDNS works between them (a bare namespace has no default route).
 * Nothing touches the host's own network namespace.
 *
 * Needs what `netnsSkip()` (netns.ts) checks.
 */
import { NetnsGroup, ip } from './netns.js'
import type { Subnet } from './netns.js'

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
  addHost(label: string): Host
  /** Deletes every namespace (processes inside keep running: stop them first). */
  destroy(): void
}

/** Creates the hub namespace and its bridge; hosts come with addHost. */
export function createBridgeNet(prefix = 'psc'): BridgeNet {
  const group = new NetnsGroup(prefix)
  const hosts: Host[] = []
  let hub: string
  let subnet: Subnet
  try {
    subnet = group.subnet()
    hub = group.add('hub')
    group.bridge(hub, 'br0')
  } catch (err) {
    group.destroy()
    throw err
  }
  return {
    id: group.id,
    hub,
    hosts,
    addHost(label) {
      const n = hosts.length + 1
      if (n > 250) throw new Error('at most 250 hosts on one bridge')
      const ns = group.add(String(n))
      const host: Host = { ns, ip: subnet.host(n), label }
      group.plug(hub, 'br0', `v${n}`, ns, 'eth0', `${host.ip}/24`)
      ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', 'eth0')
      hosts.push(host)
      return host
    },
    destroy() {
      group.destroy()
    }
  }
}

/** The argv prefix that runs a command inside `host`'s namespace. */
export function inHost(host: Host): string[] {
  return ['ip', 'netns', 'exec', host.ns]
}
