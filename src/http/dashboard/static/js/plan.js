// The followed plan: its head (goal, status, progress, budget, flags, and
// cancel for its author), its deliverable and its tree.
import { post } from './api.js'
import { $, details, el, rerender } from './dom.js'
import { badge, num, short } from './format.js'
import { state } from './state.js'
import { renderTree } from './tree.js'

const FINISHED = new Set(['completed', 'failed', 'cancelled'])

function planLine() {
  return state.summary ? state.summary.plans.find(p => p.id === state.treePlan) : undefined
}

/** Draws the plan's head, only when something it shows changed (the user may be typing the cancel reason). */
export function renderPlanHead() {
  const t = state.tree
  const head = $('plan-head')
  if (!t) {
    state.headSig = null
    rerender(head, () =>
      el(
        'p',
        { class: 'muted' },
        state.treePlan ? `Plan ${short(state.treePlan)} is not held here (yet).` : 'No plan yet. Waiting for a goal…'
      )
    )
    return
  }
  const done = t.nodes.filter(n => n.status === 'done').length
  const flags = []
  if (t.equivocations.length > 0)
    flags.push(`${t.equivocations.length} equivocation(s) by ${t.equivocations.map(e => short(e.author)).join(', ')}`)
  if (t.duplicates > 0) flags.push(`${t.duplicates} duplicate execution(s)`)
  if (t.ignoredClaims > 0) flags.push(`${t.ignoredClaims} claim(s) lost a race or came early`)
  const line = planLine()
  const canCancel = Boolean(state.summary && state.summary.allowSubmit && line && line.mine && !FINISHED.has(t.status))
  // Redraw only when something shown changed: the summary comes every 2 s, and the user may be typing here.
  const sig = JSON.stringify([t.plan, state.treeHash, canCancel])
  if (sig === state.headSig) return
  state.headSig = sig
  rerender(head, () => [
    el('p', { class: 'plan-goal', id: 'plan-goal' }, t.goal),
    el('p', {}, badge(t.status), ' ', el('span', { id: 'plan-reason' }, t.statusReason)),
    el(
      'div',
      { class: 'figures' },
      el(
        'span',
        { class: 'bar' },
        el('label', { for: 'nodes-progress', class: 'inline' }, `nodes ${done}/${t.nodes.length} done`),
        el('progress', { id: 'nodes-progress', max: Math.max(1, t.nodes.length), value: done })
      ),
      el(
        'span',
        { class: 'bar' },
        el('label', { for: 'budget-meter', class: 'inline' }, `tokens ${num(t.spentTokens)} / ${num(t.budgetTokens)}`),
        el('meter', {
          id: 'budget-meter',
          min: 0,
          max: Math.max(1, t.budgetTokens),
          high: t.budgetTokens * 0.8,
          value: t.spentTokens
        })
      ),
      el('span', {}, `${num(t.events)} events`),
      el('span', { class: 'mono', title: t.plan }, `plan ${short(t.plan)}`),
      el(
        'span',
        { class: 'mono', title: 'treeHash: equal on every peer that holds the same events' },
        `treeHash ${(state.treeHash || '').slice(0, 12)}`
      )
    ),
    flags.length > 0 ? el('p', { class: 'flags' }, `⚠ ${flags.join(' · ')}`) : null,
    canCancel ? cancelControls(t.plan) : null
  ])
}

function cancelControls(plan) {
  // What the user started here survives redraws: whether the form is open, and the reason typed.
  const opened = state.cancelFor === plan
  const reason = el('input', {
    type: 'text',
    id: 'cancel-reason',
    'data-key': 'cancel-reason',
    'aria-label': 'Reason for cancelling',
    placeholder: 'reason (optional)',
    hidden: !opened
  })
  reason.value = opened ? state.cancelReason : ''
  reason.addEventListener('input', () => {
    state.cancelReason = reason.value
  })
  const confirmBtn = el(
    'button',
    { type: 'button', class: 'danger', id: 'cancel-confirm', 'data-key': 'cancel-confirm', hidden: !opened },
    'Confirm cancel'
  )
  const msg = el('span', { class: 'msg', role: 'status', 'aria-live': 'polite', id: 'cancel-msg' })
  const start = el(
    'button',
    {
      type: 'button',
      class: 'danger',
      id: 'cancel-plan',
      'data-key': 'cancel-plan',
      'aria-expanded': String(opened),
      'aria-controls': 'cancel-reason'
    },
    'Cancel plan…'
  )
  start.addEventListener('click', () => {
    const showing = reason.hidden
    state.cancelFor = showing ? plan : null
    state.cancelReason = ''
    reason.value = ''
    reason.hidden = !showing
    confirmBtn.hidden = !showing
    start.setAttribute('aria-expanded', String(showing))
    if (showing) reason.focus()
  })
  confirmBtn.addEventListener('click', async () => {
    confirmBtn.disabled = true
    msg.dataset.kind = ''
    msg.textContent = 'cancelling…'
    const r = await post(`/api/plans/${plan}/cancel`, { reason: reason.value })
    confirmBtn.disabled = false
    msg.dataset.kind = r.ok ? 'ok' : 'error'
    msg.textContent = r.ok ? 'cancelled' : r.error
  })
  return el('div', { class: 'plan-actions' }, start, reason, confirmBtn, msg)
}

/** Draws the last tree snapshot: head, deliverable and tree. */
export function renderPlan() {
  const t = state.tree
  renderPlanHead()
  rerender($('deliverable'), () =>
    t && t.deliverable
      ? details(
          'deliverable',
          'Deliverable',
          el('pre', { class: 'output', id: 'deliverable-text' }, t.deliverable.output),
          true
        )
      : []
  )
  const d = $('deliverable').querySelector('details')
  if (d) d.classList.add('deliverable')
  rerender($('tree'), () => (t ? renderTree(t) : []))
}
