/**
 * How often a node announces itself, given how many peers it knows of: each
 * node then receives about PRESENCE_MESSAGES_PER_SECOND announcements a
 * second whatever the swarm's size (n peers announcing every n / R seconds
 * make R a second), and never announces more often than every
 * PRESENCE_MIN_INTERVAL_MS. Pure, so the libp2p shell and the simulator use
 * the same formula.
 *
 *     interval(n) = max(PRESENCE_MIN_INTERVAL_MS, 1000 * n / PRESENCE_MESSAGES_PER_SECOND)
 *     roster TTL  = PRESENCE_TTL_INTERVALS * interval(n)
 */
export const PRESENCE_MIN_INTERVAL_MS = 3_000
/**
 * Announcements a node receives per second, all peers together, once the
 * swarm is past six peers. Each arrives about 3 times (flood publishing and
 * the mesh), so this sets most of an idle node's traffic: 4 gave 9.0 KB/s
 * per node at 40 processes against 4.2 KB/s at 5; 2 gives 5.4 KB/s
 * (BENCHMARKS.md, scale).
 */
export const PRESENCE_MESSAGES_PER_SECOND = 2
/** A roster entry lives this many intervals without news. */
export const PRESENCE_TTL_INTERVALS = 5

export function presenceIntervalFor(peers: number): number {
  return Math.max(PRESENCE_MIN_INTERVAL_MS, Math.ceil((1000 * Math.max(0, peers)) / PRESENCE_MESSAGES_PER_SECOND))
}

export function rosterTtlFor(peers: number): number {
  return PRESENCE_TTL_INTERVALS * presenceIntervalFor(peers)
}

/** The capability a node announces its presence interval in (old nodes ignore capabilities they do not know). */
export const INTERVAL_CAPABILITY = 'presence-interval-ms='

export function intervalCapability(ms: number): string {
  return `${INTERVAL_CAPABILITY}${Math.round(ms)}`
}

/** `info` announcing `ms` as its interval (in place of any interval it announced before). */
export function withInterval<T extends { readonly capabilities: readonly string[] }>(info: T, ms: number): T {
  return {
    ...info,
    capabilities: [...info.capabilities.filter(c => !c.startsWith(INTERVAL_CAPABILITY)), intervalCapability(ms)]
  }
}

/** The presence interval a peer announced, or undefined (an older node: it announces every PRESENCE_MIN_INTERVAL_MS). */
export function announcedInterval(capabilities: readonly string[]): number | undefined {
  for (const c of capabilities) {
    if (!c.startsWith(INTERVAL_CAPABILITY)) continue
    const ms = Number(c.slice(INTERVAL_CAPABILITY.length))
    if (Number.isSafeInteger(ms) && ms >= 100 && ms <= 3_600_000) return ms
  }
  return undefined
}

/** How long an announcement stays fresh: PRESENCE_TTL_INTERVALS of the interval it announced (an older node's: the minimum). */
export function announcedTtl(capabilities: readonly string[]): number {
  return PRESENCE_TTL_INTERVALS * (announcedInterval(capabilities) ?? PRESENCE_MIN_INTERVAL_MS)
}
