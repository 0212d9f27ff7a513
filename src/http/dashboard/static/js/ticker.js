// Times that move between snapshots, counted on the node's clock: lease
// countdowns in the tree and how long an item has waited for you. They tick
// in place, without redrawing what holds them.
import { ago } from './format.js'
import { serverNow } from './state.js'

function tickLeases() {
  const now = serverNow()
  for (const e of document.querySelectorAll('[data-lapse]')) {
    const left = Math.round((Number(e.dataset.lapse) - now) / 1000)
    e.textContent = left >= 0 ? `lease ${left} s left` : `lease lapsed ${-left} s ago`
  }
}

/** Updates every lease countdown and waiting time on the page once a second. */
export function startTicker() {
  setInterval(() => {
    tickLeases()
    for (const e of document.querySelectorAll('[data-since]')) e.textContent = ago(Number(e.dataset.since))
  }, 1000)
}
