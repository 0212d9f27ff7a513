/**
 * Two private LANs, each behind its own NAT router, and a public segment
 * between the routers: network namespaces joined by veth pairs to three
 * bridges in a hub namespace.
 *
 *   public hosts 11.A.B.10+ ── brW ── 11.A.B.1 router 1 10.M.1.1 ── brL1 ── LAN 1 hosts 10.M.1.10+
 *                                 └── 11.A.B.2 router 2 10.M.2.1 ── brL2 ── LAN 2 hosts 10.M.2.10+
 *
 * Each router forwards between its interfaces, masquerades what leaves on
 * its outside interface (`wan0`), and drops every new connection coming in
 * on it (a forward chain accepting established and related traffic first):
 * what home routers do. A LAN host's default route is its router; public
 * hosts have only their segment. So a LAN host reaches the public hosts (as
 * its router's address), public hosts reach no LAN host, and the two LANs
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
  /** 0: the public segment; 1 or 2: that LAN. */
  readonly lan: 0 | 1 | 2
}

export interface NatNet {
  /** The routers' outside addresses, by LAN. */
  readonly routers: { readonly 1: string, readonly 2: string }
  addPublicHost: () => NatHost
  addLanHost: (lan: 1 | 2) => NatHost
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

/** The router's rules: masquerade out of wan0; new connections in on wan0 dropped. (`fwd` and `in` are nft keywords.) */
const ROUTER_RULES = `
table ip nat {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "wan0" masquerade
  }
}
table ip filter {
  chain forward {
    type filter hook forward priority filter; policy accept;
    ct state established,related accept
    iifname "wan0" drop
  }
}
`

export function createNatNet (): NatNet {
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
  for (const br of ['brW', 'brL1', 'brL2']) {
    ip('-n', hub, 'link', 'add', br, 'type', 'bridge')
    ip('-n', hub, 'link', 'set', br, 'up')
  }
  for (const k of [1, 2] as const) {
    const r = netns(`nt-${id}-r${k}`)
    plug(r, 'brW', 'wan0', `${wan}.${k}/24`)
    plug(r, `brL${k}`, 'lan0', `10.${m}.${k}.1/24`)
    run(['ip', 'netns', 'exec', r, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1'])
    run(['ip', 'netns', 'exec', r, 'nft', '-f', '-'], ROUTER_RULES)
  }

  let publicHosts = 0
  const lanHosts = { 1: 0, 2: 0 }
  return {
    routers: { 1: `${wan}.1`, 2: `${wan}.2` },
    addPublicHost () {
      const addr = `${wan}.${10 + publicHosts++}`
      const ns = netns(`nt-${id}-p${publicHosts}`)
      plug(ns, 'brW', 'eth0', `${addr}/24`)
      return { ns, ip: addr, lan: 0 }
    },
    addLanHost (lan) {
      const addr = `10.${m}.${lan}.${10 + lanHosts[lan]++}`
      const ns = netns(`nt-${id}-l${lan}-${lanHosts[lan]}`)
      plug(ns, `brL${lan}`, 'eth0', `${addr}/24`)
      ip('-n', ns, 'route', 'add', 'default', 'via', `10.${m}.${lan}.1`)
      return { ns, ip: addr, lan }
    },
    destroy () {
      for (const ns of made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
    }
  }
}
