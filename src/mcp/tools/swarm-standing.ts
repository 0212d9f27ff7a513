import * as z from 'zod'
import { describeRecord, isPoor } from '../../core/peer-standing.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** Each member's standing across the plans this node holds (ADR-0048): the evidence against it, per kind and plan. */
export const swarmStanding = swarmTool({
  name: 'swarm_standing',
  title: 'Standing of the swarm’s members',
  description:
    'The evidence against each member in the version-5 plans (submitted with trust) this node holds: ' +
    'equivocations, claims over the limit, takeovers of its own chain, results for tasks not held, late ' +
    'events, chains ended without a result and rejected results, per kind, with the plans they came from. ' +
    '`poor` marks a member whose record is worse than honest members leave: its gossip is scored down and ' +
    'default committees draw it last. Give `peer` for one member.',
  inputSchema: z.object({
    peer: z.string().min(1).optional().describe('one peer id; default every member with evidence against it')
  }),
  annotations: { readOnlyHint: true },
  handle: async ({ view }, { peer }) => {
    const all = view.standing?.() ?? []
    const records = (peer === undefined ? all : all.filter(r => r.peer === peer)).map(r => ({
      ...r,
      poor: isPoor(r)
    }))
    const poor = records.filter(r => r.poor)
    const text =
      records.length === 0
        ? peer === undefined
          ? 'no evidence against any member in the plans this node holds'
          : `no evidence against ${peer} in the plans this node holds`
        : [
            `${records.length} member(s) with evidence against them, ${poor.length} with a poor record:`,
            ...records.map(r => `${r.peer}${r.poor ? ' (poor)' : ''}: ${describeRecord(r)}`)
          ].join('\n')
    return ok(text, { members: records })
  }
})
