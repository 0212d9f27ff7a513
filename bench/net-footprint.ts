/**
 * Idle footprint: two full peer processes connected to each other and two
 * bare libp2p node processes connected to each other, all four at once (same
 * conditions); after `idleS` seconds idle, each process's RSS (VmRSS, sampled
 * every second) and CPU (utime + stime from /proc/<pid>/stat) over `sampleS`
 * seconds.
 */
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { cpuSeconds, log, rssMb, sleep, spawnChild, stopChildren, tempDir, waitAll } from './net-harness.js'
import type { Child } from './net-harness.js'
import { median } from './util.js'

export async function benchFootprint (p: { idleS: number, sampleS: number }): Promise<Record<string, unknown>> {
  const root = tempDir('plan-swarm-net-footprint-')
  const children: Child[] = []
  try {
    const p1 = await spawnChild('idle-peer-1', 'peer', { swarm: 'test', listen: '/ip4/127.0.0.1/tcp/0', dataDir: join(root, 'p1') })
    children.push(p1)
    const p2 = await spawnChild('idle-peer-2', 'peer', { swarm: 'test', listen: '/ip4/127.0.0.1/tcp/0', dataDir: join(root, 'p2'), bootstrap: [p1.addrs[0] as string] })
    children.push(p2)
    const b1 = await spawnChild('idle-bare-1', 'bare', { swarm: 'test', listen: '/ip4/127.0.0.1/tcp/0', policy: 'StrictNoSign' })
    children.push(b1)
    const b2 = await spawnChild('idle-bare-2', 'bare', { swarm: 'test', listen: '/ip4/127.0.0.1/tcp/0', policy: 'StrictNoSign' })
    children.push(b2)
    await b2.request({ cmd: 'dial', addrs: [b1.addrs[0]] })
    await waitAll('pairs connected', children, s => (s.connected as number) >= 1 && (s.topicPeers as number) >= 1, 60_000)
    log(`footprint: 2 full peers and 2 bare nodes up and paired; idle ${p.idleS} s, then measuring for ${p.sampleS} s`)
    await sleep(p.idleS * 1000)
    const cpu0 = children.map(c => cpuSeconds(c.pid))
    const t0 = performance.now()
    const rss: number[][] = children.map(() => [])
    for (let i = 0; i <= p.sampleS; i++) {
      children.forEach((c, k) => rss[k]!.push(rssMb(c.pid)))
      if (i < p.sampleS) await sleep(1000)
    }
    const sec = (performance.now() - t0) / 1000
    const cpu1 = children.map(c => cpuSeconds(c.pid))
    const per = children.map((c, k) => ({
      name: c.name,
      rssMb: Math.round(median(rss[k]!) * 10) / 10,
      cpuPct: Math.round((cpu1[k]! - cpu0[k]!) / sec * 100 * 100) / 100
    }))
    const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length
    const peerRss = mean(per.slice(0, 2).map(x => x.rssMb))
    const bareRss = mean(per.slice(2).map(x => x.rssMb))
    const peerCpu = mean(per.slice(0, 2).map(x => x.cpuPct))
    const bareCpu = mean(per.slice(2).map(x => x.cpuPct))
    return {
      idleS: p.idleS,
      sampleS: p.sampleS,
      peerRssMb: Math.round(peerRss * 10) / 10,
      bareRssMb: Math.round(bareRss * 10) / 10,
      rssRatio: Math.round(peerRss / bareRss * 100) / 100,
      peerCpuPct: Math.round(peerCpu * 100) / 100,
      bareCpuPct: Math.round(bareCpu * 100) / 100,
      processes: per,
      loadavg: loadavg().map(x => Math.round(x * 100) / 100)
    }
  } finally {
    await stopChildren(children)
  }
}
