/**
 * Private LANs (two unless asked for more), each behind its own NAT router,
 * and a public segment between the routers: network namespaces joined by
 * veth pairs to bridges in a hub namespace.
 *
 *   public hosts 11.A.B.10+ ── brW ── 11.A.B.1 router 1 10.M.1.1 ── brL1 ── LAN 1 hosts 10.M.1.10+
 *                                 └── 11.A.B.2 router 2 10.M.2.1 ── brL2 ── LAN 2 hosts 10.M.2.10+
 *                                 └── ... router k ... LAN k
 *
 * Each router forwards between its interfaces, masquerades what leaves on
 * its outside interface (`wan0`), and drops every new connection coming in
 * on it (a forward chain accepting established and related traffic first):
 * what home routers do. The rules leave room for a miniupnpd to add port
 * forwards (upnp-router.ts). A LAN host's default route is its router; public
 * hosts have only their segment. So a LAN host reaches the public hosts (as
 * its router's address), public hosts reach no LAN host, and two LANs
 * reach each other only through something public.
 *
 * The public segment uses 11.0.0.0/8, which libp2p counts as public (the
 * documentation ranges 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24
 * count as private there): AutoNAT and DCUtR only ever consider public
 * addresses. Nothing leaves the namespaces, so the range is never routed.
 *
 * Needs root, iproute2 and nftables (`nft`); `natNetUnavailable()` says why
 * not, for skipIf.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { ip } from './partition-net.js'

export interface NatHost {
  readonly ns: string
  readonly ip: string
  /** 0: the public segment; k: LAN k. */
  readonly lan: number
}

export interface NatNet {
  /** The routers' outside addresses, by LAN (1..count). */
  readonly routers: Readonly<Record<number, string>>
  /** The routers' namespaces, by LAN (outside interface `wan0`, LAN interface `lan0`). */
  readonly routerNs: Readonly<Record<number, string>>
  /** The LANs' prefixes, by LAN, e.g. `10.42.1.0/24`; the router is `.1`. */
  readonly lans: Readonly<Record<number, string>>
  addPublicHost: () => NatHost
  addLanHost: (lan: number) => NatHost
  destroy: () => void
}

/** Why a NAT lab cannot be built here, or undefined when it can. */
export function natNetUnavailable (): string | undefined {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'not root (network namespaces need root)'
  if (spawnSync('ip', ['-V'], { stdio: 'ignore' }).status !== 0) return '`ip` (iproute2) not found'
  if (spawnSync('nft', ['--version'], { stdio: 'ignore' }).status !== 0) return '`nft` (nftables) not found: apt-get install nftables'
  return undefined
}

function run (argv: string[], input?: string): void {
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', input })
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr || r.error?.message}`)
}

/**
 * The router's rules: masquerade out of wan0; new connections in on wan0
 * dropped, unless a port forward lets them in. They are laid out the way
 * miniupnpd's nftables backend expects by default (its nft_init.sh): one
 * `inet filter` table whose forward chain jumps to `miniupnpd`, and whose nat
 * chains jump to `prerouting_miniupnpd` and `postrouting_miniupnpd`. Without
 * a miniupnpd those chains stay empty; with one (upnp-router.ts) it adds a
 * DNAT rule and an accept rule per mapping. (`fwd` and `in` are nft keywords.)
 */
const ROUTER_RULES = `
table inet filter {
  chain forward {
    type filter hook forward priority filter; policy accept;
    ct state established,related accept
    iifname "wan0" jump miniupnpd
    iifname "wan0" drop
  }
  chain miniupnpd {
  }
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "wan0" jump prerouting_miniupnpd
  }
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    jump postrouting_miniupnpd
    oifname "wan0" masquerade
  }
  chain prerouting_miniupnpd {
  }
  chain postrouting_miniupnpd {
  }
}
`

/** A lab of `lanCount` LANs (1 to 9) behind their routers, and the public segment. */
export function createNatNet (lanCount = 2): NatNet {
  if (!Number.isInteger(lanCount) || lanCount < 1 || lanCount > 9) throw new Error(`createNatNet: lanCount ${lanCount} is not 1 to 9`)
  const id = randomBytes(3).toString('hex')
  const a = 1 + (parseInt(id.slice(0, 2), 16) % 250)
  const b = 1 + (parseInt(id.slice(2, 4), 16) % 250)
  // 10.M.k.0/24 with M in 20..99: net-lab uses 10.100-179, partition-net 10.216.
  const m = 20 + (parseInt(id.slice(4, 6), 16) % 80)
  const wan = `11.${a}.${b}`
  const hub = `nt-${id}-hub`
  const made: string[] = []
  let n = 0

  const netns = (name: string): string => {
    ip('netns', 'add', name)
    made.push(name)
    ip('-n', name, 'link', 'set', 'lo', 'up')
    return name
  }
  /** A veth from bridge `br` in the hub to `ifname` in `ns`, with `cidr` on it. */
  const plug = (ns: string, br: string, ifname: string, cidr: string): void => {
    n++
    ip('-n', hub, 'link', 'add', `v${n}`, 'type', 'veth', 'peer', 'name', ifname, 'netns', ns)
    ip('-n', hub, 'link', 'set', `v${n}`, 'master', br)
    ip('-n', hub, 'link', 'set', `v${n}`, 'up')
    ip('-n', ns, 'addr', 'add', cidr, 'dev', ifname)
    ip('-n', ns, 'link', 'set', ifname, 'up')
  }

  netns(hub)
  const lanIds = Array.from({ length: lanCount }, (_, i) => i + 1)
  for (const br of ['brW', ...lanIds.map(k => `brL${k}`)]) {
    ip('-n', hub, 'link', 'add', br, 'type', 'bridge')
    ip('-n', hub, 'link', 'set', br, 'up')
  }
  for (const k of lanIds) {
    const r = netns(`nt-${id}-r${k}`)
    plug(r, 'brW', 'wan0', `${wan}.${k}/24`)
    plug(r, `brL${k}`, 'lan0', `10.${m}.${k}.1/24`)
    run(['ip', 'netns', 'exec', r, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1'])
    run(['ip', 'netns', 'exec', r, 'nft', '-f', '-'], ROUTER_RULES)
  }

  let publicHosts = 0
  const lanHosts = new Map(lanIds.map(k => [k, 0]))
  const byLan = (f: (k: number) => string): Record<number, string> => Object.fromEntries(lanIds.map(k => [k, f(k)]))
  return {
    routers: byLan(k => `${wan}.${k}`),
    routerNs: byLan(k => `nt-${id}-r${k}`),
    lans: byLan(k => `10.${m}.${k}.0/24`),
    addPublicHost () {
      const addr = `${wan}.${10 + publicHosts++}`
      const ns = netns(`nt-${id}-p${publicHosts}`)
      plug(ns, 'brW', 'eth0', `${addr}/24`)
      return { ns, ip: addr, lan: 0 }
    },
    addLanHost (lan) {
      const hosts = lanHosts.get(lan)
      if (hosts === undefined) throw new Error(`addLanHost: no LAN ${lan} (the lab has ${lanCount})`)
      lanHosts.set(lan, hosts + 1)
      const addr = `10.${m}.${lan}.${10 + hosts}`
      const ns = netns(`nt-${id}-l${lan}-${hosts + 1}`)
      plug(ns, `brL${lan}`, 'eth0', `${addr}/24`)
      ip('-n', ns, 'route', 'add', 'default', 'via', `10.${m}.${lan}.1`)
      return { ns, ip: addr, lan }
    },
    destroy () {
      for (const ns of made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    }
  }
}
