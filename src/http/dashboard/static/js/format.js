// How the page words and shows things: ids shortened, peers named ("you"),
// numbers, ages on the node's clock, status badges.
import { el } from './dom.js'
import { serverNow, state } from './state.js'

const GLYPH = { decomposing: '…', blocked: '⏸', ready: '○', claimed: '⟳', 'in-review': '?', done: '✓', failed: '✗' }

/** A node's status as a coloured badge with its glyph. */
export function statusBadge(n) {
  return el(
    'span',
    { class: `badge s-${n.status}`, 'aria-label': `status ${n.status}` },
    `${GLYPH[n.status] || ''} ${n.status}`
  )
}

/** A long id as its last six characters, enough to tell peers and plans apart on one page. */
export const short = id => (typeof id === 'string' && id.length > 14 ? `…${id.slice(-6)}` : String(id))
/** A status as a coloured badge (dashboard.css colours each `s-<status>`). */
export const badge = (status, label) => el('span', { class: `badge s-${status}` }, label || status)
/** The observer's own key, when the page may act as it (write mode). */
export const me = () => (state.summary && state.summary.allowSubmit ? state.summary.peerId : null)
/** A peer as the page names it: "you" for the observer's key in write mode, "this observer" read-only, else shortened. */
export const who = id => {
  if (state.summary && id === state.summary.peerId) return state.summary.allowSubmit ? 'you' : 'this observer'
  return short(id)
}
/** Peer ids inside a sentence (the fold's `waiting` texts), named as `who` does. */
export const shortIds = text =>
  String(text)
    .replace(/\b(12D3KooW|Qm)[1-9A-HJ-NP-Za-km-z]{40,48}\b/g, who)
    .replace(/\bthe approval of you\b/g, 'your approval')
/** How long ago `ms` was on the node's clock, in the coarsest unit that still reads right. */
export function ago(ms) {
  const s = Math.max(0, Math.round((serverNow() - ms) / 1000))
  if (s < 90) return `${s} s`
  if (s < 5400) return `${Math.round(s / 60)} min`
  return `${Math.round(s / 3600)} h`
}
const nf = new Intl.NumberFormat()
/** A number with the reader's digit grouping. */
export const num = n => nf.format(n)
