// "Awaiting you" (only with --allow-submit): the splits to choose and the
// results to review that wait for this observer's key. Each item is kept while
// the snapshots list it and redrawn only when what it shows changes, so that
// notes being typed, and focus, survive the summaries that come every 2 s.
import { awaitingItem } from './awaiting-item.js'
import { $, el, rerender } from './dom.js'
import { state } from './state.js'

const itemKey = it =>
  it.ask === 'choose a split'
    ? `split:${it.plan}:${it.node}:${it.attempt}`
    : `review:${it.plan}:${it.task}:${it.result ? it.result.id : ''}`

/** Draws the panel from the last summary, hidden when the page may not act (read-only). */
export function renderAwaiting() {
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
      rerender(li, () => awaitingItem(it, key, renderAwaiting))
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
