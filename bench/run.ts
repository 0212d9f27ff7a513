import '../src/polyfill.js'
import { benchFold } from './fold.js'
import { benchNet } from './net.js'
import { benchE2e } from './e2e.js'
import { benchScale } from './scale.js'

/**
 * `npm run bench -- <name>`: runs one benchmark (or all), prints progress on
 * stderr and, as its last line on stdout, one JSON object with the figures.
 */
const BENCHES: Record<string, () => Promise<Record<string, unknown>>> = {
  fold: benchFold,
  net: benchNet,
  e2e: benchE2e,
  scale: benchScale
}

const names = process.argv.slice(2).filter(a => !a.startsWith('-'))
const unknown = names.filter(n => BENCHES[n] === undefined)
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(', ')}; choose from: ${Object.keys(BENCHES).join(', ')}`)
  process.exit(2)
}
const chosen = names.length > 0 ? names : Object.keys(BENCHES)
const results: Record<string, unknown> = {}
for (const n of chosen) {
  console.error(`bench ${n}: running...`)
  results[n] = await (BENCHES[n] as () => Promise<Record<string, unknown>>)()
}
console.log(JSON.stringify(chosen.length === 1 ? results[chosen[0] as string] : results))
