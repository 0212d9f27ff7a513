/**
 * How this swarm configures gossipsub: message ids, signature policy, peer
 * scoring. Every node of a swarm must agree on these (a node with another
 * signature policy rejects, and is rejected by, everyone else).
 */
import type { GossipsubOpts, Message } from '@libp2p/gossipsub'
import type { PeerScoreParams, PeerScoreThresholds, TopicScoreParams } from '@libp2p/gossipsub/score'
import { createHash } from 'node:crypto'
import { SIGNATURE_BYTES } from '../wire/codec.js'

/**
 * Gossipsub's signature policy. `StrictNoSign` (the default) sends bare data:
 * our events and presence messages carry their author's signature already,
 * and skipping gossipsub's own signature roughly doubles throughput.
 * `StrictSign` adds a per-hop-origin signature, seqno and `from`.
 */
export type SignaturePolicy = 'StrictSign' | 'StrictNoSign'

export const DEFAULT_SIGNATURE_POLICY: SignaturePolicy = 'StrictNoSign'

/**
 * The gossip message id: SHA-256 of everything but the trailing 64-byte
 * signature, which for an event is exactly its event id (see wire
 * `eventIdOf`). So one event is one gossip message however many peers
 * publish or relay it, and a re-signed copy of it (Ed25519 signatures are
 * deterministic, so only a forgery differs) is still a duplicate. Data too
 * short to hold a signature is hashed whole; the validator rejects it.
 */
export function gossipMessageId(msg: Message): Uint8Array {
  const data = msg.data
  // Node's native SHA-256: gossipsub hashes every copy it receives, duplicates included (~4x faster than @noble/hashes here).
  return createHash('sha256')
    .update(data.length > SIGNATURE_BYTES ? data.subarray(0, data.length - SIGNATURE_BYTES) : data)
    .digest()
}

/** Message ids as lowercase hex, so gossipsub's ids read the same as event ids in logs and metrics. */
export function gossipMessageIdToString(msgId: Uint8Array): string {
  return Buffer.from(msgId.buffer, msgId.byteOffset, msgId.byteLength).toString('hex')
}

/**
 * Per-topic scoring. Only what we can judge fairly counts:
 * - P4 invalid deliveries (a validator 'reject': a provably bad message)
 *   weighs heavily and decays slowly, so a peer sending a few bad messages
 *   falls below the gossip threshold, and a steady source of them is
 *   graylisted (all its RPCs ignored) until it stops.
 * - Mesh delivery deficits (P3, P3b) are off: a quiet swarm delivers few
 *   messages, and a deficit would punish honest peers for our silence.
 * - Small positive credit for time in mesh and first deliveries, capped by
 *   the topic score cap, so a long-standing peer is not graylisted by one
 *   mistake but cannot bank credit for a flood of bad ones.
 * 'ignore' (a parked event, a throttled peer, a stale presence) costs nothing.
 */
export const TOPIC_SCORE_PARAMS: Partial<TopicScoreParams> = {
  topicWeight: 1,
  timeInMeshWeight: 0.01,
  timeInMeshQuantum: 1_000,
  timeInMeshCap: 300,
  firstMessageDeliveriesWeight: 0.5,
  firstMessageDeliveriesDecay: 0.9,
  firstMessageDeliveriesCap: 10,
  meshMessageDeliveriesWeight: 0,
  meshFailurePenaltyWeight: 0,
  invalidMessageDeliveriesWeight: -10,
  invalidMessageDeliveriesDecay: 0.9
}

/** The application score (P5) per point of a peer's standing penalty (src/core/peer-standing.ts). */
export const STANDING_SCORE_PER_POINT = 5

/** The lowest application score standing gives: past the graylist threshold, not without bound. */
export const STANDING_SCORE_FLOOR = -100

/**
 * Gossipsub's application-specific score (P5, weight 1) from a peer's
 * standing penalty as an author in this node's plans (ADR-0048). An honest
 * peer's penalty is 0, and so is its score: nothing an honest role authors
 * counts (see GRAVE_KINDS and SOFT_ALLOWANCE_PER_PLAN). Against the topic
 * score's positive cap of 10: a peer with 3 points or more is below 0 and
 * pruned from every mesh (gossipsub drops negative peers at each heartbeat),
 * from 2 below the gossip threshold unless its credit is full, and from 16
 * graylisted, its gossip ignored. Its events still reach this node by sync,
 * and they fold as any other: the score only stops it from shaping the mesh.
 */
export function standingScore(penalty: number): number {
  if (!(penalty > 0)) return 0
  return Math.max(STANDING_SCORE_FLOOR, -STANDING_SCORE_PER_POINT * penalty)
}

/**
 * Peer score parameters for our topics. IP colocation is not penalised:
 * many nodes of one swarm often share a host (a laptop demo, compose on one
 * machine, 30 benchmark processes on loopback), and admission is the swarm
 * key's job, not the score's. `penalty`: a peer's standing (see
 * standingScore); none, no application score.
 */
export function gossipScoreParams(
  topics: readonly string[],
  penalty?: (peer: string) => number
): Partial<PeerScoreParams> {
  return {
    topics: Object.fromEntries(topics.map(t => [t, { ...TOPIC_SCORE_PARAMS } as TopicScoreParams])),
    topicScoreCap: 10,
    IPColocationFactorWeight: 0,
    appSpecificWeight: 1,
    appSpecificScore: penalty === undefined ? () => 0 : peer => standingScore(penalty(peer))
  }
}

/** Gossipsub's defaults (gossip -10, publish -50, graylist -80), restated so the scoring above is read against them. */
export const GOSSIP_SCORE_THRESHOLDS: Partial<PeerScoreThresholds> = {
  gossipThreshold: -10,
  publishThreshold: -50,
  graylistThreshold: -80
}

/** The gossipsub options every swarm node uses (validators are set after start). */
/**
 * Mesh degree. Gossipsub's flood publishing sends a node's own message to
 * every connected subscriber (its neighbours, src/net/neighbours.ts), and
 * mesh forwarding carries it on from there, with IHAVE gossip and our sync
 * behind it. Each receiver forwards to its mesh peers, so a message crosses
 * up to (n - 1) x D links: with the default D = 6 a 10-process swarm moved
 * 4.2 MB per plan in the e2e bench; with D = 3 (2..4, at most 1
 * outbound-only), 2.5 MB, and each node still has at least two forwarders
 * (ADR-0013).
 *
 * Gossip (IHAVE) goes to Dlazy = 2 peers outside the mesh each heartbeat,
 * not 6: with bounded degree a node has 10-20 such peers, and IHAVE to 6 of
 * them, listing every message id of the last 3 s, was about a third of an
 * idle node's traffic at 40 processes (5.4 KB/s per node with 6, 4.3 KB/s
 * with 2, BENCHMARKS.md scale). What gossip recovers, sync recovers too (on
 * connect and every 10 s).
 */
export const MESH = { D: 3, Dlo: 2, Dhi: 4, Dout: 1, Dlazy: 2 } as const

/**
 * The smallest message this node sends IDONTWANT for (gossipsub v1.2).
 * gossipsub's default, 512 bytes, covers nearly every event (about 700 bytes
 * on average): each one a node takes in first sent an IDONTWANT, an RPC of
 * its own, to every other mesh peer, 2.9 a node per event at 10 processes,
 * 43 % of the RPCs it sent. It saved no copies (3.74-3.88 received a node per
 * event with it, 3.59-3.83 without): with flood publishing, a mesh peer has
 * forwarded its copy before the IDONTWANT arrives. From 16 KiB (large results,
 * up to MAX_EVENT_BYTES) a copy saved is worth many IDONTWANTs. Only what this
 * node sends changes: it still honours the IDONTWANTs it is sent, and nodes
 * with the old threshold work beside it (test/integration/net-mixed-stack.test.ts).
 * docs/performance.md, "Transport cost per event".
 */
export const IDONTWANT_MIN_DATA_BYTES = 16 * 1024

export function gossipOptions(
  topics: readonly string[],
  policy: SignaturePolicy,
  penalty?: (peer: string) => number
): Partial<GossipsubOpts> {
  return {
    ...MESH,
    idontwantMinDataSize: IDONTWANT_MIN_DATA_BYTES,
    globalSignaturePolicy: policy,
    allowPublishToZeroTopicPeers: true,
    ignoreDuplicatePublishError: true,
    emitSelf: false,
    msgIdFn: gossipMessageId,
    msgIdToStrFn: gossipMessageIdToString,
    allowedTopics: [...topics],
    scoreParams: gossipScoreParams(topics, penalty),
    scoreThresholds: GOSSIP_SCORE_THRESHOLDS
  }
}
