/**
 * Partition heal, with a real network partition: two network namespaces
 * (side A, side B) joined by one veth pair; two full peer processes on each
 * side, all four connected (a full mesh, four connections crossing the
 * link). A partition is an nftables table on each side's end of the link
 * (`nft`, as the tests' NAT routers use; its input chain is shown below);
 * within a side, traffic (over the namespace's own loopback route) goes on.
 *
 *   drop:  iifname <veth> drop, on both sides: a black hole. TCP
 *          connections stay up and retransmit; nothing is closed.
 *   reset: iifname <veth> tcp flags & rst == 0 reject with tcp reset, on
 *          both sides: every crossing connection is reset the next time it
 *          carries a packet, and redials are refused until the heal.
 *
 * Heal deletes the table. Needs root, iproute2 and nftables (bench/net/index.ts
 * checks for them, or installs them, before any part runs).
 *
 * Each trial: partition, publish `perSide` events on each side (side A's
 * first peer, side B's first peer: renewals of disjoint leaves), check the
 * sides diverged, heal (delete the rules), then time until every peer holds
 * the union (the same count as the parent published, and the same hash).
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { log, makeNetns, deleteNetns, sh, sleep, spawnChild, stopChildren, tempDir, waitAll } from './harness.js'
import type { Child } from './harness.js'
import type { RenewalSet } from './events.js'
import { hiNow } from './proto.js'
import { median } from '../common/util.js'

export type HealMode = 'drop' | 'reset'

interface Side {
  ns: string
  veth: string
  ip: string
}

/** The table a partition adds in each side's namespace, and heal deletes. */
const TABLE = 'plan_swarm_heal'

function rule(mode: HealMode, veth: string): string {
  return mode === 'drop' ? `iifname "${veth}" drop` : `iifname "${veth}" tcp flags & rst == 0 reject with tcp reset`
}

function nft(ns: string, script: string): void {
  execFileSync('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], { input: script, stdio: ['pipe', 'ignore', 'pipe'] })
}

function partition(mode: HealMode, sides: readonly Side[]): void {
  for (const s of sides) {
    nft(
      s.ns,
      `table inet ${TABLE} {\n  chain input {\n    type filter hook input priority filter; policy accept;\n` +
        `    ${rule(mode, s.veth)}\n  }\n}\n`
    )
  }
}

function heal(sides: readonly Side[]): void {
  for (const s of sides) nft(s.ns, `delete table inet ${TABLE}\n`)
}

export interface HealParams {
  readonly trials: number
  readonly partitionMs: number
  readonly perSide: number
  readonly timeoutMs: number
  readonly modes: HealMode[]
}

async function healTrials(mode: HealMode, set: RenewalSet, p: HealParams): Promise<Record<string, unknown>> {
  const tag = `${process.pid % 100_000}`
  const root = tempDir('plan-swarm-net-heal-')
  const sides: Side[] = [
    { ns: makeNetns(`psb-a-${tag}`), veth: `psba${tag}`, ip: '10.203.0.1' },
    { ns: makeNetns(`psb-b-${tag}`), veth: `psbb${tag}`, ip: '10.203.0.2' }
  ]
  const children: Child[] = []
  try {
    sh('ip', ['link', 'add', sides[0]!.veth, 'type', 'veth', 'peer', 'name', sides[1]!.veth])
    for (const s of sides) {
      sh('ip', ['link', 'set', s.veth, 'netns', s.ns])
      sh('ip', ['-n', s.ns, 'addr', 'add', `${s.ip}/24`, 'dev', s.veth])
      sh('ip', ['-n', s.ns, 'link', 'set', s.veth, 'up'])
    }
    const cfg = (s: Side, name: string, bootstrap?: string) => ({
      swarm: 'test',
      listen: `/ip4/${s.ip}/tcp/0`,
      dataDir: join(root, name),
      ...(bootstrap !== undefined ? { bootstrap: [bootstrap] } : {})
    })
    const a1 = await spawnChild('a1', 'peer', cfg(sides[0]!, 'a1'), { netns: sides[0]!.ns })
    children.push(a1)
    const boot = a1.addrs[0] as string
    const rest = await Promise.allSettled([
      spawnChild('a2', 'peer', cfg(sides[0]!, 'a2', boot), { netns: sides[0]!.ns }),
      spawnChild('b1', 'peer', cfg(sides[1]!, 'b1', boot), { netns: sides[1]!.ns }),
      spawnChild('b2', 'peer', cfg(sides[1]!, 'b2', boot), { netns: sides[1]!.ns })
    ])
    for (const r of rest) if (r.status === 'fulfilled') children.push(r.value)
    const bad = rest.find(r => r.status === 'rejected')
    if (bad !== undefined) throw (bad as PromiseRejectedResult).reason
    const b1 = children[2] as Child
    const loaded = await Promise.all(children.map(async c => await c.request({ cmd: 'load', file: set.skeletonFile })))
    if (loaded.some(l => l.hash !== loaded[0]?.hash)) throw new Error('skeleton loaded differently')
    await Promise.all(
      children.map(async (c, i) => {
        if (i > 0) await c.request({ cmd: 'dial', addrs: children.slice(0, i).map(x => x.addrs[0]) })
      })
    )
    await waitAll(
      '4 peers in a full mesh',
      children,
      s => (s.connected as number) >= 3 && (s.topicPeers as number) >= 3,
      120_000
    )
    await sleep(2_000)
    await Promise.all(children.map(async c => await c.request({ cmd: 'watch' })))

    let expected = set.skeletonCount
    let cursor = 0
    const results: Array<Record<string, unknown>> = []
    for (let t = 0; t < p.trials; t++) {
      partition(mode, sides)
      const tPart = Date.now()
      // Publish over the first half of the partition, so some events are in flight when the cut is fresh.
      const rate = p.perSide / (p.partitionMs / 2 / 1000)
      await Promise.all([
        a1.request({ cmd: 'publish', file: set.sideFiles[0], from: cursor, to: cursor + p.perSide, rate }),
        b1.request({ cmd: 'publish', file: set.sideFiles[1], from: cursor, to: cursor + p.perSide, rate })
      ])
      cursor += p.perSide
      expected += 2 * p.perSide
      const left = tPart + p.partitionMs - Date.now()
      if (left > 0) await sleep(left)
      const before = await Promise.all(children.map(async c => await c.request({ cmd: 'state' })))
      const diverged =
        before[0]!.hash === before[1]!.hash &&
        before[2]!.hash === before[3]!.hash &&
        before[0]!.hash !== before[2]!.hash &&
        before.every(s => (s.held as number) === expected - p.perSide)
      const reach = children.map(c => c.waitLine(l => l.ev === 'hash' && (l.held as number) >= expected, p.timeoutMs))
      const tHeal = hiNow()
      heal(sides)
      const settled = await Promise.allSettled(reach)
      const lines = settled.map(s => (s.status === 'fulfilled' ? s.value : undefined))
      const converged = lines.every(l => l !== undefined && l.hash === lines[0]?.hash && l.held === expected)
      const healMs = converged ? Math.round(Math.max(...lines.map(l => (l?.t as number) - tHeal))) : null
      const perPeer = lines.map(l => (l === undefined ? null : Math.round((l.t as number) - tHeal)))
      let reconnectMs: number | null = null
      if (mode === 'reset' || !converged) {
        try {
          await waitAll('the mesh to reconnect', children, s => (s.connected as number) >= 3, 90_000)
          reconnectMs = Math.round(hiNow() - tHeal)
        } catch (err) {
          log(`  ${(err as Error).message}`)
        }
      }
      results.push({
        healMs,
        perPeer,
        diverged,
        converged,
        reconnectMs,
        loadavg: loadavg().map(x => Math.round(x * 100) / 100)
      })
      log(
        `heal ${mode} trial ${t + 1}/${p.trials}: ${healMs === null ? 'NOT converged' : `${healMs} ms`} ` +
          `(per peer ${perPeer.join(', ')}; diverged before ` +
          `heal: ${diverged}${reconnectMs !== null ? `; mesh back after ${reconnectMs} ms` : ''})`
      )
      if (!converged) {
        const states = await Promise.all(children.map(async c => await c.request({ cmd: 'state' })))
        log(
          `  states: ${JSON.stringify(states.map(s => ({ held: s.held, connected: s.connected, hash: String(s.hash).slice(0, 8) })))}`
        )
        // Let the next trial start from one set again, if sync gets there.
        await waitAll('one hash again', children, s => (s.held as number) === expected, 120_000).catch(() => undefined)
      }
      await sleep(1_000)
    }
    const ok = results.filter(r => r.healMs !== null).map(r => r.healMs as number)
    return {
      mode,
      trials: results.length,
      converged: ok.length,
      diverged: results.filter(r => r.diverged === true).length,
      healP50Ms: Math.round(median(ok)),
      healMaxMs: ok.length === results.length ? Math.max(...ok) : null,
      healMs: results.map(r => r.healMs),
      perTrial: results
    }
  } finally {
    await stopChildren(children)
    for (const s of sides) deleteNetns(s.ns) // deletes the veth pair with it
  }
}

export async function benchHeal(set: RenewalSet, p: HealParams): Promise<Record<string, unknown>> {
  if (set.sideIds[0].length < p.trials * p.perSide || set.sideIds[1].length < p.trials * p.perSide)
    throw new Error('not enough renewals per side for the heal trials')
  const out: Record<string, unknown> = { partitionMs: p.partitionMs, eventsPerSidePerTrial: p.perSide }
  for (const mode of p.modes) {
    log(`heal: mode ${mode}, ${p.trials} trials, partition ${p.partitionMs} ms, ${p.perSide} events per side`)
    out[mode] = await healTrials(mode, set, p)
  }
  return out
}
