/**
 * A real UPnP router: miniupnpd (Debian's miniupnpd-nftables) run in a NAT
 * lab router's namespace (nat-net.ts), serving UPnP IGD v2 and NAT-PMP/PCP on
 * the LAN side and adding its port forwards to the router's nftables chains
 * (`inet filter`: `miniupnpd`, `prerouting_miniupnpd`,
 * `postrouting_miniupnpd`, which nat-net.ts lays out for it).
 *
 * miniupnpd refuses an outside address it counts as private or reserved;
 * the lab's public segment is 11.0.0.0/8, which it takes as public, so no
 * `ext_ip` or STUN is needed. `secure_mode` lets a client map only to its own
 * address, and only the LAN may map ports 1024-65535, as on a home router.
 *
 * Debian's package ships /etc/miniupnpd/nft_init.sh without the
 * miniupnpd_functions.sh it sources, so the chains come from nat-net.ts
 * instead. The package has no service of its own (that is the `miniupnpd`
 * package), so installing it starts nothing.
 *
 * Needs root and /usr/sbin/miniupnpd: `netnsSkip(label, ['nft', 'miniupnpd'])` (netns.ts) checks both.
 */
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawnCommand } from './cli-process.js'
import { MINIUPNPD } from './netns.js'
import { waitUntil } from './wait.js'
import type { CliChild } from './cli-process.js'
import type { NatNet } from './nat-net.js'

/** One port forward as miniupnpd's lease file records it. */
export interface UpnpLease {
  readonly protocol: 'TCP' | 'UDP'
  readonly externalPort: number
  readonly internalHost: string
  readonly internalPort: number
  readonly description: string
}

export interface UpnpRouter {
  /** The daemon (its stderr is its log: `-d` runs it in the foreground). */
  readonly daemon: CliChild
  /** Its current port forwards (the lease file). */
  leases: () => UpnpLease[]
  /** Its DNAT chain, `nft list chain inet filter prerouting_miniupnpd`. */
  natRules: () => string
  stop: () => Promise<void>
}

/** miniupnpd's lease file: `PROTO:EXT_PORT:INT_IP:INT_PORT:TIMESTAMP:DESCRIPTION` per line. */
function parseLeases(text: string): UpnpLease[] {
  return text.split('\n').flatMap(line => {
    const m = /^(TCP|UDP):(\d+):([\d.]+):(\d+):\d+:(.*)$/.exec(line)
    return m === null
      ? []
      : [
          {
            protocol: m[1] as 'TCP' | 'UDP',
            externalPort: Number(m[2]),
            internalHost: m[3] as string,
            internalPort: Number(m[4]),
            description: m[5] as string
          }
        ]
  })
}

/** Starts miniupnpd in LAN `lan`'s router of `net`, with its files in `dir`; resolves once it serves UPnP. */
export async function startUpnpRouter(net: NatNet, lan: number, dir: string, timeoutMs = 10_000): Promise<UpnpRouter> {
  const ns = net.routerNs[lan]
  const lanPrefix = net.lans[lan]
  if (ns === undefined || lanPrefix === undefined) throw new Error(`startUpnpRouter: the lab has no LAN ${lan}`)
  const conf = join(dir, `miniupnpd-${lan}.conf`)
  const leaseFile = join(dir, `miniupnpd-${lan}.leases`)
  writeFileSync(
    conf,
    [
      'ext_ifname=wan0',
      'listening_ip=lan0',
      'http_port=0',
      'enable_upnp=yes',
      'enable_natpmp=yes',
      'secure_mode=yes',
      'system_uptime=no',
      'ipv6_disable=yes',
      `lease_file=${leaseFile}`,
      `uuid=${randomUUID()}`,
      'upnp_table_name=filter',
      'upnp_nat_table_name=filter',
      'upnp_forward_chain=miniupnpd',
      'upnp_nat_chain=prerouting_miniupnpd',
      'upnp_nat_postrouting_chain=postrouting_miniupnpd',
      `allow 1024-65535 ${lanPrefix} 1024-65535`,
      'deny 0-65535 0.0.0.0/0 0-65535',
      ''
    ].join('\n')
  )
  writeFileSync(leaseFile, '')
  const daemon = spawnCommand([MINIUPNPD, '-d', '-f', conf, '-P', join(dir, `miniupnpd-${lan}.pid`)], {
    env: process.env,
    name: `miniupnpd-${lan}`,
    wrap: ['ip', 'netns', 'exec', ns]
  })
  const state = await waitUntil(
    `miniupnpd in ${ns} to serve UPnP`,
    () => {
      if (/HTTP listening on port/.test(daemon.stderr())) return 'serving'
      return daemon.proc.exitCode !== null ? 'exited' : undefined
    },
    timeoutMs
  ).catch(() => 'still starting')
  if (state !== 'serving') {
    await daemon.stop(500)
    const log = daemon.stderr().slice(-2_000)
    throw new Error(`miniupnpd in ${ns} did not start serving UPnP within ${timeoutMs} ms (${state}):\n${log}`)
  }
  return {
    daemon,
    leases: () => (existsSync(leaseFile) ? parseLeases(readFileSync(leaseFile, 'utf8')) : []),
    natRules: () =>
      spawnSync('ip', ['netns', 'exec', ns, 'nft', 'list', 'chain', 'inet', 'filter', 'prerouting_miniupnpd'], {
        encoding: 'utf8'
      }).stdout,
    stop: async () => {
      await daemon.stop(2_000)
    }
  }
}
