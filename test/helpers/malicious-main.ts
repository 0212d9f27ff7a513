/**
 * A malicious member as its own process, for test/resilience/malicious-member.test.ts:
 *
 *   node --import tsx test/helpers/malicious-main.ts --swarm S --bootstrap ADDR --data-dir DIR
 *        [--allow-peers FILE] [--model M] [--sybils N] [--junk N]
 *
 * An admitted member (its own key, on the allow-list like the others) that runs
 * the project's own node runtime, folds the plans it hears over gossip, and
 * publishes correctly signed, crafted events through the simulator's dishonest
 * policies (src/sim/byzantine): nothing here builds an event by hand except
 * the parked junk and the sybils' presence. It announces itself as a scorer (a
 * test may name it on a committee) and attacks in eight ways:
 *
 *  1. stamp: claims every ready task one tick after its readyAt (`hoard`);
 *  2. hoard: renews those claims up to maxClaimMs, then claims again at its own
 *     lapse (a takeover of its own chain), over the claim limit (`hoard`);
 *  3. replace results: claims and results for tasks others hold (`notHeld`),
 *     and once a plan completed, back-dated claims and results for every done
 *     task (`lateRewrite`), again every few seconds;
 *  4. reopen: honest proposals stamped one tick after what they cite (so the
 *     fake model's scorers pick them), and once the plan completed a second
 *     proposal in each slot it won and a second ballot for each winner
 *     (`equivocateLate`);
 *  5. sybils: `--sybils` fresh keys, whose presence (as scorers) and claims it
 *     relays through its one admitted connection;
 *  6. budget: its proposals for the plan's root report the most usage one
 *     event may count (as `budgetDrain`'s do);
 *  7. stall: there are `STUFF_PER_PROPOSAL` + 1 of them in one attempt (`stuff`);
 *  8. memory: `--junk` events of about 57 KB citing events that do not exist,
 *     which honest nodes must park (waiting for their deps) within their caps.
 *
 * Prints JSON lines: `{"event":"started","peerId":...,"sybils":[...]}` once it
 * listens, `{"event":"attack",...}` as it attacks, and `{"event":"sent",...}`
 * with its counts every few seconds and on SIGTERM.
 */
// libp2p calls Promise.withResolvers (Node 22+): the polyfill loads before anything else.
import '../../src/polyfill.js'
import { parseArgs } from 'node:util'
import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { openEventStore } from '../../src/store/event-store.js'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import { createLibp2pTransport } from '../../src/net/libp2p-transport.js'
import { parseAllowList } from '../../src/net/allow-list.js'
import { encodePresence } from '../../src/net/presence.js'
import { presenceTopic } from '../../src/wire/topics.js'
import { startNodeRuntime } from '../../src/runtime/node-runtime.js'
import { NodeMetrics } from '../../src/runtime/metrics.js'
import { realScheduler, sleep } from '../../src/ports/scheduler.js'
import { createProvider } from '../../src/app/create-provider.js'
import { signEvent } from '../../src/wire/sign.js'
import { eventVersion } from '../../src/core/events.js'
import { maxHlc } from '../../src/core/hlc.js'
import { MAX_OUTPUT_CHARS } from '../../src/core/limits.js'
import { startRole } from '../../roles/driver.js'
import { createDecomposer } from '../../roles/decomposer.js'
import { createScorer } from '../../roles/scorer.js'
import { forgerOf, justAfterReady } from '../../src/sim/byzantine/forge.js'
import { hoard, lateRewrite, notHeld } from '../../src/sim/byzantine/executor-policies.js'
import { equivocateLate, stuff, tamper } from '../../src/sim/byzantine/plan-policies.js'
import type { PrivateKey } from '@libp2p/interface'
import type { Bodies, EventId, Hlc, PeerIdString, PlanId } from '../../src/core/events.js'
import type { NodeView } from '../../src/ports/node-view.js'
import type { RoleContext, RoleHandler } from '../../roles/driver.js'
import type { PolicyCtx } from '../../src/sim/byzantine/executor-policies.js'

const { values } = parseArgs({
  options: {
    swarm: { type: 'string' },
    bootstrap: { type: 'string', multiple: true },
    'data-dir': { type: 'string' },
    'allow-peers': { type: 'string' },
    model: { type: 'string' },
    sybils: { type: 'string' },
    junk: { type: 'string' }
  }
})
const swarm = values.swarm ?? 'default'
const dataDir = values['data-dir']
if (dataDir === undefined) throw new Error('malicious-main: --data-dir is required (its key is made there)')
const sybilCount = Number(values.sybils ?? 3)
const junkCount = Number(values.junk ?? 100)

const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`)
}
const counts: Record<string, number> = {}
const count = (kind: string, n = 1): void => {
  counts[kind] = (counts[kind] ?? 0) + n
}

const identity = await loadOrCreateIdentity(dataDir)
const key = identity.privateKey
const me = identity.peerId.toString() as PeerIdString
const scheduler = realScheduler()
const transport = createLibp2pTransport({
  privateKey: key,
  peerId: me,
  swarm,
  listen: ['/ip4/127.0.0.1/tcp/0'],
  bootstrap: values.bootstrap ?? [],
  mdns: false,
  allowPeers:
    values['allow-peers'] === undefined ? undefined : parseAllowList(readFileSync(values['allow-peers'], 'utf8')),
  presence: { role: 'scorer', capabilities: [], load: 0, version: 'malicious/1' }
})
// Its own replica takes every author: it relays and builds on its sybils' events.
const runtime = await startNodeRuntime({
  swarm,
  role: 'scorer',
  key,
  peerId: me,
  dataDir,
  store: openEventStore({ dir: dataDir }),
  transport,
  scheduler,
  metrics: new NodeMetrics()
})
const view = runtime.view
const sybils: Array<{ key: PrivateKey; peerId: PeerIdString }> = []
for (let i = 0; i < sybilCount; i++) {
  const k = await generateKeyPair('Ed25519')
  sybils.push({ key: k, peerId: peerIdFromPrivateKey(k).toString() as PeerIdString })
}
const { provider } = createProvider({ model: values.model ?? 'fake-malicious', env: process.env })
const say = (line: string): void => {
  print({ event: 'role', line })
}
const ctx: RoleContext = { view, provider, say }
let halted = false
const forger = forgerOf(runtime, key, me)
const p: PolicyCtx = { ctx, forger, halted: () => halted }
const noRole: RoleHandler = { decide: () => [], act: async () => {} }
const completed = new Set<PlanId>()

/**
 * Proposals stamped one tick after what they cite (the fake model's scorers choose the first proposal they see,
 * so these win), except the root's: that one and STUFF_PER_PROPOSAL more in its attempt (stuff) each report the
 * most usage one event may count (as budgetDrain's do).
 */
function proposer(v: NodeView): NodeView {
  // Every proposal of the root's attempt reports the most usage one event may count (as budgetDrain's do).
  const most = tamper(v, async (type, plan, cites, body) => {
    const max = plan === '' ? 0 : (v.tree(plan)?.params.maxTokensPerCall ?? 16_000)
    const usage = { inputTokens: max, outputTokens: 0 }
    return await v.publish(type, plan, cites, type === 'split-proposed' ? ({ ...body, usage } as typeof body) : body)
  })
  const drained = stuff(most)
  return tamper(v, async (type, plan, cites, body) => {
    if (type !== 'split-proposed' || plan === '') return await v.publish(type, plan, cites, body)
    const b = body as Bodies['split-proposed']
    const tree = v.tree(plan)
    if (tree?.nodes[0]?.id === b.node) {
      count('stuffed-attempts')
      print({ event: 'attack', kind: 'stuff-and-drain', plan, node: b.node })
      return await drained.publish(type, plan, cites, body)
    }
    const deps = [plan as string as EventId, ...cites].map(d => v.event(d)?.env.hlc)
    const last = maxHlc(deps.filter((h): h is Hlc => h !== undefined))
    const e = await forger.forge(type, plan, cites, body, { ms: last.ms, c: last.c + 1 })
    if (e === undefined) return await v.publish(type, plan, cites, body)
    count('early-proposals')
    return { event: e, bytes: new Uint8Array() }
  })
}

/**
 * Behaviour 3 again and again: every few seconds, back-dated claims and results for every done task of a completed
 * plan; and once it completed, behaviours 5 and 8.
 */
async function keepRewriting(): Promise<void> {
  let round = 0
  while (!halted) {
    await sleep(view.scheduler, 3_000)
    round++
    for (const plan of view.plans()) {
      if (completed.has(plan) || view.tree(plan)?.status !== 'completed') continue
      completed.add(plan)
      await sybilPresence()
      await sybilClaims(plan)
      void junk(plan).catch((err: Error) => {
        print({ event: 'error', message: err.message })
      })
    }
    for (const plan of completed) {
      const tree = view.tree(plan)
      if (tree === undefined) continue
      for (const task of tree.tasks) {
        if (task.status !== 'done' || halted) continue
        // A tick later each round: the same claim again would be the same event.
        const first = justAfterReady(view, task)
        const at = { ms: first.ms, c: first.c + round }
        const claim = await forger.forge('task-claimed', plan, task.evidence, { task: task.id, prev: null }, at)
        if (claim === undefined) continue
        const r = await forger.forge(
          'result-reported',
          plan,
          [claim.id],
          {
            task: task.id,
            claim: claim.id,
            output: `REWRITTEN ${round} ${task.id.slice(0, 8)}`,
            usage: { inputTokens: 0, outputTokens: 0 },
            model: 'none',
            source: 'offline'
          },
          { ms: at.ms, c: at.c + 1 }
        )
        if (r !== undefined) count('late-rewrites')
      }
    }
  }
}

/** Behaviour 5, the presence: each sybil announces itself as a scorer, relayed through this one connection. */
async function sybilPresence(): Promise<void> {
  const pubsub = transport.node.libp2p.services.pubsub
  for (const s of sybils) {
    const info = { role: 'scorer', capabilities: [], load: 0, version: 'malicious/1' }
    const bytes = await encodePresence(swarm, info, [], Date.now(), s.key)
    try {
      await pubsub.publish(presenceTopic(swarm), bytes)
      count('sybil-presence')
    } catch {
      // no peers yet
    }
  }
}

/**
 * Behaviour 5, the events: each sybil claims the plan's first tasks. Honest nodes refuse what unlisted keys sign,
 * and gossip lowers this member's score for each: so it is done once the plan completed (and the sybils' presence
 * only now and then), or the member would be cut off before the other attacks.
 */
async function sybilClaims(plan: PlanId): Promise<void> {
  const tree = view.tree(plan)
  for (const task of (tree?.tasks ?? []).filter(t => t.readyAt !== null).slice(0, 2))
    for (const s of sybils) {
      const e = await forgerOf(runtime, s.key, s.peerId).forge('task-claimed', plan, task.evidence, {
        task: task.id,
        prev: null
      })
      if (e !== undefined) count('sybil-claims')
    }
}

/** Behaviour 8: results citing a claim that does not exist, about 57 KB each (the most one may say): honest nodes park them. */
async function junk(plan: PlanId): Promise<void> {
  const goal = view.event(plan as string as EventId)
  for (let i = 0; i < junkCount && !halted; i++) {
    const missing = randomBytes(32).toString('hex') as EventId
    const body: Bodies['result-reported'] = {
      task: randomBytes(32).toString('hex') as Bodies['result-reported']['task'],
      claim: missing,
      output: '€'.repeat(MAX_OUTPUT_CHARS - 1_000),
      usage: { inputTokens: 0, outputTokens: 0 },
      model: 'none',
      source: 'offline'
    }
    const env = {
      v: eventVersion('result-reported', body, goal),
      swarm,
      type: 'result-reported' as const,
      plan,
      author: me,
      hlc: { ms: Date.now(), c: 0 },
      deps: [plan as string as EventId, missing].sort(),
      body
    }
    const signed = await signEvent(env, key)
    await transport.publish(signed.event.id, signed.bytes).catch(() => {})
    count('parked-junk')
    if (i % 10 === 9) await sleep(view.scheduler, 1_000)
  }
}

const proposerCtx: RoleContext = { ...ctx, view: proposer(view) }
const noted = (plan: PlanId): void => {
  print({ event: 'attack', kind: 'late', plan })
}
const runs = [
  startRole(proposerCtx, equivocateLate(p, createDecomposer(proposerCtx), noted)),
  startRole(ctx, createScorer(ctx)),
  startRole(ctx, hoard(p), { concurrency: 64 }),
  startRole(ctx, notHeld(p, noRole), { concurrency: 64 }),
  startRole(ctx, lateRewrite(p, noRole, noted), { concurrency: 4 })
]
const loops = [sleep(view.scheduler, 2_000).then(sybilPresence), keepRewriting()].map(async l => {
  await l.catch((err: Error) => {
    print({ event: 'error', message: err.message })
  })
})

print({
  event: 'started',
  peerId: me,
  addresses: transport.addresses(),
  sybils: sybils.map(s => s.peerId)
})
const timer = setInterval(() => {
  print({ event: 'sent', counts })
}, 3_000)

async function stop(): Promise<void> {
  halted = true
  clearInterval(timer)
  print({ event: 'sent', counts, final: true })
  await Promise.race([
    Promise.all([...runs.map(async r => await r.stop()), ...loops]),
    new Promise(resolve => setTimeout(resolve, 3_000))
  ])
  await runtime.stop()
  process.exit(0)
}
process.once('SIGTERM', () => void stop())
process.once('SIGINT', () => void stop())
