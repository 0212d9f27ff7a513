import { sleep } from '../../ports/scheduler.js'
import { scorersInSight } from '../../author/author-events.js'
import { ToolInputError } from './tool-result.js'
import type { NodeView } from '../../ports/node-view.js'

/** Whether a goal can be submitted now, and why not. */
export function readiness(view: NodeView): { canSubmit: boolean; why: string } {
  const scorers = scorersInSight(view).length
  const holders = view.health().topicPeers
  if (scorers === 0)
    return {
      canSubmit: false,
      why: 'no scorer is in sight: start one (npm start -- --role scorer) or pass committee explicitly'
    }
  if (holders === 0)
    return {
      canSubmit: false,
      why: 'no peer is connected to hold the goal: start peers on this machine or LAN (mDNS), or give --bootstrap'
    }
  return { canSubmit: true, why: `${scorers} scorer(s) in sight and ${holders} peer(s) to hold the goal` }
}

/** Wait until another peer holds what we published (a sync session with it succeeds). */
export async function confirmHeld(view: NodeView, timeoutMs: number): Promise<string> {
  const deadline = view.now() + timeoutMs
  while (view.now() < deadline) {
    const holder = await view.syncOnce()
    if (holder !== null) return holder
    await sleep(view.scheduler, 500)
  }
  throw new ToolInputError(
    'no peer took the goal within the time allowed; it is stored on this node and reaches the swarm when a peer connects'
  )
}
