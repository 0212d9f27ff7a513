/**
 * The footprint benchmark's `mem` command (bench/net/mem.ts) for a process
 * running the real CLI: a JSON line `{"cmd":"mem","gc":true,"rid":1}` on
 * stdin is answered by `{"ev":"reply","rid":1,...}` on stdout, among the
 * CLI's own JSON lines. Closing stdin stops the node as SIGTERM does.
 *
 * Loaded before the CLI, either by bench/net/cli.ts (through tsx, before it
 * imports src/cli.ts) or, bundled by bench/net/bundle.ts, as a preload of
 * the built CLI: `node --import <this, bundled> dist/src/cli.js ...`. Either
 * way the CLI's own module graph and code path stay as they are.
 */
import { createInterface } from 'node:readline'
import { memReport } from './mem.js'

createInterface({ input: process.stdin })
  .on('line', line => {
    let c: { cmd?: string; rid?: number; gc?: boolean }
    try {
      c = JSON.parse(line) as typeof c
    } catch {
      return
    }
    const reply =
      c.cmd === 'mem' ? memReport(c.gc === true) : Promise.resolve({ error: `unknown command ${String(c.cmd)}` })
    void reply.then(r => {
      process.stdout.write(JSON.stringify({ ev: 'reply', rid: c.rid, ...r }) + '\n')
    })
  })
  .on('close', () => {
    process.kill(process.pid, 'SIGTERM')
  })
