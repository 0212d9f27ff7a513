/**
 * The baselines of the e2e benchmark, in this one process, against the same
 * fake LLM through the same provider code and prompts as the swarm's roles:
 *
 * - `central`: an ideal central scheduler with the same number of each role
 *   and the same per-role limits as the swarm's processes (each decomposer
 *   and scorer at most `ROLE_CONCURRENCY` calls at once, as the role driver;
 *   each executor at most the plan's `maxClaimsPerExecutor` tasks at once).
 *   It makes the calls the swarm makes (every decomposer proposes a split for
 *   every composite node; once every proposal is in, every scorer scores them;
 *   the split a majority chose is applied; every leaf and roll-up executed
 *   once) and dispatches each the moment its inputs exist, executions
 *   longest-remaining-chain first. No network, no signatures, no waits.
 * - `single`: the same calls one at a time (what a single agent does).
 */
import { createProvider } from '../../src/app/create-provider.js'
import { ANGLES } from '../../src/llm/types.js'
import { DEFAULT_PARAMS, majority } from '../../src/core/events.js'
import type { LlmProvider, QuotedResult } from '../../src/llm/types.js'
import type { Subgoal } from '../../src/core/events.js'

/** The role driver's default concurrency (roles/driver.ts). */
export const ROLE_CONCURRENCY = 4

export interface CentralOptions {
  readonly baseUrl: string
  readonly decomposers: number
  readonly scorers: number
  readonly executors: number
  readonly maxDepth: number
  readonly maxClaimsPerExecutor?: number
  /** 1: the single-agent baseline (every call waits for the one before). */
  readonly globalConcurrency?: number
  readonly label: string
}

export interface CentralResult {
  readonly makespanMs: number
  readonly calls: number
  /** Wall ms from start to the first execution call. */
  readonly firstExecuteMs: number
}

interface Node {
  readonly id: number
  readonly parent: Node | null
  readonly title: string
  readonly detail: string
  readonly depth: number
  readonly dependsOn: Node[]
  children: Node[]
  leaf: boolean
  done: boolean
  output: string
  proposals: Array<{ id: string; subgoals: readonly Subgoal[]; rationale: string }>
  ballots: Array<string | null>
  accepted: boolean
}

type Job =
  | { kind: 'decompose'; node: Node; worker: number }
  | { kind: 'score'; node: Node; worker: number }
  | { kind: 'execute'; node: Node; rollup: boolean }

function provider(baseUrl: string, model: string): LlmProvider {
  return createProvider({ provider: 'anthropic', baseUrl, model, env: { ANTHROPIC_API_KEY: 'bench' } }).provider
}

function pathOf(n: Node): string[] {
  const out: string[] = []
  for (let p = n.parent; p !== null; p = p.parent) out.unshift(p.title)
  return out
}

/** Tasks on the longest chain from this task to the end of the plan (itself included). */
function chainLength(n: Node, rollup: boolean): number {
  if (rollup) return n.parent === null ? 1 : 1 + chainLength(n.parent, true)
  const siblings = n.parent?.children ?? []
  const dependents = siblings.filter(s => s.dependsOn.includes(n))
  return (
    1 + Math.max(n.parent === null ? 0 : chainLength(n.parent, true), ...dependents.map(d => chainLength(d, false)))
  )
}

export async function runCentral(goal: string, opts: CentralOptions): Promise<CentralResult> {
  const maxClaims = opts.maxClaimsPerExecutor ?? DEFAULT_PARAMS.maxClaimsPerExecutor
  const global = opts.globalConcurrency ?? Infinity
  const decomposers = Array.from({ length: opts.decomposers }, (_v, i) =>
    provider(opts.baseUrl, `fake-${opts.label}-d${i + 1}`)
  )
  const scorers = Array.from({ length: opts.scorers }, (_v, i) =>
    provider(opts.baseUrl, `fake-${opts.label}-s${i + 1}`)
  )
  const executors = Array.from({ length: opts.executors }, (_v, i) =>
    provider(opts.baseUrl, `fake-${opts.label}-e${i + 1}`)
  )
  const busy = { decompose: decomposers.map(() => 0), score: scorers.map(() => 0), execute: executors.map(() => 0) }
  const quorum = majority(opts.scorers)
  let nextId = 0
  const root: Node = {
    id: nextId++,
    parent: null,
    title: goal,
    detail: goal,
    depth: 0,
    dependsOn: [],
    children: [],
    leaf: false,
    done: false,
    output: '',
    proposals: [],
    ballots: [],
    accepted: false
  }
  const pending: Job[] = decomposers.map((_p, worker) => ({ kind: 'decompose', node: root, worker }))
  let inFlight = 0
  let calls = 0
  const started = Date.now()
  let firstExecuteMs = -1

  return await new Promise<CentralResult>((resolve, reject) => {
    const ready = (n: Node): boolean => {
      for (let a: Node | null = n; a !== null; a = a.parent) if (a.dependsOn.some(d => !d.done)) return false
      return true
    }
    const inputsOf = (n: Node, rollup: boolean): QuotedResult[] => {
      if (rollup) return n.children.map(c => ({ title: c.title, output: c.output }))
      const from: Node[] = []
      for (let a: Node | null = n; a !== null; a = a.parent) from.push(...a.dependsOn)
      return from.map(c => ({ title: c.title, output: c.output }))
    }
    const onAccepted = (n: Node, choice: string): void => {
      n.accepted = true
      const p = n.proposals.find(x => x.id === choice) ?? n.proposals[0]
      if (p === undefined) throw new Error('no proposal')
      n.children = p.subgoals.map(s => ({
        id: nextId++,
        parent: n,
        title: s.title,
        detail: s.detail,
        depth: n.depth + 1,
        dependsOn: [],
        children: [],
        leaf: s.leaf || n.depth + 1 >= opts.maxDepth,
        done: false,
        output: '',
        proposals: [],
        ballots: [],
        accepted: false
      }))
      p.subgoals.forEach((s, i) => {
        ;(n.children[i] as Node).dependsOn.push(...s.dependsOn.map(j => n.children[j] as Node))
      })
      for (const c of n.children) {
        if (c.leaf) pending.push({ kind: 'execute', node: c, rollup: false })
        else decomposers.forEach((_p, worker) => pending.push({ kind: 'decompose', node: c, worker }))
      }
    }
    const onDone = (n: Node, output: string, rollup: boolean): void => {
      if (rollup || n.leaf) {
        n.done = true
        n.output = output
      }
      const parent = n.parent
      if (n.done && parent === null) {
        resolve({ makespanMs: Date.now() - started, calls, firstExecuteMs })
        return
      }
      if (n.done && parent !== null && parent.children.every(c => c.done))
        pending.push({ kind: 'execute', node: parent, rollup: true })
    }
    const run = async (job: Job, executor: number): Promise<void> => {
      const n = job.node
      calls++
      if (job.kind === 'decompose') {
        const out = await (decomposers[job.worker] as LlmProvider).decompose({
          goal,
          path: pathOf(n),
          node: { title: n.title, detail: n.detail },
          angle: ANGLES[job.worker % ANGLES.length] as string,
          minChildren: DEFAULT_PARAMS.minChildren,
          maxChildren: DEFAULT_PARAMS.maxChildren,
          leafHint: n.depth + 1 >= opts.maxDepth,
          notes: []
        })
        n.proposals.push({ id: `p${job.worker}`, subgoals: out.subgoals, rationale: out.rationale })
        if (n.proposals.length === opts.decomposers)
          scorers.forEach((_p, worker) => pending.push({ kind: 'score', node: n, worker }))
      } else if (job.kind === 'score') {
        const out = await (scorers[job.worker] as LlmProvider).score({
          goal,
          path: pathOf(n),
          node: { title: n.title, detail: n.detail },
          proposals: n.proposals
        })
        n.ballots.push(out.choice)
        if (!n.accepted && out.choice !== null && n.ballots.filter(b => b === out.choice).length >= quorum)
          onAccepted(n, out.choice)
      } else {
        if (firstExecuteMs < 0) firstExecuteMs = Date.now() - started
        const out = await (executors[executor] as LlmProvider).execute({
          goal,
          path: pathOf(n),
          task: { title: n.title, detail: n.detail },
          kind: job.rollup ? 'rollup' : 'leaf',
          inputs: inputsOf(n, job.rollup)
        })
        onDone(n, out.output, job.rollup)
      }
    }
    const pump = (): void => {
      // Executions longest remaining chain first; role work in arrival order.
      pending.sort(
        (a, b) =>
          (a.kind === 'execute' ? 1 : 0) - (b.kind === 'execute' ? 1 : 0) ||
          (a.kind === 'execute' && b.kind === 'execute'
            ? chainLength(b.node, b.rollup) - chainLength(a.node, a.rollup)
            : 0)
      )
      for (let i = 0; i < pending.length && inFlight < global; i++) {
        const job = pending[i] as Job
        let slot: { list: number[]; at: number } | null = null
        if (job.kind === 'execute') {
          if (!job.rollup && !ready(job.node)) continue
          const at = busy.execute.findIndex(b => b < Math.min(maxClaims, ROLE_CONCURRENCY))
          if (at >= 0) slot = { list: busy.execute, at }
        } else {
          const list = job.kind === 'decompose' ? busy.decompose : busy.score
          if ((list[job.worker] as number) < ROLE_CONCURRENCY) slot = { list, at: job.worker }
        }
        if (slot === null) continue
        pending.splice(i--, 1)
        const s = slot
        s.list[s.at] = (s.list[s.at] as number) + 1
        inFlight++
        run(job, s.at).then(() => {
          s.list[s.at] = (s.list[s.at] as number) - 1
          inFlight--
          pump()
        }, reject)
      }
    }
    pump()
  })
}
