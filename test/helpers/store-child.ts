/**
 * A child process for the store's integration tests: the things a second
 * plan-swarm process on the same machine does to a data dir. Run as
 * `node --import tsx test/helpers/store-child.ts <mode> ...`.
 *
 *   lock <dir>             try lockDataDir; print `locked <pid>` and hold, or `busy <error name> <message>` and exit
 *   lock-dropped <dir>     lockDataDir keeping no handle, collect garbage; print `collected <pid>` and hold
 *   acquire <base> <role>  acquireDefaultDataDir; print `acquired <dir>` and hold
 *   write <dir> <seed>     put events forever, alternating single puts and putMany
 *                          batches of BATCH; after each call returns, print `did <first n> <count>`
 *
 * A holding child exits when its stdin closes, so a crashed test run leaves
 * no process behind.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { acquireDefaultDataDir, lockDataDir } from '../../src/store/data-dir.js'
import { openEventStore } from '../../src/store/event-store.js'
import type { EventRow } from '../../src/store/event-store.js'
import { BATCH, writerId } from './store-temp.js'

function row(seed: string, n: number): EventRow {
  const bytes = new Uint8Array(500)
  bytes.fill(n % 251)
  bytes[0] = 0xa5
  return { id: writerId(seed, n), plan: writerId(seed, -1), bytes, receivedMs: Date.now() }
}

function holdUntilStdinCloses(): void {
  process.stdin.on('end', () => process.exit(0))
  process.stdin.resume()
}

function main(argv: readonly string[]): void {
  const [mode, a, b] = argv
  if (mode === 'lock' && a !== undefined) {
    try {
      lockDataDir(a)
    } catch (err) {
      process.stdout.write(`busy ${(err as Error).name} ${(err as Error).message}\n`)
      process.exit(0)
    }
    process.stdout.write(`locked ${process.pid}\n`)
    holdUntilStdinCloses()
    return
  }
  if (mode === 'lock-dropped' && a !== undefined) {
    // Lock, keep no handle, and let the collector run: the lock must stay held.
    lockDataDir(a)
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    for (let i = 0; i < 3; i++) gc()
    setTimeout(() => {
      gc()
      process.stdout.write(`collected ${process.pid}\n`)
      holdUntilStdinCloses()
    }, 100)
    return
  }
  if (mode === 'acquire' && a !== undefined && b !== undefined) {
    const { dir } = acquireDefaultDataDir(a, b)
    process.stdout.write(`acquired ${dir}\n`)
    holdUntilStdinCloses()
    return
  }
  if (mode === 'write' && a !== undefined && b !== undefined) {
    const store = openEventStore({ dir: a })
    holdUntilStdinCloses()
    process.stdout.write('ready\n')
    let n = 0
    let single = true
    const step = (): void => {
      // A few operations per turn, then yield so stdin and signals are seen.
      for (let i = 0; i < 20; i++) {
        if (single) {
          store.put(row(b, n))
          process.stdout.write(`did ${n} 1\n`)
          n += 1
        } else {
          const rows: EventRow[] = []
          for (let k = 0; k < BATCH; k++) rows.push(row(b, n + k))
          store.putMany(rows)
          process.stdout.write(`did ${n} ${BATCH}\n`)
          n += BATCH
        }
        single = !single
      }
      setImmediate(step)
    }
    step()
    return
  }
  process.stderr.write(
    `usage: store-child.ts lock <dir> | lock-dropped <dir> | acquire <base> <role> | write <dir> <seed>\n`
  )
  process.exit(2)
}

main(process.argv.slice(2))
