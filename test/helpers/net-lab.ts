/**
 * Network namespaces for the resilience scenarios that need real network
 * cuts or a forced path (partition, delay proxy), and real node processes in
 * them (`ip netns exec <ns> node dist/src/cli.js ...`).
 *
 * Every host is a namespace with a management link to this (root)
 * namespace, on a /24 M of its own from the subnet allocator (netns.ts):
 * `mg0` = M.2, the root end M.1. The test reaches a node's --http there, and
 * the node reaches the fake LLM server (in this process, on 127.0.0.1)
 * through a plain forwarder on M.1.
 * The management link has no default route: a host cannot reach another
 * host's management address, so it carries no swarm traffic.
 *
 * - LAN hosts (`side: 'A' | 'B'`) also get `eth0` = L.n/24 (one /24 L for the
 *   lab's LAN) on bridge brA or brB of a hub namespace, the bridges joined by
 *   one veth pair: `cut()` takes it down, `heal()` brings it back (as
 *   partition-net.ts).
 * - Star hosts (no side) have the management link only: the one way to
 *   another host is a proxy listening on the root end (see tcp-proxy.ts).
 *
 * Needs what `netnsSkip()` (netns.ts) checks.
 */
import { NetnsGroup, ip } from './netns.js'
import { addTwoBridges } from './partition-net.js'
import type { Subnet } from './netns.js'

export interface LabHost {
  readonly ns: string
  readonly n: number
  /** The host's management address (its --http listens here). */
  readonly mgmtIp: string
  /** The root namespace's end of the management link (proxies listen here for this host). */
  readonly rootIp: string
  /** The LAN address, for hosts on a side. */
  readonly lanIp: string | undefined
  readonly side: 'A' | 'B' | undefined
}

export interface Lab {
  addHost: (side?: 'A' | 'B') => LabHost
  cut: () => void
  heal: () => void
  destroy: () => void
}

export function createLab(): Lab {
  const group = new NetnsGroup('rl')
  let hub: string | undefined
  let lan: Subnet | undefined
  let n = 0

  const ensureHub = (): string => {
    if (hub !== undefined) return hub
    lan = group.subnet()
    hub = group.add('hub')
    addTwoBridges(group, hub)
    return hub
  }

  return {
    addHost(side) {
      n++
      if (n >= 200) throw new Error('too many hosts in one lab')
      const mgmt = group.subnet()
      const ns = group.add(String(n))
      const rootEnd = `rl${group.id}${n}`
      ip('link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', 'mg0', 'netns', ns)
      group.ownRootLink(rootEnd)
      ip('addr', 'add', `${mgmt.host(1)}/24`, 'dev', rootEnd)
      ip('link', 'set', rootEnd, 'up')
      ip('-n', ns, 'addr', 'add', `${mgmt.host(2)}/24`, 'dev', 'mg0')
      ip('-n', ns, 'link', 'set', 'mg0', 'up')
      let lanIp: string | undefined
      if (side !== undefined) {
        const h = ensureHub()
        lanIp = (lan as Subnet).host(n)
        group.plug(h, `br${side}`, `v${n}`, ns, 'eth0', `${lanIp}/24`)
      }
      return { ns, n, mgmtIp: mgmt.host(2), rootIp: mgmt.host(1), lanIp, side }
    },
    cut() {
      ip('-n', ensureHub(), 'link', 'set', 'ab0', 'down')
    },
    heal() {
      ip('-n', ensureHub(), 'link', 'set', 'ab0', 'up')
    },
    destroy() {
      group.destroy()
    }
  }
}
