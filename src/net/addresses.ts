/**
 * Which of a node's addresses are worth telling others, and in which order a
 * dialer tries the addresses a peer gave.
 *
 * libp2p already leaves out of its own list (`getMultiaddrs()`) a public
 * interface address until AutoNAT has seen a peer dial it back, and an
 * observed address (our NAT's outside address and port) until several have;
 * private and loopback addresses it lists at once, because on one machine and
 * on a LAN they are exactly the right ones. What it cannot know is who they
 * are right for. Two rules here fill that gap:
 *
 * - Announcing (`presenceAddresses`): a node that knows a public address of
 *   its own (AutoNAT confirmed it, or `--announce` gave it) announces only
 *   public and relayed addresses: its LAN and loopback addresses can only
 *   mislead peers elsewhere, and peers on its LAN find it by mDNS or by the
 *   public address. Otherwise loopback addresses go only when there is
 *   nothing else (everything on 127.0.0.1, the tests). Relayed addresses come
 *   before LAN ones, so a reader that takes the first address reaches the
 *   node from anywhere.
 * - Dialing (`createAddressSorter`): a peer's addresses on one of our own
 *   subnets first (same LAN: direct and cheap), then public ones, then
 *   relayed ones, then other private ones (a private address on someone
 *   else's LAN is nearly always unreachable from here, and costs a dial
 *   timeout), loopback last. libp2p tries them in this order, one at a
 *   time, each with its own timeout, and stops at the first that connects.
 */
import { networkInterfaces } from 'node:os'
import { isLoopback, isPrivate, tryGetNetConfig } from '@libp2p/utils'
import { multiaddr } from '@multiformats/multiaddr'
import type { Address } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'

/** What an address is, seen from the node that holds it. */
export type AddressKind = 'public' | 'relayed' | 'private' | 'loopback' | 'other'

/** How long the list of our own subnets is trusted before it is read again (interfaces come and go). */
export const LOCAL_SUBNETS_TTL_MS = 30_000

/** True for a circuit relay address (`.../p2p/<relay>/p2p-circuit/...`). */
export function isRelayed(ma: Multiaddr): boolean {
  return ma.getComponents().some(c => c.name === 'p2p-circuit')
}

/** Classifies one address: relayed before anything else (a relay's own address may be public or private). */
export function addressKind(ma: Multiaddr): AddressKind {
  if (isRelayed(ma)) return 'relayed'
  const net = tryGetNetConfig(ma)
  if (net === null) return 'other'
  if (isLoopback(ma) || net.host === 'localhost') return 'loopback'
  if (isPrivate(ma)) return 'private'
  return 'public'
}

const ANNOUNCE_ORDER: Record<AddressKind, number> = { public: 0, relayed: 1, private: 2, other: 3, loopback: 4 }

/**
 * The addresses to put in presence, from the node's own (libp2p's
 * `getMultiaddrs()`, each ending in `/p2p/<id>`): deduplicated, filtered and
 * ordered as the module comment says. Never empty when `own` is not.
 */
export function presenceAddresses(own: readonly string[]): string[] {
  const seen = new Set<string>()
  const entries: Array<{ addr: string; kind: AddressKind }> = []
  for (const addr of own) {
    if (seen.has(addr)) continue
    seen.add(addr)
    let kind: AddressKind
    try {
      kind = addressKind(multiaddr(addr))
    } catch {
      continue
    }
    entries.push({ addr, kind })
  }
  const has = (k: AddressKind): boolean => entries.some(e => e.kind === k)
  const knowsPublic = has('public')
  const onlyLoopback = entries.every(e => e.kind === 'loopback')
  return (
    entries
      .filter(e => {
        if (knowsPublic && (e.kind === 'private' || e.kind === 'loopback')) return false
        if (e.kind === 'loopback' && !onlyLoopback) return false
        return true
      })
      // Array.prototype.sort is stable: within a kind libp2p's order stays.
      .sort((a, b) => ANNOUNCE_ORDER[a.kind] - ANNOUNCE_ORDER[b.kind])
      .map(e => e.addr)
  )
}

/** An IPv4 or IPv6 subnet of one of this host's interfaces. */
export interface Subnet {
  readonly family: 4 | 6
  readonly network: bigint
  readonly mask: bigint
}

function ipToBigInt(host: string): { family: 4 | 6; value: bigint } | undefined {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) {
    const parts = host.split('.').map(Number)
    if (parts.some(p => !(p >= 0 && p <= 255))) return undefined
    return { family: 4, value: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n) }
  }
  if (!host.includes(':')) return undefined
  const bare = host.split('%')[0] as string
  const [head = '', tail = ''] = bare.split('::')
  const h = head === '' ? [] : head.split(':')
  const t = bare.includes('::') ? (tail === '' ? [] : tail.split(':')) : []
  const groups = bare.includes('::') ? [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t] : h
  if (groups.length !== 8 || groups.some(g => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined
  return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) }
}

/** Parses `a.b.c.d/n` or an IPv6 CIDR. */
export function parseCidr(cidr: string): Subnet | undefined {
  const [host = '', bits = ''] = cidr.split('/')
  const ip = ipToBigInt(host)
  const n = Number(bits)
  const width = ip?.family === 4 ? 32 : 128
  if (ip === undefined || !Number.isInteger(n) || n < 0 || n > width) return undefined
  const all = (1n << BigInt(width)) - 1n
  const mask = (all << BigInt(width - n)) & all
  return { family: ip.family, network: ip.value & mask, mask }
}

/** Whether `host` (an IP) is inside one of `subnets`. */
export function inSubnets(host: string, subnets: readonly Subnet[]): boolean {
  const ip = ipToBigInt(host)
  if (ip === undefined) return false
  return subnets.some(s => s.family === ip.family && (ip.value & s.mask) === s.network)
}

/** This host's non-loopback subnets, from `os.networkInterfaces()`. */
export function localSubnets(): Subnet[] {
  const out: Subnet[] = []
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) {
      if (i.internal || i.cidr === null) continue
      const s = parseCidr(i.cidr)
      if (s !== undefined) out.push(s)
    }
  }
  return out
}

/** Dial preference of an address (lower first), given this host's subnets. */
export function dialRank(ma: Multiaddr, subnets: readonly Subnet[]): number {
  const kind = addressKind(ma)
  switch (kind) {
    case 'private': {
      const host = tryGetNetConfig(ma)?.host
      return host !== undefined && inSubnets(host, subnets) ? 0 : 3
    }
    case 'public':
      return 1
    case 'relayed':
      return 2
    case 'other':
      return 1
    case 'loopback':
      return 4
    default: {
      const never: never = kind
      return never
    }
  }
}

function isWebSocket(ma: Multiaddr): boolean {
  return ma.getComponents().some(c => c.name === 'ws' || c.name === 'wss' || c.name === 'tls')
}

/**
 * A `connectionManager.addressSorter` with the dial order of the module
 * comment; within a rank, certified addresses and then TCP before
 * WebSockets. `subnets` defaults to this host's, read again every
 * LOCAL_SUBNETS_TTL_MS.
 */
export function createAddressSorter(subnets?: () => readonly Subnet[]): (a: Address, b: Address) => -1 | 0 | 1 {
  let cached: { at: number; subnets: readonly Subnet[] } | undefined
  const current =
    subnets ??
    ((): readonly Subnet[] => {
      const now = performance.now()
      if (cached === undefined || now - cached.at > LOCAL_SUBNETS_TTL_MS) cached = { at: now, subnets: localSubnets() }
      return cached.subnets
    })
  return (a, b) => {
    const s = current()
    const byRank = dialRank(a.multiaddr, s) - dialRank(b.multiaddr, s)
    if (byRank !== 0) return byRank < 0 ? -1 : 1
    if (a.isCertified !== b.isCertified) return a.isCertified ? -1 : 1
    const ws = Number(isWebSocket(a.multiaddr)) - Number(isWebSocket(b.multiaddr))
    return ws < 0 ? -1 : ws > 0 ? 1 : 0
  }
}

/**
 * A peer's announced addresses as one libp2p dial target: each ending in
 * `/p2p/<peerId>` (added where missing), unparsable ones and ones naming
 * another peer dropped. libp2p then tries them in the sorter's order.
 */
export function dialTargets(peerId: string, addrs: readonly string[]): Multiaddr[] {
  const out: Multiaddr[] = []
  for (const a of addrs) {
    let ma: Multiaddr
    try {
      ma = multiaddr(a)
    } catch {
      continue
    }
    const last = ma.getComponents().findLast(c => c.name === 'p2p')?.value
    if (last === undefined) ma = ma.encapsulate(`/p2p/${peerId}`)
    else if (last !== peerId) continue
    out.push(ma)
  }
  return out
}
