// The summary snapshot: who this node is, the swarm's figures, its peers by
// role, the events it refused and its members' standing; it also redraws the panels that draw on it
// (awaiting you, the plans, the plan's head).
import { renderAwaiting } from './awaiting.js'
import { $, el, rerender } from './dom.js'
import { num, short } from './format.js'
import { renderPlanHead } from './plan.js'
import { renderPlanList } from './plan-list.js'
import { state } from './state.js'

/** Draws the last summary snapshot. */
export function renderSummary() {
  const s = state.summary
  $('whoami').textContent =
    `${s.role} ${short(s.peerId)} · swarm "${s.swarm}" · ${s.allowSubmit ? 'may submit' : 'read-only'}`
  $('whoami').title = s.peerId
  $('submit').hidden = !s.allowSubmit
  renderAwaiting()
  renderPlanList()
  rerender($('stats'), () => [
    el('dt', {}, 'peers connected'),
    el('dd', { 'data-stat': 'peers' }, num(s.peers)),
    el('dt', {}, 'events held'),
    el('dd', { 'data-stat': 'held' }, num(s.events.held)),
    el('dt', {}, 'events parked'),
    el('dd', { 'data-stat': 'parked' }, num(s.events.parked)),
    el('dt', {}, 'events / second'),
    el('dd', { 'data-stat': 'rate' }, String(s.events.perSecond))
  ])
  const byRole = new Map()
  for (const r of s.roster) {
    if (!byRole.has(r.role)) byRole.set(r.role, [])
    byRole.get(r.role).push(r)
  }
  rerender($('roster'), () =>
    byRole.size === 0
      ? el('p', { class: 'muted' }, 'no peers heard from yet')
      : [...byRole.keys()].sort().map(role =>
          el(
            'div',
            { class: 'role-group', 'data-role': role },
            el('strong', {}, `${role} (${byRole.get(role).length})`),
            el(
              'ul',
              {},
              byRole
                .get(role)
                .map(r =>
                  el(
                    'li',
                    { class: 'mono', title: r.peerId },
                    `${short(r.peerId)} · seen ${Math.round(r.lastSeenMs / 1000)} s ago` +
                      `${r.offers && r.offers.length > 0 ? ` · offers ${r.offers.join(', ')}` : ''}`
                  )
                )
            )
          )
        )
  )
  const rejected = Object.entries(s.rejected).filter(([, n]) => n > 0)
  rerender($('rejected'), () =>
    rejected.length === 0
      ? el('li', { class: 'muted' }, 'none')
      : rejected
          .sort((a, b) => b[1] - a[1])
          .map(([why, n]) => el('li', {}, el('span', { class: 'mono' }, why), `: ${num(n)}`))
  )
  renderStanding(s.standing ?? [], s.standingMore ?? 0)
  if (state.tree) renderPlanHead()
}

/** Members with evidence against them, the worst first: a poor record is marked. */
function renderStanding(lines, more) {
  rerender($('standing'), () =>
    lines.length === 0
      ? el('li', { class: 'muted' }, 'no evidence against any member')
      : lines.map(l =>
          el(
            'li',
            { class: l.poor ? 'standing poor' : 'standing', 'data-peer': l.peer, title: l.plans.join('\n') },
            el('span', { class: 'mono', title: l.peer }, short(l.peer)),
            l.poor ? el('strong', {}, ' poor record') : '',
            `: ${l.says}`
          )
        )
  )
  const m = $('standing-more')
  m.hidden = more === 0
  m.textContent = more === 0 ? '' : `and ${num(more)} more (GET /standing lists every one)`
}
