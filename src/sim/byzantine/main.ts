import { runSeed } from '../run.js'
import { resolveF, runByzantine } from './run.js'
import type { WorldOptions } from '../world-options.js'
import type { ByzMode } from './modes.js'
import type { ByzReport } from './run.js'

const pct = (x: number): string => `${Math.round(x * 1000) / 10} %`

/** One dishonest run in words, as `npm run sim -- --byzantine` prints it. */
export function byzLine(r: ByzReport): string {
  const v = r.verdict
  return (
    `seed ${r.seed}: ${r.mode} with ${r.members} dishonest of ${r.nodes} nodes: ` +
    `${v.completed ? `completed in ${r.completionMs} ms virtual (${r.makespanRatio}x honest)` : `not completed (${r.outcome})`}; ` +
    `${v.honestAgree ? 'one treeHash on every honest node' : 'HONEST NODES DISAGREE'}; ` +
    `dishonest won ${pct(v.dishonestShare)} of ${v.tasks} tasks (fair share ${pct(v.fairShare)}); ` +
    `junk accepted ${v.junkAcceptedBefore} before / ${v.junkAcceptedAfter} after the first rejection; ` +
    `${v.plansChangedAfterFinish} plan(s) changed after finishing; wall ${r.wallMs} ms` +
    (v.problems.length === 0 ? '' : `\n  ${v.problems.join('\n  ')}`)
  )
}

/**
 * `npm run sim -- --byzantine MODES [--f N|max]`: each seed run honest, then once per mode with f dishonest
 * members; a line per run and, last, one JSON object with every verdict. Exit code 1 when an honest node was
 * down at the end or the honest nodes disagree (the rules in force today); the rest is measured, not judged.
 */
export async function mainByzantine(
  worldOf: (seed: number) => Omit<WorldOptions, 'dishonest'>,
  seeds: readonly number[],
  modes: readonly ByzMode[],
  f: number | 'max'
): Promise<number> {
  const reports: ByzReport[] = []
  for (const seed of seeds) {
    const world = worldOf(seed)
    const honest = await runSeed(world)
    for (const mode of modes) {
      // A junk run has its results reviewed (junkReview), so it is measured against an honest run that has too.
      const r = await runByzantine(
        { ...world, mode, f: resolveF(f, world.nodes) },
        mode === 'junk' ? undefined : honest
      )
      console.log(byzLine(r))
      reports.push(r)
    }
  }
  const bad = reports.filter(r => !r.verdict.honestAgree || r.verdict.problems.length > 0)
  for (const r of bad) console.log(`replay: ${r.replay}`)
  console.log(JSON.stringify({ runs: reports.map(({ replay: _replay, ...r }) => r), failed: bad.map(r => r.replay) }))
  return bad.length === 0 ? 0 : 1
}
