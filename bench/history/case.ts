/**
 * One case of `npm run bench -- history` (bench/history/index.ts): the decomposer
 * and the scorer on copies of a store, the starts of the executor measured,
 * and the newcomer.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { sampleProc } from '../common/swarm.js'
import {
  MCP_TOKEN,
  awaitStatus,
  connectionBytes,
  say,
  seconds,
  sleep,
  spawnNode,
  storedEvents,
  until,
  getJson,
  metric
} from './node.js'
import { loadNow, r1 } from '../common/util.js'
import type { History } from './gen-history.js'
import type { Node, Options, SyncSession } from './node.js'

interface PlanEventLine {
  readonly id: string
  readonly type: string
  readonly author: string
  readonly hlc: { ms: number; c: number }
}

export class Case {
  private goals = 0
  mcp: Client | undefined
  d: Node | undefined
  s: Node | undefined
  sPeer = ''

  constructor(
    readonly o: Options,
    readonly label: string,
    readonly root: string,
    readonly history: History | undefined
  ) {}

  /** A data dir holding a copy of the history's store (or nothing, for the empty case). */
  dataDir(name: string): string {
    const dir = join(this.root, name)
    mkdirSync(dir, { recursive: true })
    if (this.history !== undefined) {
      const t0 = Date.now()
      copyFileSync(this.history.file, join(dir, 'events.sqlite'))
      for (const x of ['-wal', '-shm'])
        if (existsSync(this.history.file + x)) copyFileSync(this.history.file + x, join(dir, 'events.sqlite' + x))
      say(`    copied the store for ${name} in ${seconds(Date.now() - t0)}`)
    }
    return dir
  }

  async startHelpers(): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {}
    say(`  ${this.label}: starting the decomposer D (submits goals over MCP) and the scorer S`)
    this.d = await spawnNode(this.o, 'D', 'decomposer', this.dataDir('d'), this.root, ['--mcp-http', '127.0.0.1:0'])
    const ds = await awaitStatus(this.d, this.o.startTimeoutMs)
    if (ds === undefined) throw new Error(`D did not answer /status within ${this.o.startTimeoutMs / 1000} s`)
    const dStarted = await until('D: started line', async () => this.d?.started(), 60_000, 100)
    if (dStarted === undefined) throw new Error('D printed no started line')
    say(
      `    D answers /status after ${seconds(ds.ms)} (${ds.held} events, ${ds.plans} plans, RSS ${Math.round(ds.rssMb)} MB)`
    )
    this.s = await spawnNode(this.o, 'S', 'scorer', this.dataDir('s'), this.root, [
      '--bootstrap',
      dStarted.addresses[0] as string
    ])
    const ss = await awaitStatus(this.s, this.o.startTimeoutMs)
    if (ss === undefined) throw new Error(`S did not answer /status within ${this.o.startTimeoutMs / 1000} s`)
    this.sPeer = ss.peerId
    say(`    S answers /status after ${seconds(ss.ms)} (RSS ${Math.round(ss.rssMb)} MB)`)
    out.decomposer = { statusMs: ds.ms, rssMb: r1(ds.rssMb), cpuMs: Math.round(ds.cpuMs) }
    out.scorer = { statusMs: ss.ms, rssMb: r1(ss.rssMb), cpuMs: Math.round(ss.cpuMs) }
    const first = await until('S: first sync session with D', async () => this.s?.syncs[0], 120_000, 200)
    out.syncDS = first ?? null
    // Let them settle: the first role passes over every plan, and (with a history) the finished plans leaving memory.
    const settleFrom = Date.now()
    const minMs = this.history === undefined ? 2_000 : Math.max(0, this.s.spawnedAt + ss.ms + 70_000 - Date.now())
    let last = (sampleProc(this.d.pid)?.cpuMs ?? 0) + (sampleProc(this.s.pid)?.cpuMs ?? 0)
    await until(
      'D and S settling',
      async () => {
        await sleep(2_000)
        const now = (sampleProc(this.d!.pid)?.cpuMs ?? 0) + (sampleProc(this.s!.pid)?.cpuMs ?? 0)
        const share = (now - last) / 2_000
        last = now
        return Date.now() - settleFrom >= minMs && share < 0.15 ? true : undefined
      },
      240_000,
      0,
      () => `load ${loadNow().join(' ')}`
    )
    out.settleMs = Date.now() - settleFrom
    out.rssSettledMb = { d: r1(sampleProc(this.d.pid)?.rssMb ?? NaN), s: r1(sampleProc(this.s.pid)?.rssMb ?? NaN) }
    const mcp = new Client({ name: 'bench-history', version: '1.0.0' })
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(dStarted.mcp as string), {
        requestInit: { headers: { authorization: `Bearer ${dStarted.mcpToken ?? MCP_TOKEN}` } }
      })
    )
    this.mcp = mcp
    return out
  }

  /** A fresh goal for S to score and an executor to do: max depth 1, two or three leaves and a roll-up. */
  async submit(): Promise<{ plan: string; at: number }> {
    this.goals++
    const at = Date.now()
    const r = await this.mcp!.callTool({
      name: 'plan_submit',
      arguments: {
        goal: `history bench ${this.label} goal ${this.goals}: plan a team offsite for twelve people in spring`,
        committee: [this.sPeer],
        quorum: 1,
        maxDepth: 1,
        minChildren: 2,
        maxChildren: 3,
        timeoutSeconds: 120
      }
    })
    const plan = (r.structuredContent as { plan?: string } | undefined)?.plan
    if (r.isError === true || plan === undefined) throw new Error(`plan_submit failed: ${JSON.stringify(r.content)}`)
    return { plan, at }
  }

  /** The first task-claimed of `peer` in `plan`, as D holds the plan's events. */
  async claimOf(plan: string, peer: string): Promise<PlanEventLine | undefined> {
    try {
      const evs = await getJson<PlanEventLine[]>(`${this.d!.http}/plans/${plan}/events`, 30_000)
      return evs
        .filter(e => e.type === 'task-claimed' && e.author === peer)
        .sort((a, b) => a.hlc.ms - b.hlc.ms || a.hlc.c - b.hlc.c)[0]
    } catch {
      return undefined
    }
  }

  /**
   * Events `node` signed itself (accepted from source local), and how many of them are in `plan`: the rest are its
   * work on plans it held only in part while catching up.
   */
  async ownEvents(node: Node, plan: string, peer: string): Promise<Record<string, number | null>> {
    // Once the new plan is over, so that no event of it is signed between the two reads; both from the node itself,
    // so that none of its events is still on the way to another node.
    const until = Date.now() + 120_000
    while (Date.now() < until && !['completed', 'failed', 'cancelled'].includes((await this.planStatus(plan)) ?? ''))
      await sleep(1_000)
    const own = await metric(node, 'plan_swarm_events_accepted_total{source="local"}')
    let inPlan: number | null = null
    try {
      const evs = await getJson<PlanEventLine[]>(`${node.http}/plans/${plan}/events`, 30_000)
      inPlan = evs.filter(e => e.author === peer).length
    } catch {
      /* the node does not answer */
    }
    return {
      ownEvents: own ?? null,
      ownEventsInNewPlan: inPlan,
      ownEventsElsewhere: own === undefined || inPlan === null ? null : own - inPlan
    }
  }

  async planStatus(plan: string): Promise<string | undefined> {
    try {
      return (await getJson<{ tree: { status: string } }>(`${this.d!.http}/plans/${plan}`, 30_000)).tree.status
    } catch {
      return undefined
    }
  }

  /** One start of the executor X (its data dir made on the first). */
  async startX(trial: number, dir: string, profile = false): Promise<Record<string, unknown>> {
    const boot = this.d!.started()!.addresses[0] as string
    const prof = profile && this.o.cpuProf !== undefined ? join(this.o.cpuProf, this.label) : undefined
    const loadBefore = loadNow()
    const x = await spawnNode(this.o, `X${trial}`, 'executor', dir, this.root, ['--bootstrap', boot], prof)
    try {
      const st = await awaitStatus(x, this.o.startTimeoutMs).catch((err: Error) => err)
      if (st instanceof Error) {
        // A node that dies on the way up (out of heap, say) is a figure too.
        say(`    X${trial}: ${st.message.slice(0, 2_000)}`)
        return {
          trial,
          exited: x.exitInfo() ?? st.message.slice(0, 300),
          afterMs: Date.now() - x.spawnedAt,
          loadBefore
        }
      }
      if (st === undefined) {
        say(`    X${trial}: no /status within ${this.o.startTimeoutMs / 1000} s: timed out`)
        return { trial, timedOutS: this.o.startTimeoutMs / 1000, loadBefore }
      }
      say(`    X${trial}: /status after ${seconds(st.ms)} (CPU ${seconds(st.cpuMs)}, RSS ${Math.round(st.rssMb)} MB)`)
      const sync = await until(`X${trial}: first sync session`, async () => x.syncs[0], 120_000, 100, undefined, [x])
      const syncAt = sync === undefined ? undefined : connectionBytes(x.pid, [x.httpPort])
      const { plan, at } = await this.submit()
      const claim = await until(
        `X${trial}: waiting for its claim in plan ${plan.slice(0, 12)}`,
        async () => await this.claimOf(plan, st.peerId),
        this.o.startTimeoutMs,
        150,
        undefined,
        [x]
      )
      const proc = sampleProc(x.pid)
      const claimMs = claim === undefined ? null : claim.hlc.ms - x.spawnedAt
      const fig: Record<string, unknown> = {
        trial,
        statusMs: st.ms,
        cpuMsAtStatus: Math.round(st.cpuMs),
        rssAtStatusMb: r1(st.rssMb),
        held: st.held,
        plans: st.plans,
        sync: sync ?? null,
        // Its log line comes when it ends; `ms` counts from the session's start, not from the id set's snapshot before it.
        syncLoggedAfterStatusMs: sync === undefined ? null : sync.at - x.spawnedAt - st.ms,
        syncConnectionBytes: syncAt ?? null,
        submitAfterSpawnMs: at - x.spawnedAt,
        claimMs,
        submitToClaimMs: claim === undefined ? null : claim.hlc.ms - at,
        rssAtClaimMb: r1(proc?.rssMb ?? NaN),
        hwmAtClaimMb: r1(proc?.hwmMb ?? NaN),
        cpuMsAtClaim: Math.round(proc?.cpuMs ?? NaN),
        heapAtClaim: await heapOf(x),
        loadBefore
      }
      say(
        `    X${trial}: first sync ${syncWords(sync)}; ` +
          `claimed ${claimMs === null ? 'nothing' : `${seconds(claimMs)} after spawn (${seconds(claim!.hlc.ms - at)} after the goal)`}, ` +
          `RSS ${Math.round(proc?.rssMb ?? 0)} MB`
      )
      const status = await until(
        `X${trial}: plan ${plan.slice(0, 12)} completing`,
        async () => {
          const s = await this.planStatus(plan)
          return s === 'completed' || s === 'failed' || s === 'cancelled' ? s : undefined
        },
        600_000,
        500
      )
      fig.planStatus = status ?? 'not finished'
      // Hold what D holds before the next start, so that the next start's first sync is between equal sets.
      const target = await storedEvents(this.d!)
      await until(
        `X${trial}: holding D's ${target} events`,
        async () => (((await storedEvents(x)) ?? -1) >= (target ?? Infinity) ? true : undefined),
        120_000,
        500
      )
      if (trial === 1) {
        // Finished plans leave memory 60 s after the load touched them (EVICT_QUIET_MS): sample once they have.
        const wait = Math.max(x.spawnedAt + 75_000, x.spawnedAt + st.ms + 65_000) - Date.now()
        if (wait > 0) {
          say(`    X1: waiting ${seconds(wait)} to sample RSS and heap once its finished plans left memory`)
          await sleep(wait)
        }
        fig.settledAfterSpawnMs = Date.now() - x.spawnedAt
        fig.rssSettledMb = r1(sampleProc(x.pid)?.rssMb ?? NaN)
        fig.heapSettled = await heapOf(x)
      }
      return fig
    } finally {
      await x.stop()
    }
  }

  /** The newcomer: an empty executor joining D (X stopped), a goal submitted when its /status answers. */
  async newcomer(): Promise<Record<string, unknown>> {
    const boot = this.d!.started()!.addresses[0] as string
    const target = (await storedEvents(this.d!)) ?? NaN
    const loadBefore = loadNow()
    const n = await spawnNode(this.o, 'N', 'executor', join(this.root, 'newcomer'), this.root, ['--bootstrap', boot])
    try {
      const st = await awaitStatus(n, this.o.startTimeoutMs)
      if (st === undefined) return { timedOutS: this.o.startTimeoutMs / 1000 }
      say(`    N: /status after ${seconds(st.ms)}; submitting a goal`)
      const { plan, at } = await this.submit()
      const heldNow = async (): Promise<string> => {
        const p = sampleProc(n.pid)
        const parked = (await metric(n, 'plan_swarm_events_parked')) ?? '?'
        return (
          `${(await storedEvents(n)) ?? '?'} of ${target} events held (${parked} parked), ` +
          `CPU ${seconds(p?.cpuMs ?? 0)}, RSS ${Math.round(p?.rssMb ?? 0)} MB`
        )
      }
      let progress = ''
      let polls = 0
      const claim = await until(
        `N: waiting for its claim in plan ${plan.slice(0, 12)}`,
        async () => {
          if (polls++ % 8 === 0) progress = await heldNow()
          return await this.claimOf(plan, st.peerId)
        },
        this.o.catchupTimeoutMs - (Date.now() - n.spawnedAt),
        250,
        () => progress,
        [n]
      )
      const atClaim = sampleProc(n.pid)
      const bytesClaim = connectionBytes(n.pid, [n.httpPort])
      const syncClaim = sumSyncs(n.syncs)
      const heldAtClaim = (await storedEvents(n)) ?? null
      const claimMs = claim === undefined ? null : claim.hlc.ms - n.spawnedAt
      say(
        `    N: claimed ${claimMs === null ? `nothing in ${seconds(Date.now() - n.spawnedAt)}` : `${seconds(claimMs)} after spawn`}, ` +
          `${bytesClaim.in} bytes in so far; waiting for the whole history`
      )
      let held = 0
      let parked = 0
      let maxParked = 0
      const full = await until(
        'N: catching up',
        async () => {
          held = (await storedEvents(n)) ?? held
          parked = (await metric(n, 'plan_swarm_events_parked')) ?? parked
          maxParked = Math.max(maxParked, parked)
          return held >= target ? Date.now() : undefined
        },
        // One budget from the spawn for both waits.
        Math.max(0, this.o.catchupTimeoutMs - (Date.now() - n.spawnedAt)),
        1_000,
        () => {
          const p = sampleProc(n.pid)
          const rss = Math.round(p?.rssMb ?? 0)
          return `${held} of ${target} events (${parked} parked), CPU ${seconds(p?.cpuMs ?? 0)}, RSS ${rss} MB, load ${loadNow().join(' ')}`
        },
        [n]
      )
      const atFull = sampleProc(n.pid)
      const bytesFull = connectionBytes(n.pid, [n.httpPort])
      // A session still running when the last event folded logs its line a moment later.
      await sleep(2_000)
      const out = {
        statusMs: st.ms,
        submitAfterSpawnMs: at - n.spawnedAt,
        claimMs,
        submitToClaimMs: claim === undefined ? null : claim.hlc.ms - at,
        heldAtClaim,
        rssAtClaimMb: r1(atClaim?.rssMb ?? NaN),
        cpuMsAtClaim: Math.round(atClaim?.cpuMs ?? NaN),
        connectionBytesAtClaim: bytesClaim,
        syncAtClaim: syncClaim,
        fullMs: full === undefined ? null : full - n.spawnedAt,
        timedOutS: full === undefined ? this.o.catchupTimeoutMs / 1000 : undefined,
        heldAtEnd: held,
        maxParked,
        target,
        rssAtFullMb: r1(atFull?.rssMb ?? NaN),
        hwmAtFullMb: r1(atFull?.hwmMb ?? NaN),
        cpuMsAtFull: Math.round(atFull?.cpuMs ?? NaN),
        connectionBytesAtFull: bytesFull,
        syncAtFull: sumSyncs(n.syncs),
        syncFailures: n.syncFailures.length,
        syncFailureReasons: [...new Set(n.syncFailures.map(f => f.error))].slice(0, 5),
        ...(await this.ownEvents(n, plan, st.peerId)),
        loadBefore,
        loadAfter: loadNow()
      }
      say(
        `    N: ${full === undefined ? `not caught up in ${this.o.catchupTimeoutMs / 1000} s` : `caught up in ${seconds(out.fullMs!)}`}, ` +
          `${bytesFull.in} bytes in, CPU ${seconds(atFull?.cpuMs ?? 0)}, RSS ${Math.round(atFull?.rssMb ?? 0)} MB`
      )
      return out
    } finally {
      await n.stop()
    }
  }

  /**
   * A newcomer with `--history open` on an empty store, bootstrapped to D
   * while X is stopped: timed until it claims in a goal submitted as soon as
   * its /status answers, then watched for HISTORY_OPEN_WATCH_S more; what it
   * holds and the bytes on its connections, at the claim and at the end.
   */
  async newcomerOpen(watchMs: number): Promise<Record<string, unknown>> {
    const boot = this.d!.started()!.addresses[0] as string
    const target = (await storedEvents(this.d!)) ?? NaN
    const args = ['--bootstrap', boot, '--history', 'open']
    const n = await spawnNode(this.o, 'O', 'executor', join(this.root, 'newcomer-open'), this.root, args)
    try {
      const st = await awaitStatus(n, this.o.startTimeoutMs)
      if (st === undefined) return { timedOutS: this.o.startTimeoutMs / 1000 }
      say(`    O: /status after ${seconds(st.ms)}; submitting a goal`)
      const { plan, at } = await this.submit()
      const claim = await until(
        `O: waiting for its claim in plan ${plan.slice(0, 12)}`,
        async () => await this.claimOf(plan, st.peerId),
        this.o.catchupTimeoutMs - (Date.now() - n.spawnedAt),
        250,
        () => '',
        [n]
      )
      const atClaim = sampleProc(n.pid)
      const bytesClaim = connectionBytes(n.pid, [n.httpPort])
      const heldAtClaim = (await storedEvents(n)) ?? null
      const claimMs = claim === undefined ? null : claim.hlc.ms - n.spawnedAt
      say(
        `    O: claimed ${claimMs === null ? 'nothing' : `${seconds(claimMs)} after spawn`}; watching ${watchMs / 1000} s`
      )
      await sleep(watchMs)
      const atEnd = sampleProc(n.pid)
      const bytesEnd = connectionBytes(n.pid, [n.httpPort])
      const out = {
        statusMs: st.ms,
        claimMs,
        submitToClaimMs: claim === undefined ? null : claim.hlc.ms - at,
        heldAtClaim,
        heldAtEnd: (await storedEvents(n)) ?? null,
        target,
        watchS: watchMs / 1000,
        rssAtClaimMb: r1(atClaim?.rssMb ?? NaN),
        rssAtEndMb: r1(atEnd?.rssMb ?? NaN),
        cpuMsAtEnd: Math.round(atEnd?.cpuMs ?? NaN),
        connectionBytesAtClaim: bytesClaim,
        connectionBytesAtEnd: bytesEnd,
        syncAtEnd: sumSyncs(n.syncs),
        syncFailures: n.syncFailures.length,
        syncFailureReasons: [...new Set(n.syncFailures.map(f => f.error))].slice(0, 5)
      }
      say(
        `    O: holds ${String(out.heldAtEnd)} of ${target} events after ${watchMs / 1000} s more, ` +
          `${bytesEnd.in} bytes in, RSS ${Math.round(atEnd?.rssMb ?? 0)} MB`
      )
      return out
    } finally {
      await n.stop()
    }
  }

  async stop(): Promise<void> {
    await this.mcp?.close().catch(() => undefined)
    await Promise.all([this.d?.stop(), this.s?.stop()])
  }
}

/** The V8 heap and external memory the node reports in /metrics (prom-client's process metrics), in MB. */
async function heapOf(n: Node): Promise<Record<string, number | null>> {
  const mb = (x: number | undefined): number | null => (x === undefined ? null : r1(x / 2 ** 20))
  return {
    usedMb: mb(await metric(n, 'plan_swarm_nodejs_heap_size_used_bytes')),
    totalMb: mb(await metric(n, 'plan_swarm_nodejs_heap_size_total_bytes')),
    externalMb: mb(await metric(n, 'plan_swarm_nodejs_external_memory_bytes'))
  }
}

function syncWords(s: SyncSession | undefined): string {
  return s === undefined
    ? 'not seen'
    : `${s.ms} ms, ${s.bytesIn + s.bytesOut} bytes, ${s.eventsIn}/${s.eventsOut} events in/out`
}

export function sumSyncs(xs: readonly SyncSession[]): Record<string, number> {
  return {
    sessions: xs.length,
    eventsIn: xs.reduce((s, x) => s + x.eventsIn, 0),
    bytesIn: xs.reduce((s, x) => s + x.bytesIn, 0),
    bytesOut: xs.reduce((s, x) => s + x.bytesOut, 0)
  }
}
