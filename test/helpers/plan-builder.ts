import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { encodeEnvelope, eventIdOf } from '../../src/wire/codec.js'
import { DEFAULT_PARAMS, PROTOCOL_VERSION, majority, paramsVersion } from '../../src/core/events.js'
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
  PlanParams,
  ResultSource,
  Subgoal,
  TaskId
} from '../../src/core/events.js'

/** Real Ed25519 peer ids (made once per process): authors for test events. */
export async function makePeers(n: number): Promise<Array<{ id: PeerIdString; key: PrivateKey }>> {
  const out: Array<{ id: PeerIdString; key: PrivateKey }> = []
  for (let i = 0; i < n; i++) {
    const key = await generateKeyPair('Ed25519')
    out.push({ id: peerIdFromPrivateKey(key).toString() as PeerIdString, key })
  }
  return out
}

/**
 * Build an unsigned (but correctly hashed) event: for fold tests, which take
 * verified events. The version defaults to a goal's own (from its
 * parameters), or 1: events of a protocol-2 plan pass their goal's `v`.
 */
export function makeEvent<T extends EventType>(fields: {
  v?: number
  swarm?: string
  type: T
  plan: string
  author: PeerIdString
  hlc: Hlc
  deps: readonly EventId[]
  body: Bodies[T]
}): PlanEvent<T> {
  const env: Envelope<T> = {
    v:
      fields.v ??
      (fields.type === 'goal-submitted'
        ? paramsVersion((fields.body as Bodies['goal-submitted']).params)
        : PROTOCOL_VERSION),
    swarm: fields.swarm ?? 'test',
    type: fields.type,
    plan: fields.plan,
    author: fields.author,
    hlc: fields.hlc,
    deps: [...new Set(fields.deps)].sort(),
    body: fields.body
  }
  return { id: eventIdOf(encodeEnvelope(env)), env }
}

export function subgoals(
  titles: readonly string[],
  opts: { leaf?: boolean; dependsOn?: Record<number, number[]> } = {}
): Subgoal[] {
  return titles.map((title, i) => ({
    title,
    detail: `do ${title}`,
    leaf: opts.leaf ?? true,
    dependsOn: opts.dependsOn?.[i] ?? []
  }))
}

const NO_USAGE = { inputTokens: 0, outputTokens: 0 }

/**
 * A scripted plan: each method makes one event with the right deps (the goal
 * plus what it cites) at the given wall ms. It does not fold anything.
 */
export class PlanBuilder {
  readonly goal: PlanEvent<'goal-submitted'>
  readonly plan: PlanId
  readonly root: NodeId
  readonly params: PlanParams

  constructor(
    readonly author: PeerIdString,
    committee: readonly PeerIdString[],
    params: Partial<PlanParams> = {},
    at = 1_000,
    text = 'plan a two-week trip to Japan'
  ) {
    this.params = { ...DEFAULT_PARAMS, committee, quorum: majority(committee.length), ...params }
    this.goal = makeEvent({
      type: 'goal-submitted',
      plan: '',
      author,
      hlc: { ms: at, c: 0 },
      deps: [],
      body: { text, params: this.params }
    })
    this.plan = this.goal.id as string as PlanId
    this.root = this.goal.id as string as NodeId
  }

  private ev<T extends EventType>(
    type: T,
    author: PeerIdString,
    at: number | Hlc,
    deps: readonly EventId[],
    body: Bodies[T]
  ): PlanEvent<T> {
    const hlc = typeof at === 'number' ? { ms: at, c: 0 } : at
    return makeEvent({ v: this.goal.env.v, type, plan: this.plan, author, hlc, deps: [this.goal.id, ...deps], body })
  }

  propose(
    author: PeerIdString,
    node: NodeId,
    attempt: number,
    subs: readonly Subgoal[],
    at: number | Hlc,
    cites: readonly EventId[] = [],
    usage = NO_USAGE
  ): PlanEvent<'split-proposed'> {
    return this.ev('split-proposed', author, at, cites, {
      node,
      attempt,
      subgoals: subs,
      rationale: `split by ${author.slice(-4)}`,
      usage
    })
  }

  ballot(
    author: PeerIdString,
    p: { node: NodeId; attempt: number },
    choice: PlanEvent<'split-proposed'> | null,
    at: number | Hlc,
    opts: {
      judged?: ReadonlyArray<PlanEvent<'split-proposed'>>
      committee?: EventId
      usage?: { inputTokens: number; outputTokens: number }
      notes?: string
    } = {}
  ): PlanEvent<'ballot-cast'> {
    const judged = opts.judged ?? (choice === null ? [] : [choice])
    const committee = opts.committee ?? this.goal.id
    return this.ev('ballot-cast', author, at, [committee, ...judged.map(j => j.id)], {
      node: p.node,
      attempt: p.attempt,
      committee,
      scores: judged.map(j => ({ proposal: j.id, score: j.id === choice?.id ? 80 : 40, notes: 'ok' })),
      choice: choice?.id ?? null,
      notes: opts.notes ?? '',
      usage: opts.usage ?? NO_USAGE
    })
  }

  claim(
    author: PeerIdString,
    task: TaskId,
    at: number | Hlc,
    opts: { prev?: EventId | null; evidence?: readonly EventId[] } = {}
  ): PlanEvent<'task-claimed'> {
    const prev = opts.prev ?? null
    return this.ev('task-claimed', author, at, [...(opts.evidence ?? []), ...(prev === null ? [] : [prev])], {
      task,
      prev
    })
  }

  renew(claim: PlanEvent<'task-claimed'>, prev: PlanEvent, at: number | Hlc): PlanEvent<'claim-renewed'> {
    return this.ev('claim-renewed', claim.env.author, at, [claim.id, prev.id], {
      task: claim.env.body.task,
      claim: claim.id,
      prev: prev.id
    })
  }

  release(claim: PlanEvent<'task-claimed'>, at: number | Hlc): PlanEvent<'task-released'> {
    return this.ev('task-released', claim.env.author, at, [claim.id], {
      task: claim.env.body.task,
      claim: claim.id,
      reason: 'released'
    })
  }

  fail(claim: PlanEvent<'task-claimed'>, at: number | Hlc, usage = NO_USAGE): PlanEvent<'task-failed'> {
    return this.ev('task-failed', claim.env.author, at, [claim.id], {
      task: claim.env.body.task,
      claim: claim.id,
      error: 'it broke',
      usage
    })
  }

  result(
    claim: PlanEvent<'task-claimed'>,
    at: number | Hlc,
    output = 'done',
    usage = NO_USAGE,
    cites: readonly EventId[] = [],
    source: ResultSource = 'llm'
  ): PlanEvent<'result-reported'> {
    return this.ev('result-reported', claim.env.author, at, [claim.id, ...cites], {
      task: claim.env.body.task,
      claim: claim.id,
      output,
      usage,
      model: source === 'outside' ? 'person' : 'fake',
      source
    })
  }

  review(
    author: PeerIdString,
    result: PlanEvent<'result-reported'>,
    verdict: 'accept' | 'reject',
    at: number | Hlc,
    committee?: EventId,
    notes = ''
  ): PlanEvent<'result-reviewed'> {
    const c = committee ?? this.goal.id
    return this.ev('result-reviewed', author, at, [result.id, c], {
      task: result.env.body.task,
      result: result.id,
      committee: c,
      verdict,
      notes,
      usage: NO_USAGE
    })
  }

  amend(
    committee: readonly PeerIdString[],
    at: number | Hlc,
    quorum = majority(committee.length)
  ): PlanEvent<'committee-amended'> {
    return this.ev('committee-amended', this.author, at, [], { committee, quorum })
  }

  raiseBudget(budgetTokens: number, at: number | Hlc): PlanEvent<'budget-raised'> {
    return this.ev('budget-raised', this.author, at, [], { budgetTokens })
  }

  retry(task: TaskId, at: number | Hlc, cites: readonly EventId[] = []): PlanEvent<'task-retried'> {
    return this.ev('task-retried', this.author, at, cites, { task })
  }

  cancel(at: number | Hlc, reason = 'no longer needed'): PlanEvent<'goal-cancelled'> {
    return this.ev('goal-cancelled', this.author, at, [], { reason })
  }
}
