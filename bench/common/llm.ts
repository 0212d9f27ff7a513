/**
 * The fake Messages API for the e2e, scale and load benchmarks: a fixed latency per call
 * (changeable between runs) and deterministic replies that grow one known
 * tree, whoever asks:
 *
 *   goal (depth 0) -> 3 composite subgoals (depth 1) -> 3 leaves each (depth 2)
 *
 * and in every group of three leaves the third depends on the first. So the
 * tree has 4 composite nodes, 9 leaves and 4 roll-ups (13 executions), and
 * its longest chain of calls is decompose, score, decompose, score, leaf 1,
 * leaf 3, roll-up, root roll-up: 8 calls.
 *
 * The request log is what the benchmark counts calls and duplicate
 * executions from.
 */
import { autoStep, promptOf, titleIn } from '../../test/helpers/roles-swarm.js'
import { startFakeLlm, type FakeLlm, type RecordedRequest, type ScriptStep } from '../../test/helpers/fake-llm.js'

/** Children per split, and the depth at which subgoals are leaves. */
export const TREE = { children: 3, leafDepth: 2, composites: 4, leaves: 9, rollups: 4, criticalCalls: 8 } as const

export interface BenchLlm {
  readonly fake: FakeLlm
  /** Milliseconds every answer takes from now on. */
  setLatency: (ms: number) => void
}

function depthOf(prompt: string): number {
  const m = /<constraints[^>]*\sdepth="(\d+)"/.exec(prompt)
  return m === null ? 1 : Number(m[1])
}

export async function startBenchLlm(latencyMs: number): Promise<BenchLlm> {
  let latency = latencyMs
  const script = (req: RecordedRequest): ScriptStep => {
    const step = autoStep(req, {
      auto: { children: TREE.children, leafDepth: TREE.leafDepth, deps: 'none' },
      delayMs: latency
    })
    if (step.kind !== 'tool' || req.tool !== 'propose_split') return step
    const input = step.input as { subgoals: Array<{ leaf: boolean; dependsOn: number[] }>; rationale: string }
    if (depthOf(promptOf(req)) >= TREE.leafDepth && input.subgoals.length >= 3) {
      // Some dependencies between leaves: the third of each group needs the first.
      input.subgoals[2] = { ...(input.subgoals[2] as { leaf: boolean; dependsOn: number[] }), dependsOn: [0] }
    }
    return { ...step, input }
  }
  const fake = await startFakeLlm({ script, latencyMs })
  return {
    fake,
    setLatency: ms => {
      latency = ms
    }
  }
}

export interface CallCounts {
  /** Every model request in the window. */
  readonly total: number
  readonly decompose: number
  readonly score: number
  readonly execute: number
  /** Executions beyond one per task (same kind and title): the duplicate executions. */
  readonly duplicateExecutions: number
  /** Decompose or score requests beyond one per (asker, node): a role asked twice for the same thing. */
  readonly duplicateOther: number
}

/** Counts the requests of one run (`from` .. `to` indexes of the request log). */
export function countCalls(reqs: readonly RecordedRequest[]): CallCounts {
  const exec = new Map<string, number>()
  const other = new Map<string, number>()
  let decompose = 0
  let score = 0
  let execute = 0
  for (const r of reqs) {
    if (r.api === 'other') continue
    const p = promptOf(r)
    const model = String((r.body as { model?: string } | undefined)?.model ?? '')
    if (r.tool === 'report_result') {
      execute++
      const key = `${p.startsWith('Role: executor (roll-up).') ? 'rollup' : 'leaf'}:${titleIn(p, 'task') ?? '?'}`
      exec.set(key, (exec.get(key) ?? 0) + 1)
    } else {
      if (r.tool === 'propose_split') decompose++
      if (r.tool === 'score_proposals') score++
      const key = `${r.tool ?? '?'}:${model}:${titleIn(p, 'node') ?? '?'}`
      other.set(key, (other.get(key) ?? 0) + 1)
    }
  }
  const extra = (m: Map<string, number>): number => [...m.values()].reduce((s, n) => s + n - 1, 0)
  return {
    total: decompose + score + execute,
    decompose,
    score,
    execute,
    duplicateExecutions: extra(exec),
    duplicateOther: extra(other)
  }
}
