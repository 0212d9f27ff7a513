/**
 * Default data dirs, with truly default options (`npm start -- --role
 * scorer`, nothing else; HOME in a temp dir): two processes at once get
 * ~/.plan-swarm/default/scorer-1 and scorer-2 and both keep running; when
 * the first stops, the next start takes scorer-1 back, with its identity.
 * Default options mean mDNS on every interface, so each process runs in a
 * private network namespace (`unshare -n`, loopback only) where it can reach
 * no LAN; where namespaces cannot be used (netns.ts says why) it falls back
 * to --no-mdns on 127.0.0.1.
 */
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { cliEnv, removeTempDirs, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { netnsUnavailable } from '../helpers/netns.js'
import type { CliChild } from '../helpers/cli-process.js'

const START_MS = 90_000

const noPrivateNet = netnsUnavailable(['unshare'])
const privateNet = noPrivateNet === undefined
if (!privateNet) console.warn(`cli-data-dir: --no-mdns on 127.0.0.1, not truly default options: ${noPrivateNet}`)

/** Loopback up, then exec the command: `sh -c '...' sh <argv...>`. */
const PRIVATE_NET = ['unshare', '-n', 'sh', '-c', 'ip link set lo up 2>/dev/null; exec "$@"', 'sh']

function start(home: string, args: string[]): CliChild {
  return spawnCli(privateNet ? args : [...args, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0'], {
    // Only HOME: PLAN_SWARM_HOME unset, so the default really is ~/.plan-swarm.
    env: cliEnv(home, { PLAN_SWARM_HOME: undefined }),
    wrap: privateNet ? PRIVATE_NET : [],
    name: `scorer (${args.join(' ')})`
  })
}

/** The text banner: `plan-swarm scorer 12D3... in swarm "default"` then `  data dir  <dir>`. */
async function banner(child: CliChild): Promise<{ peerId: string; dataDir: string }> {
  const head = await child.waitForLine(l => /^plan-swarm scorer 12D3\S+ in swarm "default"$/.test(l), START_MS)
  const dir = await child.waitForLine(l => l.startsWith('  data dir  '), 5_000)
  return { peerId: head.split(' ')[2] as string, dataDir: dir.slice('  data dir  '.length) }
}

afterEach(async () => {
  await stopCliChildren()
})
afterAll(() => {
  removeTempDirs()
})

describe('default data dirs', () => {
  it(
    'two processes with default options get <role>-1 and <role>-2 and both run; a restart takes the free one back',
    async () => {
      const home = tempDir('cli-default-dirs')
      const root = join(home, '.plan-swarm', 'default')
      const a = start(home, ['--role', 'scorer'])
      const b = start(home, ['--role', 'scorer'])
      const [ba, bb] = await Promise.all([banner(a), banner(b)])
      expect([ba.dataDir, bb.dataDir].sort()).toEqual([join(root, 'scorer-1'), join(root, 'scorer-2')])
      expect(ba.peerId).not.toBe(bb.peerId)
      // Both keep running (no lock fight, no crash) until told to stop.
      await new Promise(resolve => setTimeout(resolve, 3_000))
      expect([a.proc.exitCode, b.proc.exitCode]).toEqual([null, null])

      const [first, second] = ba.dataDir.endsWith('scorer-1') ? [a, b] : [b, a]
      const firstId = (ba.dataDir.endsWith('scorer-1') ? ba : bb).peerId
      expect(await first.stop(30_000)).toEqual({ code: 0, signal: null })
      const c = start(home, ['--role', 'scorer'])
      const bc = await banner(c)
      expect(bc.dataDir).toBe(join(root, 'scorer-1'))
      // Its identity lives in the dir: the restart is the same peer.
      expect(bc.peerId).toBe(firstId)
      expect(second.proc.exitCode).toBe(null)
    },
    4 * START_MS
  )
})
