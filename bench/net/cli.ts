/**
 * A real node for the footprint benchmark in its tsx mode:
 *
 *   node --import tsx bench/net/cli.ts <the CLI's arguments>
 *
 * runs src/cli.ts with those arguments, exactly as `npm start -- <arguments>`
 * does (same module graph, same role drivers, same output), with the `mem`
 * command of bench/net/cli-mem.ts on stdin. The built mode runs
 * dist/src/cli.js with that module as a preload instead.
 */
import './cli-mem.js'

await import('../../src/cli.js')
