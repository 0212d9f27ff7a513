// The plans this node holds, newest first, each a button that follows it;
// the one shown is marked current.
import { $, el, rerender } from './dom.js'
import { badge, num } from './format.js'
import { state } from './state.js'
import { choose } from './stream.js'

/** Draws the plan list of the last summary (nothing before the first). */
export function renderPlanList() {
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
