// plan-swarm observer dashboard: plain browser JavaScript, no framework, no
// network beyond the node that served it. State arrives as whole snapshots on
// /events/stream (server-sent events): `summary` (swarm, counters, plans) and
// `tree` (the followed plan). Everything is drawn with textContent, never as
// HTML, so nothing a peer writes can run here.
'use strict'

;(() => {
  const $ = id => document.getElementById(id)
  const GLYPH = { decomposing: '…', blocked: '⏸', ready: '○', claimed: '⟳', 'in-review': '?', done: '✓', failed: '✗' }
  const FINISHED = new Set(['completed', 'failed', 'cancelled'])
  const TOKEN_KEY = 'plan-swarm-submit-token'

  /** A node's status as a coloured badge with its glyph. */
  function statusBadge(n) {
    return el(
      'span',
      { class: `badge s-${n.status}`, 'aria-label': `status ${n.status}` },
      `${GLYPH[n.status] || ''} ${n.status}`
    )
  }

  const state = {
    summary: null,
    tree: null,
    treePlan: null,
    treeHash: null,
    /** The plan chosen by the user, or null to follow the newest. */
    chosen: null,
    clockOffset: 0,
    lastMessage: 0,
    headSig: null,
    /** The plan whose cancel form is open, and the reason typed so far. */
    cancelFor: null,
    cancelReason: '',
    /** details elements the user opened or closed, by key. */
    open: new Map(),
    /** The "awaiting you" panel: per item key, the notes typed, what was sent, a stable DOM id. */
    notes: new Map(),
    sent: new Map(),
    said: new Map(),
    itemIds: new Map(),
    /** Collapsed finished subtrees the user opened, by node id. */
    expanded: new Set()
  }

  // ---- small DOM helpers ---------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue
      if (k === 'class') e.className = v
      else if (k === 'text') e.textContent = v
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v)
      else e.setAttribute(k, v === true ? '' : String(v))
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue
      e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c)
    }
    return e
  }
  const short = id => (typeof id === 'string' && id.length > 14 ? `…${id.slice(-6)}` : String(id))
  const badge = (status, label) => el('span', { class: `badge s-${status}` }, label || status)
  /** The observer's own key, when the page may act as it (write mode). */
  const me = () => (state.summary && state.summary.allowSubmit ? state.summary.peerId : null)
  /** A peer as the page names it: "you" for the observer's key in write mode, "this observer" read-only, else shortened. */
  const who = id => {
    if (state.summary && id === state.summary.peerId) return state.summary.allowSubmit ? 'you' : 'this observer'
    return short(id)
  }
  /** Peer ids inside a sentence (the fold's `waiting` texts), named as `who` does. */
  const shortIds = text =>
    String(text)
      .replace(/\b(12D3KooW|Qm)[1-9A-HJ-NP-Za-km-z]{40,48}\b/g, who)
      .replace(/\bthe approval of you\b/g, 'your approval')
  function ago(ms) {
    const s = Math.max(0, Math.round((serverNow() - ms) / 1000))
    if (s < 90) return `${s} s`
    if (s < 5400) return `${Math.round(s / 60)} min`
    return `${Math.round(s / 3600)} h`
  }
  const nf = new Intl.NumberFormat()
  const num = n => nf.format(n)

  /** Re-render `container` with `build()`, keeping the user's open details and focus. */
  function rerender(container, build) {
    const active = document.activeElement
    const focusKey = active && container.contains(active) ? keyOf(active) : null
    container.replaceChildren(...[].concat(build()).filter(c => c !== null && c !== undefined && c !== false))
    for (const d of container.querySelectorAll('details[data-key]')) {
      const choice = state.open.get(d.dataset.key)
      if (choice !== undefined) d.open = choice
    }
    if (focusKey !== null) {
      const again = container.querySelector(`[data-key="${CSS.escape(focusKey.key)}"]`)
      const target = again && focusKey.summary ? again.querySelector('summary') : again
      if (target) target.focus({ preventScroll: true })
    }
  }
  function keyOf(node) {
    if (node.dataset && node.dataset.key) return { key: node.dataset.key, summary: false }
    if (node.tagName === 'SUMMARY' && node.parentElement && node.parentElement.dataset.key)
      return { key: node.parentElement.dataset.key, summary: true }
    return null
  }
  function details(key, summaryChildren, body, openByDefault) {
    const d = el(
      'details',
      { 'data-key': key, open: openByDefault || undefined },
      el('summary', {}, summaryChildren),
      body
    )
    d.addEventListener('toggle', () => {
      state.open.set(key, d.open)
    })
    return d
  }
  function serverNow() {
    return Date.now() + state.clockOffset
  }

  // ---- the token (from #token=..., kept per tab) -----------------------------------------
  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1))
    const token = params.get('token')
    if (token) {
      sessionStorage.setItem(TOKEN_KEY, token)
      params.delete('token')
      const rest = params.toString()
      history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''))
    }
    const plan = params.get('plan')
    state.chosen = plan && /^[0-9a-f]{64}$/.test(plan) ? plan : null
  }
  function token() {
    return $('token').value.trim() || sessionStorage.getItem(TOKEN_KEY) || ''
  }

  // ---- the stream -------------------------------------------------------------------------
  let source = null
  let retryTimer = null
  function setConn(s, text) {
    const c = $('conn')
    c.dataset.state = s
    c.textContent = text
  }
  function connect() {
    if (source) source.close()
    clearTimeout(retryTimer)
    const url = state.chosen ? `/events/stream?plan=${state.chosen}` : '/events/stream'
    source = new EventSource(url)
    setConn(state.summary ? 'reconnecting' : 'connecting', state.summary ? 'reconnecting…' : 'connecting…')
    source.addEventListener('open', () => {
      setConn('live', 'live')
    })
    source.addEventListener('error', () => {
      setConn('reconnecting', 'reconnecting…')
      // EventSource retries by itself; when it gives up (CLOSED), start again.
      if (source.readyState === EventSource.CLOSED) retryTimer = setTimeout(connect, 3000)
    })
    source.addEventListener('summary', e => {
      state.lastMessage = Date.now()
      state.summary = JSON.parse(e.data)
      state.clockOffset = state.summary.now - Date.now()
      setConn('live', 'live')
      renderSummary()
    })
    source.addEventListener('tree', e => {
      state.lastMessage = Date.now()
      const m = JSON.parse(e.data)
      state.clockOffset = m.now - Date.now()
      state.tree = m.tree
      state.treePlan = m.plan
      state.treeHash = m.treeHash
      renderPlan()
      renderPlanList()
    })
  }
  // A stream silent for long (a proxy, a sleeping laptop) is reopened; summaries come every 2 s.
  setInterval(() => {
    if (state.lastMessage > 0 && Date.now() - state.lastMessage > 10000) {
      state.lastMessage = Date.now()
      connect()
    }
  }, 2000)

  function choose(plan) {
    state.chosen = plan
    const params = new URLSearchParams(location.hash.slice(1))
    if (plan) params.set('plan', plan)
    else params.delete('plan')
    const rest = params.toString()
    history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''))
    $('follow').setAttribute('aria-pressed', String(plan === null))
    connect()
  }

  // ---- summary: whoami, plans, swarm ----------------------------------------------------
  function renderSummary() {
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
    if (state.tree) renderPlanHead()
  }

  function renderPlanList() {
    const s = state.summary
    if (!s) return
    rerender($('plan-list'), () =>
      s.plans.length === 0
        ? el('li', { class: 'muted' }, 'no plans yet')
        : s.plans.map(p =>
            el(
              'li',
              {},
              el(
                'button',
                {
                  type: 'button',
                  'data-key': `plan:${p.id}`,
                  'data-plan': p.id,
                  'aria-current': p.id === state.treePlan ? 'true' : undefined,
                  onclick: () => choose(p.id)
                },
                el('span', { class: 'goal' }, p.goal),
                el(
                  'span',
                  { class: 'small' },
                  badge(p.status),
                  ` ${p.done}/${p.nodes} done · ${num(p.spentTokens)} tokens`
                )
              )
            )
          )
    )
  }

  // ---- the plan ----------------------------------------------------------------------------
  function planLine() {
    return state.summary ? state.summary.plans.find(p => p.id === state.treePlan) : undefined
  }

  function renderPlanHead() {
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
    const canCancel = Boolean(
      state.summary && state.summary.allowSubmit && line && line.mine && !FINISHED.has(t.status)
    )
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
          el(
            'label',
            { for: 'budget-meter', class: 'inline' },
            `tokens ${num(t.spentTokens)} / ${num(t.budgetTokens)}`
          ),
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

  function renderPlan() {
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

  /** Plans of more nodes than this show each finished subtree as one row with its counts (roles/render.ts QUIET_FROM). */
  const COLLAPSE_FROM = 50
  const STATUS_ORDER = ['done', 'claimed', 'in-review', 'ready', 'blocked', 'decomposing', 'failed']
  const countsPhrase = by =>
    STATUS_ORDER.filter(s => by[s] > 0)
      .map(s => `${num(by[s])} ${s}`)
      .join(' · ')

  function renderTree(t) {
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

  // Lease countdowns tick without redrawing the tree.
  function tickLeases() {
    const now = serverNow()
    for (const e of document.querySelectorAll('[data-lapse]')) {
      const left = Math.round((Number(e.dataset.lapse) - now) / 1000)
      e.textContent = left >= 0 ? `lease ${left} s left` : `lease lapsed ${-left} s ago`
    }
  }
  setInterval(() => {
    tickLeases()
    for (const e of document.querySelectorAll('[data-since]')) e.textContent = ago(Number(e.dataset.since))
  }, 1000)

  // ---- awaiting you (only with --allow-submit) ---------------------------------------------
  // Each item is kept while the snapshots list it and redrawn only when what it shows changes,
  // so that notes being typed, and focus, survive the summaries that come every 2 s.
  const itemKey = it =>
    it.ask === 'choose a split'
      ? `split:${it.plan}:${it.node}:${it.attempt}`
      : `review:${it.plan}:${it.task}:${it.result ? it.result.id : ''}`
  function itemId(key) {
    if (!state.itemIds.has(key)) state.itemIds.set(key, `aw${state.itemIds.size + 1}`)
    return state.itemIds.get(key)
  }

  function renderAwaiting() {
    const s = state.summary
    const section = $('awaiting')
    section.hidden = !s.allowSubmit || !Array.isArray(s.awaiting)
    if (section.hidden) return
    const items = s.awaiting
    const list = $('awaiting-list')
    const keys = new Set(items.map(itemKey))
    for (const li of [...list.children]) {
      if (!keys.has(li.dataset.item)) {
        li.remove()
        state.sent.delete(li.dataset.item)
        state.said.delete(li.dataset.item)
        state.notes.delete(li.dataset.item)
      }
    }
    list.querySelector('.awaiting-none')?.remove()
    let before = list.firstElementChild
    for (const it of items) {
      const key = itemKey(it)
      let li = [...list.children].find(c => c.dataset.item === key)
      const sig = JSON.stringify([it, state.sent.get(key) || null, state.said.get(key) || null])
      if (!li) {
        li = el('li', { class: 'await-item', 'data-item': key })
        list.insertBefore(li, before)
      } else if (li !== before) list.insertBefore(li, before)
      if (li.dataset.sig !== sig) {
        li.dataset.sig = sig
        li.dataset.ask = it.ask === 'choose a split' ? 'split' : 'review'
        li.dataset.plan = it.plan
        li.dataset.node = it.node
        if (it.task) li.dataset.task = it.task
        rerender(li, () => awaitingItem(it, key))
      }
      before = li.nextElementSibling
    }
    if (items.length === 0) list.append(el('li', { class: 'awaiting-none muted' }, 'Nothing waits for you.'))
    $('awaiting-count').textContent = String(items.length + (s.awaitingMore || 0))
    $('awaiting-count').hidden = items.length === 0
    $('awaiting-more').hidden = !(s.awaitingMore > 0)
    $('awaiting-more').textContent =
      s.awaitingMore > 0 ? `${s.awaitingMore} more wait for you; they show here, oldest first, as these are done.` : ''
  }

  function awaitingItem(it, key) {
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
      if (!msg.isConnected && state.summary) renderAwaiting()
    }

    const head = [
      el('h3', { class: 'await-title' }, it.title),
      el(
        'p',
        { class: 'small muted await-goal' },
        it.title === it.goal ? "the plan's goal" : `in the plan: ${it.goal}`
      ),
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

  // ---- submit and cancel (only with --allow-submit) ----------------------------------------
  async function post(path, body) {
    const tok = token()
    if (!tok) return { ok: false, error: 'enter the submit token the observer printed at start' }
    try {
      const res = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-plan-swarm-token': tok },
        body: JSON.stringify(body),
        credentials: 'same-origin'
      })
      const data = await res.json().catch(() => ({}))
      if (!res.ok) return { ok: false, error: data.error || `HTTP ${res.status}` }
      if ($('token').value.trim()) sessionStorage.setItem(TOKEN_KEY, $('token').value.trim())
      return { ok: true, data }
    } catch (err) {
      return { ok: false, error: `could not reach the observer: ${err.message}` }
    }
  }

  $('submit-form').addEventListener('submit', async e => {
    e.preventDefault()
    const msg = $('submit-msg')
    const goal = $('goal').value.trim()
    if (!goal) {
      msg.dataset.kind = 'error'
      msg.textContent = 'write the goal first'
      $('goal').focus()
      return
    }
    const options = {}
    for (const name of ['max-depth', 'budget', 'committee']) {
      const v = $(`opt-${name}`).value.trim()
      if (v !== '') options[name] = name === 'committee' ? v : Number(v)
    }
    if ($('opt-use-tools').checked) options['use-tools'] = true
    $('submit-button').disabled = true
    msg.dataset.kind = ''
    msg.textContent = 'submitting…'
    const r = await post('/api/goals', { goal, options })
    $('submit-button').disabled = false
    msg.dataset.kind = r.ok ? 'ok' : 'error'
    msg.textContent = r.ok
      ? `submitted plan ${short(r.data.plan)} (committee of ${r.data.committee.length})` +
        (r.data.waits ? `; ${r.data.waits}, and starts by itself then` : '')
      : r.error
    if (r.ok) {
      $('goal').value = ''
      choose(r.data.plan)
    }
  })

  $('follow').addEventListener('click', () => {
    choose(null)
  })

  // ---- start ------------------------------------------------------------------------------
  readHash()
  const saved = sessionStorage.getItem(TOKEN_KEY)
  if (saved) $('token').value = saved
  $('follow').setAttribute('aria-pressed', String(state.chosen === null))
  window.addEventListener('hashchange', () => {
    const before = state.chosen
    readHash()
    if (state.chosen !== before) connect()
  })
  connect()
})()
