/**
 * Private LANs (two unless asked for more), each behind its own NAT router,
 * and a public segment between the routers: network namespaces joined by
 * veth pairs to bridges in a hub namespace.
 *
 *   public hosts W.10+ ── brW ── W.1 router 1 L1.1 ── brL1 ── LAN 1 hosts L1.10+
 *                            └── W.2 router 2 L2.1 ── brL2 ── LAN 2 hosts L2.10+
 *                            └── ... router k ... LAN k
 *
 * W and each Lk are /24s from the subnet allocator (netns.ts): W from its
 * public pool, the LANs from its private one.
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
 * The public pool is 11.0.0.0/8, which libp2p counts as public (the
 * documentation ranges 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24
 * count as private there): AutoNAT and DCUtR only ever consider public
 * addresses. Nothing leaves the namespaces, so the range is never routed.
 *
 * Needs what `netnsSkip(label, ['nft'])` (netns.ts) checks.
 */
import { NetnsGroup, ip, run } from './netns.js'
import type { Subnet } from './netns.js'

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
  /** The LANs' prefixes, by LAN, e.g. `10.142.7.0/24`; the router is `.1`. */
  readonly lans: Readonly<Record<number, string>>
  addPublicHost: () => NatHost
  addLanHost: (lan: number) => NatHost
  destroy: () => void
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
export function createNatNet(lanCount = 2): NatNet {
  if (!Number.isInteger(lanCount) || lanCount < 1 || lanCount > 9)
    throw new Error(`createNatNet: lanCount ${lanCount} is not 1 to 9`)
  const group = new NetnsGroup('nt')
  const lanIds = Array.from({ length: lanCount }, (_, i) => i + 1)
  let n = 0
  /** A veth from bridge `br` in the hub to `ifname` in `ns`, with `cidr` on it. */
  const plug = (ns: string, br: string, ifname: string, cidr: string): void => {
    n++
    group.plug(hub, br, `v${n}`, ns, ifname, cidr)
  }
  let hub = ''
  let wan: Subnet
  const lanNets = new Map<number, Subnet>()
  try {
    wan = group.subnet('public')
    group.subnets(lanCount).forEach((s, i) => lanNets.set(i + 1, s))
    hub = group.add('hub')
    for (const br of ['brW', ...lanIds.map(k => `brL${k}`)]) group.bridge(hub, br)
    for (const k of lanIds) {
      const r = group.add(`r${k}`)
      plug(r, 'brW', 'wan0', `${wan.host(k)}/24`)
      plug(r, `brL${k}`, 'lan0', `${lanOf(k).host(1)}/24`)
      run(['ip', 'netns', 'exec', r, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1'])
      run(['ip', 'netns', 'exec', r, 'nft', '-f', '-'], ROUTER_RULES)
    }
  } catch (err) {
    group.destroy()
    throw err
  }
  function lanOf(k: number): Subnet {
    const s = lanNets.get(k)
    if (s === undefined) throw new Error(`no LAN ${k} (the lab has ${lanCount})`)
    return s
  }

  let publicHosts = 0
  const lanHosts = new Map(lanIds.map(k => [k, 0]))
  const byLan = (f: (k: number) => string): Record<number, string> => Object.fromEntries(lanIds.map(k => [k, f(k)]))
  return {
    routers: byLan(k => wan.host(k)),
    routerNs: byLan(k => `nt-${group.id}-r${k}`),
    lans: byLan(k => lanOf(k).cidr),
    addPublicHost() {
      const addr = wan.host(10 + publicHosts++)
      const ns = group.add(`p${publicHosts}`)
      plug(ns, 'brW', 'eth0', `${addr}/24`)
      return { ns, ip: addr, lan: 0 }
    },
    addLanHost(lan) {
      const hosts = lanHosts.get(lan)
      if (hosts === undefined) throw new Error(`addLanHost: no LAN ${lan} (the lab has ${lanCount})`)
      lanHosts.set(lan, hosts + 1)
      const addr = lanOf(lan).host(10 + hosts)
      const ns = group.add(`l${lan}-${hosts + 1}`)
      plug(ns, `brL${lan}`, 'eth0', `${addr}/24`)
      ip('-n', ns, 'route', 'add', 'default', 'via', lanOf(lan).host(1))
      return { ns, ip: addr, lan }
    },
    destroy() {
      group.destroy()
    }
  }
}
