/**
 * Idle footprint: `pairs` pairs of full nodes and as many pairs of bare
 * libp2p nodes (bench/net/bare.ts), all at once on this machine, each pair
 * connected and otherwise idle. A full node is the real CLI, `--role
 * observer --no-mdns --json`, with its whole module graph, not a peer
 * assembled by the benchmark; the only addition is the `mem` command on
 * stdin (bench/net/cli-mem.ts).
 *
 * How both kinds run (`cli`, NET_FP_CLI or --cli=, default built):
 * - built: what a deployment runs. `npm run build`, then `node --import
 *   <mem command, bundled> dist/src/cli.js ...`: the CLI's own bundle and
 *   lazy chunks, the mem command loaded before it. The bare node is
 *   bench/net/child.ts bundled the same way (bench/net/bundle.ts) and run
 *   with plain node. Neither has tsx or a module-loader thread.
 * - tsx: both from the sources through tsx (`node --import tsx
 *   bench/net/cli.ts ...`, `node --import tsx bench/net/child.ts bare`),
 *   each with tsx's loader thread and its heap (how `npm start` runs).
 *
 * Why it is measured this way: a node's RSS after start-up is mostly V8 heap
 * that start-up grew (module loading) and that the garbage collector gives
 * back only when its memory reducer runs, once per isolate (the main thread's
 * and, under tsx, the module-loader thread's: bench/net/mem.ts), at a moment that depends on each process's
 * allocation rate and on the machine's load: 0.5 to 3 minutes after start, a
 * drop of 30-70 MB. One sample per process, taken 20-30 s after start, caught
 * some processes before that drop and some after it, so the ratio moved from
 * 0.8 to 1.7 with nothing changed. Here every process (both kinds alike) idles
 * `idleS` seconds, then gets one full collection of every heap it has, then its
 * VmRSS is read every second for `sampleS` seconds: per process the median of
 * its samples, per kind the median of its processes. The window is cut into
 * `rounds` parts and the ratio taken in each, so the output shows its own
 * spread; `unforcedRssRatio` is the same ratio from the last 10 s before the
 * collection (what a single sample without it would have said). The
 * breakdown (anon and file-backed RSS, V8 heap by space, external, malloc,
 * threads) says where a difference lies.
 *
 * CPU: utime + stime from /proc/<pid>/stat over the measuring window.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { bundleEntries } from './bundle.js'
import { BUILT_CLI } from '../../test/helpers/cli-process.js'
import { adopt, cpuSeconds, log, rssParts, sleep, spawnChild, tempDir, waitAll } from './harness.js'
import type { Child, Line } from './harness.js'
import { REPO, buildCli, cliMode, median, type CliMode, r1, r2 } from '../common/util.js'

/** --cli=built|tsx on the command line (`npm run bench -- net --cli=tsx`), else NET_FP_CLI, else built. */
function cliFromArgs(): CliMode {
  const flag = process.argv.find(a => a.startsWith('--cli='))?.slice('--cli='.length)
  return flag !== undefined ? cliMode(flag) : cliMode(process.env.NET_FP_CLI ?? 'built', 'NET_FP_CLI')
}

/** The node arguments before the CLI's own, and the bare child's script (undefined: net-child.ts through tsx). */
interface Launch {
  readonly full: readonly string[]
  readonly bareScript: string | undefined
  readonly fullDesc: string
  readonly bareDesc: string
}

async function prepare(mode: CliMode): Promise<Launch> {
  if (mode === 'tsx') {
    return {
      full: ['--import', 'tsx', join(REPO, 'bench', 'net', 'cli.ts')],
      bareScript: undefined,
      fullDesc:
        'node --import tsx bench/net/cli.ts --role observer --no-mdns --json (src/cli.ts, mem command from bench/net/cli-mem.ts)',
      bareDesc: 'node --import tsx bench/net/child.ts bare'
    }
  }
  log('footprint: npm run build (full nodes run node dist/src/cli.js; --cli=tsx runs the sources)')
  buildCli()
  const cache = join(REPO, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const out = await bundleEntries(
    { 'net-child': 'bench/net/child.ts', 'net-cli-mem': 'bench/net/cli-mem.ts' },
    tempDir('plan-swarm-bench-', cache)
  )
  return {
    full: ['--import', pathToFileURL(out['net-cli-mem'] as string).href, BUILT_CLI],
    bareScript: out['net-child'],
    fullDesc: 'node --import <bench/net/cli-mem.ts bundled> dist/src/cli.js --role observer --no-mdns --json',
    bareDesc: 'node <bench/net/child.ts bundled by bench/net/bundle.ts> bare'
  }
}

/** Threads of a process (/proc/<pid>/status): the main thread, libuv's pool, V8's, and any worker. */
function threads(pid: number): number {
  return Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
}

/** One measured process, whichever kind. */
interface Proc {
  readonly name: string
  readonly kind: 'full' | 'bare'
  readonly pid: number
  mem(gc: boolean): Promise<Line>
  stop(): Promise<void>
}

interface FullNode extends Proc {
  readonly addr: string
  readonly port: number
}

/** Start the CLI as `--role observer ...` (`launch`: which build of it, how) and wait for its "started" line. */
async function spawnFull(
  launch: Launch,
  name: string,
  swarm: string,
  dataDir: string,
  bootstrap: string | undefined
): Promise<FullNode> {
  const args = [
    ...launch.full,
    '--role',
    'observer',
    '--swarm',
    swarm,
    '--no-mdns',
    '--listen',
    '/ip4/127.0.0.1/tcp/0',
    '--data-dir',
    dataDir,
    '--json',
    ...(bootstrap === undefined ? [] : ['--bootstrap', bootstrap])
  ]
  const proc: ChildProcess = spawn(process.execPath, args, { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
  adopt(proc)
  let stderr = ''
  proc.stderr!.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4_000)
  })
  const exited = new Promise<void>(resolve => {
    proc.on('close', () => {
      resolve()
    })
  })
  const replies = new Map<number, (l: Line) => void>()
  const started = new Promise<Line>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${name} not started in 180 s; stderr: ${stderr}`))
    }, 180_000)
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`${name} exited before starting; stderr: ${stderr}`))
    })
    createInterface({ input: proc.stdout! }).on('line', raw => {
      let l: Line
      try {
        l = JSON.parse(raw) as Line
      } catch {
        return
      }
      if (l.event === 'started') {
        clearTimeout(timer)
        resolve(l)
      }
      if (l.ev === 'reply') replies.get(l.rid as number)?.(l)
    })
  })
  const s = await started.catch((err: Error) => {
    proc.kill('SIGKILL')
    throw err
  })
  const first = String((s.addresses as string[])[0])
  const addr = first.includes('/p2p/') ? first : `${first}/p2p/${s.peerId as string}`
  let rid = 0
  return {
    name,
    kind: 'full',
    pid: proc.pid as number,
    addr,
    port: Number(/\/tcp\/(\d+)/.exec(addr)?.[1]),
    async mem(gc) {
      const id = ++rid
      return await new Promise<Line>((resolve, reject) => {
        const timer = setTimeout(() => {
          replies.delete(id)
          reject(new Error(`${name}: no reply to mem`))
        }, 30_000)
        replies.set(id, l => {
          clearTimeout(timer)
          replies.delete(id)
          resolve(l)
        })
        proc.stdin!.write(JSON.stringify({ cmd: 'mem', gc, rid: id }) + '\n')
      })
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      try {
        proc.stdin!.end()
      } catch {
        /* closed */
      }
      const timer = setTimeout(() => {
        try {
          proc.kill('SIGKILL')
        } catch {
          /* gone */
        }
      }, 6_000)
      await exited
      clearTimeout(timer)
    }
  }
}

function bareProc(c: Child): Proc {
  return {
    name: c.name,
    kind: 'bare',
    pid: c.pid,
    mem: async gc => await c.request({ cmd: 'mem', gc }),
    stop: async () => {
      await c.stop()
    }
  }
}

/** Whether some TCP connection on this machine has `port` (a listener's) at its local end: someone connected to it. */
function acceptedOn(port: number): boolean {
  const hex = port.toString(16).toUpperCase().padStart(4, '0')
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f[3] === '01' && f[1]?.endsWith(`:${hex}`) === true) return true
    }
  }
  return false
}

/** Per V8 space, the median MiB in use of each kind (after the forced collection). */
function spaces(
  per: ReadonlyArray<{ kind: 'full' | 'bare'; spacesUsedMb: Record<string, number> }>
): Record<string, { full: number; bare: number }> {
  const names = [...new Set(per.flatMap(x => Object.keys(x.spacesUsedMb)))]
  const of = (kind: 'full' | 'bare', n: string): number =>
    r1(median(per.filter(x => x.kind === kind).map(x => x.spacesUsedMb[n] ?? 0)))
  return Object.fromEntries(names.map(n => [n, { full: of('full', n), bare: of('bare', n) }]))
}

export async function benchFootprint(p: {
  idleS: number
  sampleS: number
  pairs: number
  rounds: number
  cli?: CliMode
}): Promise<Record<string, unknown>> {
  const cli = p.cli ?? cliFromArgs()
  const root = tempDir('plan-swarm-net-footprint-')
  const launch = await prepare(cli)
  const bareOpts = { script: launch.bareScript }
  const load0 = loadavg()
  const procs: Proc[] = []
  try {
    const idx = Array.from({ length: p.pairs }, (_, i) => i + 1)
    // The first of every pair of both kinds, then the second: both kinds start under the same load.
    const firsts = await Promise.all([
      ...idx.map(async i => await spawnFull(launch, `full-${i}a`, `fp-${i}`, join(root, `full-${i}a`), undefined)),
      ...idx.map(
        async i =>
          await spawnChild(
            `bare-${i}a`,
            'bare',
            { swarm: `fp-${i}`, listen: '/ip4/127.0.0.1/tcp/0', policy: 'StrictNoSign' },
            bareOpts
          )
      )
    ])
    const fullA = firsts.slice(0, p.pairs) as FullNode[]
    const bareA = firsts.slice(p.pairs) as Child[]
    procs.push(...fullA, ...bareA.map(bareProc))
    const seconds = await Promise.all([
      ...idx.map(
        async i => await spawnFull(launch, `full-${i}b`, `fp-${i}`, join(root, `full-${i}b`), fullA[i - 1]!.addr)
      ),
      ...idx.map(
        async i =>
          await spawnChild(
            `bare-${i}b`,
            'bare',
            { swarm: `fp-${i}`, listen: '/ip4/127.0.0.1/tcp/0', policy: 'StrictNoSign' },
            bareOpts
          )
      )
    ])
    const fullB = seconds.slice(0, p.pairs) as FullNode[]
    const bareB = seconds.slice(p.pairs) as Child[]
    procs.push(...fullB, ...bareB.map(bareProc))
    await Promise.all(bareB.map(async (b, k) => await b.request({ cmd: 'dial', addrs: [bareA[k]!.addrs[0]] })))
    await waitAll(
      'bare pairs connected',
      [...bareA, ...bareB],
      s => (s.connected as number) >= 1 && (s.topicPeers as number) >= 1,
      60_000
    )
    const deadline = Date.now() + 60_000
    while (!fullA.every(a => acceptedOn(a.port))) {
      if (Date.now() > deadline) throw new Error('full pairs not connected in 60 s')
      await sleep(250)
    }
    const full = procs.filter(x => x.kind === 'full')
    const bare = procs.filter(x => x.kind === 'bare')
    const ordered = [...full, ...bare]
    log(
      `footprint: ${p.pairs} pairs of full nodes and ${p.pairs} of bare nodes up and paired; ` +
        `idle ${p.idleS} s, one full GC in each, then measuring for ${p.sampleS} s`
    )

    // The unforced figure: the last (up to) 10 s of the idle time.
    const quiet = Math.max(0, p.idleS - 10)
    await sleep(quiet * 1000)
    const before: number[][] = ordered.map(() => [])
    for (let i = quiet; i < p.idleS; i++) {
      ordered.forEach((x, k) => before[k]!.push(rssParts(x.pid).rss))
      await sleep(1000)
    }
    const load1 = loadavg()
    const heap = await Promise.all(ordered.map(async x => await x.mem(true)))
    await sleep(2_000)

    const cpu0 = ordered.map(x => cpuSeconds(x.pid))
    const t0 = performance.now()
    const samples: Array<Array<{ rss: number; anon: number; file: number }>> = ordered.map(() => [])
    for (let i = 0; i < p.sampleS; i++) {
      ordered.forEach((x, k) => samples[k]!.push(rssParts(x.pid)))
      if (i < p.sampleS - 1) await sleep(1000)
    }
    const sec = (performance.now() - t0) / 1000
    const cpu1 = ordered.map(x => cpuSeconds(x.pid))
    const threadCounts = ordered.map(x => threads(x.pid))

    const per = ordered.map((x, k) => {
      const s = samples[k]!
      return {
        name: x.name,
        kind: x.kind,
        rssMb: r1(median(s.map(v => v.rss))),
        rssMinMaxMb: [r1(Math.min(...s.map(v => v.rss))), r1(Math.max(...s.map(v => v.rss)))],
        anonMb: r1(median(s.map(v => v.anon))),
        fileMb: r1(median(s.map(v => v.file))),
        unforcedRssMb: r1(median(before[k]!)),
        heapUsedMb: heap[k]!.heapUsedMb as number,
        heapTotalMb: heap[k]!.heapTotalMb as number,
        externalMb: heap[k]!.externalMb as number,
        mallocedMb: heap[k]!.mallocedMb as number,
        spacesUsedMb: heap[k]!.spacesUsedMb as Record<string, number>,
        threads: threadCounts[k]!,
        loaderThread: heap[k]!.loaderThread as boolean,
        loaderCollected: heap[k]!.loaderCollected as boolean,
        cpuPct: r2(((cpu1[k]! - cpu0[k]!) / sec) * 100)
      }
    })
    const of = (kind: 'full' | 'bare'): typeof per => per.filter(x => x.kind === kind)
    const med = (kind: 'full' | 'bare', f: (x: (typeof per)[number]) => number): number => median(of(kind).map(f))
    const ratio = (f: (x: (typeof per)[number]) => number): number => r2(med('full', f) / med('bare', f))
    // Per round: each process's median over that part of the window, then as above.
    const roundLen = Math.max(1, Math.floor(p.sampleS / p.rounds))
    const roundRatios: number[] = []
    for (let r = 0; r < p.rounds && r * roundLen < p.sampleS; r++) {
      const kindMed = (kind: 'full' | 'bare'): number =>
        median(
          ordered.flatMap((x, k) =>
            x.kind === kind ? [median(samples[k]!.slice(r * roundLen, (r + 1) * roundLen).map(v => v.rss))] : []
          )
        )
      roundRatios.push(r2(kindMed('full') / kindMed('bare')))
    }
    const range = (kind: 'full' | 'bare'): number[] => [
      r1(Math.min(...of(kind).map(x => x.rssMb))),
      r1(Math.max(...of(kind).map(x => x.rssMb)))
    ]
    return {
      idleS: p.idleS,
      sampleS: p.sampleS,
      pairs: p.pairs,
      cli,
      full: launch.fullDesc,
      bare: launch.bareDesc,
      peerRssMb: r1(med('full', x => x.rssMb)),
      bareRssMb: r1(med('bare', x => x.rssMb)),
      rssRatio: ratio(x => x.rssMb),
      rssRatioRounds: roundRatios,
      rssRatioSpread: [Math.min(...roundRatios), Math.max(...roundRatios)],
      peerRssRangeMb: range('full'),
      bareRssRangeMb: range('bare'),
      unforcedRssRatio: ratio(x => x.unforcedRssMb),
      anonRatio: ratio(x => x.anonMb),
      peerAnonMb: r1(med('full', x => x.anonMb)),
      bareAnonMb: r1(med('bare', x => x.anonMb)),
      peerFileMb: r1(med('full', x => x.fileMb)),
      bareFileMb: r1(med('bare', x => x.fileMb)),
      peerHeapUsedMb: r1(med('full', x => x.heapUsedMb)),
      bareHeapUsedMb: r1(med('bare', x => x.heapUsedMb)),
      peerHeapTotalMb: r1(med('full', x => x.heapTotalMb)),
      bareHeapTotalMb: r1(med('bare', x => x.heapTotalMb)),
      peerExternalMb: r1(med('full', x => x.externalMb)),
      bareExternalMb: r1(med('bare', x => x.externalMb)),
      spacesUsedMb: spaces(per),
      peerThreads: med('full', x => x.threads),
      bareThreads: med('bare', x => x.threads),
      peerCpuPct: r2(med('full', x => x.cpuPct)),
      bareCpuPct: r2(med('bare', x => x.cpuPct)),
      processes: per,
      loadavg: { start: load0.map(r2), atGc: load1.map(r2), end: loadavg().map(r2) }
    }
  } finally {
    await Promise.all(
      procs.map(async x => {
        await x.stop()
      })
    )
  }
}
