import { MAX_NOTES_CHARS } from '../core/limits.js'
import { approversFor, reviewsResults } from '../core/events.js'
import { isFinished } from '../core/view.js'
import { ConfigError } from '../errors.js'
import type { NodeView } from '../ports/node-view.js'
import type { EventId, NodeId, PeerIdString, PlanEvent, PlanId, ResultSource, TaskId } from '../core/events.js'
import type { AttemptView, CommitteeView, PlanTree, ResultView, TaskView, TreeNode } from '../core/tree.js'

/**
 * What a person in a committee does: choose a split (or none,
 * with notes), review a result, and see what waits for them. A person's
 * ballot and review are ordinary signed events of their key, so the fold
 * decides from them as from any scorer's; these functions only check first
 * (that the plan, the node or task and this key can take it) and throw a
 * ConfigError saying what to do instead, publishing nothing. One
 * implementation for the CLI (`inbox`, `vote`, `review`), the dashboard
 * and MCP.
 */
export type PersonView = Pick<NodeView, 'me' | 'plans' | 'tree' | 'loadTree' | 'event' | 'reviewsOf' | 'publish'>

/** What a person is asked. */
export type Ask = 'choose a split' | 'review a result'

/** A proposal as a person weighs it: its subgoals and what the scorers made of it. */
export interface ProposalForPerson {
  readonly id: EventId
  readonly author: PeerIdString
  readonly titles: readonly string[]
  readonly rationale: string
  readonly scores: ReadonlyArray<{ readonly scorer: PeerIdString; readonly score: number; readonly notes: string }>
}

/** One thing that waits for this key. */
export interface AwaitingItem {
  readonly plan: PlanId
  readonly goal: string
  readonly node: NodeId
  readonly title: string
  readonly ask: Ask
  /** The task whose result is to be reviewed; null for a split. */
  readonly task: TaskId | null
  /** The open attempt, for a split. */
  readonly attempt: number | null
  /** This key's approval is needed besides the quorum (protocol 2). */
  readonly approver: boolean
  /** Wall ms of the first proposal of the attempt, or of the result. */
  readonly sinceMs: number
  /** For a split: the attempt's proposals (equivocated ones left out). */
  readonly proposals: readonly ProposalForPerson[]
  /** For a split: the notes of the ballots cast so far, by author. */
  readonly notes: ReadonlyArray<{ readonly author: PeerIdString; readonly notes: string }>
  /** For a review: the result. */
  readonly result: null | {
    readonly id: EventId
    readonly author: PeerIdString
    readonly output: string
    readonly source: ResultSource
    readonly atMs: number
  }
}

const NO_USAGE = { inputTokens: 0, outputTokens: 0 }

/**
 * Publish this key's ballot on a node's open attempt: `choice` one of its
 * proposals (scored alone, 100), or null for none, which needs notes saying
 * what to change (the decomposers address them in the next attempt when
 * the attempt closes). Ids may be given as unique prefixes.
 */
export async function castVote(
  view: PersonView,
  plan: string,
  node: string,
  choice: string | null,
  notes = ''
): Promise<PlanEvent<'ballot-cast'>> {
  const tree = openTree(view, plan)
  const n = pick(
    tree.nodes.map(x => x.id),
    node,
    'node',
    `of plan ${short(tree.plan)}`
  )
  const target = tree.nodes.find(x => x.id === n) as TreeNode
  const attempt = openAttempt(target)
  if (attempt === null)
    throw new ConfigError(
      `node ${short(n)} ("${target.title}") is not waiting for a ballot: it ` +
        `is ${target.status}${target.waiting === null ? '' : ` (${target.waiting})`}`
    )
  const committee = member(view, tree, 'vote on its splits')
  if (attempt.ballots.some(b => b.author === view.me && b.committee === committee.event)) {
    throw new ConfigError(
      `you already cast a ballot on attempt ${attempt.attempt} of node ${short(n)} under this ` +
        `committee; a second one would cancel both (equivocation)`
    )
  }
  const valid = attempt.proposals.filter(p => !p.equivocated)
  const chosen =
    choice === null
      ? null
      : pick(
          valid.map(p => p.id),
          choice,
          'proposal',
          `of attempt ${attempt.attempt} (${valid.map(p => short(p.id)).join(', ')})`
        )
  const why = checkNotes(notes)
  if (chosen === null && why === '')
    throw new ConfigError(
      'choosing none needs notes: say what to change, so that the decomposers can address it in the next attempt'
    )
  const { event } = await view.publish(
    'ballot-cast',
    tree.plan,
    [committee.event, ...(chosen === null ? [] : [chosen])],
    {
      node: n,
      attempt: attempt.attempt,
      committee: committee.event,
      scores: chosen === null ? [] : [{ proposal: chosen, score: 100, notes: '' }],
      choice: chosen,
      notes: why,
      usage: NO_USAGE
    }
  )
  return event
}

/**
 * Publish this key's review of a task's result that waits for it (the
 * earliest pending one it has not reviewed under the current committee): a
 * reject needs notes saying what to redo (the task reopens for rework once
 * the review rejects the result). `task` may be the task's or its node's id,
 * or a unique prefix.
 */
export async function castReview(
  view: PersonView,
  plan: string,
  task: string,
  verdict: 'accept' | 'reject',
  notes = ''
): Promise<PlanEvent<'result-reviewed'>> {
  const tree = openTree(view, plan)
  if (!reviewsResults(tree.params))
    throw new ConfigError(`plan ${short(tree.plan)} does not ask for review: its results are accepted as they come`)
  const id = pick(
    [...tree.tasks.map(t => t.id as string), ...tree.tasks.map(t => t.node as string)],
    task,
    'task',
    `of plan ${short(tree.plan)}`
  )
  const t = tree.tasks.find(x => x.id === id || x.node === id) as TaskView
  if (t.status !== 'in-review')
    throw new ConfigError(`task ${short(t.id)} is ${t.status}: no result of it waits for review`)
  const committee = member(view, tree, 'review its results')
  const mine = (r: ResultView): boolean =>
    view.reviewsOf(tree.plan, r.id).some(x => x.env.author === view.me && x.env.body.committee === committee.event)
  const result = t.results.find(r => r.review === 'pending' && !mine(r))
  if (result === undefined)
    throw new ConfigError(
      `you already reviewed the result of task ${short(t.id)} under this committee; a second review would cancel both (equivocation)`
    )
  const why = checkNotes(notes)
  if (verdict === 'reject' && why === '')
    throw new ConfigError('a reject needs notes: say what to redo, so that the next executor can')
  const { event } = await view.publish('result-reviewed', tree.plan, [result.id, committee.event], {
    task: t.id,
    result: result.id,
    committee: committee.event,
    verdict,
    notes: why,
    usage: NO_USAGE
  })
  return event
}

/**
 * What waits for this key, oldest first: nodes whose open attempt needs its
 * ballot, and tasks whose result needs its review, in the plans in memory
 * that are not finished (a finished plan awaits no one).
 */
export function awaitingMe(view: Pick<NodeView, 'me' | 'plans' | 'tree' | 'event'>): AwaitingItem[] {
  const items: AwaitingItem[] = []
  for (const plan of view.plans()) {
    const tree = view.tree(plan)
    if (tree === undefined || isFinished(tree)) continue
    const splitApprover = approversFor(tree.params, 'splits').includes(view.me)
    const resultApprover = approversFor(tree.params, 'results').includes(view.me)
    for (const n of tree.nodes) {
      const attempt = n.kind === 'decomposing' && n.awaiting.includes(view.me) ? openAttempt(n) : null
      if (attempt === null) continue
      items.push({
        ...where(tree, n),
        ask: 'choose a split',
        task: null,
        attempt: attempt.attempt,
        approver: splitApprover,
        sinceMs: since(view, attempt),
        proposals: proposalsOf(view, attempt),
        notes: attempt.ballots.filter(b => b.notes !== '').map(b => ({ author: b.author, notes: b.notes })),
        result: null
      })
    }
    for (const t of tree.tasks) {
      if (t.status !== 'in-review' || !t.awaiting.includes(view.me)) continue
      const r = t.results.find(x => x.review === 'pending')
      const n = tree.nodes.find(x => x.id === t.node)
      if (r === undefined || n === undefined) continue
      items.push({
        ...where(tree, n),
        ask: 'review a result',
        task: t.id,
        attempt: null,
        approver: resultApprover,
        sinceMs: r.at.ms,
        proposals: [],
        notes: [],
        result: { id: r.id, author: r.author, output: r.output, source: r.source, atMs: r.at.ms }
      })
    }
  }
  return items.sort((a, b) => a.sinceMs - b.sinceMs)
}

function where(tree: PlanTree, n: TreeNode): Pick<AwaitingItem, 'plan' | 'goal' | 'node' | 'title'> {
  return { plan: tree.plan, goal: tree.goal, node: n.id, title: n.title }
}

/** The node's last attempt if it is open with something to vote on. */
function openAttempt(n: TreeNode): AttemptView | null {
  const a = n.attempts[n.attempts.length - 1]
  return n.kind === 'decomposing' && a !== undefined && a.outcome === 'open' && a.proposals.length > 0 ? a : null
}

function since(view: Pick<NodeView, 'event'>, a: AttemptView): number {
  let first = Number.MAX_SAFE_INTEGER
  for (const p of a.proposals) first = Math.min(first, view.event(p.id)?.env.hlc.ms ?? first)
  return first === Number.MAX_SAFE_INTEGER ? 0 : first
}

/** The attempt's proposals with the scores and notes the ballots so far gave them. */
function proposalsOf(view: Pick<NodeView, 'event'>, a: AttemptView): ProposalForPerson[] {
  const scores = new Map<EventId, Array<{ scorer: PeerIdString; score: number; notes: string }>>()
  for (const b of a.ballots) {
    if (b.equivocated) continue
    const e = view.event(b.id) as PlanEvent<'ballot-cast'> | undefined
    for (const s of e?.env.body.scores ?? []) {
      let list = scores.get(s.proposal)
      if (list === undefined) scores.set(s.proposal, (list = []))
      list.push({ scorer: b.author, score: s.score, notes: s.notes })
    }
  }
  return a.proposals
    .filter(p => !p.equivocated)
    .map(p => ({
      id: p.id,
      author: p.author,
      titles: p.titles,
      rationale: p.rationale,
      scores: scores.get(p.id) ?? []
    }))
}

/** The plan's tree, held and not finished. */
function openTree(view: PersonView, plan: string): PlanTree {
  const id = pick(
    view.plans(),
    plan,
    'plan',
    'held here (`inbox` lists what waits for you; a plan submitted elsewhere arrives by sync)'
  ) as PlanId
  const tree = view.loadTree(id)
  if (tree === undefined) throw new ConfigError(`plan ${short(id)} is not held here; wait for sync, or check the id`)
  if (isFinished(tree)) throw new ConfigError(`plan ${short(id)} is ${tree.status}: there is nothing left to decide`)
  return tree
}

/** The current committee, which must have this key in it. */
function member(view: Pick<NodeView, 'me'>, tree: PlanTree, what: string): CommitteeView {
  const latest = tree.committees[tree.committees.length - 1] as CommitteeView
  if (!latest.members.includes(view.me)) {
    throw new ConfigError(
      `this key (${view.me}) is not in the committee of plan ${short(tree.plan)}, so it ` +
        `cannot ${what}; its author can add you with \`amend ${short(tree.plan)} --committee ...\`, ` +
        `or run this from the --data-dir whose key is in it`
    )
  }
  return latest
}

function checkNotes(notes: string): string {
  const t = notes.trim()
  if (t.length > MAX_NOTES_CHARS)
    throw new ConfigError(`the notes are ${t.length} characters long; the most is ${MAX_NOTES_CHARS}: say it shorter`)
  return t
}

/** The one id among `ids` that is `given` or starts with it (at least 6 characters). */
function pick<T extends string>(ids: readonly T[], given: string, what: string, among: string): T {
  const g = given.trim().toLowerCase()
  const exact = ids.find(id => id === g)
  if (exact !== undefined) return exact
  const hits = g.length >= 6 ? [...new Set(ids.filter(id => id.startsWith(g)))] : []
  if (hits.length === 1) return hits[0] as T
  if (hits.length > 1)
    throw new ConfigError(`${what} ${JSON.stringify(given)} matches ${hits.length} ids ${among}: give more of it`)
  throw new ConfigError(`no ${what} ${JSON.stringify(given)} ${among}`)
}

function short(id: string): string {
  return id.slice(0, 12)
}
