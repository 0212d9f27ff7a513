/**
 * A hostile peer as its own process, for resilience scenario 8:
 *
 *   node --import tsx test/helpers/hostile-main.ts --swarm S --bootstrap ADDR [--rate N] [--data-dir DIR]
 *
 * A real swarm node (libp2p, gossip, presence as a scorer) that folds what it
 * hears, like any peer, and from that publishes, at about `--rate` messages a
 * second, every kind of bad event an attacker can make from what it knows:
 * garbage bytes, events with forged authors, non-canonical encodings,
 * oversized events, events of another swarm, unknown types and wrong shapes,
 * replays of old events, ballots from outside the committee, ballots for
 * proposals that do not exist, a flood of different proposals for one node
 * (equivocation), two conflicting ballots in one slot when it sits on a
 * committee (equivocation), two renewals of one predecessor (equivocation),
 * claims stamped far in the past and before their task was ready, claims it
 * renews forever without ever reporting a result, and late renewals.
 *
 * Prints JSON lines: `{"event":"started","peerId":...}` once it listens, and
 * `{"event":"sent","counts":{...}}` every few seconds and on SIGTERM.
 */
// libp2p calls Promise.withResolvers (Node 22+): the polyfill loads before anything else.
import '../../src/polyfill.js'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import * as dagCbor from '@ipld/dag-cbor'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createSwarmNode } from '../../src/net/node.js'
import { createSyncService } from '../../src/sync/libp2p-service.js'
import { nativeEventIdOfWire as wireEventId } from '../../src/sync/native-hash.js'
import { openEventStore } from '../../src/store/event-store.js'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { Replica } from '../../src/runtime/replica.js'
import { encodeEnvelope } from '../../src/wire/codec.js'
import { signEventSync, signRawSync } from '../../src/wire/sign.js'
import { eventsTopic } from '../../src/wire/topics.js'
import { PROTOCOL_VERSION } from '../../src/core/events.js'
import type { PrivateKey } from '@libp2p/interface'
import type {
  Bodies,
  Envelope,
  EventId,
  EventType,
  Hlc,
  NodeId,
  PeerIdString,
  PlanEvent,
  PlanId,
  TaskId
} from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

const { values } = parseArgs({
  options: {
    swarm: { type: 'string' },
    bootstrap: { type: 'string', multiple: true },
    rate: { type: 'string' },
    'data-dir': { type: 'string' }
  }
})
const swarm = values.swarm ?? 'default'
const rate = Number(values.rate ?? 200)

const key: PrivateKey =
  values['data-dir'] !== undefined
    ? (await loadOrCreateIdentity(values['data-dir'])).privateKey
    : await generateKeyPair('Ed25519')
const me = peerIdFromPrivateKey(key).toString() as PeerIdString
/** The last honest events heard (id and bytes): material for replays and forgeries. */
const heard: Array<{ id: EventId; bytes: Uint8Array }> = []
function remember(id: EventId, bytes: Uint8Array): void {
  heard.push({ id, bytes })
  if (heard.length > 500) heard.splice(0, heard.length - 500)
}
const replica = new Replica({
  swarm,
  key,
  peerId: me,
  store: openEventStore({ memory: true }),
  metrics: new NodeMetrics(),
  now: Date.now
})
const node = await createSwarmNode({
  privateKey: key,
  swarm,
  listen: ['/ip4/127.0.0.1/tcp/0'],
  bootstrap: values.bootstrap ?? [],
  mdns: false,
  // It folds what it hears (to aim its attacks) and relays everything.
  eventValidator: bytes => {
    const r = replica.ingest(bytes, 'gossip')
    if (r.verdict === 'accept' && r.id !== undefined) remember(r.id, bytes)
    return 'accept'
  },
  presence: { role: 'scorer', capabilities: [], load: 0, version: 'hostile/1' }
})
// Gossipsub scoring soon graylists a peer that sends rejected messages, and stops telling it
// anything: it learns the plans by sync instead (a separate protocol), and offers everything
// it made there too, so honest peers pull its events by sync as well as by gossip.
const served = new Map<string, Uint8Array>()
const sync = createSyncService({
  libp2p: node.libp2p,
  ids: replica.ids,
  has: id => replica.has(id) || served.has(id),
  getBytes: id => served.get(id) ?? replica.getBytes(id),
  ingest: async bytes => {
    const r = replica.ingest(bytes, 'sync')
    if (r.verdict === 'accept' && r.id !== undefined) remember(r.id, bytes)
    return r
  },
  intervalMs: 500
})
await sync.start()
const pubsub = node.libp2p.services.pubsub
const topic = eventsTopic(swarm)
const counts: Record<string, number> = {}
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`)
}
print({ event: 'started', peerId: me, addresses: node.addresses() })

async function send(kind: string, bytes: Uint8Array): Promise<void> {
  counts[kind] = (counts[kind] ?? 0) + 1
  const id = wireEventId(bytes)
  if (id !== null && !replica.has(id) && served.size < 20_000) {
    served.set(id, bytes)
    replica.ids.add(id)
  }
  try {
    await pubsub.publish(topic, bytes)
  } catch {
    // no peers yet, or gossipsub refuses a duplicate: counted as sent all the same
  }
}

const NO_USAGE = { inputTokens: 0, outputTokens: 0 }
const pick = <T>(xs: readonly T[]): T | undefined =>
  xs.length === 0 ? undefined : xs[Math.floor(Math.random() * xs.length)]

function env<T extends EventType>(
  type: T,
  plan: string,
  deps: readonly EventId[],
  body: Bodies[T],
  hlc?: Hlc,
  author: PeerIdString = me
): Envelope<T> {
  const sorted = [...new Set(plan === '' ? deps : [plan as EventId, ...deps])].sort()
  const stamp = hlc ?? replica.clock.stamp(sorted.map(d => replica.fold.events.get(d)?.env.hlc ?? { ms: 0, c: 0 }))
  return { v: PROTOCOL_VERSION, swarm, type, plan, author, hlc: stamp, deps: sorted, body }
}

/** Sign, fold here (so later attacks can build on it) and publish a well-formed event of ours. */
async function ours<T extends EventType>(kind: string, e: Envelope<T>): Promise<PlanEvent | undefined> {
  let signed
  try {
    signed = signEventSync(e, key)
  } catch {
    return undefined
  }
  replica.ingest(signed.bytes, 'local')
  await send(kind, signed.bytes)
  return signed.event
}

function allTrees(): PlanTree[] {
  return replica.fold
    .plans()
    .map(p => replica.tree(p))
    .filter((t): t is PlanTree => t !== undefined)
}

function trees(): PlanTree[] {
  return replica.fold
    .plans()
    .map(p => replica.tree(p))
    .filter((t): t is PlanTree => t !== undefined && t.status !== 'completed' && t.status !== 'cancelled')
}

function heldEvents(): PlanEvent[] {
  return heard
    .map(h => replica.fold.events.get(h.id))
    .filter((e): e is PlanEvent => e !== undefined && e.env.author !== me)
}

/** A CBOR map with its keys in reverse canonical order: same content, not the canonical bytes. */
function reversed(e: Envelope): Uint8Array {
  const rec = e as unknown as Record<string, unknown>
  const keys = Object.keys(rec)
    .sort((a, b) => a.length - b.length || (a < b ? -1 : 1))
    .reverse()
  const parts = [Uint8Array.of(0xa0 | keys.length), ...keys.flatMap(k => [dagCbor.encode(k), dagCbor.encode(rec[k])])]
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

const voted = new Set<string>()
const claimed = new Map<TaskId, { plan: PlanId; claim: PlanEvent; last: PlanEvent; lease: number }>()
const pastClaimed = new Set<string>()
let flood = 0

type Attack = () => Promise<void>

const attacks: Record<string, Attack> = {
  async garbage() {
    await send('garbage', new Uint8Array(randomBytes(50 + Math.floor(Math.random() * 400))))
  },
  async oversized() {
    await send('oversized', new Uint8Array(70 * 1024).fill(0x61))
  },
  async forgedAuthor() {
    const victim = pick(heldEvents())
    if (victim === undefined) return
    const forged = {
      ...victim.env,
      hlc: { ms: victim.env.hlc.ms, c: victim.env.hlc.c + 1 + Math.floor(Math.random() * 1000) }
    }
    await send('forged-author', signRawSync(swarm, encodeEnvelope(forged), key))
  },
  async nonCanonical() {
    const t = pick(trees())
    if (t === undefined) return
    await send(
      'non-canonical',
      signRawSync(swarm, reversed(env('goal-cancelled', t.plan, [], { reason: `hostile ${Math.random()}` })), key)
    )
  },
  async otherSwarm() {
    const e = {
      ...env('goal-submitted', '', [], {
        text: 'elsewhere',
        params: {
          committee: [me],
          quorum: 1,
          maxDepth: 1,
          minChildren: 2,
          maxChildren: 3,
          maxAttempts: 1,
          leaseMs: 5000,
          maxClaimMs: 10000,
          maxNodes: 10,
          budgetTokens: 100,
          maxTokensPerCall: 10,
          review: false,
          maxClaimsPerExecutor: 1
        }
      }),
      swarm: 'another-swarm'
    }
    await send('other-swarm', signRawSync('another-swarm', encodeEnvelope(e), key))
  },
  async unknownType() {
    const t = pick(trees())
    if (t === undefined) return
    await send(
      'unknown-type',
      signRawSync(
        swarm,
        dagCbor.encode({ ...env('goal-cancelled', t.plan, [], { reason: 'x' }), type: 'plan-hijacked' }),
        key
      )
    )
  },
  async wrongShape() {
    const t = pick(trees())
    if (t === undefined) return
    await send(
      'wrong-shape',
      signRawSync(
        swarm,
        dagCbor.encode({ ...env('goal-cancelled', t.plan, [], { reason: 'x' }), body: { reason: 'x', extra: 1 } }),
        key
      )
    )
  },
  async replay() {
    const old = pick(heard)
    if (old !== undefined) await send('replay', old.bytes)
  },
  async ballots() {
    for (const t of allTrees()) {
      const inCommittee = t.committees.some(c => c.members.includes(me))
      const committee = t.committees[t.committees.length - 1]
      if (committee === undefined) continue
      for (const n of t.nodes) {
        for (const a of n.attempts) {
          if (a.proposals.length === 0) continue
          const slot = `${n.id}/${a.attempt}`
          const proposals = a.proposals.map(p => p.id)
          const ballot = (choice: EventId | null, deps: readonly EventId[]): Envelope<'ballot-cast'> =>
            env('ballot-cast', t.plan, [committee.event, ...deps], {
              node: n.id,
              attempt: a.attempt,
              committee: committee.event,
              scores: deps.map(p => ({ proposal: p, score: 50, notes: 'hostile' })),
              choice,
              notes: 'hostile',
              usage: NO_USAGE
            })
          if (!voted.has(slot)) {
            voted.add(slot)
            if (inCommittee) {
              // On the committee: two different ballots in one slot (equivocation: neither counts).
              await ours('conflicting-ballot', ballot(proposals[0] as EventId, proposals))
              await ours(
                'conflicting-ballot',
                ballot(proposals.length > 1 ? (proposals[1] as EventId) : null, proposals)
              )
            } else {
              // Off the committee: a ballot that must not count.
              const b = trySign(ballot(proposals[0] as EventId, proposals))
              if (b !== undefined) await send('ballot-outside-committee', b)
            }
          }
          if (a.outcome !== 'open' && Math.random() < 0.8) continue
          // A ballot for a proposal nobody made: parked for a missing dep, never folded.
          const ghost = randomBytes(32).toString('hex') as EventId
          const parked = trySign(
            env('ballot-cast', t.plan, [committee.event, ghost], {
              node: n.id,
              attempt: a.attempt,
              committee: committee.event,
              scores: [{ proposal: ghost, score: 99, notes: '' }],
              choice: ghost,
              notes: '',
              usage: NO_USAGE
            })
          )
          if (parked !== undefined) await send('ballot-for-missing-proposal', parked)
        }
      }
    }
  },
  async proposalFlood() {
    for (const t of trees()) {
      const n = t.nodes.find(x => x.kind === 'decomposing')
      const a = n?.attempts[n.attempts.length - 1]
      if (n === undefined) continue
      flood++
      const k = Math.max(t.params.minChildren, Math.min(t.params.maxChildren, 2))
      await ours(
        'proposal-flood',
        env('split-proposed', t.plan, [], {
          node: n.id as NodeId,
          attempt: a?.attempt ?? 1,
          subgoals: Array.from({ length: k }, (_, i) => ({
            title: `hostile part ${flood}.${i}`,
            detail: 'do what the hostile peer says',
            leaf: true,
            dependsOn: []
          })),
          rationale: `flood ${flood}`,
          usage: NO_USAGE
        })
      )
    }
  },
  async claims() {
    for (const t of trees()) {
      const goal = replica.fold.events.get(t.plan as string as EventId) as PlanEvent
      for (const task of t.tasks) {
        if (task.readyAt === null || task.status === 'done' || task.status === 'failed') continue
        const k = `${t.plan}/${task.id}`
        if (pastClaimed.has(k)) continue
        pastClaimed.add(k)
        // Stamped far in the past (before the goal): not after its deps.
        await send(
          'claim-in-the-past',
          signRawSync(
            swarm,
            encodeEnvelope(
              env(
                'task-claimed',
                t.plan,
                task.evidence,
                { task: task.id, prev: null },
                { ms: goal.env.hlc.ms - 3_600_000, c: 0 }
              )
            ),
            key
          )
        )
        if (claimed.size >= 3) continue
        // Backdated to just after the task became ready, so it may be the earliest claim and own
        // the task; then renewed forever (also backdated, within the lease) and never finished.
        const at = latest([
          task.readyAt,
          ...task.evidence.map(d => replica.fold.events.get(d)?.env.hlc).filter((h): h is Hlc => h !== undefined)
        ])
        const claim = await ours(
          'backdated-claim',
          env('task-claimed', t.plan, task.evidence, { task: task.id, prev: null }, { ms: at.ms, c: at.c + 1 })
        )
        if (claim !== undefined) claimed.set(task.id, { plan: t.plan, claim, last: claim, lease: t.params.leaseMs })
      }
    }
  },
  async renewals() {
    for (const [task, c] of claimed) {
      const step = Math.floor(c.lease / 2)
      if (c.last.env.hlc.ms + step > Date.now()) continue
      const body = { task, claim: c.claim.id, prev: c.last.id }
      const deps = [c.claim.id, c.last.id]
      const next = await ours(
        'endless-renewal',
        env('claim-renewed', c.plan, deps, body, { ms: c.last.env.hlc.ms + step, c: 0 })
      )
      // A second, different renewal of the same predecessor: equivocation in the renewal slot.
      await ours(
        'conflicting-renewal',
        env('claim-renewed', c.plan, deps, body, { ms: c.last.env.hlc.ms + step, c: 1 })
      )
      // And one stamped long after its predecessor: a late renewal.
      const late = trySign(env('claim-renewed', c.plan, deps, body, { ms: c.last.env.hlc.ms + c.lease + 5_000, c: 0 }))
      if (late !== undefined) await send('late-renewal', late)
      // Past maxClaimMs its renewals are rejected (claim-too-long): it renews on regardless, from the last one that held.
      if (next !== undefined && replica.has(next.id)) c.last = next
      else if (c.last.env.hlc.ms + 10 * c.lease < Date.now()) claimed.delete(task)
    }
  }
}

function latest(hs: readonly Hlc[]): Hlc {
  return hs.reduce((a, b) => (a.ms > b.ms || (a.ms === b.ms && a.c >= b.c) ? a : b), { ms: 0, c: 0 })
}

function trySign(e: Envelope): Uint8Array | undefined {
  try {
    return signEventSync(e, key).bytes
  } catch {
    return undefined
  }
}

// The attack loop: every 50 ms, a share of the rate, drawn round-robin over the kinds.
const kinds = Object.keys(attacks)
let turn = 0
let stopping = false
const perTick = Math.max(1, Math.round(rate / 20))
const loop = setInterval(() => {
  if (stopping) return
  void (async () => {
    for (let i = 0; i < perTick; i++) {
      const k = kinds[turn++ % kinds.length] as string
      try {
        await (attacks[k] as Attack)()
      } catch (err) {
        counts[`error:${k}`] = (counts[`error:${k}`] ?? 0) + 1
        if (counts[`error:${k}`] === 1) process.stderr.write(`${k}: ${(err as Error).stack ?? ''}\n`)
      }
    }
  })()
}, 50)
const report = setInterval(() => {
  print({ event: 'sent', counts })
}, 3_000)

const stop = (): void => {
  if (stopping) return
  stopping = true
  clearInterval(loop)
  clearInterval(report)
  print({ event: 'sent', counts, final: true })
  void sync
    .stop()
    .then(async () => {
      await node.stop()
    })
    .then(() => process.exit(0))
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
