import * as z from 'zod'
import { isFinished } from '../../core/view.js'
import { isPoor } from '../../core/peer-standing.js'
import { readiness } from './readiness.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'

/** Who is in the swarm and whether a goal can be submitted now: the tool an agent calls first. */
export const swarmStatus = swarmTool({
  name: 'swarm_status',
  title: 'Swarm status',
  description:
    'Who is in the swarm (peers by role), how many plans this node holds, and whether a goal ' +
    'can be submitted now (a scorer and a peer to hold it are in sight) and why not. Call it first.',
  inputSchema: z.object({}),
  annotations: { readOnlyHint: true },
  handle: async ({ view }) => {
    const me = view.me
    const roster = view.roster()
    const byRole: Record<string, number> = {}
    for (const r of roster) byRole[r.role] = (byRole[r.role] ?? 0) + 1
    const r = readiness(view)
    const plans = view.planLines()
    const poor = (view.standing?.() ?? []).filter(isPoor).length
    const out = {
      peerId: me,
      swarm: view.swarm,
      connected: view.health().peers,
      roster: byRole,
      plans: plans.length,
      unfinished: plans.filter(p => !isFinished(p)).length,
      /** Members with a poor record in this node's plans (swarm_standing lists them). */
      poorStanding: poor,
      ...r
    }
    return ok(
      `peer ${me} in swarm "${view.swarm}": ${out.connected} connected; roster ${
        Object.entries(byRole)
          .map(([k, v]) => `${v} ${k}`)
          .join(', ') || 'empty'
      }; ${out.plans} plans (${out.unfinished} unfinished); ${
        poor === 0 ? '' : `${poor} members with a poor record (swarm_standing); `
      }${r.canSubmit ? 'can submit' : 'cannot submit'}: ${r.why}`,
      out
    )
  }
})
