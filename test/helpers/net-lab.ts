/**
 * Network namespaces for the resilience scenarios that need real network
 * cuts or a forced path (partition, delay proxy), and real node processes in
 * them (`ip netns exec <ns> node --import tsx src/cli.ts ...`).
 *
 * Every host is a namespace with a management link to this (root)
 * namespace: `mg0` = 10.M.n.2/24, the root end 10.M.n.1/24. The test
 * reaches a node's --http there, and the node reaches the fake LLM server
 * (in this process, on 127.0.0.1) through a plain forwarder on 10.M.n.1.
 * The management link has no default route: a host cannot reach another
 * host's management address, so it carries no swarm traffic.
 *
 * - LAN hosts (`side: 'A' | 'B'`) also get `eth0` = 10.M.200.n/24 on bridge
 *   brA or brB of a hub namespace, the bridges joined by one veth pair:
 *   `cut()` takes it down, `heal()` brings it back (as test/helpers/partition-net.ts).
 * - Star hosts (no side) have the management link only: the one way to
 *   another host is a proxy listening on the root end (see tcp-proxy.ts).
 *
 * Needs root and iproute2; `labUnavailable()` says why not, for skipIf.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { addTwoBridgeHub, ip } from './partition-net.js'

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

/** Why namespaces cannot be used here, or undefined when they can. */
export function labUnavailable (): string | undefined {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'not root (network namespaces need root)'
  if (spawnSync('ip', ['-V'], { stdio: 'ignore' }).status !== 0) return '`ip` (iproute2) not found'
  return undefined
}

export function createLab (): Lab {
  const id = randomBytes(3).toString('hex')
  // 10.M.0.0/16 with M in 100..179: other labs (partition-net uses 10.216.x) rarely collide.
  const m = 100 + (parseInt(id.slice(0, 4), 16) % 80)
  const made: string[] = []
  const rootLinks: string[] = []
  let hub: string | undefined
  let n = 0

  const ensureHub = (): string => {
    if (hub !== undefined) return hub
    hub = `rl-${id}-hub`
    made.push(hub)
    addTwoBridgeHub(hub)
    return hub
  }

  return {
    addHost (side) {
      n++
      if (n >= 200) throw new Error('too many hosts in one lab')
      const ns = `rl-${id}-${n}`
      ip('netns', 'add', ns)
      made.push(ns)
      ip('-n', ns, 'link', 'set', 'lo', 'up')
      const rootEnd = `rl${id}${n}`
      ip('link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', 'mg0', 'netns', ns)
      rootLinks.push(rootEnd)
      ip('addr', 'add', `10.${m}.${n}.1/24`, 'dev', rootEnd)
      ip('link', 'set', rootEnd, 'up')
      ip('-n', ns, 'addr', 'add', `10.${m}.${n}.2/24`, 'dev', 'mg0')
      ip('-n', ns, 'link', 'set', 'mg0', 'up')
      let lanIp: string | undefined
      if (side !== undefined) {
        const h = ensureHub()
        ip('-n', h, 'link', 'add', `v${n}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
        ip('-n', h, 'link', 'set', `v${n}`, 'master', `br${side}`)
        ip('-n', h, 'link', 'set', `v${n}`, 'up')
        lanIp = `10.${m}.200.${n}`
        ip('-n', ns, 'addr', 'add', `${lanIp}/24`, 'dev', 'eth0')
        ip('-n', ns, 'link', 'set', 'eth0', 'up')
      }
      return { ns, n, mgmtIp: `10.${m}.${n}.2`, rootIp: `10.${m}.${n}.1`, lanIp, side }
    },
    cut () { ip('-n', ensureHub(), 'link', 'set', 'ab0', 'down') },
    heal () { ip('-n', ensureHub(), 'link', 'set', 'ab0', 'up') },
    destroy () {
      for (const link of rootLinks.splice(0)) spawnSync('ip', ['link', 'del', link], { stdio: 'ignore' })
      for (const ns of made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    }
  }
}
