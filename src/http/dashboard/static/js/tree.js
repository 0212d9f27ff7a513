// The plan tree: each node with its status, what it waits for and whom,
// its proposals and results (opened in place); a big plan shows each
// finished subtree as one row with its counts until the user opens it.
import { $, details, el, rerender } from './dom.js'
import { me, num, short, shortIds, statusBadge, who } from './format.js'
import { state } from './state.js'

/** Plans of more nodes than this show each finished subtree as one row with its counts (roles/render.ts QUIET_FROM). */
const COLLAPSE_FROM = 50
const STATUS_ORDER = ['done', 'claimed', 'in-review', 'ready', 'blocked', 'decomposing', 'failed']
const countsPhrase = by =>
  STATUS_ORDER.filter(s => by[s] > 0)
    .map(s => `${num(by[s])} ${s}`)
    .join(' · ')

/** The tree of plan snapshot `t`, as the elements #tree holds (none when its root is not held). */
export function renderTree(t) {
  const byId = new Map(t.nodes.map(n => [n.id, n]))
  const tasks = new Map(t.tasks.map(x => [x.id, x]))
  // Each subtree's size and failed attempts, children before parents (the nodes are in breadth-first order).
  const sizes = new Map()
  const totals = {}
  for (let i = t.nodes.length - 1; i >= 0; i--) {
    const n = t.nodes[i]
    const task = n.task === null ? undefined : tasks.get(n.task)
    const c = { nodes: 1, done: n.status === 'done' ? 1 : 0, failures: task ? task.failures : 0 }
    for (const k of n.children) {
      const kc = sizes.get(k)
      if (!kc) continue
      c.nodes += kc.nodes
      c.done += kc.done
      c.failures += kc.failures
    }
    sizes.set(n.id, c)
    totals[n.status] = (totals[n.status] || 0) + 1
  }
  const collapse = t.nodes.length > COLLAPSE_FROM
  // A finished subtree of a big plan: one row with its counts, and a button that opens it.
  const collapsedItem = (n, c) =>
    el(
      'li',
      { 'data-node': n.id, 'data-status': n.status, 'data-collapsed': c.nodes },
      el(
        'div',
        { class: 'node-row' },
        statusBadge(n),
        el('span', { class: 'node-title' }, n.title),
        el(
          'span',
          { class: 'node-meta' },
          `${num(c.nodes)} nodes done` + (c.failures > 0 ? ` · ${num(c.failures)} failed attempt(s) retried` : '')
        ),
        el(
          'button',
          {
            type: 'button',
            class: 'expand',
            'data-key': `expand:${n.id}`,
            'aria-label': `show the ${c.nodes} nodes of ${n.title}`,
            onclick: () => {
              state.expanded.add(n.id)
              rerender($('tree'), () => renderTree(t))
            }
          },
          'show'
        )
      )
    )
  const quorum = t.committees.length > 0 ? t.committees[t.committees.length - 1].quorum : t.params.quorum
  const nodeItem = n => {
    const size = sizes.get(n.id)
    if (collapse && n.id !== t.root && n.status === 'done' && n.children.length > 0 && !state.expanded.has(n.id))
      return collapsedItem(n, size)
    const task = n.task === null ? undefined : tasks.get(n.task)
    const meta = []
    if (n.kind === 'decomposing') {
      const a = n.attempts[n.attempts.length - 1]
      if (a)
        meta.push(
          `attempt ${a.attempt}: ${a.proposals.length} ` +
            `proposal(s)${a.proposals.length > 0 ? `, votes ${a.proposals.map(p => p.votes).join('/')} of ${quorum} needed` : ''}`
        )
    }
    if (n.leafReason && n.leafReason !== 'marked-leaf' && n.leafReason !== 'max-depth')
      meta.push(`leaf: ${n.leafReason}`)
    // A task that needs tools (protocol 3): which, and whether any executor in sight offers them.
    if (n.needs && n.needs.length > 0) {
      const offerSets = (state.summary ? state.summary.roster : [])
        .filter(r => r.role === 'executor')
        .map(r => new Set(r.offers || []))
      const met = offerSets.some(o => n.needs.every(x => o.has(x)))
      const names = n.needs.map(x => `\`${x}\``).join(' and ')
      meta.push(n.status === 'ready' && !met ? `waits for an executor with ${names}` : `needs ${names}`)
    }
    let lease = null
    if (task) {
      if (task.kind === 'rollup' && (task.status === 'ready' || task.status === 'claimed')) meta.push('roll-up')
      if (task.owner && task.status === 'claimed') {
        const chain = task.chains[task.chains.length - 1]
        meta.push(`claimed by ${short(task.owner)}`)
        if (chain && chain.end === null) lease = el('span', { class: 'lease', 'data-lapse': chain.lapseMs })
      }
      if (task.duplicates > 0) meta.push(`${task.duplicates} duplicate(s)`)
      if (task.failures > 0) meta.push(`${task.failures}/${task.attemptsAllowed} failed`)
    }
    if (n.waiting !== null && n.status !== 'ready') meta.push(shortIds(n.waiting))
    // Whom it waits for, by name: the committee members or approvers who have not answered.
    const waitsFor = [...new Set([...(n.awaiting || []), ...(task && task.awaiting ? task.awaiting : [])])]
    const waits =
      waitsFor.length > 0
        ? el(
            'span',
            {
              class: `waits-for${waitsFor.includes(me()) ? ' mine' : ''}`,
              'data-waits-for': waitsFor.join(' '),
              title: waitsFor.join('\n')
            },
            `waits for ${waitsFor.map(who).join(', ')}`
          )
        : null
    const parts = [
      el(
        'div',
        { class: 'node-row' },
        statusBadge(n),
        el('span', { class: 'node-title' }, n.title),
        waits,
        meta.length > 0 || lease
          ? el('span', { class: 'node-meta' }, meta.join(' · '), lease ? ' · ' : '', lease)
          : null
      ),
      n.detail ? el('p', { class: 'node-detail' }, n.detail) : null
    ]
    const attempts = n.attempts.filter(a => a.proposals.length > 0)
    if (attempts.length > 0) {
      const last = attempts[attempts.length - 1]
      const won = last.winner ? last.proposals.find(p => p.id === last.winner) : undefined
      parts.push(
        details(
          `prop:${n.id}`,
          `Proposals: ${attempts.reduce((k, a) => k + a.proposals.length, 0)} in ${attempts.length} ` +
            `attempt(s)${won ? ` · accepted: ${short(won.author)}'s` : ''}`,
          attempts.map(a =>
            el(
              'div',
              { class: 'attempt' },
              el(
                'p',
                { class: 'small muted' },
                `attempt ${a.attempt}: ${a.outcome}` +
                  `${a.waitingFor.length > 0 ? ` · waiting for ballots from ${a.waitingFor.map(short).join(', ')}` : ''}`
              ),
              el(
                'ol',
                { class: 'proposals' },
                a.proposals.map(p =>
                  el(
                    'li',
                    { 'data-accepted': p.id === a.winner ? 'true' : undefined },
                    p.id === a.winner ? el('span', { class: 'accepted-mark' }, '✓ accepted · ') : null,
                    p.equivocated ? el('strong', { class: 'flags' }, 'equivocated · ') : null,
                    `by ${short(p.author)} · ${p.votes}/${quorum} votes`,
                    el('br'),
                    el('span', {}, p.titles.join(' · ')),
                    p.rationale ? el('div', { class: 'muted small' }, p.rationale) : null
                  )
                )
              )
            )
          )
        )
      )
    }
    if (task) {
      for (const r of task.results) {
        const label =
          `${task.kind === 'rollup' ? 'Roll-up' : 'Result'}${r.accepted ? '' : ' (duplicate)'} ` +
          (`by ${short(r.author)}` +
            `${r.source === 'offline' ? ' · offline heuristics' : ` · ${r.model}`}` +
            `${r.review !== 'none' ? ` · review ${r.review}` : ''}`)
        const calls = r.toolCalls || []
        const toolList =
          calls.length === 0
            ? []
            : [
                el(
                  'ul',
                  { class: 'tool-calls', 'aria-label': 'tool calls' },
                  calls.map(c =>
                    el(
                      'li',
                      { class: 'mono', 'data-ok': String(c.ok) },
                      `${c.server}/${c.tool} · ${c.ms} ms · ${c.ok ? 'ok' : `failed: ${c.error || 'error'}`}` +
                        `${c.args ? ` · ${c.args}` : ''}`
                    )
                  )
                )
              ]
        const body = [...toolList, el('pre', { class: 'output' }, r.output)]
        const withCalls = calls.length === 0 ? label : `${label} · ${calls.length} tool call(s)`
        parts.push(details(`res:${r.id}`, withCalls, body, false))
      }
    }
    const kids = n.children.map(c => byId.get(c)).filter(Boolean)
    if (kids.length > 0) parts.push(el('ul', { role: 'group' }, kids.map(nodeItem)))
    return el('li', { 'data-node': n.id, 'data-status': n.status }, parts)
  }
  const root = byId.get(t.root)
  if (!root) return []
  return [
    el(
      'p',
      { id: 'tree-totals', class: 'small muted' },
      `${num(t.nodes.length)} nodes: ${countsPhrase(totals)}` +
        (collapse ? ' · finished subtrees are shown as one row each' : '')
    ),
    el('ul', { class: 'tree', 'aria-label': 'plan tree' }, nodeItem(root))
  ]
}
