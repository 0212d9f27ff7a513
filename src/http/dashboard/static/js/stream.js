// The page's one connection to the node: /events/stream (server-sent events)
// brings whole snapshots, `summary` (swarm, counters, plans) and `tree` (the
// followed plan), which replace what the page held and are drawn at once.
import { $ } from './dom.js'
import { state } from './state.js'

let source = null
let retryTimer = null
/** What draws each kind of snapshot; set by watchStream before the first connect. */
let draw = { summary: () => {}, tree: () => {} }

function setConn(s, text) {
  const c = $('conn')
  c.dataset.state = s
  c.textContent = text
}

/** (Re)opens the stream for the chosen plan, or the newest when none is chosen. */
export function connect() {
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
    draw.summary()
  })
  source.addEventListener('tree', e => {
    state.lastMessage = Date.now()
    const m = JSON.parse(e.data)
    state.clockOffset = m.now - Date.now()
    state.tree = m.tree
    state.treePlan = m.plan
    state.treeHash = m.treeHash
    draw.tree()
  })
}

/**
 * Snapshots go to `summary` and `tree` (each draws what the page shows of
 * it), and a stream silent for long (a proxy, a sleeping laptop) is reopened;
 * summaries come every 2 s.
 */
export function watchStream(drawers) {
  draw = drawers
  setInterval(() => {
    if (state.lastMessage > 0 && Date.now() - state.lastMessage > 10000) {
      state.lastMessage = Date.now()
      connect()
    }
  }, 2000)
}

/** Follows `plan`, or the newest plan when null: the address says which, and the stream starts again for it. */
export function choose(plan) {
  state.chosen = plan
  const params = new URLSearchParams(location.hash.slice(1))
  if (plan) params.set('plan', plan)
  else params.delete('plan')
  const rest = params.toString()
  history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''))
  $('follow').setAttribute('aria-pressed', String(plan === null))
  connect()
}
