/**
 * Two LAN segments that can be cut apart: hosts (network namespaces) on
 * bridge `brA` or `brB` in a hub namespace, the two bridges joined by one
 * veth pair. `cut()` takes that link down: each side still talks within
 * itself, nothing crosses. `heal()` brings it back. Both sides share one /24
 * from the subnet allocator. Needs what `netnsSkip()` (netns.ts) checks.
 */
import { NetnsGroup, ip } from './netns.js'

export interface PartitionNet {
  addHost: (side: 'A' | 'B') => { ns: string; ip: string }
  cut: () => void
  heal: () => void
  destroy: () => void
}

/** Bridges brA and brB in namespace `hub`, joined by the veth pair ab0/ab1 (the link `cut` takes down). */
export function addTwoBridges(group: NetnsGroup, hub: string): void {
  for (const br of ['brA', 'brB']) group.bridge(hub, br)
  ip('-n', hub, 'link', 'add', 'ab0', 'type', 'veth', 'peer', 'name', 'ab1')
  ip('-n', hub, 'link', 'set', 'ab0', 'master', 'brA')
  ip('-n', hub, 'link', 'set', 'ab1', 'master', 'brB')
  ip('-n', hub, 'link', 'set', 'ab0', 'up')
  ip('-n', hub, 'link', 'set', 'ab1', 'up')
}

export function createPartitionNet(): PartitionNet {
  const group = new NetnsGroup('pp')
  try {
    const lan = group.subnet()
    const hub = group.add('hub')
    addTwoBridges(group, hub)
    let n = 0
    return {
      addHost(side) {
        n++
        const ns = group.add(String(n))
        const addr = lan.host(n)
        group.plug(hub, `br${side}`, `v${n}`, ns, 'eth0', `${addr}/24`)
        return { ns, ip: addr }
      },
      cut() {
        ip('-n', hub, 'link', 'set', 'ab0', 'down')
      },
      heal() {
        ip('-n', hub, 'link', 'set', 'ab0', 'up')
      },
      destroy() {
        group.destroy()
      }
    }
  } catch (err) {
    group.destroy()
    throw err
  }
}
