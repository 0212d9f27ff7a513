// The submit form (only with --allow-submit; the page hides it otherwise): a
// goal and a few plan options, POSTed with the token; the new plan is then
// followed.
import { post } from './api.js'
import { $ } from './dom.js'
import { short } from './format.js'
import { choose } from './stream.js'

/** Submits the form's goal when the user sends it. */
export function handleSubmitForm() {
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
        (r.data.waits ? `; ${r.data.waits}, and starts by itself then` : '') +
        (r.data.warnings ? r.data.warnings.map(w => `. Warning: ${w}`).join('') : '')
      : r.error
    if (r.ok) {
      $('goal').value = ''
      choose(r.data.plan)
    }
  })
}
