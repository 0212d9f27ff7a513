import { loadavg } from 'node:os'
import { pathToFileURL } from 'node:url'
import { Fold } from '../../src/core/fold.js'
import { derivePlan } from '../../src/core/derive.js'
import { nativeSha256HexOfText } from '../../src/sync/native-hash.js'
import { renderMarkdown, renderTree } from '../../roles/render.js'
import { treeHash } from '../../src/core/tree-hash.js'
import { bigPlanEvents } from '../../test/helpers/big-plan.js'
import { machine, median, report, r1, r2 } from '../common/util.js'
import type { PlanEvent, PlanId } from '../../src/core/events.js'
import type { PlanTree } from '../../src/core/tree.js'

/**
 * The plan shapes measured: about 100, 400 and 1,100 nodes. The issue asks for fan-out 10, depth 3 (1,111 nodes), but
 * a split has at most 7 subgoals (MAX_SUBGOALS), so the largest is 6x6x6x4: 1,123 nodes, depth 4.
 */
const SHAPES: ReadonlyArray<readonly number[]> = [
  [4, 4, 5],
  [7, 7, 7],
  [6, 6, 6, 4]
]

/** Where in the stream the cost of one event (add + derive) is measured: a window of WINDOW events ending there. */
const CHECKPOINTS = [0.25, 0.5, 0.75, 1] as const
const WINDOW = 20

const cpuUs = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}
const FAR = Date.now() + 1e12

/** CPU µs per event to fold the whole stream one event at a time, reading nothing. */
function foldOnly(events: readonly PlanEvent[]): number {
  const fold = new Fold({ hashText: nativeSha256HexOfText })
  globalThis.gc?.()
  const c0 = cpuUs()
  for (const e of events) fold.add(e, FAR)
  return (cpuUs() - c0) / events.length
}

/**
 * CPU µs per event when the tree is read after every event (and with `hash`, its treeHash too, which `Fold` computes
 * only when asked), in a window of WINDOW events ending at each checkpoint: what one event costs a role that reads
 * the tree after it (an observer that also hashes it), as the plan grows. The events before a window are folded
 * without reading.
 */
function derivePerEvent(events: readonly PlanEvent[], plan: PlanId, hash: boolean): number[] {
  const fold = new Fold({ hashText: nativeSha256HexOfText })
  const out: number[] = []
  let i = 0
  for (const cp of CHECKPOINTS) {
    const end = Math.round(cp * events.length)
    for (; i < end - WINDOW; i++) fold.add(events[i] as PlanEvent, FAR)
    fold.tree(plan)
    globalThis.gc?.()
    const c0 = cpuUs()
    const n = end - i
    for (; i < end; i++) {
      fold.add(events[i] as PlanEvent, FAR)
      fold.tree(plan)
      if (hash) fold.treeHash(plan)
    }
    out.push((cpuUs() - c0) / n)
  }
  return out
}

/** CPU µs per event over the whole stream, the tree read once per `batch` events (as coalesced folds read it). */
function batched(events: readonly PlanEvent[], plan: PlanId, batch: number): number {
  const fold = new Fold({ hashText: nativeSha256HexOfText })
  globalThis.gc?.()
  const c0 = cpuUs()
  for (let i = 0; i < events.length; i += batch) {
    fold.addBatch(events.slice(i, i + batch), FAR)
    fold.tree(plan)
  }
  return (cpuUs() - c0) / events.length
}

/** The tree after the first `upTo` events. */
function treeAt(events: readonly PlanEvent[], plan: PlanId, upTo: number): { tree: PlanTree; hash: string } {
  const fold = new Fold({ hashText: nativeSha256HexOfText })
  fold.addBatch(events.slice(0, upTo), FAR)
  return { tree: fold.tree(plan) as PlanTree, hash: fold.treeHash(plan) as string }
}

/** CPU ms of one printout (median of `runs`), and its lines. */
function renderCost(
  tree: PlanTree,
  hash: string,
  runs: number,
  expand: boolean
): { ms: number; lines: number; text: string } {
  const xs: number[] = []
  let text = ''
  for (let r = 0; r < runs; r++) {
    const c0 = cpuUs()
    text = renderTree(tree, FAR, { treeHash: hash, expand })
    xs.push((cpuUs() - c0) / 1000)
  }
  return { ms: r2(median(xs)), lines: text.split('\n').length, text }
}

/**
 * `bench/big-plan/index.ts` (`npm run bench -- big-plan`): one plan of about 100, 400 and 1,100 nodes, built as the stream
 * of signed events a swarm makes (bigPlanEvents). Per size, medians of BIG_PLAN_RUNS (5) runs, CPU time:
 * - `foldUs`: CPU µs per event to fold the stream one event at a time, reading nothing;
 * - `deriveUs`: CPU µs per event when the tree is read (derived) after every event, at 25/50/75/100% of the stream
 *   (a window of 20 events each): the cost of one event to a role as the plan grows; `deriveHashUs` the same with
 *   the treeHash read too;
 * - `batchUs`: CPU µs per event over the whole stream with the tree read once per BIG_PLAN_BATCH (50) events;
 * - `deriveMs`: one derivation + treeHash of the finished tree, and `renderMs`: one observer printout of the
 *   half-finished plan (collapsed, and `--expand`ed), with its lines.
 * Then the ratio of the largest size to the smallest, per figure (goal: per-event costs flat within 1.5x). Also
 * checks that the tree after the stream is the one a fresh derivation of the same set gives, and that it completed.
 */
export async function benchBigPlan(): Promise<Record<string, unknown>> {
  const runs = Number(process.env.BIG_PLAN_RUNS ?? 5)
  const batch = Number(process.env.BIG_PLAN_BATCH ?? 50)
  const load0 = loadavg()
  const sizes: Array<Record<string, unknown>> = []
  let sample = ''
  // A pass over the smallest plan first, unmeasured, so the JIT has warmed up before the first figure.
  const warm = await bigPlanEvents(SHAPES[0] as readonly number[])
  foldOnly(warm.events)
  derivePerEvent(warm.events, warm.plan, true)
  batched(warm.events, warm.plan, batch)
  for (const shape of SHAPES) {
    const { events, plan, nodes } = await bigPlanEvents(shape)
    console.error(`big-plan: ${nodes} nodes (${shape.join('x')}), ${events.length} events`)
    const rep = <T>(f: () => T): T[] => Array.from({ length: runs }, f)
    const fold = r1(median(rep(() => foldOnly(events))))
    const atCheckpoints = (hash: boolean): number[] => {
      const windows = rep(() => derivePerEvent(events, plan, hash))
      return CHECKPOINTS.map((_, k) => r1(median(windows.map(w => w[k] as number))))
    }
    const derive = atCheckpoints(false)
    const deriveHash = atCheckpoints(true)
    const batchUs = r1(median(rep(() => batched(events, plan, batch))))
    const end = treeAt(events, plan, events.length)
    if (end.tree.status !== 'completed') throw new Error(`the plan did not complete: ${end.tree.status}`)
    const index = new Fold({ hashText: nativeSha256HexOfText })
    for (const e of events) index.add(e, FAR)
    const set = index.events.plan(plan)
    if (set === undefined || treeHash(derivePlan(set), nativeSha256HexOfText) !== end.hash)
      throw new Error('the tree after the stream differs from a fresh derivation')
    const deriveMs = r2(
      median(
        rep(() => {
          const c0 = cpuUs()
          treeHash(derivePlan(set), nativeSha256HexOfText)
          return (cpuUs() - c0) / 1000
        })
      )
    )
    // Half-finished: every split made, half the execution events folded (the executors take the leaves in order).
    const splits = events.findIndex(e => e.env.type === 'task-claimed')
    const half = treeAt(events, plan, splits + Math.floor((events.length - splits) / 2))
    const collapsed = renderCost(half.tree, half.hash, runs, false)
    const expanded = renderCost(half.tree, half.hash, runs, true)
    const done = renderCost(end.tree, end.hash, runs, false)
    sample = collapsed.text
    const row = {
      shape: shape.join('x'),
      nodes,
      events: events.length,
      foldUs: fold,
      deriveUs: Object.fromEntries(CHECKPOINTS.map((cp, k) => [`${cp * 100}%`, derive[k]])),
      deriveHashUs: Object.fromEntries(CHECKPOINTS.map((cp, k) => [`${cp * 100}%`, deriveHash[k]])),
      batchUs,
      deriveMs,
      renderMs: { halfCollapsed: collapsed.ms, halfExpanded: expanded.ms, finished: done.ms },
      printoutLines: { halfCollapsed: collapsed.lines, halfExpanded: expanded.lines, finished: done.lines },
      markdownLines: renderMarkdown(end.tree).split('\n').length
    }
    console.error(`big-plan:   ${JSON.stringify(row)}`)
    sizes.push(row)
  }
  console.error(`big-plan: the half-finished printout of the largest plan:\n${sample}`)
  const first = sizes[0] as Record<string, unknown>
  const last = sizes[sizes.length - 1] as Record<string, unknown>
  const get = (row: Record<string, unknown>, path: string): number =>
    path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], row) as number
  const ratios = Object.fromEntries(
    [
      'foldUs',
      'deriveUs.100%',
      'deriveHashUs.100%',
      'batchUs',
      'deriveMs',
      'renderMs.halfCollapsed',
      'renderMs.halfExpanded',
      'printoutLines.halfCollapsed'
    ].map(k => [k, r2(get(last, k) / get(first, k))])
  )
  const perEvent = ['foldUs', 'deriveUs.100%', 'batchUs']
  return report('big-plan', {
    sizes,
    ratioLargestToSmallest: ratios,
    goal: 'per-event cost flat within 1.5x from the smallest plan to the largest',
    met: Object.fromEntries(perEvent.map(k => [k, (ratios[k] as number) <= 1.5])),
    batch,
    runs,
    window: WINDOW,
    machine: { ...machine(), loadavg: [load0, loadavg()].map(l => l.map(x => r2(x))) }
  })
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchBigPlan()))
}
