import * as z from 'zod'
import { awaitingMe } from '../../author/person-events.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** What waits for this server's key as a committee member or approver, oldest first. */
export const inbox = swarmTool({
  name: 'inbox',
  title: 'What waits for you',
  description:
    "Splits and results that wait for this server's key, as a committee member or an approver, " +
    "oldest first: for a split the proposals side by side with the scorers' scores and notes, " +
    "for a result its text. Answer with plan_vote or plan_review. Give this server's peer id " +
    '(swarm_status) to an author for their committee or approvers.',
  inputSchema: z.object({}),
  annotations: { readOnlyHint: true },
  handle: async ({ view }) => {
    const me = view.me
    const items = awaitingMe(view)
    const text =
      items.length === 0
        ? `nothing waits for ${me}`
        : items
            .map(i =>
              i.ask === 'choose a split'
                ? `plan ${i.plan} node ${i.node} "${i.title}": choose a ` +
                  (`split${i.approver ? ' (you approve)' : ''}\n` +
                    i.proposals
                      .map((p, k) => {
                        const scores = p.scores.length === 0 ? '' : ` — scores ${p.scores.map(x => x.score).join(', ')}`
                        return `  P${k + 1} ${p.id}: ${p.titles.join(' | ')}${scores}`
                      })
                      .join('\n'))
                : `plan ${i.plan} task ${i.task ?? ''} "${i.title}": review a ` +
                  `result${i.approver ? ' (you approve)' : ''}\n ` +
                  ` ${(i.result?.output ?? '').replace(/\s+/g, ' ').slice(0, 300)}`
            )
            .join('\n\n')
    return ok(text, { peerId: me, items })
  }
})
