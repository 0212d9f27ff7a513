// One item of "Awaiting you": a split to choose (the proposals with their
// scores, a button each, and "None of these") or a result to review (accept
// or reject), with notes. What the user typed, sent and was told is kept in
// the state by the item's key, so a redraw shows it again.
import { post } from './api.js'
import { el } from './dom.js'
import { ago, num, who } from './format.js'
import { state } from './state.js'

/** A DOM id for the item of `key`, the same across redraws. */
function itemId(key) {
  if (!state.itemIds.has(key)) state.itemIds.set(key, `aw${state.itemIds.size + 1}`)
  return state.itemIds.get(key)
}

/**
 * The contents of the item `it` (of `key`) as the list item holds them;
 * `redraw` redraws the panel when an answer comes for an item a snapshot
 * redrew meanwhile.
 */
export function awaitingItem(it, key, redraw) {
  const id = itemId(key)
  const split = it.ask === 'choose a split'
  const sent = state.sent.get(key)
  const notes = el('textarea', {
    id: `${id}-notes`,
    'data-key': `${key}:notes`,
    'data-field': 'notes',
    rows: 2,
    maxlength: 4000,
    'aria-describedby': `${id}-msg`,
    disabled: sent ? true : undefined
  })
  notes.value = state.notes.get(key) || ''
  notes.addEventListener('input', () => {
    state.notes.set(key, notes.value)
  })
  const said = state.said.get(key)
  const msg = el(
    'p',
    {
      class: 'msg',
      id: `${id}-msg`,
      role: 'status',
      'aria-live': 'polite',
      'data-kind': sent ? 'ok' : said ? said.kind : undefined
    },
    sent ? `sent: ${sent}` : said ? said.text : ''
  )
  // What the item says survives a redraw (a scorer's ballot may arrive while a request is out).
  const say = (kind, text) => {
    if (kind === 'error') state.said.set(key, { kind, text })
    else state.said.delete(key)
    msg.dataset.kind = kind
    msg.textContent = text
  }

  const send = async (button, path, body, label, needsNotes) => {
    const text = notes.value.trim()
    if (needsNotes && text === '') {
      say('error', needsNotes)
      notes.focus()
      return
    }
    const buttons = [...button.closest('.await-item').querySelectorAll('button')]
    for (const b of buttons) b.disabled = true
    say('', 'sending…')
    const r = await post(path, { ...body, notes: text })
    if (r.ok) {
      state.sent.set(key, label)
      notes.disabled = true
      say('ok', `sent: ${label}`)
    } else {
      for (const b of buttons) b.disabled = false
      say('error', r.error)
    }
    if (!msg.isConnected && state.summary) redraw()
  }

  const head = [
    el('h3', { class: 'await-title' }, it.title),
    el('p', { class: 'small muted await-goal' }, it.title === it.goal ? "the plan's goal" : `in the plan: ${it.goal}`),
    el(
      'p',
      { class: 'small await-what' },
      el('strong', {}, split ? `Choose a split${it.attempt ? ` (attempt ${it.attempt})` : ''}` : 'Review a result'),
      ` · waiting for ${it.approver ? 'your approval' : 'your answer'} for `,
      el(
        'time',
        {
          'data-since': it.sinceMs,
          datetime: new Date(it.sinceMs).toISOString(),
          title: new Date(it.sinceMs).toLocaleString()
        },
        ago(it.sinceMs)
      )
    )
  ]
  const disabled = sent ? true : undefined
  if (split) {
    const cards = it.proposals.map((p, i) => {
      const label = `P${i + 1}`
      const choose = el(
        'button',
        {
          type: 'button',
          class: 'primary',
          'data-action': 'choose',
          'data-proposal': p.id,
          'data-key': `${key}:choose:${p.id}`,
          disabled
        },
        `Choose ${label}`
      )
      choose.addEventListener('click', () => {
        send(choose, '/api/vote', { plan: it.plan, node: it.node, choice: p.id }, `chose ${label}`, null)
      })
      return el(
        'li',
        { class: 'proposal-card', 'data-proposal': p.id },
        el('h4', {}, `${label} `, el('span', { class: 'muted small', title: p.author }, `by ${who(p.author)}`)),
        el(
          'ol',
          { class: 'subgoals' },
          p.titles.map(t => el('li', {}, t))
        ),
        p.rationale ? el('p', { class: 'muted small' }, p.rationale) : null,
        el('h5', {}, 'Scores'),
        p.scores.length === 0
          ? el('p', { class: 'muted small' }, 'no scores yet')
          : el(
              'ul',
              { class: 'scores plain' },
              p.scores.map(x =>
                el(
                  'li',
                  { 'data-scorer': x.scorer },
                  el('span', { class: 'score', title: x.scorer }, `${who(x.scorer)}: ${x.score}`),
                  x.notes ? el('span', { class: 'muted' }, ` · ${x.notes}`) : null
                )
              )
            ),
        choose
      )
    })
    const none = el(
      'button',
      { type: 'button', 'data-action': 'none', 'data-key': `${key}:none`, disabled },
      'None of these'
    )
    none.addEventListener('click', () => {
      send(
        none,
        '/api/vote',
        { plan: it.plan, node: it.node, choice: null },
        'none of these',
        'choosing none needs notes: say what to change, so that the decomposers can address it in the next attempt'
      )
    })
    return [
      ...head,
      el('ul', { class: 'proposal-cards', 'aria-label': 'proposals' }, cards),
      it.notes.length > 0
        ? el(
            'div',
            { class: 'small' },
            el('strong', {}, 'Notes from ballots so far'),
            el(
              'ul',
              { class: 'plain' },
              it.notes.map(n => el('li', {}, `${who(n.author)}: ${n.notes}`))
            )
          )
        : null,
      el(
        'label',
        { for: `${id}-notes` },
        'Notes ',
        el('span', { class: 'muted small' }, '(optional with a choice; needed for "None of these")')
      ),
      notes,
      el('div', { class: 'await-actions' }, none),
      msg
    ]
  }
  const r = it.result
  const accept = el(
    'button',
    { type: 'button', class: 'primary', 'data-action': 'accept', 'data-key': `${key}:accept`, disabled },
    'Accept'
  )
  const reject = el(
    'button',
    { type: 'button', class: 'danger', 'data-action': 'reject', 'data-key': `${key}:reject`, disabled },
    'Reject'
  )
  accept.addEventListener('click', () => {
    send(accept, '/api/review', { plan: it.plan, task: it.task, verdict: 'accept' }, 'accepted', null)
  })
  reject.addEventListener('click', () => {
    send(
      reject,
      '/api/review',
      { plan: it.plan, task: it.task, verdict: 'reject' },
      'rejected',
      'a reject needs notes: say what to redo, so that the next executor can'
    )
  })
  return [
    ...head,
    r
      ? el(
          'p',
          { class: 'small muted' },
          `Result by ${who(r.author)}${r.source === 'offline' ? ' · offline heuristics' : ''}`
        )
      : null,
    r ? el('pre', { class: 'output await-result', tabindex: 0, 'aria-label': 'the result' }, r.output) : null,
    r && r.cut
      ? el(
          'p',
          { class: 'small muted' },
          `Showing the first ${num(r.output.length)} of ${num(r.outputChars)} characters; the whole result is in the plan tree.`
        )
      : null,
    el(
      'label',
      { for: `${id}-notes` },
      'Notes ',
      el('span', { class: 'muted small' }, '(optional to accept; needed to reject)')
    ),
    notes,
    el('div', { class: 'await-actions' }, accept, reject),
    msg
  ]
}
