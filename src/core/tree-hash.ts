import { sha256HexOfText } from './hash.js'
import type { PlanTree } from './tree.js'

/**
 * JSON with every object's keys sorted: the same bytes for equal values,
 * however the objects were built. A tree passes some event data through as
 * it was decoded (plan parameters, stamps), and a decoded object's key order
 * is the codec's, not the order a local constructor used, so plain
 * JSON.stringify would hash equal trees differently on different replicas.
 * The fold builds its tree objects with their keys in sorted order already
 * (a unit test holds it), so only the odd passed-through object is copied:
 * copying every node and task was a third of the cost of hashing a tree.
 */
export function canonicalJson(value: unknown, omit?: ReadonlySet<string>): string {
  return JSON.stringify(value, (key, v: unknown) => {
    if (omit !== undefined && omit.has(key)) return undefined
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
    const o = v as Record<string, unknown>
    const keys = Object.keys(o)
    let sorted = true
    for (let i = 1; i < keys.length; i++)
      if ((keys[i - 1] as string) > (keys[i] as string)) {
        sorted = false
        break
      }
    if (sorted) return v
    const out: Record<string, unknown> = {}
    for (const k of keys.sort()) out[k] = o[k]
    return out
  })
}

/**
 * The hash of the canonical encoding of a folded tree (see canonicalJson).
 * Equal event sets give equal trees and so equal hashes: it is what
 * replicas, tests and operators compare. A change to the tree's shape
 * changes the hashes: it is a protocol change, and the golden test says so.
 * `hashText` is SHA-256 of the UTF-8 text as lowercase hex; the runtime may
 * pass a native one (the core's own is pure JavaScript and ~10x slower).
 */
export function treeHash(tree: PlanTree, hashText: (text: string) => string = sha256HexOfText): string {
  return hashText(treeJson(tree))
}

/**
 * The text treeHash hashes: `canonicalJson(hashedForm(tree), NOT_HASHED)`, built key by key, with each node's and
 * task view's text remembered by object. A tree kept between reads (live-tree.ts) shares the nodes and views that
 * did not change with the tree before it, so hashing it after each event serialises only what changed. Tree objects
 * are never written after they are built, so a remembered text stays theirs.
 */
export function treeJson(tree: PlanTree): string {
  const t = hashedForm(tree) as unknown as Record<string, unknown>
  let out = '{'
  // As canonicalJson writes an object: keys sorted, the unhashed ones and undefined values left out.
  for (const k of Object.keys(t).sort()) {
    const v = t[k]
    if (v === undefined || NOT_HASHED.has(k)) continue
    const text = (k === 'nodes' || k === 'tasks') && Array.isArray(v) ? listJson(v) : canonicalJson(v, NOT_HASHED)
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${text}`
  }
  return `${out}}`
}

/** canonicalJson of tree nodes and task views, by object (see treeJson). */
const pieces = new WeakMap<object, string>()

function listJson(list: readonly unknown[]): string {
  let out = '['
  for (let i = 0; i < list.length; i++) {
    const x = list[i]
    let text: string | undefined
    if (x !== null && typeof x === 'object') {
      text = pieces.get(x)
      if (text === undefined) {
        text = canonicalJson(x, NOT_HASHED)
        pieces.set(x, text)
      }
    } else {
      text = JSON.stringify(x) ?? 'null'
    }
    out += i > 0 ? `,${text}` : text
  }
  return `${out}]`
}

/**
 * Keys the hash leaves out wherever they occur: `awaiting` (on nodes and
 * tasks) is who a node waits for, derived from the set like the rest, but
 * added with protocol 2; hashing it would change every v1 plan's hash.
 * Its order independence is tested on its own (test/property). `needs` (on
 * nodes) and `toolCalls` (on results) came with protocol 3: they are read
 * from the accepted split and the result, whose ids the hash covers.
 * `backupMs` and `backupSooner` (protocol 5, on the tree) are read by
 * executors; the chains they decide are hashed.
 */
export const NOT_HASHED: ReadonlySet<string> = new Set(['awaiting', 'backupMs', 'backupSooner', 'needs', 'toolCalls'])

/**
 * The tree as it is hashed: protocol 2's, 3's and 4's plan parameters are left out where
 * they have their defaults (no approvers, executors 'model', no tools, no retainDays; protocol 5's trust is absent before it), so a v1
 * plan's tree hashes exactly as it did before protocol 2 (the golden
 * fixture holds it). Nothing is lost: the plan id is the hash of the goal,
 * parameters included.
 */
export function hashedForm(tree: PlanTree): PlanTree | (Omit<PlanTree, 'params'> & { params: object }) {
  const p = tree.params
  if (p.approvers !== null && p.executors !== 'model' && p.tools && p.retainDays !== null) return tree
  const { approvers, executors, tools, retainDays, ...rest } = p
  const params = {
    ...rest,
    ...(approvers === null ? {} : { approvers }),
    ...(executors === 'model' ? {} : { executors }),
    ...(tools ? { tools } : {}),
    ...(retainDays === null ? {} : { retainDays })
  }
  return { ...tree, params }
}
