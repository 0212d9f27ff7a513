/**
 * What every network-namespace lab in the tests shares:
 *
 * - `netnsSkip(label, tools)`: the one "may namespaces run here?" check. It
 *   returns why not (not root, no `ip`, namespaces refused by the kernel, a
 *   missing `nft`, `unshare` or miniupnpd), or undefined, and prints the
 *   reason once, as `skipping <label>: <why>`, for `describe.skipIf`.
 * - `NetnsGroup`: namespaces made under one random id, their bridges and veth
 *   pairs, deleted together by `destroy()`, with the subnets they were lent.
 * - `leaseSubnets(count)`: the allocator every lab takes its addresses from.
 *   It lends whole /24s, from 10.128.0.0/9 (private) or 11.0.0.0/8 (public:
 *   libp2p counts it as public, and nothing leaves the namespaces, so it is
 *   never routed). A lease is a file named after the subnet in a directory
 *   under the system's temp dir, created exclusively, so labs in parallel
 *   test processes never share a subnet; `release()` (or the process's exit)
 *   deletes the files.
 *
 * Builders: partition-net.ts, compose-netns.ts, nat-net.ts, net-lab.ts, and
 * the mDNS bridge in test/e2e/mdns-discovery.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const MINIUPNPD = '/usr/sbin/miniupnpd'

/** Tools a lab may need beyond root and `ip`. */
export type NetnsTool = 'nft' | 'unshare' | 'miniupnpd'

/** Why `tool` does not run here (with the package that provides it), or undefined. */
function toolMissing(tool: NetnsTool | 'ip'): string | undefined {
  switch (tool) {
    case 'ip':
      return runs(['ip', '-V']) ? undefined : '`ip` not found: apt-get install -y iproute2'
    case 'nft':
      return runs(['nft', '--version']) ? undefined : '`nft` not found: apt-get install -y nftables'
    case 'unshare':
      if (!runs(['unshare', '--version'])) return '`unshare` not found: apt-get install -y util-linux'
      if (runs(['unshare', '-n', 'true'])) return undefined
      return '`unshare -n true` failed: no new network namespace for this process'
    case 'miniupnpd': {
      if (!existsSync(MINIUPNPD)) {
        return `${MINIUPNPD} not found: DEBIAN_FRONTEND=noninteractive apt-get install -y miniupnpd-nftables`
      }
      const r = spawnSync(MINIUPNPD, ['--version'], { encoding: 'utf8' })
      if (/miniupnpd/.test(`${r.stdout}${r.stderr}`)) return undefined
      return `${MINIUPNPD} --version did not run: ${r.stderr || r.error?.message}`
    }
  }
}

function runs(argv: readonly string[]): boolean {
  const r = spawnSync(argv[0] as string, argv.slice(1), { stdio: 'ignore' })
  return r.error === undefined && r.status === 0
}

/** Why network namespaces (and `tools`) cannot be used here, or undefined when they can. */
export function netnsUnavailable(tools: readonly NetnsTool[] = []): string | undefined {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return 'not root (network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN): run the tests as root'
  }
  const noIp = toolMissing('ip')
  if (noIp !== undefined) return noIp
  const probe = `ps-probe-${process.pid}-${randomBytes(2).toString('hex')}`
  const made = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' })
  if (made.status !== 0) {
    return `\`ip netns add\` failed (${made.stderr.trim()}): the kernel or container refuses namespaces`
  }
  spawnSync('ip', ['netns', 'del', probe], { stdio: 'ignore' })
  for (const tool of tools) {
    const missing = toolMissing(tool)
    if (missing !== undefined) return missing
  }
  return undefined
}

const said = new Set<string>()

/** `netnsUnavailable(tools)`, printed once per label as `skipping <label>: <why>` when it is not undefined. */
export function netnsSkip(label: string, tools: readonly NetnsTool[] = []): string | undefined {
  const why = netnsUnavailable(tools)
  if (why !== undefined && !said.has(label)) {
    said.add(label)
    console.warn(`skipping ${label}: ${why}`)
  }
  return why
}

/** Runs `ip` (iproute2), throwing its stderr on failure. */
export function ip(...args: string[]): void {
  run(['ip', ...args])
}

/** Runs `argv` (with `input` on stdin), throwing its stderr on failure. */
export function run(argv: readonly string[], input?: string): void {
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', input })
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr || r.error?.message}`)
}

// ------------------------------------------------------------------ subnets

/** A /24 lent by `leaseSubnets`. */
export interface Subnet {
  /** The first three octets, e.g. `10.131.7`. */
  readonly prefix: string
  /** e.g. `10.131.7.0/24`. */
  readonly cidr: string
  /** The address of host `n` (1 to 254) in it. */
  host: (n: number) => string
}

export interface SubnetLease {
  readonly subnets: readonly Subnet[]
  /** Gives the subnets back (idempotent). */
  release: () => void
}

export type SubnetPool = 'private' | 'public'

/** The /24s of each pool, as [first octet, second octet from, second octet to]. */
const POOLS: Record<SubnetPool, readonly [number, number, number]> = {
  private: [10, 128, 255],
  public: [11, 1, 254]
}

const LEASE_DIR = join(tmpdir(), 'plan-swarm-netns-subnets')
/** A lease file this old whose process is gone is free again. */
const STALE_MS = 10 * 60_000
const held = new Set<string>()
let exitHook = false

function isStale(file: string): boolean {
  try {
    const pid = Number(readFileSync(file, 'utf8'))
    if (Date.now() - statSync(file).mtimeMs < STALE_MS) return false
    if (!Number.isInteger(pid) || pid <= 0) return true
    process.kill(pid, 0)
    return false
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

function tryClaim(file: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !isStale(file)) return false
      try {
        unlinkSync(file)
      } catch {
        return false
      }
    }
  }
  return false
}

function subnetOf(prefix: string): Subnet {
  return {
    prefix,
    cidr: `${prefix}.0/24`,
    host: n => {
      if (!Number.isInteger(n) || n < 1 || n > 254) throw new Error(`host ${n} is not 1 to 254 in ${prefix}.0/24`)
      return `${prefix}.${n}`
    }
  }
}

/** Lends `count` /24s of `pool` that no other lab (in this process or another) holds until they are released. */
export function leaseSubnets(count: number, pool: SubnetPool = 'private'): SubnetLease {
  const [a, from, to] = POOLS[pool]
  const size = (to - from + 1) * 256
  mkdirSync(LEASE_DIR, { recursive: true })
  if (!exitHook) {
    exitHook = true
    process.once('exit', () => {
      for (const f of held)
        try {
          unlinkSync(f)
        } catch {
          /* gone */
        }
    })
  }
  const files: string[] = []
  const start = randomInt(size)
  for (let i = 0; i < size && files.length < count; i++) {
    const k = (start + i) % size
    const prefix = `${a}.${from + Math.floor(k / 256)}.${k % 256}`
    const file = join(LEASE_DIR, prefix)
    if (tryClaim(file)) {
      files.push(file)
      held.add(file)
    }
  }
  const lease: SubnetLease = {
    subnets: files.map(f => subnetOf(f.slice(LEASE_DIR.length + 1))),
    release: () => {
      for (const f of files.splice(0)) {
        held.delete(f)
        try {
          unlinkSync(f)
        } catch {
          /* gone */
        }
      }
    }
  }
  if (lease.subnets.length < count) {
    lease.release()
    throw new Error(`leaseSubnets: fewer than ${count} free /24s in the ${pool} pool`)
  }
  return lease
}

// ------------------------------------------------------------------ namespaces

/**
 * Namespaces named `<prefix>-<id>-<suffix>` (one random id per group), with
 * loopback up; `destroy()` deletes them, newest first, with every root-side
 * link and subnet lease the group was given.
 */
export class NetnsGroup {
  readonly id = randomBytes(3).toString('hex')
  private readonly made: string[] = []
  private readonly rootLinks: string[] = []
  private readonly leases: SubnetLease[] = []

  constructor(readonly prefix: string) {}

  /** Creates namespace `<prefix>-<id>-<suffix>` and returns its name. */
  add(suffix: string): string {
    const ns = `${this.prefix}-${this.id}-${suffix}`
    ip('netns', 'add', ns)
    this.made.push(ns)
    ip('-n', ns, 'link', 'set', 'lo', 'up')
    return ns
  }

  /** A bridge `br` in namespace `ns`, up. */
  bridge(ns: string, br: string): void {
    ip('-n', ns, 'link', 'add', br, 'type', 'bridge')
    ip('-n', ns, 'link', 'set', br, 'up')
  }

  /** A veth from bridge `br` of `hub` (that end named `hubEnd`) to `ifname` in `ns`, with `cidr` on it, both up. */
  plug(hub: string, br: string, hubEnd: string, ns: string, ifname: string, cidr: string): void {
    ip('-n', hub, 'link', 'add', hubEnd, 'type', 'veth', 'peer', 'name', ifname, 'netns', ns)
    ip('-n', hub, 'link', 'set', hubEnd, 'master', br)
    ip('-n', hub, 'link', 'set', hubEnd, 'up')
    ip('-n', ns, 'addr', 'add', cidr, 'dev', ifname)
    ip('-n', ns, 'link', 'set', ifname, 'up')
  }

  /** Records a link in the root namespace for `destroy()` to delete. */
  ownRootLink(name: string): void {
    this.rootLinks.push(name)
  }

  /** `leaseSubnets(count, pool)`, released by `destroy()`. */
  subnets(count: number, pool: SubnetPool = 'private'): readonly Subnet[] {
    const lease = leaseSubnets(count, pool)
    this.leases.push(lease)
    return lease.subnets
  }

  /** One /24 of `pool`, released by `destroy()`. */
  subnet(pool: SubnetPool = 'private'): Subnet {
    return this.subnets(1, pool)[0] as Subnet
  }

  destroy(): void {
    for (const link of this.rootLinks.splice(0)) spawnSync('ip', ['link', 'del', link], { stdio: 'ignore' })
    for (const ns of this.made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    for (const lease of this.leases.splice(0)) lease.release()
  }
}
