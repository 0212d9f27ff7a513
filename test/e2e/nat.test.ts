/**
 * Across NATs, with real processes: two private LANs, each behind its own
 * NAT router (nftables masquerade, new inbound connections dropped), and a
 * public segment with a relay (`--relay --announce`) and a second public
 * peer (a scorer). Roles are spread over both LANs; the goal is submitted
 * from LAN 2 and its committee has a scorer on each LAN and the public one,
 * so no plan step can finish without crossing both NATs.
 *
 * Asserted: every LAN node gets a relay reservation (it announces a
 * `/p2p-circuit` address); the plan completes with one treeHash on every
 * node left, equal to the fold of the union of their stores, although the
 * relay is SIGKILLed right after the goal is published.
 * Reported (test output): which connections between the LANs were relayed
 * and which direct (DCUtR), and whether AutoNAT confirmed the public peer's
 * address (it announces it only then).
 *
 * Needs root, iproute2 and nftables; skipped, saying why, elsewhere.
 * To look closer: NAT_TEST_DEBUG adds `DEBUG` namespaces to every node (e.g.
 * `libp2p:dcutr*,libp2p:auto-nat*`), NAT_TEST_DUMP=<file> writes every
 * node's connections, announced addresses and stderr tail there.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { foldAll } from '../../src/core/fold.js'
import { generateSwarmKey } from '../../src/net/swarm-key.js'
import { openEventStore } from '../../src/store/event-store.js'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import { decodeEvent } from '../../src/wire/decode.js'
import { cliEnv, parseJsonLine, removeTempDirs, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { createNatNet } from '../helpers/nat-net.js'
import { netnsSkip } from '../helpers/netns.js'
import type { PlanEvent } from '../../src/core/events.js'
import type { CliChild } from '../helpers/cli-process.js'
import type { NatHost, NatNet } from '../helpers/nat-net.js'

const why = netnsSkip('the NAT namespace test', ['nft'])

const SWARM = 'nat'
const PORT = 4001
/** A fresh topology needs about this long before its first connection works. */
const SETTLE_MS = 2_000
const START_MS = 60_000
const PLAN_MS = 90_000

interface Node {
  readonly name: string
  readonly role: string
  readonly host: NatHost
  readonly dataDir: string
  readonly peerId: string
  child?: CliChild
}

interface ConnLine {
  what: 'open' | 'close'
  path: 'direct' | 'relayed'
  peer: string
  address: string
}

const CONN = /plan-swarm:net:connections (open|close) (direct|relayed) (\S+) (?:inbound|outbound) (\S+)/
const ADDRS = /plan-swarm:net:addresses announcing (.*)$/

function connLines(n: Node): ConnLine[] {
  return (n.child?.stderr() ?? '').split('\n').flatMap(l => {
    const m = CONN.exec(l)
    return m === null
      ? []
      : [
          {
            what: m[1] as 'open' | 'close',
            path: m[2] as 'direct' | 'relayed',
            peer: m[3] as string,
            address: (m[4] as string).replace(/ limited$/, '')
          }
        ]
  })
}

function announced(n: Node): string[][] {
  return (n.child?.stderr() ?? '').split('\n').flatMap(l => {
    const m = ADDRS.exec(l)
    return m === null ? [] : [(m[1] as string).trim().split(' ').filter(Boolean)]
  })
}

/** A node's latest view of a plan, from its --json progress lines (an observer prints no progress line: its snapshots have plans too). */
function planOf(n: Node, plan: string): { status: string; treeHash: string } | undefined {
  const lines = n.child?.lines ?? []
  for (let i = lines.length - 1; i >= 0; i--) {
    const o = parseJsonLine(lines[i] as string)
    const plans = o?.plans as Array<{ id: string; status: string; treeHash: string }> | undefined
    const found = plans?.find(p => p.id === plan)
    if (found !== undefined) return found
  }
  return undefined
}

describe.skipIf(why !== undefined)('two LANs behind NAT routers, a relay and a public peer', () => {
  let net: NatNet | undefined
  afterAll(async () => {
    await stopCliChildren(2_000)
    net?.destroy()
    removeTempDirs()
  })

  it('plans a goal to completion across both NATs, also after the relay is killed', async () => {
    const t0 = Date.now()
    const home = tempDir('nat')
    const keyFile = join(home, 'swarm.key')
    writeFileSync(keyFile, generateSwarmKey())
    net = createNatNet()
    const lab = net
    const nodes: Node[] = []
    const prepare = async (name: string, role: string, host: NatHost): Promise<Node> => {
      const dataDir = join(home, name)
      const id = await loadOrCreateIdentity(dataDir)
      const n: Node = { name, role, host, dataDir, peerId: id.peerId.toString() }
      nodes.push(n)
      return n
    }
    const relay = await prepare('relay', 'observer', lab.addPublicHost())
    const pub = await prepare('scorer-pub', 'scorer', lab.addPublicHost())
    const lan1 = [
      await prepare('decomposer-1', 'decomposer', lab.addLanHost(1)),
      await prepare('scorer-1', 'scorer', lab.addLanHost(1)),
      await prepare('executor-1', 'executor', lab.addLanHost(1))
    ]
    const lan2 = [
      await prepare('scorer-2', 'scorer', lab.addLanHost(2)),
      await prepare('executor-2', 'executor', lab.addLanHost(2))
    ]
    const clientHost = lab.addLanHost(2)
    await new Promise(resolve => setTimeout(resolve, SETTLE_MS))

    const addr = (n: Node): string => `/ip4/${n.host.ip}/tcp/${PORT}/p2p/${n.peerId}`
    const bootstrap = ['--bootstrap', addr(relay), '--bootstrap', addr(pub)]
    const debug = [
      'plan-swarm:net:connections',
      'plan-swarm:net:addresses',
      ...(process.env.NAT_TEST_DEBUG ?? '').split(',').filter(Boolean)
    ]
    const env = cliEnv(home, { DEBUG: debug.join(','), DEBUG_COLORS: '0' })
    const common = (n: { name: string; host: NatHost }): string[] => [
      '--swarm',
      SWARM,
      '--no-mdns',
      '--swarm-key',
      keyFile,
      '--listen',
      `/ip4/${n.host.ip}/tcp/${PORT}`,
      '--data-dir',
      join(home, n.name),
      '--json',
      '--provider',
      'offline'
    ]
    const start = (n: Node, extra: string[]): void => {
      n.child = spawnCli(['--role', n.role, ...common(n), ...extra], {
        env,
        name: n.name,
        wrap: ['ip', 'netns', 'exec', n.host.ns]
      })
    }
    start(relay, ['--relay', '--announce', `/ip4/${relay.host.ip}/tcp/${PORT}`, '--bootstrap', addr(pub)])
    start(pub, ['--bootstrap', addr(relay)])
    for (const n of [...lan1, ...lan2]) start(n, bootstrap)
    await Promise.all(nodes.map(async n => await n.child?.waitForJson(o => o.event === 'started', START_MS)))
    const started = Date.now()

    // Every NATed node reserves a slot on the relay and announces itself through it.
    const lanNodes = [...lan1, ...lan2]
    const circuitOf = (n: Node): string | undefined =>
      announced(n)
        .flat()
        .find(a => a.includes(`/p2p/${relay.peerId}/p2p-circuit`))
    await waitUntil(
      'every LAN node to announce a relayed address',
      () => (lanNodes.every(n => circuitOf(n) !== undefined) ? true : undefined),
      30_000
    ).catch((err: Error) => {
      // No slot anywhere: the relay serves none (does --relay reach createSwarmNode's `network`?), or no node asked for one.
      throw new Error(
        `${err.message}\n` +
          `${lanNodes.map(n => `${n.name}: ${JSON.stringify(announced(n).at(-1))}`).join('\n')}\n` +
          `${relay.child?.tail(1500) ?? ''}`
      )
    })
    const reserved = Date.now()

    // ...and a node behind one NAT reaches a node behind the other through it.
    const lanOf = new Map(lanNodes.map(n => [n.peerId, n.host.lan]))
    const acrossNats = (n: Node, path: 'direct' | 'relayed'): ConnLine[] =>
      connLines(n).filter(
        c => c.what === 'open' && c.path === path && lanOf.get(c.peer) !== undefined && lanOf.get(c.peer) !== n.host.lan
      )
    await waitUntil(
      'a relayed connection between the two LANs',
      () => (lanNodes.some(n => acrossNats(n, 'relayed').length > 0) ? true : undefined),
      30_000
    )

    const committee = [lan1[1] as Node, lan2[0] as Node, pub].map(n => n.peerId).join(',')
    const client = spawnCli(
      [
        'submit',
        'plan a two-week trip to Japan',
        ...common({ name: 'client', host: clientHost }),
        ...bootstrap,
        '--committee',
        committee,
        '--max-depth',
        '2',
        '--lease-ms',
        '4000',
        '--timeout',
        '120'
      ],
      { env, name: 'client', wrap: ['ip', 'netns', 'exec', clientHost.ns] }
    )
    const planLine = await client.waitForJson(o => typeof o.plan === 'string', 60_000)
    const plan = planLine.plan as string
    const submitted = Date.now()

    // Mid-plan: the goal is out, nothing of it is decided yet. SIGKILL the relay (its whole process group).
    const relayedBeforeKill = lanNodes.reduce((sum, n) => sum + acrossNats(n, 'relayed').length, 0)
    expect(
      nodes.map(n => planOf(n, plan)?.status).filter(st => st === 'completed'),
      'the plan is still under way when the relay dies'
    ).toEqual([])
    await relay.child?.stop(0, 'SIGKILL')

    const survivors = nodes.filter(n => n !== relay)
    await waitUntil(
      'every node left to see the plan completed with one treeHash',
      () => {
        const views = survivors.map(n => planOf(n, plan))
        if (views.some(v => v?.status !== 'completed')) return undefined
        return new Set(views.map(v => v?.treeHash)).size === 1 ? true : undefined
      },
      PLAN_MS,
      250
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}\n` +
          `${survivors.map(n => `${n.name}: ${JSON.stringify(planOf(n, plan))}`).join('\n')}\n` +
          `${survivors.map(n => n.child?.tail(800) ?? '').join('\n')}`
      )
    })
    const completed = Date.now()
    const hash = planOf(pub, plan)?.treeHash

    // What crossed the NATs, and how.
    const across = lanNodes.flatMap(n =>
      [...acrossNats(n, 'relayed'), ...acrossNats(n, 'direct')].map(c => ({
        from: n.name,
        to: lanNodes.find(o => o.peerId === c.peer)?.name,
        path: c.path,
        address: c.address
      }))
    )
    const pubAnnounced = announced(pub)
    const report = {
      connectionsAcrossNats: {
        relayed: across.filter(c => c.path === 'relayed').length,
        direct: across.filter(c => c.path === 'direct').length,
        directPairs: [
          ...new Set(across.filter(c => c.path === 'direct').map(c => `${c.from}->${c.to} via ${c.address}`))
        ],
        relayedBeforeKill
      },
      dcutr: across.some(c => c.path === 'direct')
        ? 'DCUtR (or a dial) gave a direct connection between the NATed LANs'
        : 'no direct connection between the NATed LANs: relayed until the relay died, then through the public peer',
      autonatConfirmedPublicPeer: pubAnnounced.some(list => list.some(a => a.startsWith(`/ip4/${pub.host.ip}/`))),
      publicPeerAnnounced: pubAnnounced.at(-1),
      lanNodeAnnounced: announced(lan2[0] as Node).at(-1),
      ms: {
        start: started - t0,
        reservations: reserved - started,
        submit: submitted - reserved,
        planAfterKill: completed - submitted,
        total: completed - t0
      }
    }
    if (process.env.NAT_TEST_DUMP !== undefined) {
      writeFileSync(
        process.env.NAT_TEST_DUMP,
        JSON.stringify(
          nodes.map(n => ({
            name: n.name,
            peerId: n.peerId,
            lan: n.host.lan,
            ip: n.host.ip,
            conns: connLines(n),
            announced: announced(n),
            stderr: n.child?.stderr().slice(-50_000)
          })),
          null,
          1
        )
      )
    }
    console.log(`nat test report: ${JSON.stringify(report, null, 2)}`)

    await stopCliChildren(5_000)
    const union = new Map<string, PlanEvent>()
    for (const n of [...survivors, { dataDir: join(home, 'client') }]) {
      const store = openEventStore({ dir: n.dataDir })
      store.load(
        row => {
          const d = decodeEvent(row.bytes, { swarm: SWARM })
          if (d.kind === 'event') union.set(d.event.id, d.event)
        },
        () => {}
      )
      store.close()
    }
    const reference = foldAll(union.values())
    expect(reference.treeHash(plan as never)).toBe(hash)
    expect(reference.tree(plan as never)?.status).toBe('completed')
  }, 150_000)
})
