// Small DOM helpers. Everything is drawn with textContent, never as HTML, so
// nothing a peer writes can run here; a redraw keeps the user's open sections
// and focus.
import { state } from './state.js'

/** The page's element of that id (index.html has them all). */
export const $ = id => document.getElementById(id)

/** An element with attributes (`on...` adds a listener, `text` sets its text) and children, text as text nodes. */
export function el(tag, attrs, ...children) {
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

/** Re-render `container` with `build()`, keeping the user's open details and focus. */
export function rerender(container, build) {
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

/** What finds `node` again after a redraw: its data-key, or its details' when it is a summary. */
function keyOf(node) {
  if (node.dataset && node.dataset.key) return { key: node.dataset.key, summary: false }
  if (node.tagName === 'SUMMARY' && node.parentElement && node.parentElement.dataset.key)
    return { key: node.parentElement.dataset.key, summary: true }
  return null
}

/** A <details> of `key` whose open or closed state, once the user sets it, survives redraws (rerender). */
export function details(key, summaryChildren, body, openByDefault) {
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
