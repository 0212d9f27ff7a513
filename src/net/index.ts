/**
 * The network shell's public API: a libp2p node assembled for the swarm,
 * admission (swarm keys, allowlists), presence and the roster.
 */
export {
  createSwarmNode,
  mdnsServiceTag,
  DEFAULT_LISTEN,
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_MDNS_INTERVAL_MS
} from './node.js'
export type { SwarmNode, SwarmNodeInit, SwarmServices } from './node.js'
export type { EventValidator, EventVerdict } from './gossip-validators.js'
export { gossipMessageId, DEFAULT_SIGNATURE_POLICY } from './gossip-config.js'
export type { SignaturePolicy } from './gossip-config.js'
export type { GossipStats, TopicStats } from './gossip-stats.js'
export { createPeerRateLimiter, DEFAULT_EVENT_RATE_LIMIT, DEFAULT_PRESENCE_RATE_LIMIT } from './rate-limit.js'
export type { RateLimit, PeerRateLimiter } from './rate-limit.js'
export { generateSwarmKey, parseSwarmKey } from './swarm-key.js'
export { parseAllowList } from './allow-list.js'
export { encodePresence, decodePresence, MAX_PRESENCE_BYTES } from './presence.js'
export type { Presence, PresenceInfo, PresenceResult } from './presence.js'
export { PRESENCE_INTERVAL_MS } from './presence-announcer.js'
export { createRoster, ROSTER_TTL_MS } from './roster.js'
export type { Roster, RosterEntry, RosterInit } from './roster.js'
export {
  AllowListError,
  InvalidPublishError,
  SwarmKeyError,
  SwarmNodeConfigError,
  SwarmNodeStoppedError
} from './errors.js'
