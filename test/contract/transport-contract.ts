/**
 * The contract of the Transport port (src/ports/transport.ts), as named
 * checks that run against any implementation: the libp2p shell and the
 * simulator's transport pass the same ones (./transport.test.ts), and a
 * transport broken on purpose fails the one that names its fault
 * (./transport-broken.test.ts).
 *
 * Each check builds its own small network through a {@link TransportSetup},
 * starts every transport with a {@link RecordingHost} (a replica reduced to
 * what the port sees: verdicts, held ids, bytes, what arrived and how),
 * runs, and stops every node whatever happens. The setup owns the clock:
 * every wait goes through it and has a deadline, in real ms on libp2p and in
 * virtual ms in the simulator.
 */
import { describe, it } from 'vitest'
import { IdSet } from '../../src/core/id-set.js'
import { SIGNATURE_BYTES, eventIdOfWire } from '../../src/wire/codec.js'
import type { EventId } from '../../src/core/events.js'
import type { Presence, SyncOutcome, Transport, TransportHost, Verdict } from '../../src/ports/transport.js'

/** Pairs of node indexes that may connect; any other pair never does. */
export type Links = readonly (readonly [number, number])[]

/** A small network of transports, made by a setup for one check. */
export interface ContractNet {
  /** Not started; the check starts each with its host. */
  readonly transports: readonly Transport[]
  /** Opens every link the network was made with (all started); resolves once events gossip along each, both ways. */
  connect: () => Promise<void>
  /** Lets the network's clock run until `check` holds; throws after `ms` of it. */
  waitFor: (what: string, check: () => boolean, ms: number) => Promise<void>
  /** Lets the network's clock run until `p` settles and returns its outcome; throws after `ms` of it. */
  settle: <T>(what: string, p: Promise<T>, ms: number) => Promise<T>
  /** Lets `ms` of the network's clock pass. */
  idle: (ms: number) => Promise<void>
  /** How well node `observer` regards node `peer` (its gossip score); only where the transport scores peers. */
  standing?: (observer: number, peer: number) => number
  /** Stops every transport of the network (those stopped already included). */
  stop: () => Promise<void>
}

/** How a contract run makes networks of one Transport implementation. */
export interface TransportSetup {
  /** `count` transports, not started, whose nodes connect only along `links`. */
  readonly create: (count: number, links: Links) => Promise<ContractNet>
  /** Whether the transport keeps a standing of each peer that a verdict can lower (ContractNet.standing). */
  readonly scoresPeers: boolean
}

/** An event of the contract: wire-shaped bytes (`envelope || 64-byte signature`) and their event id. */
export interface ContractEvent {
  readonly id: EventId
  readonly bytes: Uint8Array
}

/** A stand-in event named `label`: 200 bytes derived from it plus a zero signature; nothing decodes them. */
export function contractEvent(label: string): ContractEvent {
  const bytes = new Uint8Array(200 + SIGNATURE_BYTES)
  const text = new TextEncoder().encode(`transport contract event ${label} `)
  for (let i = 0; i < 200; i++) bytes[i] = text[i % text.length] as number
  const id = eventIdOfWire(bytes)
  if (id === null) throw new Error('contract event too short')
  return { id: id as EventId, bytes }
}

/** One call of `host.receive`. */
export interface Received {
  readonly id: string
  readonly from: string
  readonly bytes: Uint8Array
  readonly verdict: Verdict
}

/**
 * What the port sees of a replica: a verdict per gossiped event (accept
 * unless told otherwise), the ids held (accepted, synced, or given), ids
 * parked (`has` true, never offered), and a record of everything that
 * reached it and by which way.
 */
export class RecordingHost implements TransportHost {
  readonly ids = new IdSet()
  readonly bytes = new Map<string, Uint8Array>()
  readonly parked = new Set<string>()
  readonly received: Received[] = []
  /** Ids that arrived through `ingestMany` (sync), in order, repeats included. */
  readonly pulled: string[] = []
  readonly outcomes: SyncOutcome[] = []
  readonly presences: Presence[] = []
  private readonly verdicts = new Map<string, Verdict>()

  /** Answer `verdict` when the event `id` is gossiped here. */
  judge(id: string, verdict: Verdict): void {
    this.verdicts.set(id, verdict)
  }

  hold(e: ContractEvent): void {
    this.bytes.set(e.id, e.bytes)
    this.ids.add(e.id)
  }

  park(id: string): void {
    this.parked.add(id)
  }

  gossiped(id: string): Received[] {
    return this.received.filter(r => r.id === id)
  }

  readonly receive = (bytes: Uint8Array, from: string): Verdict => {
    const id = eventIdOfWire(bytes) ?? 'not an event'
    const verdict = this.verdicts.get(id) ?? 'accept'
    this.received.push({ id, from, bytes: bytes.slice(), verdict })
    if (verdict === 'accept') this.hold({ id: id as EventId, bytes: bytes.slice() })
    return verdict
  }

  readonly has = (id: string): boolean => this.ids.has(id) || this.parked.has(id)
  readonly getBytes = (id: string): Uint8Array | undefined => this.bytes.get(id)

  readonly ingestMany = async (batch: readonly Uint8Array[]): Promise<unknown> => {
    for (const bytes of batch) {
      const id = eventIdOfWire(bytes)
      if (id === null) continue
      this.pulled.push(id)
      this.hold({ id: id as EventId, bytes: bytes.slice() })
    }
    return batch.length
  }

  readonly presence = (p: Presence): void => {
    this.presences.push(p)
  }

  readonly synced = (s: SyncOutcome): void => {
    this.outcomes.push(s)
  }
}

/** A rule of the port broken by the transport under test. */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation'
}

function must(cond: boolean, message: string): asserts cond {
  if (!cond) throw new ContractViolation(message)
}

/** What a check runs with: the network, one host per node, and the nodes' peer ids. */
export interface CheckContext {
  readonly net: ContractNet
  readonly hosts: readonly RecordingHost[]
  readonly peers: readonly string[]
  readonly t: readonly Transport[]
}

/** One rule of the port, runnable against any setup. */
export interface TransportCheck {
  readonly name: string
  /** The rule, from the port's TSDoc or from how src/runtime uses it. */
  readonly rule: string
  readonly nodes: number
  readonly links: Links
  /** Only for transports that score peers (TransportSetup.scoresPeers). */
  readonly needsScoring?: boolean
  readonly run: (c: CheckContext) => Promise<void>
}

/** Deadlines, in the network's ms: a hop of gossip or a sync session takes far less on either transport. */
const STEP_MS = 10_000
/** How long "nothing more arrives" is watched for: two gossipsub heartbeats, hundreds of simulated hops. */
const QUIET_MS = 2_500

const LINE: Links = [
  [0, 1],
  [1, 2]
]
const TRIANGLE: Links = [
  [0, 1],
  [1, 2],
  [0, 2]
]
const PAIR: Links = [[0, 1]]

async function publish(c: CheckContext, node: number, e: ContractEvent): Promise<void> {
  const what = `node ${node}'s publish of ${e.id.slice(0, 8)} to resolve`
  await rule(what, async () => {
    await c.net.settle(what, c.t[node]!.publish(e.id, e.bytes), STEP_MS)
  })
}

async function syncWith(c: CheckContext, node: number, peer: number, ms = STEP_MS): Promise<SyncOutcome> {
  const what = `node ${node}'s sync with node ${peer} to resolve`
  return await rule(
    what,
    async () => await c.net.settle(what, c.t[node]!.syncWith(c.peers[peer]!, { fresh: true }), ms)
  )
}

/** Until `check` holds: what the port promises, so a deadline passed is a violation, not a harness failure. */
async function arrives(c: CheckContext, what: string, check: () => boolean, ms = STEP_MS): Promise<void> {
  await rule(what, async () => {
    await c.net.waitFor(what, check, ms)
  })
}

/** Runs a step the port promises; its failure (a rejection, a deadline passed) is a violation. */
async function rule<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (err) {
    throw new ContractViolation(`expected ${what}: ${err instanceof Error ? err.message : String(err)}`)
  }
}

/** Event ids, cut to their first 8 digits, for a message. */
function short(ids: readonly string[]): string {
  return ids.map(id => id.slice(0, 8)).join(', ') || 'none'
}

/**
 * Quiet for the sessions a new connection starts by itself, so that what a
 * check adds afterwards travels only in the session it runs.
 */
async function afterAutomaticSyncs(c: CheckContext): Promise<void> {
  await c.net.idle(2_000)
}

/** Every rule of the contract, in the order a run reports them. */
export const TRANSPORT_CHECKS: readonly TransportCheck[] = [
  {
    name: 'publish reaches every connected peer',
    rule: "publish gossips the event's bytes, unchanged, to every connected peer's host.receive, naming a peer as `from`",
    nodes: 3,
    links: TRIANGLE,
    run: async c => {
      const e = contractEvent('reach')
      await publish(c, 0, e)
      await arrives(
        c,
        'nodes 1 and 2 to receive the event',
        () => [1, 2].every(i => c.hosts[i]!.gossiped(e.id).length > 0),
        STEP_MS
      )
      for (const i of [1, 2]) {
        for (const r of c.hosts[i]!.gossiped(e.id)) {
          must(Buffer.from(r.bytes).equals(Buffer.from(e.bytes)), `node ${i} received other bytes than were published`)
          must(r.from !== c.peers[i] && c.peers.includes(r.from), `node ${i} was told the event came from ${r.from}`)
        }
      }
    }
  },
  {
    name: 'publish resolves without peers',
    rule: 'publish never fails for lack of peers (sync delivers the event later)',
    nodes: 1,
    links: [],
    run: async c => {
      await publish(c, 0, contractEvent('alone'))
    }
  },
  {
    name: 'only accepted events are forwarded',
    rule:
      "a receiver's verdict decides forwarding: 'accept' goes on to its other peers, 'reject' and 'ignore' stop " +
      "there; the sender's publish resolves whatever the verdict",
    nodes: 3,
    links: LINE,
    run: async c => {
      const accepted = contractEvent('accepted')
      const ignored = contractEvent('ignored')
      const rejected = contractEvent('rejected')
      c.hosts[1]!.judge(ignored.id, 'ignore')
      c.hosts[1]!.judge(rejected.id, 'reject')
      // A reject costs its sender standing at the receiver: it goes last, so nothing after it depends on that standing.
      for (const e of [accepted, ignored, rejected]) await publish(c, 0, e)
      await arrives(
        c,
        'node 1 to judge all three events',
        () => [accepted, ignored, rejected].every(e => c.hosts[1]!.gossiped(e.id).length > 0),
        STEP_MS
      )
      for (const e of [accepted, ignored, rejected])
        must(
          c.hosts[1]!.gossiped(e.id).every(r => r.from === c.peers[0]),
          `node 1 was told an event of node 0 came from someone else`
        )
      await arrives(
        c,
        'node 2 to receive the accepted event from node 1',
        () => c.hosts[2]!.gossiped(accepted.id).length > 0,
        STEP_MS
      )
      await c.net.idle(QUIET_MS)
      const leaked = [ignored, rejected].filter(e => c.hosts[2]!.gossiped(e.id).length > 0).map(e => e.id)
      must(leaked.length === 0, `node 2 received events node 1 did not accept: ${short(leaked)}`)
    }
  },
  {
    name: 'a reject costs the sender and an ignore does not',
    rule: "'reject' penalises the sender (provably bad bytes); 'ignore' drops the event quietly, at no cost to the sender",
    nodes: 2,
    links: PAIR,
    needsScoring: true,
    run: async c => {
      const standing = c.net.standing
      must(standing !== undefined, 'the setup says the transport scores peers but gives no standing')
      const ignored = contractEvent('ignored once')
      const rejected = contractEvent('rejected once')
      c.hosts[1]!.judge(ignored.id, 'ignore')
      c.hosts[1]!.judge(rejected.id, 'reject')
      const before = standing(1, 0)
      await publish(c, 0, ignored)
      await arrives(c, 'node 1 to judge the ignored event', () => c.hosts[1]!.gossiped(ignored.id).length > 0, STEP_MS)
      const afterIgnore = standing(1, 0)
      must(afterIgnore >= before, `an ignored event lowered its sender's standing from ${before} to ${afterIgnore}`)
      await publish(c, 0, rejected)
      await arrives(
        c,
        'node 1 to judge the rejected event',
        () => c.hosts[1]!.gossiped(rejected.id).length > 0,
        STEP_MS
      )
      try {
        await arrives(c, "the reject to lower node 0's standing at node 1", () => standing(1, 0) < afterIgnore, 3_000)
      } catch {
        throw new ContractViolation(
          `a rejected event left its sender's standing at ${standing(1, 0)} (was ${afterIgnore})`
        )
      }
    }
  },
  {
    name: 'a fresh sync brings both sides up to date',
    rule:
      'syncWith(peer, { fresh: true }) that succeeds leaves the peer holding everything this node held at the call, ' +
      'and this node what the peer held; events arrive through host.ingestMany; eventsReceived counts them; ' +
      'host.synced hears of the session',
    nodes: 2,
    links: PAIR,
    run: async c => {
      await afterAutomaticSyncs(c)
      const mine = [contractEvent('mine 1'), contractEvent('mine 2'), contractEvent('mine 3')]
      const theirs = [contractEvent('theirs 1'), contractEvent('theirs 2')]
      for (const e of mine) c.hosts[0]!.hold(e)
      for (const e of theirs) c.hosts[1]!.hold(e)
      const outcome = await syncWith(c, 0, 1)
      must(outcome.ok, `the session failed: ${outcome.error ?? 'no reason given'}`)
      must(outcome.peer === c.peers[1], `the outcome names ${outcome.peer}, not the peer synced with`)
      const peerLacks = mine.filter(e => !c.hosts[1]!.pulled.includes(e.id)).map(e => e.id)
      must(peerLacks.length === 0, `after a fresh sync, node 1 lacks node 0's events ${short(peerLacks)}`)
      const iLack = theirs.filter(e => !c.hosts[0]!.pulled.includes(e.id)).map(e => e.id)
      must(iLack.length === 0, `after its sync, node 0 lacks node 1's events ${short(iLack)}`)
      must(
        outcome.eventsReceived === theirs.length,
        `eventsReceived is ${outcome.eventsReceived}; node 0 took in ${theirs.length}`
      )
      must(
        c.hosts[0]!.outcomes.some(s => s.peer === c.peers[1] && s.ok),
        'host.synced never heard of the successful session'
      )
    }
  },
  {
    name: 'sync never fetches what the host has',
    rule: 'held, folded, parked or refused (host.has): never fetched again, while what is missing is',
    nodes: 2,
    links: PAIR,
    run: async c => {
      await afterAutomaticSyncs(c)
      const parked = contractEvent('parked')
      const common = contractEvent('common')
      const missing = contractEvent('missing')
      for (const e of [parked, common, missing]) c.hosts[0]!.hold(e)
      c.hosts[1]!.park(parked.id)
      c.hosts[1]!.hold(common)
      const outcome = await syncWith(c, 1, 0)
      must(outcome.ok, `the session failed: ${outcome.error ?? 'no reason given'}`)
      must(c.hosts[1]!.pulled.includes(missing.id), 'the session did not bring the one event node 1 lacked')
      const again = [parked, common].filter(e => c.hosts[1]!.pulled.includes(e.id)).map(e => e.id)
      must(again.length === 0, `node 1 was given events its host has: ${short(again)}`)
    }
  },
  {
    name: 'presence reaches peers',
    rule: "host.presence hears each connected peer's presence, under that peer's id, and never the node's own",
    nodes: 2,
    links: PAIR,
    run: async c => {
      await arrives(
        c,
        'each node to hear the other',
        () => [0, 1].every(i => c.hosts[i]!.presences.some(p => p.peerId === c.peers[1 - i])),
        STEP_MS
      )
      for (const i of [0, 1]) {
        must(!c.hosts[i]!.presences.some(p => p.peerId === c.peers[i]), `node ${i} heard its own presence`)
        for (const p of c.hosts[i]!.presences)
          must(
            Array.isArray(p.addresses) && Number.isFinite(p.sentMs),
            `node ${i} heard a presence without addresses or time`
          )
      }
    }
  },
  {
    name: 'connected and topic peers list the links',
    rule: 'connectedPeers and topicPeers list the connected peers (those a publish reaches), never the node itself',
    nodes: 3,
    links: LINE,
    run: async c => {
      for (const [node, expected] of [
        [0, [1]],
        [1, [0, 2]],
        [2, [1]]
      ] as const) {
        for (const which of ['connectedPeers', 'topicPeers'] as const) {
          const listed = c.t[node]![which]()
          const lacking = expected.filter(i => !listed.includes(c.peers[i]!))
          must(
            lacking.length === 0,
            `node ${node}'s ${which} (${listed.length} peers) lacks node ${lacking.join(', ')}`
          )
          must(!listed.includes(c.peers[node]!), `node ${node}'s ${which} lists itself`)
        }
      }
    }
  },
  {
    name: 'a stopped node hears nothing and sync with it fails softly',
    rule: 'after stop nothing reaches the host; syncWith a peer gone resolves with ok false and never rejects',
    nodes: 2,
    links: PAIR,
    run: async c => {
      await c.net.settle('node 1 to stop', c.t[1]!.stop(), STEP_MS)
      const e = contractEvent('after stop')
      await publish(c, 0, e)
      const outcome = await syncWith(c, 0, 1, 30_000)
      must(!outcome.ok, 'a sync with a stopped peer reported success')
      must(outcome.peer === c.peers[1], `the outcome names ${outcome.peer}, not the peer synced with`)
      await c.net.idle(QUIET_MS)
      must(c.hosts[1]!.gossiped(e.id).length === 0, 'the stopped node received an event')
    }
  }
]

/** What one check did against one setup. */
export interface CheckResult {
  readonly name: string
  readonly ok: boolean
  /**
   * A ContractViolation for a rule broken; another error when the network
   * could not be set up (a node did not start, a link did not open).
   */
  readonly error?: Error
}

/** The check of this name (throws for an unknown name, so a renamed check cannot go unnoticed). */
export function transportCheck(name: string): TransportCheck {
  const check = TRANSPORT_CHECKS.find(c => c.name === name)
  if (check === undefined) throw new Error(`no transport check named "${name}"`)
  return check
}

/** Runs one check against a setup: a fresh network, started and connected, stopped whatever happens. */
export async function runTransportCheck(check: TransportCheck, setup: TransportSetup): Promise<CheckResult> {
  const net = await setup.create(check.nodes, check.links)
  try {
    const hosts = net.transports.map(() => new RecordingHost())
    for (const [i, t] of net.transports.entries()) await net.settle(`node ${i} to start`, t.start(hosts[i]!), STEP_MS)
    if (check.links.length > 0) await net.connect()
    await check.run({ net, hosts, peers: net.transports.map(t => t.peerId), t: net.transports })
    return { name: check.name, ok: true }
  } catch (err) {
    return { name: check.name, ok: false, error: err instanceof Error ? err : new Error(String(err)) }
  } finally {
    await net.stop()
  }
}

/** Runs these checks (default all that apply to the setup), one after another. */
export async function runTransportChecks(
  setup: TransportSetup,
  checks: readonly TransportCheck[] = TRANSPORT_CHECKS
): Promise<CheckResult[]> {
  const out: CheckResult[] = []
  for (const check of checks)
    if (setup.scoresPeers || check.needsScoring !== true) out.push(await runTransportCheck(check, setup))
  return out
}

/**
 * Registers the contract as a vitest suite: one test per check, named after
 * it; a check that needs peer scoring is skipped, visibly, for a transport
 * without it.
 */
export function runTransportContract(name: string, setup: TransportSetup): void {
  describe(`Transport contract: ${name}`, () => {
    for (const check of TRANSPORT_CHECKS) {
      it.skipIf(check.needsScoring === true && !setup.scoresPeers)(check.name, async () => {
        const result = await runTransportCheck(check, setup)
        if (!result.ok) throw result.error
      })
    }
  })
}
