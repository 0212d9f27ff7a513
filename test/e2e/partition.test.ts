/**
 * A real partition: peers as separate processes in network namespaces on two
 * LAN segments; the link between the segments is cut for 10 s mid-plan and
 * restored. Afterwards every peer holds the same tree, equal to the fold of
 * the union of all their stores, and the plan completed.
 *
 * Needs root and iproute2 (CI installs it); skipped, saying why, elsewhere.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { afterAll, describe, expect, it } from 'vitest'
import { foldAll } from '../../src/core/fold.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { openEventStore } from '../../src/store/event-store.js'
import { CLI } from '../helpers/cli-process.js'
import { netnsSkip } from '../helpers/netns.js'
import { createPartitionNet } from '../helpers/partition-net.js'
import { waitUntil } from '../helpers/wait.js'
import type { ChildProcess } from 'node:child_process'
import type { PlanEvent } from '../../src/core/events.js'
import type { PartitionNet } from '../helpers/partition-net.js'

const ROOT = resolve(import.meta.dirname, '..', '..')
const why = netnsSkip('the partition test')

interface Proc {
  name: string
  child: ChildProcess
  lines: Array<Record<string, unknown>>
  dir: string
}

describe.skipIf(why !== undefined)('partition and heal between real processes', () => {
  const procs: Proc[] = []
  let net: PartitionNet | undefined
  const dir = mkdtempSync(join(tmpdir(), 'plan-swarm-partition-'))
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL')
    await new Promise(resolve => setTimeout(resolve, 300))
    net?.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  function run(name: string, ns: string, args: string[]): Proc {
    const child = spawn('ip', ['netns', 'exec', ns, ...CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    const p: Proc = { name, child, lines: [], dir: join(dir, name) }
    createInterface({ input: child.stdout }).on('line', l => {
      try {
        p.lines.push(JSON.parse(l) as Record<string, unknown>)
      } catch {
        /* text */
      }
    })
    child.stderr.resume()
    procs.push(p)
    return p
  }

  /** A peer's latest view of one plan, from its --json progress lines. */
  function planOf(p: Proc, plan: string): { status: string; treeHash: string } | undefined {
    for (let i = p.lines.length - 1; i >= 0; i--) {
      const plans = p.lines[i]?.plans as Array<{ id: string; status: string; treeHash: string }> | undefined
      const found = plans?.find(x => x.id === plan)
      if (found !== undefined) return found
    }
    return undefined
  }

  it('ends with one treeHash everywhere, equal to the fold of the union of the stores', async () => {
    net = createPartitionNet()
    const common = (p: string, ipAddr: string): string[] => [
      '--swarm',
      'part',
      '--no-mdns',
      '--listen',
      `/ip4/${ipAddr}/tcp/4001`,
      '--data-dir',
      join(dir, p),
      '--json',
      '--provider',
      'offline'
    ]
    const a1host = net.addHost('A')
    const a1 = run('scorer-a1', a1host.ns, ['--role', 'scorer', ...common('scorer-a1', a1host.ip)])
    const started = await waitUntil('the first peer to start', () => a1.lines.find(l => l.event === 'started'), 60_000)
    const seed = (started.addresses as string[]).find(a => a.includes(a1host.ip)) as string
    const layout: Array<[string, 'A' | 'B', string]> = [
      ['scorer-a2', 'A', 'scorer'],
      ['decomposer-a', 'A', 'decomposer'],
      ['executor-a', 'A', 'executor'],
      ['scorer-b', 'B', 'scorer'],
      ['decomposer-b', 'B', 'decomposer'],
      ['executor-b1', 'B', 'executor'],
      ['executor-b2', 'B', 'executor']
    ]
    const hosts: Record<string, { ns: string; ip: string }> = {}
    for (const [name, side, role] of layout) {
      const h = net.addHost(side)
      hosts[name] = h
      run(name, h.ns, ['--role', role, ...common(name, h.ip), '--bootstrap', seed])
    }
    await waitUntil(
      'every peer to start',
      () => (procs.every(p => p.lines.some(l => l.event === 'started')) ? true : undefined),
      90_000
    )

    const client = net.addHost('A')
    const submit = run('client', client.ns, [
      'submit',
      'plan a two-week trip to Japan',
      '--swarm',
      'part',
      '--no-mdns',
      '--listen',
      `/ip4/${client.ip}/tcp/4001`,
      '--bootstrap',
      seed,
      '--data-dir',
      join(dir, 'client'),
      '--json',
      '--max-depth',
      '2',
      '--lease-ms',
      '4000',
      '--timeout',
      '120'
    ])
    const plan = (await waitUntil('the plan id', () => submit.lines.find(l => typeof l.plan === 'string'), 120_000))
      .plan as string

    net.cut()
    await new Promise(resolve => setTimeout(resolve, 10_000))
    net.heal()

    const peers = procs.filter(p => p.name !== 'client')
    await waitUntil(
      'every peer to see the plan completed with one treeHash',
      () => {
        const views = peers.map(p => planOf(p, plan))
        if (views.some(v => v?.status !== 'completed')) return undefined
        return new Set(views.map(v => v?.treeHash)).size === 1 ? true : undefined
      },
      180_000
    )
    const hash = planOf(peers[0] as Proc, plan)?.treeHash

    for (const p of procs) p.child.kill('SIGTERM')
    await waitUntil(
      'the processes to stop',
      () => (procs.every(p => p.child.exitCode !== null || p.child.signalCode !== null) ? true : undefined),
      20_000
    )
    const union = new Map<string, PlanEvent>()
    for (const p of peers) {
      const store = openEventStore({ dir: p.dir })
      store.load(
        row => {
          const d = decodeEvent(row.bytes, { swarm: 'part' })
          if (d.kind === 'event') union.set(d.event.id, d.event)
        },
        () => {}
      )
      store.close()
    }
    const reference = foldAll(union.values())
    expect(reference.treeHash(plan as never)).toBe(hash)
    const tree = reference.tree(plan as never)
    expect(tree?.status).toBe('completed')
    for (const t of tree?.tasks ?? []) expect(t.results.filter(r => r.accepted).length).toBeLessThanOrEqual(1)
  }, 420_000)
})
