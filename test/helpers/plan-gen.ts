/**
 * A seeded generator of valid event sets for one plan, grown by simulating
 * the roles against the generator's own Fold.
 *
 * Why a driver rather than a fast-check arbitrary per event: validity of an
 * event depends on its deps (a ballot cites the proposals it judged, a claim
 * the events that made its task claimable, a takeover the lapsed chain's last
 * event), and the interesting cases (competing proposals, split ballots,
 * racing claims, lapsed leases, takeovers, late renewals, equivocation) only
 * arise from roles acting on what they have seen at a given time. So
 * fast-check supplies a seed, and this module plays the swarm:
 *
 * - one goal author (amends the committee when a member stays silent, raises
 *   an exhausted budget, sometimes retries a failed task or cancels);
 * - 2-3 decomposers proposing 2..4 subgoals for every open attempt (some leaf,
 *   some with dependsOn), sometimes equivocating;
 * - a committee of 3 scorers (plus a spare that an amendment brings in)
 *   casting ballots that sometimes split, sometimes equivocating, and
 *   reviewing results when the plan asks;
 * - 2-3 executors claiming what `view(tree, now)` says is claimable (sometimes
 *   racing for one task), renewing (sometimes too rarely, so the lease lapses
 *   and another executor takes over; sometimes a renewal is delayed in transit
 *   so that it arrives after the takeover it makes moot), reporting results,
 *   sometimes failing or releasing.
 *
 * Every actor has its own skewed wall clock and a HybridClock, so every event
 * is stamped after its deps. Events travel to the generator's shared view with
 * a random delay (sometimes a long one), so actors act on stale knowledge, as
 * on a real network. The generator is deterministic in (seed, actors, options).
 */
import { HybridClock } from '../../src/core/hlc.js'
import { Fold, foldAll } from '../../src/core/fold.js'
import { derivePlan } from '../../src/core/derive.js'
import { isFinished, view } from '../../src/core/view.js'
import { DEFAULT_REVIEW_ONE_IN, DEFAULT_TRUST, isType, majority, reviewsResults } from '../../src/core/events.js'
import { passedReviewCites } from '../../src/core/review-sample.js'
import { makeEvent } from './plan-builder.js'
import { peerIdOf, testKeys } from './arbitraries.js'
import type {
  Bodies,
  EventId,
  EventType,
  Hlc,
  NodeId,
  PeerIdString,
  PlanEvent,
  PlanId,
  PlanParams,
  Subgoal,
  ToolCallRecord,
  TaskId
} from '../../src/core/events.js'
import type { ChainView, PlanTree, TaskView } from '../../src/core/tree.js'
import type { PlanView } from '../../src/core/view.js'

// ------------------------------------------------------------------ PRNG

/**
 * A small seeded PRNG (sfc32, seeded through a splitmix-style mixer): the generator's only source of randomness.
 * It is not the simulator's `seededRandom` because seeds written down outside the code name its sequence: the
 * golden fixture's (test/fixtures/golden-plan.json) and any GEN_SEED a failing run printed.
 */
export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: number) {
    let s = seed >>> 0
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next()
    this.b = next()
    this.c = next()
    this.d = next()
    for (let i = 0; i < 12; i++) this.u32()
  }

  u32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 4294967296
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list')
    return items[Math.floor(this.next() * items.length)] as T
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      const x = items[i] as T
      items[i] = items[j] as T
      items[j] = x
    }
    return items
  }

  /** A derived generator, so that independent streams do not disturb each other. */
  fork(): Rng {
    return new Rng(this.u32())
  }
}

/** FNV-1a of a string: a cheap deterministic preference order (not a security hash). */
export function fnv(s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

// ------------------------------------------------------------------ actors

export interface Actors {
  readonly author: PeerIdString
  readonly decomposers: readonly PeerIdString[]
  /** The first three are the goal's committee; the fourth is the spare an amendment brings in. */
  readonly scorers: readonly PeerIdString[]
  readonly executors: readonly PeerIdString[]
}

/** Fixed actors from the fixed test keys (Ed25519 from constant seeds), so a seed replays exactly. */
export async function loadActors(): Promise<Actors> {
  const ids = (await testKeys(11)).map(peerIdOf)
  return actorsFrom(ids)
}

/** Actors from 11 peer id strings: author, 3 decomposers, 4 scorers, 3 executors. */
export function actorsFrom(ids: readonly PeerIdString[]): Actors {
  if (ids.length < 11) throw new Error('need 11 peer ids')
  return {
    author: ids[0] as PeerIdString,
    decomposers: ids.slice(1, 4),
    scorers: ids.slice(4, 8),
    executors: ids.slice(8, 11)
  }
}

// ------------------------------------------------------------------ roles

/** One simulated participant: its peer id, its wall-clock skew and its hybrid clock. */
export interface Actor {
  readonly id: PeerIdString
  readonly skew: number
  readonly clock: HybridClock
}

/** How contentious and faulty a run is: probabilities the roles draw against. */
export interface Temperament {
  /** A scorer ignores the shared judgement and picks at random (or none). */
  readonly pSplit: number
  /** An executor goes for the first claimable task instead of its own preference (so executors race). */
  readonly pRace: number
  /** A claim whose owner never renews: the lease lapses and others take over. */
  readonly pLazy: number
  /** A renewal held back in transit past the lease, so it arrives after a takeover. */
  readonly pLateRenewal: number
  readonly pFail: number
  readonly pRelease: number
  /** A second, different event in a slot (proposal, ballot, renewal). */
  readonly pEquivocate: number
  /** A review rejects the result. */
  readonly pReject: number
  /** Index in the committee of a scorer that never votes, or -1. */
  readonly silent: number
  /** Wall ms at which the author cancels (Infinity: never). */
  readonly cancelAt: number
  readonly amendments: boolean
  readonly authorActions: boolean
  /** A liar's second events in a slot (proposal, ballot) travel late: published after the first one was built on. */
  readonly lateLies?: boolean
}

/** How the liar's results begin (GenOptions.liar): junk, which reviewers reject more often than not. */
export const JUNK = 'junk'

/** What every role needs to know about the plan it works on. */
export interface PlanCtx {
  readonly plan: PlanId
  readonly goal: PlanEvent<'goal-submitted'>
  readonly params: PlanParams
  /** The scorer an amendment brings in for a silent member. */
  readonly spare: PeerIdString | null
  /** How many decomposers a scorer waits to hear from before the window ends. */
  readonly decomposers: number
  /**
   * Committee members who are people (protocol 2 plans with `people`): slow, score only what they choose, say "none" or
   * reject with notes.
   */
  readonly people?: PersonTemper
  /** Results may come from outside executors (source 'outside'): only in a v2 plan whose executors are not 'model'. */
  readonly outside?: boolean
  /** Protocol 3 (`tools`): subgoals may name needs, results record tool calls and turns, failures turns. */
  readonly tools?: boolean
  /**
   * The executor that lies (GenOptions.liar): its clock runs far behind, so
   * its every event is stamped a tick after its deps (a claim a tick after
   * readyAt, a result a tick after its claim); it ignores the claim limit
   * and keeps working, and reporting, on claims it lost.
   */
  readonly liar?: PeerIdString
  /** Protocol 5: an honest executor hands back a claim it lost (the fold counts it until it ends). */
  readonly trust?: boolean
  /** Protocol 5 (GenOptions.backups): an idle honest executor backs up a chain held past the fold's backup time. */
  readonly backups?: boolean
}

/** How the people of a plan behave. */
export interface PersonTemper {
  readonly ids: ReadonlySet<PeerIdString>
  /** A person's ballot chooses none (with notes saying what to change). */
  readonly pNone: number
  /** A person's review rejects the result (with notes). */
  readonly pReject: number
}

/** Publish an event: stamp it after its deps with the actor's clock, make it, send it. `late` holds it back in transit. */
export type Emit = <T extends EventType>(
  a: Actor,
  type: T,
  deps: readonly EventId[],
  body: Bodies[T],
  late?: boolean
) => PlanEvent<T>

/** What an actor knows besides its tree: its folded events. */
export interface Knowledge {
  isFolded: (id: EventId) => boolean
  reviewsOf: (result: EventId) => ReadonlyArray<PlanEvent<'result-reviewed'>>
}

interface Job {
  readonly claim: PlanEvent<'task-claimed'>
  last: PlanEvent
  readonly task: TaskId
  readonly doneAt: number
  readonly renewEvery: number
  ended: boolean
}

/** One actor's memory of what it already did in one plan (it knows its own events before the network does). */
export class RoleMemory {
  readonly proposed = new Set<string>()
  readonly voted = new Set<string>()
  readonly firstSeen = new Map<string, number>()
  readonly reviewed = new Set<string>()
  readonly jobs: Job[] = []
  amended = 0
  raisedFor = -1
  readonly retried = new Set<TaskId>()
  cancelled = false
  waitSince = -1
}

export function randomTemperament(
  rng: Rng,
  opts: { equivocation: boolean; review: boolean; amendments: boolean; authorActions: boolean; start: number }
): Temperament {
  return {
    pSplit: rng.pick([0, 0.15, 0.35, 0.6]),
    pRace: rng.pick([0.05, 0.3, 0.6]),
    pLazy: rng.pick([0, 0.1, 0.3]),
    pLateRenewal: rng.pick([0, 0.15, 0.4]),
    pFail: rng.pick([0, 0.08, 0.2]),
    pRelease: rng.pick([0, 0.04]),
    pEquivocate: opts.equivocation ? rng.pick([0, 0, 0.03, 0.08]) : 0,
    pReject: opts.review ? rng.pick([0.1, 0.3]) : 0,
    silent: opts.amendments && rng.chance(0.2) ? rng.int(0, 2) : -1,
    cancelAt: opts.authorActions && rng.chance(0.05) ? opts.start + rng.int(3_000, 60_000) : Infinity,
    amendments: opts.amendments,
    authorActions: opts.authorActions
  }
}

/**
 * The roles' behaviour, shared by the plan generator (one shared, delayed
 * view) and the network simulator (each replica its own view). Each method
 * reads `view(tree, wall)` and the actor's memory, and publishes through
 * `emit`. Honest by default; the temperament adds the faults.
 */
export class Roles {
  constructor(
    private readonly rng: Rng,
    private readonly temper: Temperament,
    private readonly ctx: PlanCtx,
    private readonly emit: Emit,
    /** What the actors meant to do that the tree alone may not show (for statistics). */
    readonly intents: Set<string> = new Set()
  ) {}

  private usage(lo: number, hi: number): { inputTokens: number; outputTokens: number } {
    const n = this.rng.int(lo, hi)
    return { inputTokens: Math.floor(n * 0.7), outputTokens: n - Math.floor(n * 0.7) }
  }

  /** A tool loop's record (protocol 3): a few calls, some failed, and the turns taken. */
  private toolCalls(): { toolCalls: ToolCallRecord[]; turns: number } {
    const rng = this.rng
    const n = rng.int(0, 3)
    const toolCalls = Array.from({ length: n }, (_, i) => {
      const ok = rng.chance(0.8)
      return {
        server: 'notes',
        tool: rng.pick(['list_notes', 'read_note']),
        ms: rng.int(1, 900),
        ok,
        args: rng.chance(0.5) ? `{"name":"n${i}"}` : null,
        error: ok ? null : 'the tool did not answer within 60 s'
      }
    })
    return { toolCalls, turns: n + 1 }
  }

  private subgoals(a: Actor, node: NodeId, attempt: number, variant: number): Subgoal[] {
    const { params } = this.ctx
    const rng = this.rng
    const n = rng.int(params.minChildren, Math.min(params.maxChildren, 4))
    const angle = ['place', 'activity', 'time'][fnv(a.id) % 3] as string
    return Array.from({ length: n }, (_, i) => ({
      title: `${i + 1}. by ${angle} v${variant} a${attempt} ${node.slice(0, 4)}`,
      detail: `part ${i + 1} of ${n}`,
      leaf: rng.chance(0.55),
      dependsOn: Array.from({ length: i }, (_, j) => j).filter(() => rng.chance(0.25)),
      // Drawn only in tool plans, so the other plans of a seed stay as they were.
      ...(this.ctx.tools === true && rng.chance(0.4)
        ? { needs: [...new Set(['browser', 'notes', 'notes/read_note'].filter(() => rng.chance(0.5)))].sort() }
        : {})
    })).map(s => (s.needs !== undefined && s.needs.length === 0 ? { ...s, needs: ['gpu'] } : s))
  }

  /** Propose a split for each open attempt not proposed for yet (sometimes a second, different one). */
  decompose(a: Actor, m: RoleMemory, v: PlanView): void {
    for (const { node, attempt } of v.openAttempts) {
      const key = `${node.id}|${attempt}`
      if (m.proposed.has(key) || !this.rng.chance(0.6)) continue
      m.proposed.add(key)
      const prevAttempt = attempt > 1 ? node.attempts[attempt - 2] : undefined
      const cites = [...node.evidence, ...(prevAttempt?.ballots.map(b => b.id) ?? [])].slice(0, 40)
      this.emit(a, 'split-proposed', cites, {
        node: node.id,
        attempt,
        subgoals: this.subgoals(a, node.id, attempt, 1),
        rationale: `split by ${a.id.slice(-4)}`,
        usage: this.usage(200, 900)
      })
      if (this.rng.chance(this.temper.pEquivocate)) {
        this.intents.add('equivocating-proposal')
        this.emit(
          a,
          'split-proposed',
          cites,
          {
            node: node.id,
            attempt,
            subgoals: this.subgoals(a, node.id, attempt, 2),
            rationale: `another split by ${a.id.slice(-4)}`,
            usage: this.usage(200, 900)
          },
          this.temper.lateLies
        )
      }
    }
  }

  /** Cast one ballot per open attempt and committee, once proposals from every decomposer are in or a window passed. */
  score(a: Actor, m: RoleMemory, v: PlanView, wall: number): void {
    const rng = this.rng
    const latest = v.tree.committees[v.tree.committees.length - 1]
    if (latest === undefined || !latest.members.includes(a.id)) return
    const people = this.ctx.people
    if (people?.ids.has(a.id) === true) {
      this.choose(a, m, v, wall, people, latest.event)
      return
    }
    for (const { node, attempt } of v.openAttempts) {
      const av = node.attempts[attempt - 1]
      if (av === undefined || av.proposals.length === 0) continue
      const key = `${node.id}|${attempt}|${latest.event}`
      if (m.voted.has(key)) continue
      const since = m.firstSeen.get(key) ?? wall
      m.firstSeen.set(key, since)
      const authors = new Set(av.proposals.map(p => p.author))
      if (authors.size < this.ctx.decomposers && wall - since < 1_500) continue
      if (!rng.chance(0.7)) continue
      m.voted.add(key)
      const judged = av.proposals.map(p => p.id)
      // The shared judgement: every scorer prefers the same proposal, unless this ballot splits.
      const preferred = av.proposals.filter(p => !p.equivocated).sort((x, y) => fnv(x.id) - fnv(y.id))[0]
      const ballot = (choice: EventId | null, late?: boolean): void => {
        this.emit(
          a,
          'ballot-cast',
          [latest.event, ...judged],
          {
            node: node.id,
            attempt,
            committee: latest.event,
            scores: judged.map(p => ({ proposal: p, score: p === choice ? 80 : rng.int(10, 70), notes: 'judged' })),
            choice,
            notes: `notes from ${a.id.slice(-4)}`,
            usage: this.usage(50, 300)
          },
          late
        )
      }
      const choice = rng.chance(this.temper.pSplit)
        ? rng.chance(0.2)
          ? null
          : rng.pick(av.proposals).id
        : (preferred?.id ?? null)
      ballot(choice)
      if (rng.chance(this.temper.pEquivocate)) {
        this.intents.add('equivocating-ballot')
        ballot(av.proposals.find(p => p.id !== choice)?.id ?? null, this.temper.lateLies)
      }
    }
  }

  /**
   * A person's ballot: slower than a scorer (they look when they have time),
   * for the shared judgement's proposal or, now and then, for none with
   * notes saying what to change; scores only what they choose; no usage.
   */
  private choose(a: Actor, m: RoleMemory, v: PlanView, wall: number, people: PersonTemper, committee: EventId): void {
    const rng = this.rng
    for (const { node, attempt } of v.openAttempts) {
      const av = node.attempts[attempt - 1]
      if (av === undefined || av.proposals.length === 0) continue
      const key = `${node.id}|${attempt}|${committee}`
      if (m.voted.has(key)) continue
      const since = m.firstSeen.get(key) ?? wall
      m.firstSeen.set(key, since)
      if (wall - since < 2_500 || !rng.chance(0.4)) continue
      m.voted.add(key)
      const preferred = av.proposals.filter(p => !p.equivocated).sort((x, y) => fnv(x.id) - fnv(y.id))[0]
      const choice = rng.chance(people.pNone) || preferred === undefined ? null : preferred.id
      this.intents.add(choice === null ? 'person chose none' : 'person chose')
      this.emit(a, 'ballot-cast', [committee, ...(choice === null ? [] : [choice])], {
        node: node.id,
        attempt,
        committee,
        scores: choice === null ? [] : [{ proposal: choice, score: 100, notes: '' }],
        choice,
        notes: choice === null ? 'none of these: split it by week instead' : '',
        usage: { inputTokens: 0, outputTokens: 0 }
      })
    }
  }

  /** Review results that wait for the committee (when the plan asks, or protocol 5 samples them). */
  review(a: Actor, m: RoleMemory, v: PlanView): void {
    if (!reviewsResults(this.ctx.params)) return
    const latest = v.tree.committees[v.tree.committees.length - 1]
    if (latest === undefined || !latest.members.includes(a.id)) return
    const person = this.ctx.people?.ids.has(a.id) === true ? this.ctx.people : undefined
    for (const task of v.tree.tasks) {
      if (task.status !== 'in-review') continue
      for (const r of task.results) {
        if (r.review !== 'pending') continue
        const key = `${r.id}|${latest.event}`
        if (m.reviewed.has(key) || !this.rng.chance(person === undefined ? 0.6 : 0.3)) continue
        m.reviewed.add(key)
        // The liar's output is junk, which a reviewer mostly sees.
        const pReject = r.output.startsWith(JUNK) ? 0.6 : (person?.pReject ?? this.temper.pReject)
        const verdict = this.rng.chance(pReject) ? 'reject' : 'accept'
        const notes = person === undefined ? verdict : verdict === 'reject' ? 'add the prices, then it is fine' : ''
        this.emit(a, 'result-reviewed', [r.id, latest.event], {
          task: task.id,
          result: r.id,
          committee: latest.event,
          verdict,
          notes,
          usage: person === undefined ? this.usage(50, 200) : { inputTokens: 0, outputTokens: 0 }
        })
      }
    }
  }

  /** Work on held claims (renew, finish, fail, release; stop on losing), then maybe claim a claimable task. */
  execute(a: Actor, m: RoleMemory, v: PlanView, wall: number, k: Knowledge): void {
    const rng = this.rng
    const { params } = this.ctx
    const t = this.temper
    for (const job of m.jobs) {
      if (job.ended) continue
      const task = v.task(job.task)
      const chain = task?.chains.find(c => c.claim === job.claim.id)
      // Lost: superseded, or the claim is folded and yet starts no chain (it lost a race or came too late).
      const lost = chain !== undefined ? chain.end?.kind === 'superseded' : k.isFolded(job.claim.id)
      if (lost && a.id !== this.ctx.liar && !rng.chance(0.15)) {
        job.ended = true
        this.intents.add('executor-stopped-after-losing')
        if (this.ctx.trust === true && chain === undefined)
          this.emit(a, 'task-released', [job.claim.id, job.last.id], {
            task: job.task,
            claim: job.claim.id,
            reason: 'another claim won the task'
          })
        continue
      }
      if (wall >= job.doneAt) {
        job.ended = true
        const roll = rng.next()
        if (roll < t.pFail) {
          this.emit(a, 'task-failed', [job.claim.id], {
            task: job.task,
            claim: job.claim.id,
            error: 'simulated failure',
            usage: this.usage(50, 400),
            ...(this.ctx.tools === true ? { turns: rng.int(1, 5) } : {})
          })
        } else if (roll < t.pFail + t.pRelease) {
          this.emit(a, 'task-released', [job.claim.id], {
            task: job.task,
            claim: job.claim.id,
            reason: 'simulated release'
          })
        } else {
          // A roll-up cites the child results it used.
          const cites =
            task?.kind === 'rollup'
              ? v.tree.tasks
                  .filter(x => x.accepted !== null && v.node(x.node)?.parent === task.node)
                  .map(x => x.accepted as EventId)
                  .slice(0, 20)
              : []
          const source = this.ctx.outside === true && rng.chance(0.3) ? 'outside' : 'offline'
          // Protocol 5: cite its own passed review, as the executors do, so the review sample takes it as no first.
          const passed = this.ctx.trust === true ? passedReviewCites(v.tree, a.id, k.reviewsOf) : []
          this.emit(a, 'result-reported', [job.claim.id, ...cites, ...passed], {
            task: job.task,
            claim: job.claim.id,
            output: `${a.id === this.ctx.liar ? JUNK : 'output'} of ${job.task.slice(0, 6)} by ${a.id.slice(-4)}`,
            usage: this.usage(200, 1_500),
            model: 'sim',
            source,
            ...(this.ctx.tools === true ? this.toolCalls() : {})
          })
        }
        continue
      }
      // Renew while the predecessor is fresh enough for the renewal to be valid.
      const sinceLast = wall - job.last.env.hlc.ms
      const canRenew = sinceLast <= params.leaseMs - 50 && wall - job.claim.env.hlc.ms <= params.maxClaimMs - 50
      if (sinceLast >= job.renewEvery && canRenew) {
        const late = rng.chance(t.pLateRenewal)
        if (late) this.intents.add('delayed-renewal')
        const r = this.emit(
          a,
          'claim-renewed',
          [job.claim.id, job.last.id],
          { task: job.task, claim: job.claim.id, prev: job.last.id },
          late
        )
        if (rng.chance(t.pEquivocate)) {
          this.intents.add('equivocating-renewal')
          this.emit(a, 'claim-renewed', [job.claim.id, job.last.id], {
            task: job.task,
            claim: job.claim.id,
            prev: job.last.id
          })
        }
        job.last = r
      }
    }
    // New claims, up to the per-plan limit of live jobs.
    if (a.id !== this.ctx.liar && m.jobs.filter(j => !j.ended).length >= params.maxClaimsPerExecutor) return
    const claimable = v.claimable.filter(task => !m.jobs.some(j => !j.ended && j.task === task.id))
    if (claimable.length === 0) {
      if (this.ctx.backups === true && a.id !== this.ctx.liar && m.jobs.every(j => j.ended)) this.backUp(a, m, v, wall)
      return
    }
    if (!rng.chance(0.6)) return
    const task = rng.chance(t.pRace)
      ? (claimable[0] as TaskView)
      : ([...claimable].sort((x, y) => fnv(x.id + a.id) - fnv(y.id + a.id))[0] as TaskView)
    let prev: EventId | null = null
    const cites: EventId[] = [...task.evidence]
    const cur = task.chains[task.chains.length - 1]
    if (task.status === 'claimed' && cur !== undefined && cur.end === null) {
      // A takeover cites the lapsed chain's last event it saw.
      prev = cur.last
      this.intents.add('takeover-claim')
    } else if (cur !== undefined && cur.end !== null && cur.end.kind !== 'superseded') {
      prev = cur.end.event
      if (cur.end.kind === 'rejected') {
        // A reopened task counts claims stamped after the rejecting review: cite the rejections seen.
        cites.push(
          ...k
            .reviewsOf(cur.end.event)
            .filter(r => r.env.body.verdict === 'reject')
            .map(r => r.id)
        )
      }
    }
    if (prev !== null) cites.push(prev)
    const claim = this.emit(a, 'task-claimed', cites.slice(0, 60), { task: task.id, prev })
    const lazy = rng.chance(t.pLazy)
    if (lazy) this.intents.add('lazy-renewer')
    m.jobs.push({
      claim,
      last: claim,
      task: task.id,
      // With backups on, the liar also hoards: it holds its tasks four times as long (no extra draw).
      doneAt: wall + rng.int(300, 3 * params.leaseMs) * (this.ctx.backups === true && a.id === this.ctx.liar ? 4 : 1),
      renewEvery: lazy
        ? params.leaseMs * 10
        : rng.int(Math.floor(params.leaseMs * 0.3), Math.floor(params.leaseMs * 0.7)),
      ended: false
    })
  }

  /** Back up the longest-held open chain of another member past the tree's backupMs (GenOptions.backups). */
  private backUp(a: Actor, m: RoleMemory, v: PlanView, wall: number): void {
    const backupMs = v.tree.backupMs
    if (backupMs === undefined) return
    let best: { task: TaskView; chain: ChainView } | undefined
    for (const task of v.tree.tasks) {
      const chain = task.chains[task.chains.length - 1]
      if (task.status !== 'claimed' || chain === undefined || chain.end !== null || chain.owner === a.id) continue
      if (wall > chain.lapseMs || wall - chain.claimedAt.ms <= backupMs) continue
      if (best === undefined || chain.claimedAt.ms < best.chain.claimedAt.ms) best = { task, chain }
    }
    if (best === undefined) return
    this.intents.add('backup-claim')
    const { task, chain } = best
    const claim = this.emit(a, 'task-claimed', [...task.evidence, chain.last].slice(0, 60), {
      task: task.id,
      prev: chain.last
    })
    m.jobs.push({
      claim,
      last: claim,
      task: task.id,
      doneAt: wall + this.rng.int(300, 3 * this.ctx.params.leaseMs),
      renewEvery: this.rng.int(Math.floor(this.ctx.params.leaseMs * 0.3), Math.floor(this.ctx.params.leaseMs * 0.7)),
      ended: false
    })
  }

  /** The goal's author: cancel, raise an exhausted budget, amend a committee with a silent member, retry failed tasks. */
  author(a: Actor, m: RoleMemory, v: PlanView, wall: number): void {
    const tree = v.tree
    const t = this.temper
    if (!m.cancelled && wall >= t.cancelAt && tree.status !== 'completed' && tree.status !== 'failed') {
      m.cancelled = true
      this.emit(a, 'goal-cancelled', [], { reason: 'simulated cancel' })
      return
    }
    if (tree.status === 'budget-exhausted' && t.authorActions && m.raisedFor !== tree.budgetTokens) {
      m.raisedFor = tree.budgetTokens
      this.emit(a, 'budget-raised', [], { budgetTokens: tree.budgetTokens + 20_000 })
      return
    }
    const stuck = v.openAttempts.some(({ node, attempt }) => {
      const av = node.attempts[attempt - 1]
      return av !== undefined && av.ballots.length > 0 && av.waitingFor.length > 0
    })
    if (t.amendments && m.amended < 1 && t.silent >= 0 && this.ctx.spare !== null && stuck) {
      if (m.waitSince < 0) m.waitSince = wall
      if (wall - m.waitSince > 4_000) {
        m.amended++
        const members = [...this.ctx.params.committee.filter((_, i) => i !== t.silent), this.ctx.spare]
        this.intents.add('amendment')
        this.emit(a, 'committee-amended', [], { committee: members, quorum: majority(members.length) })
      }
    }
    if (t.authorActions) {
      for (const task of tree.tasks) {
        if (task.status !== 'failed' || m.retried.has(task.id) || !this.rng.chance(0.3)) continue
        m.retried.add(task.id)
        this.intents.add('retry')
        this.emit(a, 'task-retried', task.finishEvent === null ? [] : [task.finishEvent], { task: task.id })
      }
    }
  }
}

// ------------------------------------------------------------------ the generator

export interface GenOptions {
  /** Decomposers, scorers and executors sometimes publish two events in one slot. Default: on (in some plans). */
  readonly equivocation?: boolean
  /** Force review on or off; by default a quarter of plans ask for review. */
  readonly review?: boolean
  /** The author may amend the committee when a member stays silent. Default on. */
  readonly amendments?: boolean
  /** The author may retry failed tasks, raise an exhausted budget (small budgets happen only then) and cancel. Default on. */
  readonly authorActions?: boolean
  /** Stop creating events beyond this many. Default 200. */
  readonly maxEvents?: number
  /** Stop after this many simulated steps. Default 400. */
  readonly maxSteps?: number
  /** Plan parameter overrides. */
  readonly params?: Partial<Omit<PlanParams, 'committee' | 'quorum'>>
  /**
   * Protocol 2: the third committee member is a person and an approver (of
   * splits, or with review of results or both), who is slow, sometimes says
   * "none" or rejects, and is sometimes silent until the author amends them
   * out; executors may be 'outside' or 'any', and then some results come
   * from outside. Default off (the draws for it are taken only when on, so
   * the other plans of a seed stay as they were).
   */
  readonly people?: boolean
  /**
   * Protocol 3: a plan that uses tools: some subgoals name needs, results
   * record tool calls and the turns of their loop, failures their turns.
   * Default off (its draws are taken only when on).
   */
  readonly tools?: boolean
  /** Protocol 5: the goal has DEFAULT_TRUST, with the review sample. Default off (no draws are taken for it). */
  readonly trust?: boolean
  /**
   * The first executor lies (PlanCtx.liar), and equivocating proposals and
   * ballots (made more often) travel late. Default off (no draws are taken
   * for it, so the other plans of a seed stay as they were).
   */
  readonly liar?: boolean
  /**
   * Protocol 5: an honest executor with no live claim and nothing claimable
   * backs up the longest-held open chain of another member held past the
   * tree's backupMs, as roles/backup-rules.ts does (ADR-0050, 0054), and
   * the liar holds its tasks four times as long. Default off (its draws are
   * taken only when it backs up).
   */
  readonly backups?: boolean
}

export interface GeneratedPlan {
  readonly seed: number
  readonly plan: PlanId
  readonly goal: PlanEvent<'goal-submitted'>
  /** Every event, in creation order (a causal order: each after its deps). */
  readonly events: readonly PlanEvent[]
  /** The order the generator's shared view received them (not causal: delays differ). */
  readonly delivery: readonly PlanEvent[]
  /** How often the generator's own view parked an event (delivered before its deps). */
  readonly parkedInTransit: number
  readonly intents: ReadonlySet<string>
}

interface Pending {
  readonly at: number
  readonly seq: number
  readonly event: PlanEvent
}

/** Random plan parameters for a committee (small plans: depth <= 2, 2..4 children). */
export function randomParams(
  rng: Rng,
  committee: readonly PeerIdString[],
  o: { review: boolean; smallBudget: boolean }
): PlanParams {
  return {
    committee,
    quorum: majority(committee.length),
    maxDepth: rng.chance(0.2) ? 1 : 2,
    minChildren: 2,
    maxChildren: 4,
    maxAttempts: rng.int(2, 3),
    leaseMs: 3_000,
    maxClaimMs: rng.chance(0.15) ? 7_000 : 60_000,
    maxNodes: rng.chance(0.15) ? rng.int(5, 9) : 30,
    budgetTokens: o.smallBudget ? rng.int(2_000, 6_000) : 1_000_000,
    maxTokensPerCall: 1_000,
    review: o.review,
    maxClaimsPerExecutor: 2
  }
}

/**
 * Grow one plan's event set from a seed. Deterministic for equal (seed,
 * actors, options). Each plan is small: maxDepth <= 2, at most a few dozen
 * nodes, at most `maxEvents` events.
 */
export function generatePlan(seed: number, actors: Actors, opts: GenOptions = {}): GeneratedPlan {
  const rng = new Rng(seed)
  const maxEvents = opts.maxEvents ?? 200
  const maxSteps = opts.maxSteps ?? 400

  let t = 10_000 + rng.int(0, 5_000)
  const mkActor = (id: PeerIdString): Actor => {
    const skew = rng.int(-250, 250)
    return { id, skew, clock: new HybridClock(() => t + skew) }
  }
  const author = mkActor(actors.author)
  const decomposers = actors.decomposers.slice(0, rng.int(2, 3)).map(mkActor)
  const scorers = actors.scorers.slice(0, 4).map(mkActor)
  const executors = actors.executors.slice(0, rng.int(2, 3)).map(mkActor)
  if (opts.liar === true) {
    const id = (executors[0] as Actor).id
    executors[0] = { id, skew: -60_000, clock: new HybridClock(() => t - 60_000) }
  }
  const committee = scorers.slice(0, 3).map(s => s.id)
  const review = opts.review ?? rng.chance(0.25)
  const authorActions = opts.authorActions ?? true
  let params: PlanParams = {
    ...randomParams(rng, committee, { review, smallBudget: authorActions && rng.chance(0.1) }),
    ...opts.params
  }
  let temper = randomTemperament(rng, {
    equivocation: opts.equivocation ?? true,
    review,
    amendments: opts.amendments ?? true,
    authorActions,
    start: t
  })
  let people: PersonTemper | undefined
  let outside = false
  if (opts.people === true) {
    const person = committee[2] as PeerIdString
    const approve = review ? rng.pick(['splits', 'results', 'both'] as const) : 'splits'
    const executors = rng.pick(['model', 'any', 'outside'] as const)
    outside = executors !== 'model'
    params = { ...params, approvers: { ids: [person], for: approve }, ...(outside ? { executors } : {}) }
    people = { ids: new Set([person]), pNone: rng.pick([0.1, 0.3, 0.5]), pReject: rng.pick([0.2, 0.4]) }
    // A person who never answers, until the author amends them out (when amendments are on).
    if (rng.chance(0.2)) temper = { ...temper, silent: 2 }
  }
  if (opts.tools === true) params = { ...params, tools: true }
  if (opts.trust === true) params = { ...params, trust: { ...DEFAULT_TRUST, reviewOneIn: DEFAULT_REVIEW_ONE_IN } }
  // Protocol 5 samples results for review without `review`: some of them are rejected too.
  if (opts.trust === true && temper.pReject === 0) temper = { ...temper, pReject: 0.1 }
  if (opts.liar === true) temper = { ...temper, pEquivocate: Math.max(temper.pEquivocate, 0.08), lateLies: true }
  const pLongDelay = rng.pick([0.01, 0.05, 0.12])

  const created: PlanEvent[] = []
  const byId = new Map<EventId, PlanEvent>()
  const delivery: PlanEvent[] = []
  const pending: Pending[] = []
  let seq = 0
  const net = new Fold()
  let parkedInTransit = 0

  const goal = makeEvent({
    type: 'goal-submitted',
    plan: '',
    author: author.id,
    hlc: author.clock.stamp(),
    deps: [],
    body: { text: `generated plan ${seed}`, params }
  })
  const plan = goal.id as string as PlanId
  const send = (e: PlanEvent, delay: number): void => {
    created.push(e)
    byId.set(e.id, e)
    pending.push({ at: t + delay, seq: seq++, event: e })
  }
  send(goal, 0)
  const emit: Emit = (a, type, deps, body, late) => {
    const all = [...new Set([goal.id, ...deps])]
    const hlc = a.clock.stamp(
      all.flatMap(d => {
        const e = byId.get(d)
        return e === undefined ? [] : [e.env.hlc]
      })
    )
    const e = makeEvent({ v: goal.env.v, type, plan, author: a.id, hlc, deps: all, body })
    const delay =
      late === true
        ? rng.int(params.leaseMs + 2_500, params.leaseMs + 8_000)
        : rng.chance(pLongDelay)
          ? rng.int(2_000, 9_000)
          : rng.int(0, 700)
    send(e, delay)
    return e
  }
  const ctx: PlanCtx = {
    plan,
    goal,
    params,
    spare: (scorers[3] as Actor).id,
    decomposers: decomposers.length,
    people,
    outside,
    tools: opts.tools === true,
    liar: opts.liar === true ? (executors[0] as Actor).id : undefined,
    trust: opts.trust === true,
    backups: opts.backups === true
  }
  const roles = new Roles(rng, temper, ctx, emit)
  const memory = new Map<Actor, RoleMemory>()
  const mem = (a: Actor): RoleMemory => {
    let m = memory.get(a)
    if (m === undefined) {
      m = new RoleMemory()
      memory.set(a, m)
    }
    return m
  }
  const knowledge: Knowledge = {
    isFolded: id => net.events.isFolded(id),
    reviewsOf: result => net.events.plan(plan)?.reviews.get(result) ?? []
  }

  let cached: { version: number; tree: PlanTree } | null = null
  let quietSteps = 0
  for (let step = 0; step < maxSteps; step++) {
    t += rng.int(100, 1_200)
    // Deliver what is due, in arrival order.
    pending.sort((x, y) => x.at - y.at || x.seq - y.seq)
    while (pending.length > 0 && (pending[0] as Pending).at <= t) {
      const p = pending.shift() as Pending
      delivery.push(p.event)
      if (net.add(p.event, t).status === 'parked') parkedInTransit++
    }
    // Derive without hashing (Fold#tree also hashes the tree, which the actors do not need).
    const index = net.events.plan(plan)
    if (index?.goal === undefined) continue
    if (cached === null || cached.version !== index.version)
      cached = { version: index.version, tree: derivePlan(index) }
    const tree = cached.tree
    const finished = isFinished(tree)
    if (finished || created.length >= maxEvents) {
      if (pending.length === 0) break
      continue
    }
    const before = created.length
    // Only executors need a view at their own wall time (leases); the others read the tree's structure.
    const shared = view(tree, t)
    for (const a of rng.shuffle([author, ...decomposers, ...scorers, ...executors])) {
      if (created.length >= maxEvents) break
      const wall = t + a.skew
      if (a === author) roles.author(a, mem(a), shared, wall)
      else if (decomposers.includes(a)) roles.decompose(a, mem(a), shared)
      else if (scorers.includes(a)) {
        if (scorers.indexOf(a) === temper.silent) continue
        roles.score(a, mem(a), shared, wall)
        roles.review(a, mem(a), shared)
      } else roles.execute(a, mem(a), view(tree, wall), wall, knowledge)
    }
    quietSteps = created.length === before && pending.length === 0 ? quietSteps + 1 : 0
    if (quietSteps > 25) break
  }
  // Flush what is still in transit.
  pending.sort((x, y) => x.at - y.at || x.seq - y.seq)
  for (const p of pending) {
    delivery.push(p.event)
    if (net.add(p.event, p.at).status === 'parked') parkedInTransit++
  }
  if (temper.silent >= 0) roles.intents.add('silent-scorer')
  return { seed, plan, goal, events: created, delivery, parkedInTransit, intents: roles.intents }
}

// ------------------------------------------------------------------ arrival orders

/** A random arrival order with duplicates: every event at least once, some several times. */
export function arrivalOrder(events: readonly PlanEvent[], rng: Rng, dupRate = 0.2): PlanEvent[] {
  const out = [...events]
  for (const e of events) {
    while (rng.chance(dupRate)) out.push(e)
  }
  return rng.shuffle(out)
}

/** The same order with copies of some events inserted at random places (after their original or before it). */
export function withDuplicates(events: readonly PlanEvent[], rng: Rng, rate: number): PlanEvent[] {
  const out = [...events]
  for (const e of events) {
    while (rng.chance(rate)) out.splice(rng.int(0, out.length), 0, e)
  }
  return out
}

/** A random causal order (a random linear extension of the deps DAG): every event after its deps. */
export function causalOrder(events: readonly PlanEvent[], rng: Rng): PlanEvent[] {
  const ids = new Set(events.map(e => e.id))
  const waiting = new Map<EventId, number>()
  const dependents = new Map<EventId, EventId[]>()
  const byId = new Map(events.map(e => [e.id, e]))
  const ready: PlanEvent[] = []
  for (const e of events) {
    const deps = e.env.deps.filter(d => ids.has(d))
    waiting.set(e.id, deps.length)
    for (const d of deps) {
      const a = dependents.get(d) ?? []
      a.push(e.id)
      dependents.set(d, a)
    }
    if (deps.length === 0) ready.push(e)
  }
  const out: PlanEvent[] = []
  while (ready.length > 0) {
    const i = Math.floor(rng.next() * ready.length)
    const e = ready[i] as PlanEvent
    ready[i] = ready[ready.length - 1] as PlanEvent
    ready.pop()
    out.push(e)
    for (const d of dependents.get(e.id) ?? []) {
      const n = (waiting.get(d) ?? 0) - 1
      waiting.set(d, n)
      if (n === 0) ready.push(byId.get(d) as PlanEvent)
    }
  }
  if (out.length !== events.length) throw new Error('deps cycle or missing events')
  return out
}

// ------------------------------------------------------------------ hard cases

/**
 * The hard cases a plan's final tree and events show, measured from the data
 * (not from the generator's intent), so the statistics cannot claim coverage
 * that the sets do not have.
 */
export function hardCases(events: readonly PlanEvent[], tree: PlanTree): Set<string> {
  const out = new Set<string>()
  const byId = new Map(events.map(e => [e.id, e]))
  for (const n of tree.nodes) {
    for (const a of n.attempts) {
      if (new Set(a.proposals.filter(p => !p.equivocated).map(p => p.author)).size >= 2) out.add('competing proposals')
      const byCommittee = new Map<string, Set<string>>()
      for (const b of a.ballots) {
        if (b.equivocated) continue
        const s = byCommittee.get(b.committee) ?? new Set<string>()
        s.add(b.choice ?? 'none')
        byCommittee.set(b.committee, s)
      }
      if ([...byCommittee.values()].some(s => s.size >= 2)) out.add('split ballots')
      if (a.outcome === 'failed') out.add('failed attempt')
    }
    if (n.leafReason === 'attempts-exhausted') out.add('attempts exhausted')
    if (n.leafReason === 'max-nodes') out.add('max-nodes cut')
    if (n.leafReason === 'max-depth') out.add('max-depth leaf')
  }
  for (const task of tree.tasks) {
    if (task.chains.some(c => c.end?.kind === 'superseded')) out.add('takeover')
    if (task.chains.some(c => c.end?.kind === 'failed')) out.add('task-failed')
    if (task.chains.some(c => c.end?.kind === 'released')) out.add('release')
    if (task.chains.some(c => c.end?.kind === 'rejected')) out.add('rejected result')
    if (task.status === 'failed') out.add('task failed for good')
    if (task.duplicates > 0) out.add('duplicate execution')
  }
  // Claims: races (two claims on one task from one predecessor), late renewals, moot takeovers.
  const claims = events.filter((e): e is PlanEvent<'task-claimed'> => isType(e, 'task-claimed'))
  const renewalsOf = new Map<EventId, Array<PlanEvent<'claim-renewed'>>>()
  for (const e of events) {
    if (!isType(e, 'claim-renewed')) continue
    const a = renewalsOf.get(e.env.body.claim) ?? []
    a.push(e)
    renewalsOf.set(e.env.body.claim, a)
  }
  const slot = new Map<string, Set<string>>()
  for (const c of claims) {
    const k = `${c.env.body.task}|${c.env.body.prev ?? ''}`
    const s = slot.get(k) ?? new Set<string>()
    s.add(c.env.author)
    slot.set(k, s)
    const prev = c.env.body.prev === null ? undefined : byId.get(c.env.body.prev)
    if (prev === undefined || !(isType(prev, 'task-claimed') || isType(prev, 'claim-renewed'))) continue
    const chainClaim = isType(prev, 'task-claimed') ? prev.id : prev.env.body.claim
    const cmp = (x: Hlc, y: Hlc): number => x.ms - y.ms || x.c - y.c
    const late = (renewalsOf.get(chainClaim) ?? []).some(
      r => cmp(r.env.hlc, prev.env.hlc) > 0 && cmp(r.env.hlc, c.env.hlc) < 0
    )
    if (late) {
      out.add('late renewal')
      const t = tree.tasks.find(x => x.id === c.env.body.task)
      const chain = t?.chains.find(ch => ch.claim === chainClaim)
      if (chain !== undefined && chain.end?.kind !== 'superseded') out.add('moot takeover')
    }
  }
  if ([...slot.values()].some(s => s.size >= 2)) out.add('racing claims')
  for (const q of tree.equivocations) out.add(`equivocation (${q.slot.split(':')[0] ?? '?'})`)
  if (tree.equivocations.length > 0) out.add('equivocation')
  if (tree.committees.length > 1) out.add('amendment')
  if (events.some(e => isType(e, 'budget-raised'))) out.add('budget raised')
  if (events.some(e => isType(e, 'task-retried'))) out.add('retry')
  if (tree.tasks.some(x => x.results.some(r => r.review === 'accepted'))) out.add('review accepted')
  approverCases(events, tree, out)
  out.add(`status ${tree.status}`)
  return out
}

/** The hard cases of protocol 2 plans with people (GenOptions.people); none for a plan without approvers. */
function approverCases(events: readonly PlanEvent[], tree: PlanTree, out: Set<string>): void {
  if (tree.tasks.some(x => x.results.some(r => r.source === 'outside'))) out.add('outside result')
  const approvers = new Set<string>(tree.params.approvers?.ids ?? [])
  if (approvers.size === 0) return
  for (const n of tree.nodes) {
    for (const a of n.attempts) {
      if (a.outcome === 'failed' && a.ballots.some(b => approvers.has(b.author) && b.choice === null && !b.equivocated))
        out.add('approver chose none')
      if (a.outcome === 'won' && a.ballots.some(b => b.id === a.decidedBy && approvers.has(b.author)))
        out.add('approver decided')
    }
  }
  if (tree.nodes.some(n => n.awaiting.length > 0 && n.awaiting.every(p => approvers.has(p))))
    out.add('waits for approver')
  const review = new Map<string, string>()
  for (const t of tree.tasks) for (const r of t.results) review.set(r.id, r.review)
  for (const e of events) {
    if (!isType(e, 'result-reviewed') || !approvers.has(e.env.author)) continue
    const r = review.get(e.env.body.result)
    if (r === 'rejected' && e.env.body.verdict === 'reject') out.add('approver rejected result')
    if (r === 'accepted' && e.env.body.verdict === 'accept') out.add('approver accepted result')
  }
}

/** Counts of labelled cases over a property run, printed as a table and checked for hard cases that never occurred. */
export class CaseCounter {
  readonly counts = new Map<string, number>()
  runs = 0

  add(labels: Iterable<string>): void {
    this.runs++
    for (const l of labels) this.counts.set(l, (this.counts.get(l) ?? 0) + 1)
  }

  count(label: string, n = 1): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n)
  }

  missing(required: readonly string[]): string[] {
    return required.filter(r => (this.counts.get(r) ?? 0) === 0)
  }

  table(title: string): string {
    const rows = [...this.counts.entries()].sort((a, b) => b[1] - a[1])
    const width = Math.max(...rows.map(r => r[0].length), 10)
    return [
      `${title} (${this.runs} runs)`,
      ...rows.map(
        ([k, n]) =>
          `  ${k.padEnd(width)}  ${String(n).padStart(6)}  ${((100 * n) / Math.max(1, this.runs)).toFixed(1).padStart(5)}%`
      )
    ].join('\n')
  }
}

// ------------------------------------------------------------------ corpus for property runs

/**
 * The seed of a property run: GEN_SEED from the environment (to replay a
 * failure), else a fresh one. Property files pass it to fast-check as its
 * seed too, so one number replays both the plans and the cases.
 */
export function runSeed(): number {
  const env = process.env.GEN_SEED
  if (env !== undefined && env !== '') {
    const n = Number(env)
    if (!Number.isSafeInteger(n)) throw new Error(`GEN_SEED must be an integer, got ${env}`)
    return n | 0
  }
  return (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0
}

/** The i-th plan seed of a run. */
export function planSeed(base: number, i: number): number {
  return (Math.imul(i + 1, 0x9e3779b1) ^ base) >>> 0
}

/**
 * A lazily generated set of distinct plans for one run, shared by the
 * properties of one file: generating a plan costs ~10 ms, folding and hashing
 * it ~1-2 ms, so a run of 1000 cases draws (plan, arrival order) pairs from a
 * few hundred plans rather than generating 1000 plans per property.
 */
export class Corpus {
  private readonly plans: Array<GeneratedPlan | undefined>
  private readonly refs: Array<{ hash: string; tree: PlanTree; cases: Set<string> } | undefined>

  /** The plans drawn this run (`size` of them), then the pinned ones. */
  readonly total: number

  /**
   * `pinned`: plans (a run seed and a plan index) every run covers after the drawn ones, for a case the
   * generator reaches too rarely for every run to draw it.
   */
  constructor(
    readonly actors: Actors,
    readonly opts: GenOptions,
    readonly base: number,
    readonly size: number,
    private readonly pinned: ReadonlyArray<readonly [number, number]> = []
  ) {
    this.total = size + pinned.length
    this.plans = new Array<GeneratedPlan | undefined>(this.total)
    this.refs = new Array<{ hash: string; tree: PlanTree; cases: Set<string> } | undefined>(this.total)
  }

  plan(i: number): GeneratedPlan {
    let p = this.plans[i]
    if (p === undefined) {
      const pin = this.pinned[i - this.size]
      p = generatePlan(pin === undefined ? planSeed(this.base, i) : planSeed(pin[0], pin[1]), this.actors, this.opts)
      this.plans[i] = p
    }
    return p
  }

  /** The fold of the whole set in creation order: the reference every arrival order must match. */
  reference(i: number): { hash: string; tree: PlanTree; cases: Set<string> } {
    let r = this.refs[i]
    if (r === undefined) {
      const p = this.plan(i)
      const f = foldAll(p.events)
      if (f.events.size !== p.events.length || f.events.parkedCount !== 0) {
        throw new Error(
          `generator bug: plan seed ${p.seed} folds ${f.events.size} of ${p.events.length} events (${f.events.parkedCount} parked)`
        )
      }
      const tree = f.tree(p.plan) as PlanTree
      r = { hash: f.treeHash(p.plan) as string, tree, cases: hardCases(p.events, tree) }
      this.refs[i] = r
    }
    return r
  }

  /** Hard cases over the plans generated so far. */
  census(): CaseCounter {
    const c = new CaseCounter()
    for (let i = 0; i < this.total; i++) if (this.plans[i] !== undefined) c.add(this.reference(i).cases)
    return c
  }
}

/** How a property test delivers a generated plan's events. */
export type ArrivalMode = 'shuffle' | 'reverse-causal' | 'network delivery'
export const ARRIVAL_MODES: readonly ArrivalMode[] = ['shuffle', 'reverse-causal', 'network delivery']

/** A plan's events in the order and with the duplication a case asks for. */
export function arrangeEvents(p: GeneratedPlan, c: { order: number; dup: number; mode: ArrivalMode }): PlanEvent[] {
  const rng = new Rng(c.order)
  switch (c.mode) {
    case 'shuffle':
      return arrivalOrder(p.events, rng, c.dup)
    // Every event before its deps: the most parking there can be.
    case 'reverse-causal':
      return withDuplicates(causalOrder(p.events, rng).reverse(), rng, c.dup)
    // The order the generator's own network delivered them in (delays, reordering).
    case 'network delivery':
      return withDuplicates(p.delivery, rng, c.dup)
  }
}
