// The page's address and its requests: the plan to follow and the submit
// token come from #plan=... and #token=... (the token is kept for this tab
// only, and taken out of the address), and every write is a same-origin POST
// that presents it.
import { $ } from './dom.js'
import { state } from './state.js'

/** Where this tab keeps the submit token (sessionStorage: gone with the tab, never sent but as a header). */
export const TOKEN_KEY = 'plan-swarm-submit-token'

/** Reads the address's #token=... (kept, then removed from the address) and #plan=... (the plan to follow). */
export function readHash() {
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

/** A POST to the node with the token: `{ ok: true, data }`, or `{ ok: false, error }` saying what went wrong. */
export async function post(path, body) {
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
