/**
 * Names on the network: gossip topics and the sync protocol id.
 *
 * They live with the wire format because they carry the same protocol version
 * ("1") and must change together with it.
 */
import { MAX_SWARM_NAME_CHARS } from '../core/limits.js'

/** The stream protocol two peers use to reconcile their event sets (catch-up). */
export const SYNC_PROTOCOL = '/plan-swarm/sync/1.0.0'

/** The stream protocol a node that is catching up asks a peer for the event ids of its plans under way with. */
export const OPEN_IDS_PROTOCOL = '/plan-swarm/open-ids/1.0.0'

const SWARM_NAME = /^[a-z0-9._-]+$/

/**
 * Why a swarm name is unusable, or null when it is fine. Names are short and
 * plain (`[a-z0-9._-]`, 1..MAX_SWARM_NAME_CHARS) because they appear in topic
 * strings, data directory paths and the signature domain.
 */
export function validateSwarmName(name: string): string | null {
  if (name.length === 0) return 'swarm name is empty'
  if (name.length > MAX_SWARM_NAME_CHARS) return `swarm name is longer than ${MAX_SWARM_NAME_CHARS} characters`
  if (!SWARM_NAME.test(name)) return 'swarm name may only use a-z, 0-9, ".", "_" and "-"'
  return null
}

/** The gossip topic that carries a swarm's plan events. */
export function eventsTopic(swarm: string): string {
  return `/plan-swarm/1/${swarm}/events`
}

/** The gossip topic that carries a swarm's presence announcements (kept apart from the plan log). */
export function presenceTopic(swarm: string): string {
  return `/plan-swarm/1/${swarm}/presence`
}

/** The stream protocol a node asks a new neighbour for the signed presence announcements it holds (roster exchange). */
export const ROSTER_PROTOCOL = '/plan-swarm/roster/1.0.0'

/** The stream protocol a node asks a peer with for its summary of one plan (a `--history open` node's reads). */
export const PLAN_SUMMARY_PROTOCOL = '/plan-swarm/plan-summary/1.0.0'
