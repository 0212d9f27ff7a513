/**
 * The client commands against a running local swarm of real processes
 * (an observer with --http as the seed, a decomposer, a scorer and an
 * executor, joined by --bootstrap addresses, --no-mdns, offline provider):
 *   - `submit "<goal>" --wait` exits 0 and prints the plan id, then the
 *     deliverable, which is the completed plan's deliverable as the observer
 *     holds it;
 *   - `export <plan-id> --markdown FILE` writes the plan as Markdown, and
 *     `export <plan-id> --json` prints the tree with the swarm's treeHash;
 *   - `cancel` acts as the goal's author (the key in the default client data
 *     dir), and refuses, with exit 2, to act with another key.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXIT, cliEnv, removeTempDirs, runCli, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import type { CliChild } from '../helpers/cli-process.js'

const SWARM = 'cli-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
/** A whole plan, offline, on a busy 2-core machine. */
const PLAN_MS = 300_000
const CLIENT_MS = 120_000
const GOAL = 'plan a weekend in Lisbon'

interface PlanBody {
  treeHash: string
  tree: { status: string; statusReason?: string; deliverable: { output: string } | null }
}

describe('client commands against a local swarm of processes', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let http = ''
  let seed = ''
  let plan = ''
  const nodes: CliChild[] = []

  const getPlan = async (id: string): Promise<PlanBody | undefined> => {
    const r = await fetch(`${http}/plans/${id}`)
    return r.ok ? ((await r.json()) as PlanBody) : undefined
  }

  beforeAll(async () => {
    home = tempDir('cli-swarm')
    env = cliEnv(home)
    const observer = spawnCli(
      ['--role', 'observer', ...COMMON, '--data-dir', join(home, 'observer'), '--http', '127.0.0.1:0', '--json'],
      { env }
    )
    nodes.push(observer)
    const started = await observer.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    for (const role of ['decomposer', 'scorer', 'executor']) {
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], { env })
      )
    }
    await Promise.all(nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
    await waitUntil(
      'the observer to see every role',
      async () => {
        const s = (await (await fetch(`${http}/status`)).json()) as { roster: Array<{ role: string }> }
        const roles = new Set(s.roster.map(r => r.role))
        return ['decomposer', 'scorer', 'executor'].every(r => roles.has(r)) ? true : undefined
      },
      START_MS
    )
  }, 2 * START_MS)

  afterAll(async () => {
    await stopCliChildren()
    removeTempDirs()
  }, 60_000)

  it(
    "submit --wait exits 0 and prints the plan id and the completed plan's deliverable",
    async () => {
      const r = await runCli(
        [
          'submit',
          GOAL,
          '--wait',
          ...COMMON,
          '--bootstrap',
          seed,
          '--max-depth',
          '1',
          '--timeout',
          String(PLAN_MS / 1000 - 30)
        ],
        { env },
        PLAN_MS
      )
      expect(r.code, `${r.stderr.slice(-3000)}\n${nodes.map(n => n.tail(500)).join('\n')}`).toBe(EXIT.OK)
      const lines = r.stdout.split('\n')
      expect(lines[0]).toMatch(/^[0-9a-f]{64}$/)
      plan = lines[0] as string
      expect(r.stderr).toMatch(new RegExp(`submitted plan ${plan}`))
      expect(r.stderr).toMatch(/plan completed/)
      const body = await waitUntil(
        'the observer to hold the completed plan',
        async () => {
          const b = await getPlan(plan)
          return b?.tree.status === 'completed' ? b : undefined
        },
        60_000
      )
      const deliverable = body.tree.deliverable?.output ?? ''
      expect(deliverable.length).toBeGreaterThan(0)
      expect(r.stdout.slice(plan.length).trim()).toBe(deliverable.trim())
      // The author's key stayed in the default client dir, for cancel, amend and the rest.
      expect(existsSync(join(home, '.plan-swarm', SWARM, 'client-1'))).toBe(true)
    },
    PLAN_MS + 30_000
  )

  it(
    "export <plan-id> --markdown FILE writes the plan; --json prints the tree with the swarm's treeHash",
    async () => {
      expect(plan).not.toBe('')
      const file = join(home, 'exported', 'plan.md')
      mkdirSync(join(home, 'exported'), { recursive: true })
      const md = await runCli(['export', plan, '--markdown', file, ...COMMON, '--bootstrap', seed], { env }, CLIENT_MS)
      expect(md.code, md.stderr).toBe(EXIT.OK)
      expect(md.stderr).toContain(`wrote ${file}`)
      const text = readFileSync(file, 'utf8')
      expect(text).toMatch(/^#/m)
      expect(text).toContain(GOAL)
      const body = (await getPlan(plan)) as PlanBody
      expect(text).toContain((body.tree.deliverable?.output ?? '').split('\n')[0])

      const json = await runCli(['export', plan, '--json', ...COMMON, '--bootstrap', seed], { env }, CLIENT_MS)
      expect(json.code, json.stderr).toBe(EXIT.OK)
      const exported = JSON.parse(json.stdout) as PlanBody
      expect(exported.tree.status).toBe('completed')
      expect(exported.treeHash).toBe(body.treeHash)
    },
    2 * CLIENT_MS + 10_000
  )

  it(
    "cancel acts as the goal's author, and refuses with another key (exit 2)",
    async () => {
      // A committee nobody in the swarm belongs to: the plan waits for ballots, so the cancel cannot lose a race to completion.
      const absent = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
      const sub = await runCli(
        ['submit', 'plan a picnic', '--committee', absent, ...COMMON, '--bootstrap', seed],
        { env },
        CLIENT_MS
      )
      expect(sub.code, sub.stderr).toBe(EXIT.OK)
      const id = sub.stdout.trim()
      expect(id).toMatch(/^[0-9a-f]{64}$/)

      const stranger = await runCli(
        ['cancel', id, ...COMMON, '--bootstrap', seed, '--data-dir', join(home, 'stranger')],
        { env },
        CLIENT_MS
      )
      expect(stranger.code, stranger.stderr).toBe(EXIT.CONFIG)
      expect(stranger.stderr).toMatch(
        /was submitted by 12D3\S+, not by this key \(12D3\S+\); run this from the submitter's --data-dir/
      )

      const author = await runCli(
        ['cancel', id, '--reason', 'changed my mind', ...COMMON, '--bootstrap', seed],
        { env },
        CLIENT_MS
      )
      expect(author.code, author.stderr).toBe(EXIT.OK)
      expect(author.stderr).toMatch(new RegExp(`cancelled plan ${id}; held by 12D3`))
      const body = await waitUntil(
        'the observer to see the plan cancelled',
        async () => {
          const b = await getPlan(id)
          return b?.tree.status === 'cancelled' ? b : undefined
        },
        60_000
      )
      expect(body.tree.statusReason ?? '').toContain('changed my mind')
    },
    3 * CLIENT_MS + 60_000
  )
})
