import * as z from 'zod'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'
import type { TaskId } from '../../core/events.js'

/** Give back a task an outside worker cannot do, so another executor takes it at once. */
export const taskRelease = swarmTool({
  name: 'task_release',
  title: 'Give a task back',
  description: 'Give back a task taken with task_next that you cannot do, so another executor takes it at once.',
  inputSchema: z.object({
    task: z.string().describe('the task id from task_next'),
    reason: z.string().optional().describe('why (shown in the plan)')
  }),
  handle: async ({ outside }, { task, reason }) => {
    await outside.release(task as TaskId, reason)
    return ok(`released task ${task.slice(0, 12)}`, { task, released: true })
  }
})
