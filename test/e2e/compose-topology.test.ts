/**
 * docker-compose.yml, run without Docker: every replica of every service is
 * started as the image would start it (the Dockerfile's ENTRYPOINT and ENV,
 * then the service's command and environment), each in its own network
 * namespace on one bridge, like containers on a compose network, with the
 * named volumes, the swarm-key secret and the replica counts from the file.
 * Discovery is mDNS alone, as in compose. The test passes when the one-shot
 * submitter exits 0 with the plan completed, every node holds the same
 * completed tree, the healthchecks pass, and SIGTERM (`docker compose down`)
 * stops every node cleanly within its stop_grace_period.
 *
 * So the compose file cannot drift from the command line: a renamed flag or
 * variable, a wrong entrypoint, replicas fighting over a volume, a healthcheck
 * that cannot pass, all fail here.
 *
 * Needs root and iproute2; skipped with a message otherwise.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXIT, cliEnv, removeTempDirs, runCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { loadCompose, loadDockerfile } from '../helpers/compose-file.js'
import { createBridgeNet } from '../helpers/compose-netns.js'
import { netnsSkip } from '../helpers/netns.js'
import { durationMs, execIn, getJson, healthcheckArgv, planContainers, startContainer } from '../helpers/compose-run.js'
import type { BridgeNet } from '../helpers/compose-netns.js'
import type { Container } from '../helpers/compose-run.js'
import type { ComposeModel, DockerImage } from '../helpers/compose-file.js'

const unavailable = netnsSkip('the compose topology test')

/** Every long-running node prints its banner within this (10 processes starting at once on 2 busy cores). */
const STARTUP_MS = 180_000
/** The submitter's plan, from its start (with the nodes) to its exit. */
const PLAN_MS = 300_000
const MINUTE = 60_000

interface Banner {
  role: string
  peerId: string
  swarm: string
  dataDir: string
  discovery: string
}

function banner(c: Container): Banner | undefined {
  const lines = c.child?.lines ?? []
  const i = lines.findIndex(l => /^plan-swarm \S+ 12D3\S+ in swarm "/.test(l))
  if (i < 0) return undefined
  const head = /^plan-swarm (\S+) (\S+) in swarm "([^"]+)"/.exec(lines[i] as string) as RegExpExecArray
  const field = (name: string): string | undefined =>
    lines
      .slice(i + 1, i + 10)
      .find(l => l.startsWith(`  ${name} `))
      ?.slice(name.length + 3)
      .trim()
  const dataDir = field('data dir')
  const discovery = field('discovery')
  if (dataDir === undefined || discovery === undefined) return undefined
  return { role: head[1] as string, peerId: head[2] as string, swarm: head[3] as string, dataDir, discovery }
}

function httpPort(c: Container): number {
  const m = /:(\d+)$/.exec(c.env.PLAN_SWARM_HTTP ?? '')
  if (m === null) throw new Error(`${c.name} has no PLAN_SWARM_HTTP`)
  return Number(m[1])
}

interface PlanBody {
  treeHash: string
  tree: { status: string }
}

describe.skipIf(unavailable !== undefined)('docker-compose.yml as processes in network namespaces', () => {
  let root: string
  let net: BridgeNet | undefined
  let compose: ComposeModel
  let image: DockerImage
  let containers: Container[] = []
  let nodes: Container[] = []
  let submitter: Container
  let plan = ''
  const t0 = Date.now()
  const timings: Record<string, number> = {}

  beforeAll(async () => {
    root = tempDir('compose-topology')
    // A swarm key, made by the CLI, handed over the way the file documents (SWARM_KEY_FILE + PLAN_SWARM_SWARM_KEY).
    const keygen = await runCli(['keygen'], { env: cliEnv(root) }, 60_000)
    expect(keygen.code, keygen.stderr).toBe(0)
    const keyFile = join(root, 'swarm.key')
    writeFileSync(keyFile, keygen.stdout)
    const shell = {
      SWARM_KEY_FILE: keyFile,
      PLAN_SWARM_SWARM_KEY: '/run/secrets/swarm_key',
      // A smaller tree than the default, as `npm run demo` uses, so the plan fits a test deadline on 2 cores.
      PLAN_SWARM_MAX_DEPTH: '2',
      // The client gives up (exit 6, with a message) a little before the test would.
      PLAN_SWARM_TIMEOUT: String(Math.floor(PLAN_MS / 1000) - 20)
    }
    compose = loadCompose(shell)
    image = loadDockerfile()
    net = createBridgeNet()
    containers = planContainers(compose.services, image, net, root)
    nodes = containers.filter(c => c.service.restart !== 'no')
    const oneShots = containers.filter(c => c.service.restart === 'no')
    expect(oneShots.map(c => c.service.name)).toEqual(['submitter'])
    submitter = oneShots[0] as Container
  }, 2 * MINUTE)

  afterAll(async () => {
    await stopCliChildren(3_000)
    net?.destroy()
    removeTempDirs()
    console.log(
      `compose topology timings (s since ` +
        `start): ${JSON.stringify(Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v / 100) / 10])))}`
    )
  }, MINUTE)

  it(
    'starts every replica from the file (no bootstrap: mDNS only), each with its own data dir in its service volume',
    async () => {
      expect(compose.services.map(s => `${s.name}x${s.replicas}`).sort()).toEqual([
        'decomposerx2',
        'executorx3',
        'observerx1',
        'relayx1',
        'scorerx3',
        'submitterx1'
      ])
      for (const c of containers) expect(c.env.PLAN_SWARM_BOOTSTRAP ?? '', `${c.name} must find peers by mDNS`).toBe('')
      // As `docker compose up`: services in depends_on order, each as soon as what it depends on has started (no waiting for health).
      const started = new Set<string>()
      while (started.size < compose.services.length) {
        const ready = compose.services.filter(s => !started.has(s.name) && s.dependsOn.every(d => started.has(d)))
        if (ready.length === 0) throw new Error('depends_on has a cycle or names a missing service')
        for (const s of ready) {
          for (const c of containers.filter(x => x.service === s)) startContainer(c)
          started.add(s.name)
        }
      }
      const exitedEarly = (): Container[] =>
        nodes.filter(c => c.child?.proc.exitCode !== null || c.child?.proc.signalCode !== null)
      await waitUntil(
        'every node to print its banner',
        () => {
          // A node that exits is a configuration the CLI rejected: stop waiting; the check below fails with its message.
          if (exitedEarly().length > 0) return true
          return nodes.every(c => banner(c) !== undefined) ? true : undefined
        },
        STARTUP_MS,
        250
      ).catch((err: Error) => {
        throw new Error(
          `${err.message}\n${nodes
            .filter(c => banner(c) === undefined)
            .map(c => c.child?.tail(1500))
            .join('\n')}`
        )
      })
      expect(
        exitedEarly().map(c => `${c.name} exited with ${c.child?.proc.exitCode}:\n${c.child?.tail(1500)}`)
      ).toEqual([])
      timings.nodesStarted = Date.now() - t0

      const dirs = new Set<string>()
      for (const c of nodes) {
        const b = banner(c) as Banner
        expect(b.role).toBe(c.service.environment.PLAN_SWARM_ROLE)
        expect(b.swarm).toBe(c.service.environment.PLAN_SWARM_SWARM)
        expect(b.discovery, c.name).toMatch(/^mDNS/)
        expect(b.discovery, `${c.name}: the secret's key is in use`).toContain('swarm key')
        expect(b.discovery).not.toContain('bootstrap')
        const volume = c.volumeDirs['/data'] as string
        expect(b.dataDir.startsWith(volume), `${c.name}: data dir ${b.dataDir} is in its volume ${volume}`).toBe(true)
        dirs.add(b.dataDir)
      }
      // Replicas share a named volume but never a store.
      expect(dirs.size).toBe(nodes.length)
      for (const s of compose.services.filter(x => x.replicas > 1)) {
        const mine = nodes
          .filter(c => c.service === s)
          .map(c => (banner(c) as Banner).dataDir.slice((c.volumeDirs['/data'] as string).length))
          .sort()
        expect(mine).toEqual(
          Array.from({ length: s.replicas }, (_, i) => `/${s.environment.PLAN_SWARM_SWARM}/${s.name}-${i + 1}`)
        )
      }
    },
    STARTUP_MS + MINUTE
  )

  it(
    "passes every healthcheck: the compose file's and the Dockerfile's",
    async () => {
      const checked: string[] = []
      for (const c of nodes) {
        const test = c.service.healthcheck
        expect(test, `${c.name} has a healthcheck`).toBeDefined()
        const argv = healthcheckArgv(test as string[])
        await waitUntil(
          `${c.name}'s healthcheck to pass`,
          async () => {
            const timeout = (c.service.raw.healthcheck as Record<string, unknown> | undefined)?.timeout
            // Docker's timeout, plus the time to start a node process on a busy machine.
            const r = await execIn(
              c,
              argv,
              durationMs(timeout === undefined ? undefined : String(timeout), 30_000) + 15_000
            )
            if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stderr.slice(-300)}`)
            return true
          },
          60_000,
          2_000
        )
        checked.push(c.name)
      }
      // The image's own HEALTHCHECK (for `docker run`), with the image's environment.
      expect(image.healthcheck).toBeDefined()
      const obs = nodes.find(c => c.service.name === 'observer') as Container
      const r = await execIn(obs, image.healthcheck as string[], 30_000)
      expect(r.code, r.stderr).toBe(0)
      expect(checked.length).toBe(nodes.length)
      timings.healthy = Date.now() - t0
    },
    5 * MINUTE
  )

  it(
    'the submitter exits 0 with the plan completed and prints the deliverable',
    async () => {
      const child = submitter.child
      expect(child).toBeDefined()
      const exit = await child!.exitWithin(Math.max(10_000, PLAN_MS - child!.elapsedMs())).catch((err: Error) => {
        throw new Error(`${err.message}\n${nodes.map(c => c.child?.tail(800)).join('\n')}`)
      })
      timings.submitterExited = Date.now() - t0
      expect(exit.code, submitter.child!.tail(4000)).toBe(EXIT.OK)
      const out = child!.lines
      plan = out.find(l => /^[0-9a-f]{64}$/.test(l)) ?? ''
      expect(plan, child!.tail()).not.toBe('')
      const deliverable = out
        .slice(out.indexOf(plan) + 1)
        .join('\n')
        .trim()
      expect(deliverable.length).toBeGreaterThan(20)
      expect(child!.stderr()).toMatch(/plan completed/)
    },
    PLAN_MS + MINUTE
  )

  it(
    'every node found every other by mDNS and holds the same completed tree; the observer wrote the markdown',
    async () => {
      expect(plan).not.toBe('')
      const observer = nodes.find(c => c.service.name === 'observer') as Container
      const peerIds = nodes.map(c => (banner(c) as Banner).peerId)
      await waitUntil(
        "the observer's roster to list every node",
        async () => {
          const s = (await getJson(observer, httpPort(observer), '/status')) as { roster: Array<{ peerId: string }> }
          const seen = new Set(s.roster.map(r => r.peerId))
          const missing = peerIds.filter(p => p !== (banner(observer) as Banner).peerId && !seen.has(p))
          if (missing.length > 0) throw new Error(`missing ${missing.join(', ')}`)
          return true
        },
        2 * MINUTE,
        2_000
      )
      const hashes = await waitUntil(
        'every node to hold the completed plan with one treeHash',
        async () => {
          const bodies = await Promise.all(
            nodes.map(async c => (await getJson(c, httpPort(c), `/plans/${plan}`)) as PlanBody)
          )
          const states = bodies.map(
            (b, i) => `${(nodes[i] as Container).name}:${b.tree.status}:${b.treeHash.slice(0, 12)}`
          )
          if (bodies.some(b => b.tree.status !== 'completed') || new Set(bodies.map(b => b.treeHash)).size !== 1)
            throw new Error(states.join(' '))
          return bodies.map(b => b.treeHash)
        },
        2 * MINUTE,
        3_000
      )
      expect(new Set(hashes).size).toBe(1)
      const markdown = observer.hostPath(observer.env.PLAN_SWARM_MARKDOWN as string)
      expect(markdown.startsWith(observer.volumeDirs['/data'] as string)).toBe(true)
      await waitUntil(
        `the observer's markdown ${markdown}`,
        () => (existsSync(markdown) && readFileSync(markdown, 'utf8').includes(plan.slice(0, 6)) ? true : undefined),
        30_000
      )
      timings.converged = Date.now() - t0
    },
    5 * MINUTE
  )

  it(
    'SIGTERM (docker compose down) stops every node with exit 0 within its stop_grace_period',
    async () => {
      const exits = await Promise.all(
        nodes.map(async c => {
          const grace = durationMs(c.service.raw.stop_grace_period as string | undefined, 10_000)
          const child = c.child!
          process.kill(-child.pid, 'SIGTERM')
          const e = await child
            .exitWithin(grace)
            .catch(async () => ({ ...(await child.stop(1_000, 'SIGKILL')), late: true }))
          return { name: c.name, ...e }
        })
      )
      timings.stopped = Date.now() - t0
      expect(
        exits.filter(e => e.code !== 0),
        JSON.stringify(exits)
      ).toEqual([])
    },
    2 * MINUTE
  )
})
