// plan-swarm observer dashboard: plain browser JavaScript as native modules
// (js/), no framework, no build step, no network beyond the node that served
// it. State arrives as whole snapshots on /events/stream (js/stream.js);
// everything is drawn with textContent, never as HTML, so nothing a peer
// writes can run here. This module starts the page: the order below is the
// order things begin.
import { TOKEN_KEY, readHash } from './js/api.js'
import { $ } from './js/dom.js'
import { renderPlan } from './js/plan.js'
import { renderPlanList } from './js/plan-list.js'
import { state } from './js/state.js'
import { choose, connect, watchStream } from './js/stream.js'
import { handleSubmitForm } from './js/submit.js'
import { renderSummary } from './js/summary.js'
import { startTicker } from './js/ticker.js'

watchStream({
  summary: renderSummary,
  tree: () => {
    renderPlan()
    renderPlanList()
  }
})
startTicker()
handleSubmitForm()
$('follow').addEventListener('click', () => {
  choose(null)
})

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
