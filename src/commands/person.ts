import { join } from 'node:path'
import { loadOrCreateIdentity } from '../store/identity.js'
import { awaitingMe, castReview, castVote } from '../author/person-events.js'
import { ConfigError, parseClientArgs } from '../runtime/config.js'
import { confirmHeld, deadlineOf, withClient } from './client.js'
import type { AwaitingItem } from '../author/person-events.js'
import type { NodeView } from '../ports/node-view.js'
import type { Say, Values } from './client.js'

/**
 * A person on a committee, from the command line: `id` prints the
 * key to give an author for `--committee` or `--approver`; `inbox` lists what
 * waits for that key; `vote` and `review` publish the person's ballot or
 * review. All sign with the client key (`~/.plan-swarm/<swarm>/client-1`, or
 * `--data-dir`, e.g. an observer's whose dashboard the person uses).
 */

/** `id`: this key's peer id, from the data dir, without starting a node. */
export async function id(argv: readonly string[]): Promise<number> {
  const { config, positionals } = parseClientArgs(argv)
  if (positionals.length > 0)
    throw new ConfigError(`id takes no arguments (got ${positionals.join(' ')}); use --data-dir DIR for another key`)
  const dir = config.dataDir ?? join(config.dataRoot, 'client-1')
  const identity = await loadOrCreateIdentity(dir)
  if (config.json) console.log(JSON.stringify({ peerId: identity.peerId, dataDir: dir }))
  else console.log(identity.peerId)
  console.error(`the key in ${dir}: give this id to a goal's author for --committee or --approver`)
  return 0
}

/** Catch up with the swarm: a sync session, then a moment for gossip, so that the inbox is current. */
async function catchUp(view: NodeView, values: Values, say: Say): Promise<void> {
  const deadline = deadlineOf(values, 20)
  while (Date.now() < deadline) {
    if ((await view.syncOnce()) !== null) return
    say(`waiting for a peer to catch up from: ${view.health().peers} connected`)
    await new Promise(resolve => setTimeout(resolve, 500))
  }
  say('no peer answered: showing what this client holds')
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000))
  return s < 120 ? `${s} s ago` : `${Math.round(s / 60)} min ago`
}

/** An inbox item in a few lines: what is asked, of which node, since when, and how to answer. */
export function describeItem(item: AwaitingItem): string {
  const head =
    `plan ${item.plan.slice(0, 12)} "${item.goal.slice(0, 60)}"\n ` +
    ` ${item.ask}${item.approver ? ' (you approve)' : ''}: node ${item.node.slice(0, 12)} ` +
    `"${item.title}", since ${ago(item.sinceMs)}`
  if (item.ask === 'choose a split') {
    const props = item.proposals.map(
      (p, i) =>
        `  P${i + 1} ${p.id.slice(0, 12)} by ${p.author.slice(-6)}: ${p.titles.join(' | ')}` +
        (p.scores.length === 0
          ? ''
          : `\n     scores: ${p.scores.map(s => `${s.score}${s.notes === '' ? '' : ` (${s.notes.slice(0, 80)})`}`).join(', ')}`)
    )
    return [
      head,
      ...props,
      `  answer: npm start -- vote ${item.plan.slice(0, 12)} ${item.node.slice(0, 12)} --choose P1|...|none [--notes TEXT]`
    ].join('\n')
  }
  const r = item.result
  return [
    head,
    `  result by ${r?.author.slice(-6) ?? '?'} (${r?.source ?? '?'}): ${(r?.output ?? '').replace(/\s+/g, ' ').slice(0, 300)}`,
    `  answer: npm start -- review ${item.plan.slice(0, 12)} ${(item.task ?? '').slice(0, 12)} --accept|--reject [--notes TEXT]`
  ].join('\n')
}

/** `inbox`: what awaits the caller's key. */
export async function inbox(argv: readonly string[]): Promise<number> {
  return await withClient(argv, async (view, positionals, values, say, json) => {
    if (positionals.length > 0) throw new ConfigError(`inbox takes no arguments (got ${positionals.join(' ')})`)
    await catchUp(view, values, say)
    const items = awaitingMe(view)
    if (json) console.log(JSON.stringify({ peerId: view.me, items }))
    else console.log(items.length === 0 ? `nothing waits for ${view.me}` : items.map(describeItem).join('\n\n'))
    return 0
  })
}

/** Wait until this client holds the plan (by id or prefix). */
async function holdPlan(view: NodeView, plan: string | undefined, values: Values, say: Say): Promise<string> {
  if (plan === undefined || !/^[0-9a-f]{6,64}$/.test(plan))
    throw new ConfigError(
      `expected a plan id (or its first 6+ hex digits, as inbox prints it), got ${JSON.stringify(plan ?? '')}`
    )
  await catchUp(view, values, say)
  return plan
}

/** `vote <plan> <node> --choose P2|none|<proposal id> [--notes TEXT]`. */
export async function vote(argv: readonly string[]): Promise<number> {
  return await withClient(argv, async (view, positionals, values, say) => {
    const [plan, node] = positionals
    if (node === undefined)
      throw new ConfigError(
        'vote needs the plan and the node: npm start -- vote <plan-id> <node-id> --choose P1|none (inbox lists them)'
      )
    const choose = values.choose === undefined ? undefined : String(values.choose)
    if (choose === undefined)
      throw new ConfigError(
        'vote needs --choose P1, P2, ... (a proposal as inbox lists them, or its id) or --choose none with --notes saying what to change'
      )
    await holdPlan(view, plan, values, say)
    let choice: string | null = choose
    if (choose.toLowerCase() === 'none') choice = null
    else if (/^p\d+$/i.test(choose)) {
      const item = awaitingMe(view).find(
        i => i.ask === 'choose a split' && i.plan.startsWith(plan as string) && i.node.startsWith(node)
      )
      const n = Number(choose.slice(1))
      // Not waiting for this key: castVote below says why (finished, not waiting, not a member).
      if (item !== undefined) {
        const p = item.proposals[n - 1]
        if (p === undefined)
          throw new ConfigError(`--choose ${choose}: the attempt has proposals P1 to P${item.proposals.length}`)
        choice = p.id
      }
    }
    const ballot = await castVote(
      view,
      plan as string,
      node,
      choice,
      values.notes === undefined ? '' : String(values.notes)
    )
    const holder = await confirmHeld(view, deadlineOf(values, 60), say)
    say(
      `cast a ballot for ${ballot.env.body.choice === null ? 'none' : `proposal ${ballot.env.body.choice.slice(0, 12)}`} ` +
        `on node ${ballot.env.body.node.slice(0, 12)}; held by ${holder}`
    )
    return 0
  })
}

/** `review <plan> <task> --accept|--reject [--notes TEXT]`. */
export async function review(argv: readonly string[]): Promise<number> {
  return await withClient(argv, async (view, positionals, values, say) => {
    const [plan, task] = positionals
    if (task === undefined)
      throw new ConfigError(
        'review needs the plan and the task: npm start -- review <plan-id> <task-id> --accept|--reject (inbox lists them)'
      )
    if ((values.accept === true) === (values.reject === true))
      throw new ConfigError(
        'review needs exactly one of --accept or --reject (a reject with --notes saying what to redo)'
      )
    await holdPlan(view, plan, values, say)
    const r = await castReview(
      view,
      plan as string,
      task,
      values.accept === true ? 'accept' : 'reject',
      values.notes === undefined ? '' : String(values.notes)
    )
    const holder = await confirmHeld(view, deadlineOf(values, 60), say)
    say(
      `${r.env.body.verdict === 'accept' ? 'accepted' : 'rejected'} the result of task ${r.env.body.task.slice(0, 12)}; held by ${holder}`
    )
    return 0
  })
}
