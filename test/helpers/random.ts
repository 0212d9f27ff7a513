/**
 * Seeded randomness for tests: the simulator's own generator
 * (`seededRandom` in src/ports/scheduler.ts), so a test and the product agree
 * on what a seed means. Generators whose seeds are written down elsewhere keep
 * their own sequence: plan-gen.ts's `Rng` (the golden fixture's seed).
 */
import { seededRandom } from '../../src/ports/scheduler.js'

/** Unsigned 32-bit words from `seededRandom(seed)` (each is its number in [0, 1) times 2^32, exactly). */
export function seededWords(seed: number): () => number {
  const random = seededRandom(seed)
  return () => random() * 2 ** 32
}

/** A Fisher-Yates shuffle driven by `seededRandom`: the same seed, the same order. */
export function shuffle<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs]
  const random = seededRandom(seed)
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const tmp = out[i] as T
    out[i] = out[j] as T
    out[j] = tmp
  }
  return out
}
