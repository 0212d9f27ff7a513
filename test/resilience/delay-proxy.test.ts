/**
 * Resilience scenario 6, delay, jitter and resets. The kernel has no netem,
 * so every byte between two nodes goes through the userspace proxy of
 * ./tcp-proxy.ts, which holds each chunk 50 ms +- 20 ms and resets a random
 * live connection now and then.
 *
 * How the nodes are kept on the proxy: each node is alone in a network
 * namespace whose only link goes to this (root) namespace, with a route to
 * its own /24 and no default route (./net-lab.ts, star hosts). A node listens
 * on its own management address; the addresses it announces in presence and
 * identify are therefore unreachable from every other node (no route), and
 * the only addresses that work are the proxy's listeners on the node's own
 * link, given as `--bootstrap` (with `--no-mdns`). Nothing in the product is
 * told about the proxy; the network simply has no other path. The proxy's
 * connection count shows it carried the swarm.
 *
 * The plan completes and the five invariants hold.
 *
 * Needs root and iproute2; skipped, saying why, elsewhere.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { netnsSkip } from '../helpers/netns.js'
import { NetSwarm } from '../helpers/net-swarm.js'
import { printMeasured, Stopwatch } from '../helpers/swarm.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import type { NetNode } from '../helpers/net-swarm.js'
import type { ProxyRoute, TcpProxy } from '../helpers/tcp-proxy.js'
import type { LabHost } from '../helpers/net-lab.js'

const why = netnsSkip('the delay-proxy scenario')

const PLAN_MS = 300_000
const DELAY = { delayMs: 50, jitterMs: 20, resetEveryMs: 4_000 }

describe.skipIf(why !== undefined)(
  'resilience: delay, jitter and connection resets between every pair of nodes',
  () => {
    let s: NetSwarm | undefined
    let proxy: TcpProxy | undefined
    afterAll(async () => {
      await proxy?.close()
      await s?.close()
    }, 60_000)

    it('the plan completes and converges, every node on the same treeHash as the fold of the union', async () => {
      const clock = new Stopwatch()
      s = await NetSwarm.create({ label: 'delay', fake: { latencyMs: 100, auto: { children: 2, leafDepth: 2 } } })
      const roles = ['decomposer', 'scorer', 'scorer', 'executor', 'executor']
      const nodes: NetNode[] = []
      for (const [i, role] of roles.entries()) nodes.push(await s.prepare(`${role}-${i}`, role, await s.host()))
      const clientHost = await s.host()

      // One route per ordered pair (from -> to), listening on the `from` host's link.
      const hosts: LabHost[] = [...nodes.map(n => n.host), clientHost]
      const routes: ProxyRoute[] = []
      const index: Array<{ from: LabHost; to: NetNode }> = []
      for (const from of hosts) {
        for (const to of nodes) {
          if (to.host === from) continue
          routes.push({ listenHost: from.rootIp, listenPort: 0, targetHost: to.host.mgmtIp, targetPort: 4001 })
          index.push({ from, to })
        }
      }
      proxy = await startTcpProxy(routes, DELAY)
      const p = proxy
      const via = (from: LabHost): string[] =>
        index.flatMap((r, i) =>
          r.from === from ? [`/ip4/${from.rootIp}/tcp/${p.listening[i]?.port ?? 0}/p2p/${r.to.peerId}`] : []
        )

      const sw = s
      // Each node dials the nodes started before it (one connection per pair: simultaneous dials both
      // ways through two proxies would race); the client dials everyone.
      const earlier = (n: NetNode): string[] =>
        via(n.host).filter(a => nodes.slice(0, nodes.indexOf(n)).some(o => a.endsWith(o.peerId)))
      await Promise.all(
        nodes.map(async n => {
          await sw.start(n, `/ip4/${n.host.mgmtIp}/tcp/4001`, earlier(n))
        })
      )
      await s.waitRoster(nodes[0] as NetNode, nodes).catch(async (err: Error) => {
        const st = await Promise.all(
          nodes.map(
            async n =>
              await sw.status(n).then(
                x => `${n.name}: ${x.peers} peers, roster ${x.roster.map(r => r.role).join(',')}`,
                (e: Error) => `${n.name}: ${e.message}`
              )
          )
        )
        throw new Error(`${err.message}\n${st.join('\n')}\nproxy ${JSON.stringify(p.stats)}\n${sw.tails(1500)}`)
      })
      clock.mark('swarm up')
      const connectionsAtStart = proxy.stats.connections

      const committee = nodes.filter(n => n.role === 'scorer').map(n => n.peerId)
      const { plan } = await s.submit(
        clientHost,
        'plan a weekend in Lisbon',
        `/ip4/${clientHost.mgmtIp}/tcp/4001`,
        via(clientHost),
        ['--committee', committee.join(','), '--max-depth', '2', '--lease-ms', '5000']
      )
      clock.mark('submitted')
      await s
        .waitPlan(nodes[0] as NetNode, plan, 'the plan to complete', t => t.status === 'completed', PLAN_MS)
        .catch(async (err: Error) => {
          const st = await Promise.all(
            nodes.map(
              async n =>
                await sw.status(n).then(
                  x =>
                    `${n.name}: ${x.peers} peers, ${JSON.stringify(x.plans)}, ` +
                    `events ${JSON.stringify((x as unknown as { events: unknown }).events)}`,
                  (e: Error) => `${n.name}: ${e.message}`
                )
            )
          )
          const tree = await sw.plan(nodes[0] as NetNode, plan)
          throw new Error(
            `${err.message}\n${st.join('\n')}\nproxy ${JSON.stringify(p.stats)}\n` +
              `${JSON.stringify(tree?.tree.nodes.map(x => ({ s: x.status, w: (x as unknown as { waiting?: unknown }).waiting })))}` +
              `\n${sw.tails(1500)}`
          )
        })
      clock.mark('completed')
      const report = await s.checkInvariants({ plans: [plan], convergeTimeoutMs: 120_000 })
      clock.mark('converged')
      expect(report.failures, `${report.failures.join('\n')}\n${s.tails()}`).toEqual([])
      expect(report.plans[0]?.status).toBe('completed')
      // The proxy carried the swarm and did reset connections while the plan ran.
      expect(connectionsAtStart).toBeGreaterThanOrEqual(nodes.length - 1)
      expect(proxy.stats.resets).toBeGreaterThan(0)

      const st = proxy.stats
      printMeasured('delay-proxy', {
        nodes: nodes.length,
        delay: DELAY,
        treeNodes: report.plans[0]?.nodes,
        duplicates: report.plans[0]?.duplicates,
        proxiedConnections: st.connections,
        resets: st.resets,
        chunks: st.chunks,
        meanHeldMs: st.chunks === 0 ? 0 : Math.round(st.heldMs / st.chunks),
        maxHeldMs: Math.round(st.maxHeldMs),
        startMs: clock.marks['swarm up'],
        submitToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.submitted ?? 0),
        completedToConvergedMs: (clock.marks.converged ?? 0) - (clock.marks.completed ?? 0),
        unionEvents: report.unionEvents,
        maxRssMb: Math.round(Math.max(...Object.values(report.rssBytes)) / 2 ** 20)
      })
    }, 600_000)
  }
)
