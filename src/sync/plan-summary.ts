/**
 * Finished plans as peers describe them: the `/plan-swarm/plan-summary/1.0.0`
 * stream protocol, for a node with `--history open` that never fetched a
 * plan's events (see session.ts).
 *
 * The asker sends the plan id (32 raw bytes) and closes its end; the answerer
 * sends the plan's summary as UTF-8 JSON (at most MAX_SUMMARY_BYTES) and
 * closes, or closes without a byte when it does not hold the plan. A summary
 * is a peer's word, not signed events: whoever shows it says whose it is.
 */
import type { Libp2p, PeerId, Stream } from '@libp2p/interface'
import type { Scheduler } from '../ports/scheduler.js'
import type { PlanSummaryAnswer } from '../ports/transport.js'
import { PLAN_SUMMARY_PROTOCOL } from '../wire/topics.js'
import { ID_BYTES, idFromBytes, idToBytes } from '../wire/id-bytes.js'
import { readToEnd } from './read-answer.js'

export { PLAN_SUMMARY_PROTOCOL }

/** An answer is at most this long (a deliverable is cut to fit). */
export const MAX_SUMMARY_BYTES = 64 * 1024
/** The deliverable's text in a summary is cut to this many characters. */
export const MAX_SUMMARY_DELIVERABLE_CHARS = 16_000
/** A question or an answer not complete within this long is dropped. */
export const PLAN_SUMMARY_TIMEOUT_MS = 5_000

export type { PlanSummaryAnswer }

/** The answer's bytes for a summary (its deliverable cut to fit). */
export function encodeSummary(s: PlanSummaryAnswer): Uint8Array {
  const deliverable = s.deliverable === null ? null : s.deliverable.slice(0, MAX_SUMMARY_DELIVERABLE_CHARS)
  return new TextEncoder().encode(JSON.stringify({ ...s, goal: s.goal.slice(0, 8_000), deliverable }))
}

/** A summary of `plan` from an answer's bytes; throws with the reason when it is none. */
export function decodeSummary(plan: string, bytes: Uint8Array): PlanSummaryAnswer {
  let v: unknown
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw new Error('a plan summary that is not UTF-8 JSON')
  }
  const o = v as Record<string, unknown>
  const text = (k: string): boolean => typeof o[k] === 'string'
  const count = (k: string): boolean => Number.isInteger(o[k]) && (o[k] as number) >= 0
  if (typeof v !== 'object' || v === null || o.plan !== plan)
    throw new Error(`a plan summary that is not of plan ${plan.slice(0, 12)}`)
  if (!text('goal') || !text('status') || !text('treeHash') || !count('nodes') || !count('done'))
    throw new Error('a plan summary without its goal, status, treeHash, nodes and done')
  if (o.deliverable !== null && !text('deliverable')) throw new Error('a plan summary whose deliverable is no text')
  return {
    plan,
    goal: o.goal as string,
    status: o.status as string,
    treeHash: o.treeHash as string,
    nodes: o.nodes as number,
    done: o.done as number,
    deliverable: o.deliverable as string | null
  }
}

/** Answers an asker on `stream` from `summaryOf`, then closes it; a malformed question is aborted. */
export async function servePlanSummary(
  stream: Stream,
  summaryOf: (plan: string) => PlanSummaryAnswer | undefined,
  scheduler: Scheduler
): Promise<void> {
  try {
    const question = await readToEnd(stream, ID_BYTES, PLAN_SUMMARY_TIMEOUT_MS, scheduler, 'plan-summary question')
    if (question.length !== ID_BYTES) throw new Error(`a plan-summary question of ${question.length} bytes`)
    const s = summaryOf(idFromBytes(question, 0))
    if (s !== undefined) stream.send(encodeSummary(s))
    await stream.close()
  } catch (err) {
    stream.abort(err as Error)
  }
}

/**
 * Asks `peer` for its summary of `plan`: the summary, or undefined when the
 * peer does not hold the plan; rejects when it does not speak the protocol,
 * times out or sends something else.
 */
export async function askPlanSummary(
  libp2p: Libp2p,
  peer: PeerId,
  plan: string,
  scheduler: Scheduler,
  signal?: AbortSignal
): Promise<PlanSummaryAnswer | undefined> {
  const opts = { runOnLimitedConnection: true, signal: signal ?? AbortSignal.timeout(PLAN_SUMMARY_TIMEOUT_MS) }
  const stream = await libp2p.dialProtocol(peer, PLAN_SUMMARY_PROTOCOL, opts)
  const answer = readToEnd(stream, MAX_SUMMARY_BYTES, PLAN_SUMMARY_TIMEOUT_MS, scheduler, 'plan summary')
  const question = new Uint8Array(ID_BYTES)
  idToBytes(plan, question, 0)
  stream.send(question)
  stream.close().catch(() => {})
  const bytes = await answer
  return bytes.length === 0 ? undefined : decodeSummary(plan, bytes)
}
