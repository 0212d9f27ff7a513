/**
 * Resilience scenario 9, admission: a swarm of processes that all use one
 * `--swarm-key` and one `--allow-peers` list (every honest node and the
 * submitting client), driven by the fake LLM server, plans a goal; two
 * intruder processes try to take part in it:
 *
 *   - one without the swarm key (a decomposer, --bootstrap to every node);
 *   - one with the swarm key but outside the allowlist (a decomposer, the same).
 *
 * Each intruder's store is seeded with the honest goal before it starts, so
 * it really works on the plan: it proposes splits for the root, which it
 * signs, stores and publishes (its own store shows them). None of it may
 * reach the swarm: zero events authored by an intruder in any honest store,
 * no connection to an honest node, and the honest swarm completes the plan
 * with the five invariants holding.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import { openEventStore } from '../../src/store/event-store.js'
import {
  EXIT,
  cliEnv,
  parseJsonLine,
  removeTempDirs,
  runCli,
  spawnCli,
  stopCliChildren,
  tempDir
} from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { startFakeLlm } from '../helpers/fake-llm.js'
import { checkInvariants, readStoreRows } from '../helpers/invariants.js'
import { printMeasured, Stopwatch } from '../helpers/swarm.js'
import type { CliChild } from '../helpers/cli-process.js'
import type { FakeLlm } from '../helpers/fake-llm.js'
import { decodeEvent } from '../../src/wire/decode.js'

const SWARM = 'res-admission'
const START_MS = 120_000
const PLAN_MS = 240_000

interface Proc {
  name: string
  role: string
  dataDir: string
  peerId: string
  child?: CliChild
  http?: string
  addresses?: string[]
}

describe('resilience: admission by swarm key and allowlist', () => {
  let fake: FakeLlm | undefined
  afterAll(async () => {
    await stopCliChildren()
    await fake?.close()
    removeTempDirs()
  }, 60_000)

  it('an intruder without the key and one outside the allowlist leave zero events in any store', async () => {
    const clock = new Stopwatch()
    fake = await startFakeLlm({ latencyMs: 50, auto: { children: 2, leafDepth: 2 } })
    const home = tempDir('res-admission')
    const env = cliEnv(home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: fake.url })
    const keygen = await runCli(['keygen'], { env })
    expect(keygen.code, keygen.stderr).toBe(EXIT.OK)
    const keyFile = join(home, 'swarm.key')
    writeFileSync(keyFile, keygen.stdout)
    const otherKey = await runCli(['keygen'], { env })
    const otherKeyFile = join(home, 'other.key')
    writeFileSync(otherKeyFile, otherKey.stdout)

    const make = async (name: string, role: string): Promise<Proc> => {
      const dataDir = join(home, name)
      const id = await loadOrCreateIdentity(dataDir)
      return { name, role, dataDir, peerId: id.peerId.toString() }
    }
    const honest = [
      await make('observer', 'observer'),
      await make('decomposer', 'decomposer'),
      await make('scorer-1', 'scorer'),
      await make('scorer-2', 'scorer'),
      await make('executor', 'executor')
    ]
    const client = await make('client', 'client')
    const noKey = await make('intruder-no-key', 'decomposer')
    const notListed = await make('intruder-not-listed', 'decomposer')
    const allowFile = join(home, 'allow.txt')
    writeFileSync(allowFile, `# the honest swarm\n${[...honest, client].map(p => p.peerId).join('\n')}\n`)

    const common = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0', '--json']
    const launch = async (p: Proc, args: readonly string[]): Promise<void> => {
      p.child = spawnCli(
        [
          '--role',
          p.role,
          ...common,
          '--data-dir',
          p.dataDir,
          '--http',
          '127.0.0.1:0',
          '--model',
          `fake-${p.name}`,
          ...args
        ],
        { env, name: p.name }
      )
      const started = await p.child.waitForJson(o => o.event === 'started', START_MS)
      p.http = started.http as string
      p.addresses = started.addresses as string[]
    }
    const admitted = ['--swarm-key', keyFile, '--allow-peers', allowFile]
    const [seed, ...rest] = honest as [Proc, ...Proc[]]
    await launch(seed, admitted)
    const seedAddr = seed.addresses?.[0] as string
    await Promise.all(
      rest.map(async p => {
        await launch(p, [...admitted, '--bootstrap', seedAddr])
      })
    )
    await waitUntil(
      'the seed to see every honest node',
      async () => {
        const st = (await (await fetch(`${seed.http as string}/status`)).json()) as {
          roster: Array<{ peerId: string }>
        }
        return rest.every(p => st.roster.some(r => r.peerId === p.peerId)) ? true : undefined
      },
      START_MS
    )
    clock.mark('swarm up')

    const committee = honest.filter(p => p.role === 'scorer').map(p => p.peerId)
    const sub = await runCli(
      [
        'submit',
        'plan a weekend in Lisbon',
        ...common,
        '--bootstrap',
        seedAddr,
        ...admitted,
        '--data-dir',
        client.dataDir,
        '--committee',
        committee.join(','),
        '--max-depth',
        '2',
        '--lease-ms',
        '5000'
      ],
      { env, name: 'submit' },
      START_MS
    )
    expect(sub.code, sub.stderr).toBe(EXIT.OK)
    const plan = sub.stdout
      .split('\n')
      .map(parseJsonLine)
      .find(o => o?.plan !== undefined)?.plan as string
    clock.mark('submitted')

    // The intruders get the goal (as if they had learnt it elsewhere) and dial every honest node.
    const goalRow = readStoreRows(client.dataDir).find(r => r.id === plan)
    expect(goalRow).toBeDefined()
    for (const p of [noKey, notListed]) {
      const store = openEventStore({ dir: p.dataDir })
      store.put({ id: plan, plan, bytes: new Uint8Array(goalRow?.bytes as Uint8Array), receivedMs: Date.now() })
      store.close()
    }
    const everyone = honest.map(p => p.addresses?.[0] as string)
    await Promise.all([
      launch(
        noKey,
        everyone.flatMap(a => ['--bootstrap', a])
      ),
      launch(notListed, ['--swarm-key', keyFile, ...everyone.flatMap(a => ['--bootstrap', a])])
    ])
    // A client with the wrong key tries to submit a goal of its own.
    const wrongKeyClient = runCli(
      [
        'submit',
        'plan an intrusion',
        ...common,
        '--bootstrap',
        seedAddr,
        '--swarm-key',
        otherKeyFile,
        '--data-dir',
        join(home, 'intruder-client'),
        '--timeout',
        '15'
      ],
      { env, name: 'intruder-submit' },
      60_000
    )

    // They work on the plan: each proposes a split for the root, in its own store.
    const authored = (p: Proc, dir: string): number =>
      readStoreRows(dir).filter(r => {
        const d = decodeEvent(new Uint8Array(r.bytes), { swarm: SWARM, verify: false })
        return d.kind === 'event' && d.event.env.author === p.peerId
      }).length
    await waitUntil(
      'both intruders to sign proposals of their own',
      () => ([noKey, notListed].every(p => authored(p, p.dataDir) > 0) ? true : undefined),
      PLAN_MS
    )
    clock.mark('intruders active')

    const seedHttp = seed.http as string
    await waitUntil(
      'the honest swarm to complete the plan',
      async () => {
        const r = await fetch(`${seedHttp}/plans/${plan}`)
        const b = r.ok ? ((await r.json()) as { tree: { status: string } }) : undefined
        return b?.tree.status === 'completed' ? true : undefined
      },
      PLAN_MS
    )
    clock.mark('completed')
    const wrong = await wrongKeyClient
    expect(wrong.code, wrong.stderr).toBe(EXIT.TIMEOUT)

    // Zero events of an intruder in any honest store (and none of the wrong-key client's goal).
    const intruderIds = new Set([noKey.peerId, notListed.peerId])
    for (const p of [...honest, client]) {
      const foreign = readStoreRows(p.dataDir).filter(r => {
        const d = decodeEvent(new Uint8Array(r.bytes), { swarm: SWARM, verify: false })
        return (
          d.kind !== 'event' ||
          intruderIds.has(d.event.env.author) ||
          d.event.env.body === undefined ||
          (d.event.env.type === 'goal-submitted' && d.event.id !== plan)
        )
      })
      expect(
        foreign.map(r => r.id),
        `${p.name} holds events it should not`
      ).toEqual([])
    }
    // Nothing got through either way: no honest node ever heard an intruder's presence, and the
    // intruders heard no one's. (Their own peer count is not checked: the one with the key
    // finishes its side of the encryption handshake and may count a connection for the moment
    // it takes the honest node, which refuses it right after the handshake, to close it.)
    for (const p of honest) {
      const st = (await (await fetch(`${p.http as string}/status`)).json()) as { roster: Array<{ peerId: string }> }
      expect(
        st.roster.filter(r => intruderIds.has(r.peerId)),
        `${p.name} heard an intruder`
      ).toEqual([])
    }
    for (const p of [noKey, notListed]) {
      const st = (await (await fetch(`${p.http as string}/status`)).json()) as { roster: Array<{ peerId: string }> }
      expect(
        st.roster.filter(r => r.peerId !== p.peerId),
        `${p.name} heard someone`
      ).toEqual([])
    }
    const report = await checkInvariants({
      swarm: SWARM,
      stores: [
        ...honest.map(p => ({ name: p.name, dataDir: p.dataDir, live: true })),
        { name: 'client', dataDir: client.dataDir, live: false }
      ],
      live: honest.map(p => ({ name: p.name, http: p.http as string, pid: p.child?.pid })),
      plans: [plan],
      convergeTimeoutMs: 60_000
    })
    expect(report.failures, report.failures.join('\n')).toEqual([])
    expect(report.plans[0]?.status).toBe('completed')
    printMeasured('admission', {
      honestNodes: honest.length,
      intruderEventsInOwnStores: {
        noKey: authored(noKey, noKey.dataDir),
        notListed: authored(notListed, notListed.dataDir)
      },
      startMs: clock.marks['swarm up'],
      submitToCompletedMs: (clock.marks.completed ?? 0) - (clock.marks.submitted ?? 0),
      unionEvents: report.unionEvents,
      maxRssMb: Math.round(Math.max(...Object.values(report.rssBytes)) / 2 ** 20)
    })
  }, 600_000)
})
