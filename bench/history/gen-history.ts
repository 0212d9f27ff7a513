/**
 * A long history for `npm run bench -- history`: thousands of finished plans
 * of the shape the swarm makes (a goal; per split two or three proposals and
 * the committee's ballots; per leaf a claim, its renewals and a result; per
 * composite a roll-up), plus a few plans still under way, every event signed
 * for HISTORY_SWARM and written straight into `<dir>/events.sqlite` with the
 * project's own store (openEventStore(...).putMany), the way a node stores
 * what it received. Nothing goes through the network.
 *
 * The events are made as the test helpers' PlanBuilder makes them (the same
 * bodies and deps), encoded once with the wire codec and signed with a
 * handful of author keys held as Node key objects (libp2p's key import per
 * signature was a third of the build). Stamps spread the finished plans over the HISTORY_DAYS
 * days before the build, each plan's events in causal order; the plans under
 * way started within the last two hours. Each plan is checked as it is made:
 * its bytes decode (one in SIG_SAMPLE also with its signature checked) and
 * fold, on their own, to a completed plan (or, for those under way, to one
 * not finished).
 *
 * The plans under way are ones no bench process can move (so a node opened on
 * the store has nothing of them to do, and a claim in a new plan is the only
 * work there is): their tasks are for outside workers (`executors: outside`),
 * their splits are decided, some tasks are done, one is claimed by a worker
 * whose lease has lapsed, the rest wait.
 *
 * Built dirs are cached in the system's temp dir, keyed by size and
 * HISTORY_VERSION (bump it when the shape changes), and rebuilt after
 * CACHE_MAX_AGE_DAYS so that the stamps stay within the default retention
 * (30 days) of nodes that expire plans.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash, createPrivateKey, sign as signBytes } from 'node:crypto'
import { makePeers, subgoals } from '../../test/helpers/plan-builder.js'
import { encodeEnvelope, joinWire, signedMessage } from '../../src/wire/codec.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { createNativeVerifier } from '../../src/runtime/verify.js'
import { childId, rollupId } from '../../src/core/node-ids.js'
import { Fold } from '../../src/core/fold.js'
import { isFinished } from '../../src/core/view.js'
import { nativeSha256HexOfText } from '../../src/sync/native-hash.js'
import { EVENTS_FILE, openEventStore } from '../../src/store/event-store.js'
import { EVENT_STORE_SCHEMA_VERSION } from '../../src/store/sqlite-schema.js'
import { DEFAULT_PARAMS, paramsVersion } from '../../src/core/events.js'
import { seededRandom } from '../../src/ports/scheduler.js'
import type { KeyObject } from 'node:crypto'
import type { PrivateKey } from '@libp2p/interface'
import type {
  Bodies,
  EventId,
  EventType,
  NodeId,
  PeerIdString,
  PlanEvent,
  PlanId,
  PlanParams,
  Subgoal,
  TaskId
} from '../../src/core/events.js'
import type { EventRow } from '../../src/store/event-store.js'

/** The swarm every history event is signed for: the bench's nodes run with `--swarm HISTORY_SWARM`. */
export const HISTORY_SWARM = 'bench-history'
/** The generator's version, part of the cache key: bump it whenever the shape of the history changes. */
export const HISTORY_VERSION = 'h1'
/** Days the finished plans spread over, ending an hour before the build. */
const HISTORY_DAYS = 20
/** A cached build older than this is made again (see the file comment). */
const CACHE_MAX_AGE_DAYS = 7
/** One event in this many is decoded with its signature checked as well (all are decoded and folded). */
const SIG_SAMPLE = 100
/** Rows per store transaction. */
const PUT_ROWS = 20_000

const DAY_MS = 86_400_000
const sec = (ms: number): string => `${(ms / 1000).toFixed(0)} s`

interface Key {
  readonly id: PeerIdString
  /** The same Ed25519 key as Node's KeyObject: signing with it skips @libp2p/crypto's key import per signature. */
  readonly node: KeyObject
}

/** PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex')

function nodeKey(key: PrivateKey): KeyObject {
  const seed = key.raw.subarray(0, 32)
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' })
}

/** The keys that sign the history; `workers` are the people doing the tasks of the outside plans. */
type Cast = Readonly<Record<'authors' | 'decomposers' | 'scorers' | 'executors' | 'workers', Key[]>>

/** What a build made, kept beside the store as meta.json. */
export type HistoryMeta = Awaited<ReturnType<typeof buildHistory>>

export interface History {
  readonly dir: string
  readonly file: string
  readonly meta: HistoryMeta
  /** True when this run built it, false when it came from the cache. */
  readonly built: boolean
}

const WORDS = (
  'plan budget venue guest list schedule vendor contract review draft outline research compare price ' +
  'route booking hotel flight train museum dinner lunch weekend trip team offsite agenda slides report ' +
  'summary risk option estimate timeline owner deadline checklist inventory supplier quote order ship ' +
  'deliver test measure metric survey user interview feedback design prototype launch announce email ' +
  'invite confirm cancel refund policy permit insurance catering music photo transport parking access'
).split(' ')

interface Gen {
  readonly r: () => number
  int(lo: number, hi: number): number
  pick<T>(xs: readonly T[]): T
  sample<T>(xs: readonly T[], n: number): T[]
  words(n: number): string
  /** About `chars` characters of sentences. */
  text(chars: number): string
}

function gen(seed: number): Gen {
  const r = seededRandom(seed)
  const g: Gen = {
    r,
    int: (lo, hi) => lo + Math.floor(r() * (hi - lo + 1)),
    pick: xs => xs[Math.floor(r() * xs.length)] as (typeof xs)[number],
    sample: (xs, n) => {
      const pool = [...xs]
      const out: Array<(typeof xs)[number]> = []
      while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(r() * pool.length), 1)[0] as never)
      return out
    },
    words: n => Array.from({ length: n }, () => g.pick(WORDS)).join(' '),
    text: chars => {
      let s = ''
      while (s.length < chars) s += `${g.words(g.int(6, 14))}. `
      return s.slice(0, chars)
    }
  }
  return g
}

/** One plan's events in causal order, and the keys that sign them. */
interface MadePlan {
  readonly plan: PlanId
  readonly events: PlanEvent[]
  /** Each event's signed wire bytes. */
  readonly wire: Uint8Array[]
  readonly finished: boolean
}

/**
 * Events of one plan, stamped along their deps: `after(deps, lo, hi)` is a
 * stamp lo..hi ms after the latest of `deps`.
 */
class PlanMaker {
  readonly events: PlanEvent[] = []
  readonly wire: Uint8Array[] = []
  readonly goal: PlanEvent<'goal-submitted'>
  readonly plan: PlanId

  constructor(
    private readonly g: Gen,
    author: Key,
    params: PlanParams,
    at: number,
    text: string
  ) {
    this.goal = this.make(paramsVersion(params), 'goal-submitted', '', author, at, [], { text, params })
    this.plan = this.goal.id as string as PlanId
  }

  /** Encode once, hash the id and sign (the decode in checkPlan checks all three as a receiver does). */
  private make<T extends EventType>(
    v: number,
    type: T,
    plan: string,
    author: Key,
    at: number,
    deps: readonly EventId[],
    body: Bodies[T]
  ): PlanEvent<T> {
    const env = {
      v,
      swarm: HISTORY_SWARM,
      type,
      plan,
      author: author.id,
      hlc: { ms: at, c: 0 },
      deps: [...new Set(deps)].sort(),
      body
    }
    const envelope = encodeEnvelope(env)
    const id = createHash('sha256').update(envelope).digest('hex') as EventId
    const signature = signBytes(null, signedMessage(HISTORY_SWARM, envelope), author.node)
    const e = { id, env } as PlanEvent<T>
    this.events.push(e)
    this.wire.push(joinWire(envelope, signature))
    return e
  }

  after(deps: readonly PlanEvent[], lo: number, hi: number): number {
    let t = this.goal.env.hlc.ms
    for (const d of deps) t = Math.max(t, d.env.hlc.ms)
    return t + this.g.int(lo, hi)
  }

  ev<T extends EventType>(type: T, author: Key, at: number, cites: readonly EventId[], body: Bodies[T]): PlanEvent<T> {
    return this.make(this.goal.env.v, type, this.plan, author, at, [this.goal.id, ...cites], body)
  }

  usage(): { inputTokens: number; outputTokens: number } {
    return { inputTokens: this.g.int(400, 4_000), outputTokens: this.g.int(150, 1_500) }
  }

  /** A split of `node`: proposals, then the committee's ballots for the first. Returns the winner and the ballots. */
  split(
    node: NodeId,
    base: readonly PlanEvent[],
    proposers: readonly Key[],
    committee: readonly Key[],
    subs: (variant: number) => Subgoal[]
  ): { winner: PlanEvent<'split-proposed'>; ballots: PlanEvent[] } {
    const g = this.g
    const proposals = proposers.map((d, i) =>
      this.ev('split-proposed', d, this.after(base, 2_000, 12_000), [], {
        node,
        attempt: 1,
        subgoals: subs(i),
        rationale: g.text(g.int(120, 600)),
        usage: this.usage()
      })
    )
    const winner = proposals[0] as PlanEvent<'split-proposed'>
    // Sometimes one member is late and the quorum (2 of 3) decides without it.
    const voters = g.r() < 0.15 ? committee.slice(0, 2) : committee
    const ballots = voters.map(s =>
      this.ev('ballot-cast', s, this.after(proposals, 1_000, 6_000), [this.goal.id, ...proposals.map(p => p.id)], {
        node,
        attempt: 1,
        committee: this.goal.id,
        scores: proposals.map(p => ({
          proposal: p.id,
          score: p.id === winner.id ? g.int(70, 95) : g.int(30, 69),
          notes: g.text(g.int(20, 160))
        })),
        choice: winner.id,
        notes: g.r() < 0.3 ? g.text(g.int(20, 200)) : '',
        usage: this.usage()
      })
    )
    return { winner, ballots }
  }

  /** A task done by `who`: claim, renewals every 4-8 s, result. Returns the result. */
  task(
    task: TaskId,
    who: Key,
    base: readonly PlanEvent[],
    renewals: number,
    output: string,
    opts: { evidence?: readonly EventId[]; source?: 'llm' | 'outside' } = {}
  ): PlanEvent<'result-reported'> {
    const claim = this.ev('task-claimed', who, this.after(base, 300, 3_000), opts.evidence ?? [], { task, prev: null })
    let prev: PlanEvent = claim
    for (let i = 0; i < renewals; i++)
      prev = this.ev('claim-renewed', who, this.after([prev], 4_000, 8_000), [claim.id, prev.id], {
        task,
        claim: claim.id,
        prev: prev.id
      })
    const source = opts.source ?? 'llm'
    return this.ev('result-reported', who, this.after([prev], 1_000, 5_000), [claim.id, prev.id], {
      task,
      claim: claim.id,
      output,
      usage: source === 'outside' ? { inputTokens: 0, outputTokens: 0 } : this.usage(),
      model: source === 'outside' ? 'person' : 'claude-sonnet-4-5',
      source
    })
  }
}

function subgoalsOf(g: Gen, n: number, variant: number, leafAt: (i: number) => boolean, deps: boolean): Subgoal[] {
  const titles = Array.from(
    { length: n },
    (_, i) => `${g.words(g.int(2, 5))} ${i + 1}${variant > 0 ? ` v${variant}` : ''}`
  )
  return subgoals(titles).map((s, i) => ({
    ...s,
    detail: g.text(g.int(80, 400)),
    leaf: leafAt(i),
    dependsOn: deps && i > 0 && g.r() < 0.3 ? [i - 1] : []
  }))
}

/** A finished plan: depth 1 or 2, 2-4 children a split, some children of a depth-2 plan leaves at once. */
function finishedPlan(g: Gen, cast: Cast, at: number): MadePlan {
  const depth = g.r() < 0.3 ? 1 : 2
  const committee = g.sample(cast.scorers, 3).sort((a, b) => (a.id < b.id ? -1 : 1))
  const params: PlanParams = {
    ...DEFAULT_PARAMS,
    committee: committee.map(c => c.id),
    quorum: 2,
    maxDepth: depth,
    maxChildren: 5
  }
  const m = new PlanMaker(g, g.pick(cast.authors), params, at, g.text(g.int(40, 400)))
  const renewals = (): number => (depth === 1 ? g.int(5, 19) : g.int(3, 15))
  const grow = (node: NodeId, level: number, base: readonly PlanEvent[]): PlanEvent<'result-reported'> => {
    const n = g.int(2, 4)
    const leafFlags = Array.from({ length: n }, () => level + 1 >= depth || g.r() < 0.3)
    const withDeps = g.r() < 0.25
    const proposers = g.sample(cast.decomposers, g.int(2, 3))
    const { winner, ballots } = m.split(node, base, proposers, committee, v =>
      subgoalsOf(g, n, v, i => leafFlags[i] as boolean, v === 0 && withDeps)
    )
    const subs = winner.env.body.subgoals
    const results: Array<PlanEvent<'result-reported'>> = []
    subs.forEach((s, i) => {
      const child = childId(node, winner.id, i)
      const needs = s.dependsOn.map(k => results[k] as PlanEvent)
      const childBase = [...ballots, ...needs]
      if (s.leaf || level + 1 >= depth) {
        results.push(
          m.task(child as string as TaskId, g.pick(cast.executors), childBase, renewals(), g.text(g.int(300, 2_500)), {
            evidence: needs.map(x => x.id)
          })
        )
      } else {
        results.push(grow(child, level + 1, childBase))
      }
    })
    return m.task(rollupId(node), g.pick(cast.executors), results, g.int(0, 2), g.text(g.int(400, 3_000)), {
      evidence: results.map(x => x.id)
    })
  }
  grow(m.goal.id as string as NodeId, 0, [m.goal])
  return { plan: m.plan, events: m.events, wire: m.wire, finished: true }
}

/** A plan under way that only outside workers can move (see the file comment). */
function underWayPlan(g: Gen, cast: Cast, at: number): MadePlan {
  const committee = g.sample(cast.scorers, 3).sort((a, b) => (a.id < b.id ? -1 : 1))
  const params: PlanParams = {
    ...DEFAULT_PARAMS,
    committee: committee.map(c => c.id),
    quorum: 2,
    maxDepth: 1,
    maxChildren: 6,
    executors: 'outside',
    maxClaimMs: 86_400_000
  }
  const m = new PlanMaker(g, g.pick(cast.authors), params, at, g.text(g.int(40, 400)))
  const node = m.goal.id as string as NodeId
  const n = g.int(4, 6)
  const { winner, ballots } = m.split(node, [m.goal], g.sample(cast.decomposers, 3), committee, v =>
    subgoalsOf(g, n, v, () => true, false)
  )
  const done = g.int(1, n - 2)
  for (let i = 0; i < done; i++)
    m.task(childId(node, winner.id, i) as string as TaskId, g.pick(cast.workers), ballots, g.int(0, 3), g.text(800), {
      source: 'outside'
    })
  // One more claimed by a worker who stopped renewing: its lease lapsed long ago; the rest wait.
  const task = childId(node, winner.id, done) as string as TaskId
  const worker = g.pick(cast.workers)
  const claim = m.ev('task-claimed', worker, m.after(ballots, 60_000, 600_000), [], { task, prev: null })
  m.ev('claim-renewed', worker, m.after([claim], 4_000, 8_000), [claim.id], { task, claim: claim.id, prev: claim.id })
  return { plan: m.plan, events: m.events, wire: m.wire, finished: false }
}

/** Fold one plan's decoded bytes alone and say whether it ends as it should. */
function checkPlan(made: MadePlan, verifier: ReturnType<typeof createNativeVerifier>, n0: number): void {
  const fail = (why: string): never => {
    throw new Error(`history: plan ${made.plan}: ${why}`)
  }
  const events = made.wire.map((b, i) => {
    const d = decodeEvent(b, { swarm: HISTORY_SWARM, verify: (n0 + i) % SIG_SAMPLE === 0, verifier })
    if (d.kind !== 'event') return fail(`an event does not decode: ${JSON.stringify(d)}`)
    return d.event.id === made.events[i]?.id ? d.event : fail('an event decodes to another id')
  })
  const fold = new Fold({ hashText: nativeSha256HexOfText })
  for (const { event, outcome } of fold.addBatch(events, Date.now()))
    if (outcome.status !== 'folded') fail(`${event.env.type} ${event.id} did not fold: ${JSON.stringify(outcome)}`)
  const status = fold.tree(made.plan)?.status ?? fail('no tree')
  if (made.finished ? status !== 'completed' : isFinished({ status })) fail(`folds to ${status}`)
}

/** The cached history of about `target` events, built first when missing or stale. */
export async function ensureHistory(target: number, label: string, log: (s: string) => void): Promise<History> {
  // The store's schema is part of the key: a build by code of another schema is another build.
  const dir = join(tmpdir(), `plan-swarm-history-${HISTORY_VERSION}-s${EVENT_STORE_SCHEMA_VERSION}-${label}`)
  const metaFile = join(dir, 'meta.json')
  const file = join(dir, EVENTS_FILE)
  if (process.env.HISTORY_REBUILD === undefined && existsSync(metaFile) && existsSync(file)) {
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as HistoryMeta
    const ageDays = (Date.now() - Date.parse(meta.builtAt)) / DAY_MS
    if (meta.version === HISTORY_VERSION && ageDays < CACHE_MAX_AGE_DAYS) {
      log(`history ${label}: cached in ${dir} (${meta.events} events, built ${ageDays.toFixed(1)} days ago)`)
      return { dir, file, meta, built: false }
    }
    log(`history ${label}: the cache in ${dir} is stale (${meta.version}, ${ageDays.toFixed(1)} days); rebuilding`)
  }
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const meta = await buildHistory(dir, target, label, log)
  writeFileSync(metaFile, JSON.stringify(meta, null, 2) + '\n')
  return { dir, file, meta, built: true }
}

async function buildHistory(dir: string, target: number, label: string, log: (s: string) => void) {
  const t0 = performance.now()
  const keys: Key[] = (await makePeers(4 + 6 + 6 + 8 + 3)).map(p => ({ id: p.id, node: nodeKey(p.key) }))
  const take = (n: number): Key[] => keys.splice(0, n)
  const cast: Cast = {
    authors: take(4),
    decomposers: take(6),
    scorers: take(6),
    executors: take(8),
    workers: take(3)
  }
  const verifier = createNativeVerifier()
  const store = openEventStore({ dir })
  const builtAt = Date.now()
  const end = builtAt - 3_600_000
  const underWayCount = Math.max(5, Math.round(target / 100_000))
  // About 100 events a finished plan; the count is what it takes to reach the target.
  const expectedPlans = Math.max(1, Math.round(target / 100))
  let events = 0
  let wireBytes = 0
  let plans = 0
  let signMs = 0
  let checkMs = 0
  let storeMs = 0
  const byType: Record<string, number> = {}
  const underWayPlans: string[] = []
  let rows: EventRow[] = []
  const flush = (): void => {
    const t = performance.now()
    store.putMany(rows)
    storeMs += performance.now() - t
    rows = []
  }
  let told = performance.now()
  const add = (make: () => MadePlan): void => {
    let t = performance.now()
    const made = make()
    const wire = made.wire
    signMs += performance.now() - t
    t = performance.now()
    checkPlan(made, verifier, events)
    checkMs += performance.now() - t
    made.events.forEach((e, i) => {
      const bytes = wire[i] as Uint8Array
      rows.push({ id: e.id, plan: made.plan, bytes, receivedMs: e.env.hlc.ms + 50 })
      wireBytes += bytes.length
      byType[e.env.type] = (byType[e.env.type] ?? 0) + 1
    })
    events += made.events.length
    plans++
    if (rows.length >= PUT_ROWS) flush()
    if (performance.now() - told > 3_000) {
      told = performance.now()
      const s = (performance.now() - t0) / 1000
      log(
        `  history ${label}: ${events} of about ${target} events (${plans} plans) in ${s.toFixed(0)} s, ` +
          `about ${Math.max(0, ((target - events) * s) / Math.max(1, events)).toFixed(0)} s to go`
      )
    }
  }
  log(`history ${label}: building about ${expectedPlans} finished plans and ${underWayCount} under way in ${dir}`)
  let i = 0
  while (events < target - 20 * underWayCount) {
    const g = gen(i + 1)
    // Spread evenly over HISTORY_DAYS (by the expected count), with a little jitter.
    const at = end - HISTORY_DAYS * DAY_MS + Math.floor(((i + g.r()) * HISTORY_DAYS * DAY_MS) / expectedPlans)
    add(() => finishedPlan(g, cast, Math.min(at, end - 600_000)))
    i++
  }
  for (let k = 0; k < underWayCount; k++) {
    const g = gen(1_000_000_000 + k)
    add(() => {
      const made = underWayPlan(g, cast, end - g.int(0, 3_600_000))
      underWayPlans.push(made.plan)
      return made
    })
  }
  flush()
  const stored = store.count()
  store.close()
  if (stored !== events) throw new Error(`history: the store holds ${stored} events, ${events} were made`)
  const fileBytes = ['', '-wal', '-shm']
    .map(x => join(dir, EVENTS_FILE + x))
    .filter(existsSync)
    .reduce((s, f) => s + statSync(f).size, 0)
  const buildMs = Math.round(performance.now() - t0)
  log(
    `history ${label}: ${events} events in ${plans} plans, ${(fileBytes / 2 ** 20).toFixed(0)} MB on disk, ` +
      `built in ${sec(buildMs)} (making and signing ${sec(signMs)}, checking ${sec(checkMs)}, ` +
      `storing ${sec(storeMs)})`
  )
  return {
    version: HISTORY_VERSION,
    swarm: HISTORY_SWARM,
    target,
    events,
    plans,
    finished: plans - underWayCount,
    underWay: underWayCount,
    underWayPlans,
    eventsPerPlan: Math.round(events / plans),
    fileBytes,
    wireBytes,
    byType,
    builtAt: new Date(builtAt).toISOString(),
    buildMs,
    signMs: Math.round(signMs),
    checkMs: Math.round(checkMs),
    storeMs: Math.round(storeMs)
  }
}
