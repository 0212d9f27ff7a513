import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'

/**
 * Two LAN segments that can be cut apart: hosts (network namespaces) on
 * bridge `brA` or `brB` in a hub namespace, the two bridges joined by one
 * veth pair. `cut()` takes that link down: each side still talks within
 * itself, nothing crosses. `heal()` brings it back. Needs root and iproute2.
 */
export interface PartitionNet {
  addHost: (side: 'A' | 'B') => { ns: string, ip: string }
  cut: () => void
  heal: () => void
  destroy: () => void
}

/** Runs `ip` (iproute2), throwing its stderr on failure. */
export function ip (...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr || r.error?.message}`)
}

/** A hub namespace `name` with bridges brA and brB joined by the veth pair ab0/ab1 (the link `cut` takes down). */
export function addTwoBridgeHub (name: string): void {
  ip('netns', 'add', name)
  ip('-n', name, 'link', 'set', 'lo', 'up')
  for (const br of ['brA', 'brB']) {
    ip('-n', name, 'link', 'add', br, 'type', 'bridge')
    ip('-n', name, 'link', 'set', br, 'up')
  }
  ip('-n', name, 'link', 'add', 'ab0', 'type', 'veth', 'peer', 'name', 'ab1')
  ip('-n', name, 'link', 'set', 'ab0', 'master', 'brA')
  ip('-n', name, 'link', 'set', 'ab1', 'master', 'brB')
  ip('-n', name, 'link', 'set', 'ab0', 'up')
  ip('-n', name, 'link', 'set', 'ab1', 'up')
}

export function createPartitionNet (): PartitionNet {
  const id = randomBytes(3).toString('hex')
  const hub = `pp-${id}-hub`
  const subnet = `10.216.${parseInt(id.slice(0, 2), 16)}`
  const made = [hub]
  addTwoBridgeHub(hub)
  let n = 0
  return {
    addHost (side) {
      n++
      const ns = `pp-${id}-${n}`
      ip('netns', 'add', ns)
      made.push(ns)
      ip('-n', hub, 'link', 'add', `v${n}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
      ip('-n', hub, 'link', 'set', `v${n}`, 'master', `br${side}`)
      ip('-n', hub, 'link', 'set', `v${n}`, 'up')
      ip('-n', ns, 'link', 'set', 'lo', 'up')
      ip('-n', ns, 'addr', 'add', `${subnet}.${n}/24`, 'dev', 'eth0')
      ip('-n', ns, 'link', 'set', 'eth0', 'up')
      return { ns, ip: `${subnet}.${n}` }
    },
    cut () { ip('-n', hub, 'link', 'set', 'ab0', 'down') },
    heal () { ip('-n', hub, 'link', 'set', 'ab0', 'up') },
    destroy () {
      for (const ns of made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    }
  }
}
