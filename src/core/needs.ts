/**
 * Tasks that need tools (protocol 3): what an executor must offer to take a
 * task, and which ready tasks no live executor can take. Executors announce
 * their offer in presence (capabilities that begin with OFFER_PREFIX); a
 * need is met by an executor that offers every name it lists. The fold does
 * not enforce needs (as with `executors`, ADR-0024): executors choose, and
 * everything here is a pure function of a tree and the offers heard.
 */
import { MAX_NEED_CHARS, NEED_PATTERN } from './limits.js'
import type { NodeId } from './events.js'
import type { PlanTree, TaskView } from './tree.js'

/** The presence capability prefix under which an executor announces what it offers. */
export const OFFER_PREFIX = 'offers:'

/** The offer announced in a list of presence capabilities. */
export function offersIn(capabilities: readonly string[]): string[] {
  return (capabilities ?? []).filter(c => c.startsWith(OFFER_PREFIX)).map(c => c.slice(OFFER_PREFIX.length))
}

/** Whether an executor offering `offers` meets `needs` (every one of them). */
export function meetsNeeds(offers: ReadonlySet<string>, needs: readonly string[]): boolean {
  return needs.every(n => offers.has(n))
}

/** What a task needs: its leaf's needs; a roll-up needs nothing. */
export function taskNeeds(tree: PlanTree, task: TaskView): readonly string[] {
  if (task.kind === 'rollup') return []
  return tree.nodes.find(n => n.id === task.node)?.needs ?? []
}

/** "an executor with `browser`", "... with `a` and `b`". */
export function needsPhrase(needs: readonly string[]): string {
  const names = needs.map(n => `\`${n}\``)
  const list = names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`
  return `an executor with ${list}`
}

/**
 * The ready or claimable leaf tasks of a plan that no executor in
 * `executors` (each an offer set; this node's own included when it is one)
 * can take, by node, with what they need. Empty for a plan without needs.
 */
export function unmetNeeds(tree: PlanTree, executors: readonly ReadonlySet<string>[]): Map<NodeId, readonly string[]> {
  const out = new Map<NodeId, readonly string[]>()
  if (!tree.params.tools) return out
  for (const n of tree.nodes) {
    if (n.needs.length === 0 || n.kind !== 'leaf' || n.status !== 'ready') continue
    if (!executors.some(o => meetsNeeds(o, n.needs))) out.set(n.id, n.needs)
  }
  return out
}

/**
 * The part of an offer that fits in `max` presence capabilities: tags and
 * server names first (what needs should name), then `server/tool` names,
 * each group sorted. An executor ranks itself by this same set, so every
 * executor ranks a task among the same peers.
 */
export function announcedOffers(all: readonly string[], max: number): string[] {
  // Only names a need can name: a longer `server/tool` could never be asked for.
  const names = [...new Set(all)].filter(n => n.length <= MAX_NEED_CHARS && NEED_PATTERN.test(n))
  const whole = names.filter(n => !n.includes('/')).sort()
  const tools = names.filter(n => n.includes('/')).sort()
  return [...whole, ...tools].slice(0, Math.max(0, max))
}

/** What each executor in a roster offers, one set per executor. */
export function executorOffers(
  roster: ReadonlyArray<{ readonly role: string; readonly capabilities: readonly string[] }>
): ReadonlySet<string>[] {
  return roster.filter(r => r.role === 'executor').map(r => new Set(offersIn(r.capabilities)))
}
