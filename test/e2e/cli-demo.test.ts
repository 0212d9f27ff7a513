/**
 * `npm run demo -- --tools`, offline (no ANTHROPIC_API_KEY): a whole swarm of
 * real processes on 127.0.0.1, one executor with the example notes server,
 * plans the tools goal; the leaves that need the notes go to that executor,
 * which calls the notes server; the script exits 0 after printing the
 * completed plan's deliverable (quoting what the tool returned) and where the
 * markdown export is; it leaves no process behind (its whole process group
 * is gone). Its nodes run the bundle vitest's globalSetup built (`--built`):
 * the plain `npm run demo`, on the sources through tsx, runs in .ci/run's
 * Node 24 pass.
 */
import { existsSync, readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { cliEnv, removeTempDirs, spawnCommand, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'

/** The demo's own deadline for the plan (DEMO_TIMEOUT_S); the test allows for starting nine processes on top. */
const DEMO_TIMEOUT_S = 240
const TEST_MS = (DEMO_TIMEOUT_S + 120) * 1000

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

afterAll(async () => {
  await stopCliChildren()
  removeTempDirs()
})

describe('npm run demo -- --tools', () => {
  it(
    'completes offline with exit 0, routes the notes tasks to the executor with the notes, and leaves no process behind',
    async () => {
      // The demo keeps its data in a mkdtemp dir: TMPDIR puts it in ours, removed afterwards.
      const home = tempDir('cli-demo')
      // TERM on our death: npm passes it to the demo, which stops its nodes.
      const demo = spawnCommand(['npm', 'run', 'demo', '--', '--tools', '--built'], {
        env: cliEnv(home, { DEMO_TIMEOUT_S: String(DEMO_TIMEOUT_S), TMPDIR: home }),
        name: 'npm run demo -- --tools',
        parentDeathSignal: 'TERM'
      })
      const exit = await demo.exitWithin(TEST_MS - 20_000)
      const out = demo.stdout()
      expect(exit, demo.tail(6_000)).toEqual({ code: 0, signal: null })
      expect(out).toContain('no ANTHROPIC_API_KEY: offline heuristics, not a language model')
      expect(out).toMatch(/submitted "turn the team's notes into a plan for the offsite" as plan [0-9a-f]{64}/)
      expect(out).toContain('executor-1 offers the tools of')
      expect(out).toMatch(/^plan completed; treeHash [0-9a-f]{64}$/m)
      const deliverable = /\ndeliverable:\n([\s\S]+?)\n\nmarkdown export: /.exec(out)
      expect(deliverable?.[1]?.trim().length ?? 0, out.slice(-3000)).toBeGreaterThan(20)
      // The offline provider says what it is, in the deliverable too.
      expect(deliverable?.[1]).toMatch(/OFFLINE|offline/)
      // A tool's result reached the deliverable, and the tree showed the calls.
      expect(deliverable?.[1]).toMatch(/Tool results in the inputs:\n- notes\/list_notes returned: /)
      expect(out).toMatch(/needs `notes` · by …\S+ \(offline\) · tools: `notes\/list_notes`/)
      const md = /^markdown export: (\S+) \((\d+) bytes\)$/m.exec(out)
      expect(md, out.slice(-2000)).not.toBeNull()
      const path = md?.[1] as string
      expect(existsSync(path)).toBe(true)
      const text = readFileSync(path, 'utf8')
      expect(Buffer.byteLength(text)).toBe(Number(md?.[2]))
      expect(text).toContain("turn the team's notes into a plan for the offsite")
      expect(text).toContain('- tools: `notes/list_notes`')
      // Every node the demo started has exited: its process group is empty.
      await waitUntil("the demo's process group to be gone", () => (groupAlive(demo.pid) ? undefined : true), 15_000)
    },
    TEST_MS
  )
})
