/**
 * `npm run bench -- load --profile`: V8's CPU profiler on one process of each role, and where its time went during
 * each phase, by group (bench/load/profile-groups.ts) and by function.
 *
 * The profiled processes run with `node --cpu-prof --cpu-prof-dir=bench/results/profiles/<name>` and write their
 * profile (and one per worker thread) when they stop. A profile's timestamps are V8's monotonic clock, the one
 * `process.hrtime` reads here, so a phase's window cuts the same stretch out of every profile: start-up and the
 * other phases are left out. Frames of the bundle (dist/src/*.js) are mapped back to their sources through the
 * bundle's source maps (`npm run build` writes them), so the groups and the hotspots name src/ and node_modules/
 * files, as with `--cli=tsx`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { GROUPS, normalPath, ruleGroup, type Group } from './profile-groups.js'
import { r1, r3 } from '../common/util.js'

/** The processes profiled: the first of each role. */
export const PROFILED = ['d1', 's1', 'e1'] as const

/** Node's flags for one process of the swarm: `--cpu-prof` into `dir/<name>` for the profiled ones, none for the rest. */
export function profileFlags(dir: string, name: string): string[] {
  if (!(PROFILED as readonly string[]).includes(name)) return []
  const into = join(dir, name)
  rmSync(into, { recursive: true, force: true })
  mkdirSync(into, { recursive: true })
  return ['--cpu-prof', `--cpu-prof-dir=${into}`]
}

const ROLE_OF: Record<string, string> = { d: 'decomposer', s: 'scorer', e: 'executor' }

/** Now on the profiles' clock (µs). */
export const monoUs = (): number => Number(process.hrtime.bigint() / 1000n)

/** One phase's stretch of time on the profiles' clock, and the events each process took in meanwhile. */
export interface Window {
  readonly phase: string
  readonly fromUs: number
  readonly toUs: number
  readonly events: Readonly<Record<string, number>>
  /** CPU ms each process used in the window (/proc): the profile's shares are of this. */
  readonly cpuMs: Readonly<Record<string, number>>
}

export interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}
export interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: readonly number[]
}
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[]
  readonly startTime: number
  readonly endTime: number
  readonly samples: readonly number[]
  readonly timeDeltas: readonly number[]
}

/** Where a frame is: its source (as the rules see it) and line, through the bundle's source map when there is one. */
export class Locator {
  private readonly maps = new Map<string, SourceMap | null>()

  locate(f: CallFrame): { path: string; line: number } {
    const map = this.mapOf(f.url)
    const entry = map?.findEntry(f.lineNumber, f.columnNumber) as
      { originalSource?: string; originalLine?: number } | undefined
    if (entry?.originalSource !== undefined)
      return { path: normalPath(entry.originalSource), line: (entry.originalLine ?? 0) + 1 }
    return { path: f.url === '' ? '(native)' : normalPath(f.url), line: f.lineNumber + 1 }
  }

  private mapOf(url: string): SourceMap | null {
    let m = this.maps.get(url)
    if (m !== undefined) return m
    m = null
    if (url.startsWith('file://') && url.endsWith('.js')) {
      const file = `${fileURLToPath(url)}.map`
      if (existsSync(file)) {
        const payload = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[] }
        // Sources relative to the map, made absolute so normalPath finds src/ and node_modules/ in them.
        const base = url.slice(0, url.lastIndexOf('/') + 1)
        payload.sources = payload.sources.map(s => new URL(s, base).href)
        m = new SourceMap(payload as never)
      }
    }
    this.maps.set(url, m)
    return m
  }
}

/** One process's profile (with its workers'), reduced to self time per group and per function in each window. */
export interface RoleProfile {
  readonly name: string
  readonly role: string
  readonly phase: string
  readonly events: number
  /** Sampled ms in the window (all threads), and of it, not idle. */
  readonly sampledMs: number
  readonly busyMs: number
  /**
   * CPU ms per event this process took in, from /proc. The profile's own busy time is wall time the thread was not
   * idle, which on a loaded machine counts the time it waited for a core too: the shares are taken of it, the ms of this.
   */
  readonly cpuMsPerEvent: number
  /** Share of the busy time (idle excluded) per group, in %; and idle's share of the sampled time. */
  readonly groupsPct: Record<Group, number>
  /** The CPU ms per event, split by those shares. */
  readonly groupsMsPerEvent: Record<Group, number>
  readonly idlePctOfSampled: number
  /** The functions with most self time: `fn (file:line)`, ms and % of the busy time. */
  readonly top: Array<{ fn: string; where: string; group: Group; ms: number; pct: number }>
  /** The source files (or packages' files) with most self time, natives counted to the file that called them. */
  readonly topFiles: Array<{ file: string; group: Group; ms: number; pct: number }>
}

/** Reads every profile under `dir/<name>` and reduces each to `windows`. */
export function analyseProfiles(dir: string, windows: readonly Window[]): RoleProfile[] {
  const locator = new Locator()
  const out: RoleProfile[] = []
  for (const name of PROFILED) {
    const sub = join(dir, name)
    if (!existsSync(sub)) continue
    const files = readdirSync(sub).filter(f => f.endsWith('.cpuprofile'))
    if (files.length === 0) continue
    const profiles = files.map(f => JSON.parse(readFileSync(join(sub, f), 'utf8')) as CpuProfile)
    for (const w of windows) out.push(reduce(name, w, profiles, locator))
  }
  return out
}

function reduce(name: string, w: Window, profiles: readonly CpuProfile[], locator: Locator): RoleProfile {
  const groupUs = new Map<Group, number>(GROUPS.map(g => [g, 0]))
  const fnUs = new Map<string, { fn: string; where: string; group: Group; us: number }>()
  const fileUs = new Map<string, { file: string; group: Group; us: number }>()
  let sampled = 0
  for (const p of profiles) {
    const info = nodeInfo(p, locator)
    let t = p.startTime
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i] ?? 0
      if (t < w.fromUs || t >= w.toUs) continue
      // A sample stands for the time until the next one.
      const dt = Math.max(0, (p.timeDeltas[i + 1] ?? 0) as number)
      const n = info.get(p.samples[i] as number)
      if (n === undefined) continue
      sampled += dt
      groupUs.set(n.group, (groupUs.get(n.group) ?? 0) + dt)
      const f = fnUs.get(n.key) ?? { fn: n.fn, where: n.where, group: n.group, us: 0 }
      f.us += dt
      fnUs.set(n.key, f)
      const file = `${n.file} [${n.group}]`
      const ff = fileUs.get(file) ?? { file: n.file, group: n.group, us: 0 }
      ff.us += dt
      fileUs.set(file, ff)
    }
  }
  const idle = groupUs.get('idle') ?? 0
  const busy = sampled - idle
  const events = w.events[name] ?? 0
  const cpuPerEvent = events > 0 ? (w.cpuMs[name] ?? 0) / events : 0
  const pct = (us: number): number => r1((100 * us) / Math.max(1, busy))
  const groupsPct = {} as Record<Group, number>
  const groupsMsPerEvent = {} as Record<Group, number>
  for (const g of GROUPS) {
    groupsPct[g] = g === 'idle' ? 0 : pct(groupUs.get(g) ?? 0)
    groupsMsPerEvent[g] = g === 'idle' ? 0 : r3((cpuPerEvent * (groupUs.get(g) ?? 0)) / Math.max(1, busy))
  }
  const top = [...fnUs.values()]
    .filter(f => f.group !== 'idle')
    .sort((a, b) => b.us - a.us)
    .slice(0, 25)
    .map(f => ({ fn: f.fn, where: f.where, group: f.group, ms: Math.round(f.us / 1000), pct: pct(f.us) }))
  const topFiles = [...fileUs.values()]
    .filter(f => f.group !== 'idle')
    .sort((a, b) => b.us - a.us)
    .slice(0, 25)
    .map(f => ({ file: f.file, group: f.group, ms: Math.round(f.us / 1000), pct: pct(f.us) }))
  return {
    name,
    role: ROLE_OF[name[0] as string] ?? name,
    phase: w.phase,
    events,
    sampledMs: Math.round(sampled / 1000),
    busyMs: Math.round(busy / 1000),
    cpuMsPerEvent: r3(cpuPerEvent),
    groupsPct,
    groupsMsPerEvent,
    idlePctOfSampled: r1((100 * idle) / Math.max(1, sampled)),
    top,
    topFiles
  }
}

interface NodeInfo {
  readonly group: Group
  readonly key: string
  readonly fn: string
  readonly where: string
  /** The nearest frame of src/, roles/ or a package, this one or a caller; and its file. */
  readonly from: string
  readonly file: string
}

/** Every node's group (its own rule, else its caller's) and its function's name and place. */
function nodeInfo(p: CpuProfile, locator: Locator): Map<number, NodeInfo> {
  const byId = new Map(p.nodes.map(n => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const out = new Map<number, NodeInfo>()
  const resolve = (id: number): NodeInfo => {
    const done = out.get(id)
    if (done !== undefined) return done
    const n = byId.get(id) as ProfileNode
    const f = n.callFrame
    const at = locator.locate(f)
    const fn = f.functionName === '' ? '(anonymous)' : f.functionName
    const rule = ruleGroup(at.path, fn)
    const up = parent.get(id)
    const group: Group =
      rule !== undefined && rule !== 'inherit' ? rule : up === undefined ? 'other' : resolve(up).group
    // A native or Node frame (a socket write, a SQLite call) is named by the package or source that called it.
    const own = at.path !== '(native)' && !at.path.startsWith('node:')
    const caller = own || up === undefined ? undefined : resolve(up)
    const here = at.path === '(native)' ? at.path : `${at.path}:${at.line}`
    const where = caller === undefined || caller.from === '' ? here : `${here}, from ${caller.from}`
    const info = {
      group,
      key: `${fn} ${where}`,
      fn,
      where,
      from: own ? `${fn} ${at.path}:${at.line}` : (caller?.from ?? ''),
      file: own ? at.path : (caller?.file ?? at.path)
    }
    out.set(id, info)
    return info
  }
  // Parents first, so the recursion stays shallow.
  for (const n of p.nodes) resolve(n.id)
  return out
}

/** The breakdown as text: a table per phase, one column per profiled process, shares of its busy time. */
export function profileTable(rows: readonly RoleProfile[]): string {
  const lines: string[] = []
  for (const phase of [...new Set(rows.map(r => r.phase))]) {
    const rs = rows.filter(r => r.phase === phase)
    const col = (s: string): string => s.padStart(12)
    lines.push(`\n${phase}: share of each process's busy time (%), and its CPU ms per event (/proc)`)
    lines.push(`${'group'.padEnd(36)}${rs.map(r => col(r.role)).join('')}`)
    for (const g of GROUPS) {
      if (g === 'idle') continue
      lines.push(`${g.padEnd(36)}${rs.map(r => col(`${r.groupsPct[g]}`)).join('')}`)
    }
    lines.push(`${'idle (% of sampled)'.padEnd(36)}${rs.map(r => col(`${r.idlePctOfSampled}`)).join('')}`)
    lines.push(`${'events taken in'.padEnd(36)}${rs.map(r => col(`${r.events}`)).join('')}`)
    lines.push(`${'CPU ms per event'.padEnd(36)}${rs.map(r => col(`${r.cpuMsPerEvent}`)).join('')}`)
    for (const r of rs) {
      lines.push(`  ${r.role} (${r.name}), top functions by self time:`)
      for (const f of r.top.slice(0, 5)) lines.push(`    ${`${f.pct}%`.padStart(6)}  ${f.fn}  ${f.where}  [${f.group}]`)
    }
  }
  return lines.join('\n')
}
