/**
 * `node --import tsx bench/load/long-tasks.ts DIR [MIN_MS] [FROM_US TO_US]`: the longest uninterrupted stretches of
 * work in the CPU profiles under DIR (`npm run bench -- load --profile` writes them into
 * bench/results/profiles/<name>/), that is, the times the event loop did not get control back: a `/status` request
 * arriving meanwhile waits for the stretch to end. A stretch is a run of samples none of which is `(idle)`; for each
 * one of at least MIN_MS (default 50) it prints its length and the project frames (src/, roles/) its time went
 * through, outermost first (the task's entry: a sync batch, a role's pass, a timer) and innermost (where the time
 * was spent). FROM_US/TO_US (the profile's clock, as the load benchmark's windows in load-profile.json) cut a phase.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Locator, type CpuProfile, type ProfileNode } from './profile.js'

interface Stretch {
  readonly startUs: number
  readonly ms: number
  readonly outer: Map<string, number>
  readonly inner: Map<string, number>
}

const project = (path: string): boolean => path.startsWith('src/') || path.startsWith('roles/')

function stretches(p: CpuProfile, locator: Locator, minMs: number, fromUs: number, toUs: number): Stretch[] {
  const byId = new Map(p.nodes.map(n => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const frames = new Map<number, { idle: boolean; outer: string; inner: string }>()
  const name = (n: ProfileNode): string | undefined => {
    const at = locator.locate(n.callFrame)
    return project(at.path) ? `${n.callFrame.functionName || '(anonymous)'} ${at.path}:${at.line}` : undefined
  }
  const info = (id: number): { idle: boolean; outer: string; inner: string } => {
    const done = frames.get(id)
    if (done !== undefined) return done
    let outer = '(no project frame)'
    let inner = ''
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at) as ProfileNode
      const nm = name(n)
      if (nm === undefined) continue
      if (inner === '') inner = nm
      outer = nm
    }
    const fn = (byId.get(id) as ProfileNode).callFrame.functionName
    const out = { idle: fn === '(idle)', outer, inner: inner === '' ? `(${fn || 'native'})` : inner }
    frames.set(id, out)
    return out
  }
  const out: Stretch[] = []
  let cur: { startUs: number; us: number; outer: Map<string, number>; inner: Map<string, number> } | undefined
  const close = (): void => {
    if (cur !== undefined && cur.us / 1000 >= minMs)
      out.push({ startUs: cur.startUs, ms: cur.us / 1000, outer: cur.outer, inner: cur.inner })
    cur = undefined
  }
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0
    if (t < fromUs || t >= toUs) continue
    const dt = Math.max(0, p.timeDeltas[i + 1] ?? 0)
    const f = info(p.samples[i] as number)
    if (f.idle) {
      close()
      continue
    }
    cur ??= { startUs: t, us: 0, outer: new Map(), inner: new Map() }
    cur.us += dt
    cur.outer.set(f.outer, (cur.outer.get(f.outer) ?? 0) + dt / 1000)
    cur.inner.set(f.inner, (cur.inner.get(f.inner) ?? 0) + dt / 1000)
  }
  close()
  return out
}

const top = (m: Map<string, number>, n: number): string =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, ms]) => `${Math.round(ms)} ms ${k}`)
    .join('; ')

function main(): void {
  const [dir, min, from, to] = process.argv.slice(2)
  if (dir === undefined) throw new Error('usage: long-tasks.ts DIR [MIN_MS] [FROM_US TO_US]')
  const minMs = Number(min ?? 50)
  const locator = new Locator()
  const files: string[] = []
  const walk = (d: string): void => {
    for (const f of readdirSync(d)) {
      const path = join(d, f)
      if (statSync(path).isDirectory()) walk(path)
      else if (f.endsWith('.cpuprofile')) files.push(path)
    }
  }
  walk(dir)
  for (const file of files) {
    const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
    const all = stretches(p, locator, 0, Number(from ?? -Infinity), Number(to ?? Infinity))
    const ms = all.map(s => s.ms).sort((a, b) => a - b)
    const q = (x: number): number => Math.round(ms[Math.min(ms.length - 1, Math.floor(x * ms.length))] ?? 0)
    const long = all.filter(s => s.ms >= minMs).sort((a, b) => b.ms - a.ms)
    console.log(
      `\n${file}: ${all.length} stretches of work, p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; ` +
        `${long.length} of ${minMs} ms or more, ${Math.round(long.reduce((s, x) => s + x.ms, 0))} ms in all`
    )
    const byEntry = new Map<string, { n: number; ms: number; max: number }>()
    for (const s of long) {
      const entry = top(s.outer, 1).replace(/^\d+ ms /, '')
      const e = byEntry.get(entry) ?? { n: 0, ms: 0, max: 0 }
      e.n++
      e.ms += s.ms
      e.max = Math.max(e.max, s.ms)
      byEntry.set(entry, e)
    }
    console.log('  by entry (the outermost project frame with most of the stretch):')
    for (const [k, e] of [...byEntry.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12))
      console.log(`    ${e.n} stretches, ${Math.round(e.ms)} ms, longest ${Math.round(e.max)} ms: ${k}`)
    console.log('  the ten longest:')
    for (const s of long.slice(0, 10))
      console.log(
        `    ${Math.round(s.ms)} ms at ${s.startUs}: outer ${top(s.outer, 3)}\n      inner ${top(s.inner, 5)}`
      )
  }
}

main()
