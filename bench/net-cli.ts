/**
 * A real node for the footprint benchmark:
 *
 *   node --import tsx bench/net-cli.ts <the CLI's arguments>
 *
 * runs src/cli.ts with those arguments, exactly as `npm start -- <arguments>`
 * does (same module graph, same role drivers, same output), and adds one
 * command on stdin, the footprint's `mem` (bench/net-mem.ts): a JSON line
 * `{"cmd":"mem","gc":true,"rid":1}` is answered by `{"ev":"reply","rid":1,...}`
 * on stdout, among the CLI's own JSON lines. Closing stdin stops the node as
 * SIGTERM does.
 */
import { createInterface } from 'node:readline'
import { memReport } from './net-mem.js'

createInterface({ input: process.stdin }).on('line', line => {
  let c: { cmd?: string, rid?: number, gc?: boolean }
  try { c = JSON.parse(line) as typeof c } catch { return }
  const reply = c.cmd === 'mem' ? memReport(c.gc === true) : Promise.resolve({ error: `unknown command ${String(c.cmd)}` })
  void reply.then(r => { process.stdout.write(JSON.stringify({ ev: 'reply', rid: c.rid, ...r }) + '\n') })
}).on('close', () => { process.kill(process.pid, 'SIGTERM') })

await import('../src/cli.js')
