/**
 * Offline execution and review. Without a model nothing is done, and the
 * output says so in its first words: it records the step, what done looks
 * like, a checklist for doing it by hand (from the step's leading verb, see
 * guides.ts), the inputs it would have used and what a model would do, plus
 * an outline of the subtree (so the root's roll-up shows the whole plan). It
 * never claims the task was carried out.
 */
import { MAX_NOTES_CHARS, MAX_OUTPUT_CHARS } from '../core/limits.js'
import type { ExecuteInput, ReviewInput } from '../llm/types.js'
import { guideFor } from './guides.js'
import { safeSlice } from './text.js'

/** Every offline output starts with this. */
export const OFFLINE_OUTPUT_PREFIX = 'OFFLINE (no model ran):'

const OUTLINE_HEADER = 'Outline:'
/** The section in which an offline task with tools quotes what its tools returned (offline/tools.ts). */
export const TOOLS_HEADER = 'Tools called (offline: fixed calls with no arguments, not chosen by a model):'
/** The section in which an offline roll-up carries its inputs' tool results up to the deliverable. */
const CARRIED_TOOLS_HEADER = 'Tool results in the inputs:'
/** Tool result lines a roll-up carries up at most. */
const MAX_CARRIED_TOOL_LINES = 6

/** The tool result lines of an offline output (its own calls, or those a roll-up carried), in order. */
function toolLinesOf(output: string): string[] {
  const lines = output.split('\n')
  const out: string[] = []
  let inside = false
  for (const l of lines) {
    if (l === TOOLS_HEADER || l === CARRIED_TOOLS_HEADER) inside = true
    else if (inside && l.startsWith('- ')) out.push(l)
    else inside = false
  }
  return out.filter(l => !l.startsWith('- none'))
}

/** The outline lines of an earlier offline output, or null when it has none. */
function outlineOf(output: string): string[] | null {
  const lines = output.split('\n')
  const at = lines.indexOf(OUTLINE_HEADER)
  if (at < 0) return null
  const body = lines.slice(at + 1).filter(l => /^\s*- /.test(l))
  return body.length > 0 ? body : null
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

const DONE_WHEN = /\bDone when (.+?)(?:\.(?:\s|$)|$)/s

/** The "done when" sentence of a task's detail (offline subgoals carry one), else the guide's. */
function doneOf(detail: string, fallback: string): string {
  const m = DONE_WHEN.exec(detail)
  return oneLine(m === null ? fallback : (m[1] as string))
}

function checklistOf(input: ExecuteInput): string[] {
  if (input.kind === 'leaf') {
    const guide = guideFor(input.task.title)
    return [
      `Checklist (${guide.name}; an offline template to tick off by hand):`,
      ...guide.checklist.map(c => `- [ ] ${c}`)
    ]
  }
  return [
    'Checklist (a roll-up; an offline template to tick off by hand):',
    `- [ ] Read the ${input.inputs.length} results and note what each decided`,
    '- [ ] Put the steps in the order their dependencies give',
    '- [ ] Resolve conflicts and remove repetition',
    '- [ ] Fill in what no result covers: names, dates, prices, owners'
  ]
}

function fits(text: string): boolean {
  return text.length <= MAX_OUTPUT_CHARS
}

/** A roll-up's section quoting its inputs' tool results, so they reach the deliverable; empty when there are none. */
function carriedTools(input: ExecuteInput): string[] {
  if (input.kind !== 'rollup') return []
  const lines = [...new Set(input.inputs.flatMap(r => toolLinesOf(r.output)))]
  return lines.length === 0 ? [] : [CARRIED_TOOLS_HEADER, ...lines.slice(0, MAX_CARRIED_TOOL_LINES)]
}

export function executeOffline(input: ExecuteInput): string {
  const title = oneLine(input.task.title)
  const goal = oneLine(input.goal)
  const head =
    input.kind === 'leaf'
      ? `${OFFLINE_OUTPUT_PREFIX} planned step "${title}" for the goal "${goal}". Nothing was researched, booked, bought or carried out.`
      : `${OFFLINE_OUTPUT_PREFIX} rolled up ${input.inputs.length} results for "${title}" (goal: ` +
        `"${goal}"). Nothing was researched, booked, bought or carried out.`
  const inputs =
    input.inputs.length === 0
      ? 'Inputs considered: none.'
      : `Inputs considered: ${input.inputs.map(r => `"${oneLine(r.title)}" (${r.output.length} characters)`).join(', ')}.`
  const todo =
    input.kind === 'leaf'
      ? `What a model would do: work out the concrete answer for "${title}": compare the options, ` +
        `pick one with reasons, and give the names, dates, prices and next actions someone ` +
        `needs${input.inputs.length > 0 ? ', building on the inputs above' : ''}.`
      : `What a model would do: combine the ${input.inputs.length} results into one deliverable ` +
        `for "${title}", removing repetition, resolving conflicts and putting the steps in order.`
  const done = doneOf(
    input.task.detail,
    input.kind === 'leaf' ? guideFor(title).done : 'the parts below add up to one deliverable'
  )
  const rest = oneLine(input.task.detail.replace(DONE_WHEN, ''))
  const lines = [
    head,
    `Path: ${input.path.length === 0 ? '(root)' : input.path.map(oneLine).join(' > ')}`,
    `Task: ${title}${rest === '' ? '' : `: ${rest}`}`,
    `Done when: ${done}.`,
    ...checklistOf(input),
    inputs,
    ...carriedTools(input),
    todo,
    'Source: offline heuristics and templates, not a language model.'
  ]
  const outline = [`- ${title}`]
  if (input.kind === 'rollup') {
    for (const r of input.inputs) {
      const sub = outlineOf(r.output) ?? [`- ${oneLine(r.title)}`]
      outline.push(...sub.map(l => `  ${l}`))
    }
  }
  let text = [...lines, OUTLINE_HEADER, ...outline].join('\n')
  // A deep tree's outline can outgrow the cap: drop its tail and say how much is missing.
  let keep = outline.length
  while (!fits(text) && keep > 1) {
    keep = Math.floor(keep / 2)
    text = [
      ...lines,
      OUTLINE_HEADER,
      ...outline.slice(0, keep),
      `  (outline shortened: ${outline.length - keep} more lines)`
    ].join('\n')
  }
  while (!fits(text)) text = safeSlice(text, Math.floor(text.length * 0.9))
  return text
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim()
}

export function reviewOffline(input: ReviewInput): { verdict: 'accept' | 'reject'; notes: string } {
  const title = oneLine(input.task.title)
  const what = 'Offline review (heuristics, not a model; nothing checks that the work is right):'
  let result: { verdict: 'accept' | 'reject'; notes: string }
  if (input.output.trim() === '') result = { verdict: 'reject', notes: `${what} the output is empty.` }
  else if (!normalize(input.output).includes(normalize(title)))
    result = { verdict: 'reject', notes: `${what} the output does not mention the task title "${title}".` }
  else result = { verdict: 'accept', notes: `${what} the output is non-empty and mentions the task title "${title}".` }
  return { verdict: result.verdict, notes: safeSlice(result.notes, MAX_NOTES_CHARS) }
}
