import * as z from 'zod'
import { MAX_OUTPUT_CHARS } from '../../core/limits.js'
import { int } from './plan-input.js'
import { swarmTool } from './swarm-tool.js'
import { ok } from './tool-result.js'
import type { TaskId } from '../../core/events.js'

/** An outside worker's result for a task it took; it counts only while its claim holds. */
export const taskComplete = swarmTool({
  name: 'task_complete',
  title: 'Complete a task',
  description:
    `Publish your result for a task taken with task_next (text, at most ${MAX_OUTPUT_CHARS} ` +
    `characters; optionally the tokens you used). The result counts if your claim still holds.`,
  inputSchema: z.object({
    task: z.string().describe('the task id from task_next'),
    result: z.string().describe('what you did or found: the concrete result of the task'),
    inputTokens: int('tokens you read for it (default 0)'),
    outputTokens: int('tokens you wrote for it (default 0)')
  }),
  handle: async ({ outside }, { task, result, inputTokens, outputTokens }) => {
    const r = await outside.complete(task as TaskId, result, {
      inputTokens: inputTokens ?? 0,
      outputTokens: outputTokens ?? 0
    })
    return ok(
      `reported the result of task ${task.slice(0, 12)} (event ${r.result.slice(0, 12)}) in plan ${r.plan.slice(0, 12)}`,
      { task, plan: r.plan, result: r.result }
    )
  }
})
